"""ENV001: an NCCL_* name that no NCCL version knows (with a "did you mean")."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import rename_fix, setting_hit
from topolint.engine.finding import Hit
from topolint.model.nccl_env import is_plugin_variable, lookup, only_suggestion, other_reader, suggest

NEEDS = ("config",)


class Parameters(CheckParameters):
    extra_variables: list[str] = []  # NCCL_* names a site's own software reads


def check(context, params: Parameters) -> Iterator[Hit]:
    extra = set(params.extra_variables) | set(getattr(context.options, "extra_variables", ()) or ())
    for config in context.configs:
        for setting in config.settings:
            name = setting.name
            reader, reach = config.bom_kept.get(setting.loc.path, (None, 0))
            if reader and setting.loc.line == 1 and setting.loc.column <= reach:
                yield _lost_to_bom(setting, reader)
                continue
            if name in extra or other_reader(name):
                continue
            entry = lookup(name)
            if entry is not None and is_plugin_variable(entry):
                continue  # e.g. NCCL_INSPECTOR_ENABLE (NCCL's inspector plugin), NCCL_TUNER_CONFIG_FILE
            if entry is not None and entry.get("reader") == "pytorch":
                hit = setting_hit(setting, replacement=entry["replacement"])
                hit.variant, hit.severity = "pytorch", "info"
                hit.evidence.append(f"PyTorch reads {entry['replacement']} first and {name} only as a deprecated fallback")
                yield hit
            elif entry is None:
                guess = suggest(name)
                hit = setting_hit(setting, suggestion=guess or "")
                hit.evidence.append(f"{name} is not in the catalog of {len_catalog()} variables read by NCCL 2.0-2.30, "
                                    "PyTorch, nccl-tests or the known network plugins")
                if guess:
                    hit.variant = "suggest"
                    if only_suggestion(name) == guess:  # unambiguous: one candidate, offered as a fix
                        hit.autofix = rename_fix(setting, guess, config, context.notes)
                yield hit


def _lost_to_bom(setting, reader: str) -> Hit:
    """The file starts with a byte-order mark its reader keeps: the name it sees on line 1 is
    ``\ufeff`` + the word written, so the setting is never made. Removing the mark wakes it:
    unsafe, like a rename."""
    from topolint.engine.fixes import UNSAFE, remove_bom

    hit = setting_hit(setting, reader=reader.split(" (", 1)[0])
    hit.variant = "bom"
    hit.evidence.append(f"{setting.loc.path} starts with a UTF-8 byte-order mark (EF BB BF); read by {reader}")
    hit.autofix = remove_bom(setting.loc.path, "Remove the byte-order mark", UNSAFE)
    return hit


def len_catalog() -> int:
    from topolint.model.nccl_env import catalog

    return sum(1 for v in catalog()["variables"].values() if v.get("reader") == "nccl")
