"""ENV009: a script sets a variable NCCL reads, but no process it launches sees it.

The shell parser follows what bash exports and what each launch passes on
(topolint/parsers/_reach.py); this check reports those of its findings that name a variable
NCCL or one of its plugins reads. Build-system names (NCCL_HOME, NCCL_VERSION) and nccl-tests'
script variables are the script's own and stay silent.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import setting_hit, where
from topolint.engine.finding import Hit
from topolint.model.config import NOT_EXPORTED
from topolint.model.nccl_env import lookup, other_reader

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def read_by_nccl(name: str) -> bool:
    """NCCL or a network/tuner plugin reads ``name`` from its environment (not a build system)."""
    entry = lookup(name)
    if entry is None:
        reader = other_reader(name)
        return reader is not None and reader != "nccl-tests"
    if entry.get("reader") == "nccl":
        return entry.get("status") not in ("removed", "renamed")
    return entry.get("reader") != "pytorch" and not entry.get("reader", "").startswith("build systems")


def check(context, params: Parameters) -> Iterator[Hit]:
    for config in context.configs:
        for unreached in config.unreached:
            setting = unreached.setting
            if not read_by_nccl(setting.name):
                continue
            hit = setting_hit(setting, command=unreached.command, launch_line=unreached.launch.line)
            hit.variant = unreached.why
            hit.evidence.append(f"{where(unreached.launch)}: {unreached.command} starts a process after it")
            if unreached.why == NOT_EXPORTED:
                hit.evidence.append(f"no `export {setting.name}`, `declare -x`, `set -a` or `{setting.name}=... cmd` "
                                    "in the script: bash passes only exported variables to a child process")
                hit.autofix = _export_fix(setting) if unreached.standalone else None
            yield hit


def _export_fix(setting):
    """``export `` in front of a lone assignment (unsafe: NCCL then reads it)."""
    from topolint.engine.fixes import UNSAFE, replace_on_line

    if setting.loc.column < 1:
        return None
    return replace_on_line(setting.loc.path, setting.loc.line, setting.loc.column, setting.name,
                           f"export {setting.name}", f"Export {setting.name}", UNSAFE)
