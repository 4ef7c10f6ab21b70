"""ENV004: NCCL_DEBUG=INFO/TRACE or NCCL_DEBUG_SUBSYS=ALL in a config."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import literal_settings, setting_hit
from topolint.engine.finding import Hit

NEEDS = ("config",)


class Parameters(CheckParameters):
    levels: list[str] = ["INFO", "TRACE"]


def check(context, params: Parameters) -> Iterator[Hit]:
    for _, setting in literal_settings(context):
        value = (setting.value or "").strip().upper()
        if setting.name == "NCCL_DEBUG" and value in params.levels:
            yield setting_hit(setting)
        elif setting.name == "NCCL_DEBUG_SUBSYS" and not value.startswith("^") and "ALL" in value.split(","):
            hit = setting_hit(setting)
            hit.variant = "subsys"
            yield hit
