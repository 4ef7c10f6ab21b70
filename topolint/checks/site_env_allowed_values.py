"""Template: where a config file sets `variable` to a literal value, it is one of `values`.

Values that are not literals (`$VAR`, valueFrom, a computed expression) cannot be judged and
are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._config import literal_settings, setting_hit
from topolint.engine.finding import Hit

NEEDS = ("config",)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("name", "value", "scope", "path", "source_kind", "allowed")


class Parameters(CheckParameters):
    variable: str = Field(min_length=1, description="the environment variable whose values are restricted")
    values: list[str] = Field(min_length=1, description="the values allowed")
    case_sensitive: bool = Field(default=False, description="compare values case-sensitively")


def _normal(value: str, case_sensitive: bool) -> str:
    value = value.strip()
    return value if case_sensitive else value.lower()


def check(context, params: Parameters) -> Iterator[Hit]:
    allowed = {_normal(v, params.case_sensitive) for v in params.values}
    for _, setting in literal_settings(context):
        if setting.name == params.variable and _normal(setting.value, params.case_sensitive) not in allowed:
            yield setting_hit(setting, allowed=", ".join(params.values))
