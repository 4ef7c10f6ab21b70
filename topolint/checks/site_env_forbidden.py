"""Template: `variable` must not be set in any config file (a value the site manages itself,
a debugging switch that must not reach production, a variable NCCL removed)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._config import setting_hit
from topolint.engine.finding import Hit

NEEDS = ("config",)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("name", "value", "scope", "path", "source_kind")


class Parameters(CheckParameters):
    variable: str = Field(min_length=1, description="the environment variable no file may set")
    reason: str = Field(default="the site forbids it", description="why, for the message")


def check(context, params: Parameters) -> Iterator[Hit]:
    for config in context.configs:
        for setting in config.settings:
            if setting.name == params.variable and not setting.passthrough:
                yield setting_hit(setting)
