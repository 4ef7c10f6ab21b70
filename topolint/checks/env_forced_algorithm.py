"""ENV005: NCCL_ALGO or NCCL_PROTO overrides NCCL's tuning."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import literal_settings, setting_hit
from topolint.engine.finding import Hit

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for _, setting in literal_settings(context):
        if setting.name in ("NCCL_ALGO", "NCCL_PROTO") and setting.value:
            hit = setting_hit(setting)
            hit.variant = "proto" if setting.name == "NCCL_PROTO" else "default"
            yield hit
