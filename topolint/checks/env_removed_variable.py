"""ENV002: a variable (or value) the NCCL version in force no longer reads, reads as deprecated, or
does not read yet. The version is the one the setting's job loads (model/nccl_in_force.py:
``--nccl-version``, the configuration, else what the repository installs, else the newest known);
where the files leave several versions possible, a finding holds for each of them.
Removed and renamed names are warnings (NCCL ignores them); a deprecated name or value NCCL
still reads is info: the setting works, but has a successor."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import rename_fix, setting_hit
from topolint.engine.finding import Hit
from topolint.model.nccl_env import lifecycle, lookup
from topolint.model.nccl_reads import not_read
from topolint.model.nccl_version import NcclVersion

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    noted: set[tuple[str, str]] = set()
    for config in context.configs:
        for setting in config.settings:
            entry = lookup(setting.name)
            if entry is None:
                continue
            in_force = context.nccl_in_force(config, setting)
            _note(context, config, setting, in_force, noted)
            versions = in_force.judged
            states = [lifecycle(setting.name, v) for v in versions]
            if all(states):
                status, when = states[-1]
                replacement = entry.get("replacement") or ""
                hit = _hit(setting, in_force, status=status, when=when, replacement=replacement,
                           advice=entry.get("advice") or "remove it")
                hit.variant = status if replacement else f"{status}-no-replacement"
                hit.evidence.insert(1, f"catalog: {setting.name}: {entry.get('status_text', status)}")
                if status == "renamed" and replacement:  # same meaning under the new name
                    hit.autofix = rename_fix(setting, replacement, config, context.notes)
                if status == "deprecated":  # NCCL still reads it: the setting works, so it is worth knowing
                    hit.severity = "info"
                    hit.evidence.append(f"NCCL {in_force.version} still reads {setting.name}; the setting takes effect")
                yield hit
                continue
            unread = [not_read(setting.name, v) for v in versions] if entry.get("reader") == "nccl" else [None]
            if all(unread) and len({u.state for u in unread}) == 1:
                yield _not_read(setting, in_force, unread, entry)
                continue
            for value, since in (entry.get("deprecated_values") or {}).items():
                if setting.value and setting.value.upper() == value \
                        and all(v >= NcclVersion.parse(since) for v in versions):
                    hit = _hit(setting, in_force, status="deprecated", when=f"deprecated since NCCL {since}",
                               replacement="", advice=f"the value {value} is deprecated; unset it")
                    hit.variant = "value"
                    hit.severity = "info"  # deprecated, still read: it works
                    yield hit


def _note(context, config, setting, in_force, noted: set) -> None:
    """--verbose: the version each file's settings were judged with, when the inputs said something
    about it (a version they settle, or why they cannot)."""
    key = (config.path, setting.scope)
    if key in noted or not (in_force.sources or in_force.unsettled or in_force.reason):
        return
    noted.add(key)
    why = in_force.unsettled or in_force.reason
    context.notes.append(f"{config.path} ({setting.scope}): judged with {in_force.label()}" + (f": {why}" if why else ""))


def _hit(setting, in_force, **fields) -> Hit:
    hit = setting_hit(setting, nccl_version=str(in_force.version), assumed=in_force.label(), **fields)
    hit.evidence.extend(in_force.evidence())
    return hit


def _not_read(setting, in_force, unread: list, entry: dict) -> Hit:
    """Not read yet (NCCL reads it from a later release) or no longer (only older ones did): the
    releases that read it come from NCCL's sources at their tags (data/nccl_versions/env_reads.tsv)."""
    first = unread[0]
    ranges = first.ranges
    hit = _hit(setting, in_force, read_by=first.read_by, replacement="", advice="")
    hit.variant = first.state
    hit.evidence.insert(1, "NCCL's sources read it at release tags " + ", ".join(
        f"v{r.span} (first in {r.source} at {r.tag})" for r in ranges))
    renamed = [n for n, _ in _renamed_to(setting.name)]
    if first.state == "not-yet" and renamed:  # e.g. NCCL 2.20 reads NCCL_MNNVL, renamed NCCL_MNNVL_ENABLE in 2.21
        earlier = [n for n in renamed if all(not_read(n, v) is None for v in in_force.judged)]
        if earlier:
            hit.variant = "not-yet-older-name"
            hit.fields["replacement"] = earlier[0]
    return hit


def _renamed_to(name: str) -> list[tuple[str, dict]]:
    from topolint.model.nccl_env import catalog

    return [(n, e) for n, e in catalog()["variables"].items() if e.get("replacement") == name and e.get("reader") == "nccl"]
