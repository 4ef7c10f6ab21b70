"""ENV002: a removed, renamed or deprecated variable (or value) for the configured NCCL version.

Removed and renamed names are warnings (NCCL ignores them); a deprecated name or value NCCL
still reads is info: the setting works, but has a successor."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import rename_fix, setting_hit
from topolint.engine.finding import Hit
from topolint.model.nccl_env import lifecycle, lookup
from topolint.model.nccl_version import NcclVersion

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    version = context.version
    for config in context.configs:
        for setting in config.settings:
            entry = lookup(setting.name)
            if entry is None:
                continue
            state = lifecycle(setting.name, version)
            if state is not None:
                status, when = state
                replacement = entry.get("replacement") or ""
                hit = setting_hit(setting, status=status, when=when, replacement=replacement,
                                  advice=entry.get("advice") or "remove it", nccl_version=str(version))
                hit.variant = status if replacement else f"{status}-no-replacement"
                hit.evidence.append(f"catalog: {setting.name}: {entry.get('status_text', status)}")
                if status == "renamed" and replacement:  # same meaning under the new name
                    hit.autofix = rename_fix(setting, replacement)
                if status == "deprecated":  # NCCL still reads it: the setting works, so it is worth knowing
                    hit.severity = "info"
                    hit.evidence.append(f"NCCL {version} still reads {setting.name}; the setting takes effect")
                yield hit
                continue
            for value, since in (entry.get("deprecated_values") or {}).items():
                if setting.value and setting.value.upper() == value and version >= NcclVersion.parse(since):
                    hit = setting_hit(setting, status="deprecated", when=f"deprecated since NCCL {since}",
                                      replacement="", advice=f"the value {value} is deprecated; unset it",
                                      nccl_version=str(version))
                    hit.variant = "value"
                    hit.severity = "info"  # deprecated, still read: it works
                    yield hit
