"""Template: every config file that sets NCCL variables also sets `variable`.

For a site whose jobs must all pin a setting (`NCCL_IB_HCA` on a multi-rail fabric,
`NCCL_SOCKET_IFNAME` where the default picks a management interface). A file counts as
setting it with any assignment, literal or not (`$VAR`, valueFrom), in any scope.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._config import where
from topolint.engine.finding import Hit

NEEDS = ("config",)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("path", "first")


class Parameters(CheckParameters):
    variable: str = Field(min_length=1, description="the environment variable every file must set")


def check(context, params: Parameters) -> Iterator[Hit]:
    for config in context.configs:
        settings = [s for s in config.settings if not s.passthrough]
        if not settings or any(s.name == params.variable for s in settings):
            continue
        first = min(settings, key=lambda s: (s.loc.line, s.loc.column))
        yield Hit(
            entity=f"env/{params.variable}@{config.path}#file",
            location=first.loc,
            fields={"path": config.path, "first": first.name},
            evidence=[f"{where(first.loc)}: {config.path} sets {first.name} (its first NCCL setting) "
                      f"and {len(settings)} settings in all, none of them {params.variable}"],
        )
