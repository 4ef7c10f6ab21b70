"""ENV006: a setting turns off a transport (SHM, P2P, IB, GDR, cuMem) with no evidence for
NVL003 or NET007 either way."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import setting_hit
from topolint.checks._transport import cases
from topolint.engine.finding import Hit

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for case in cases(context):
        if case.rule == "ENV006":
            hit = setting_hit(case.setting)
            hit.variant = case.transport
            hit.evidence.extend(case.evidence)
            if case.transport == "net":  # no topology says there are RDMA NICs: maybe there are none
                hit.severity = "info"
                hit.evidence.append("no --topology names RDMA NICs and the scope configures no RDMA: "
                                    "on nodes without InfiniBand/RoCE this setting costs nothing")
            yield hit
