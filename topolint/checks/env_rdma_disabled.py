"""NET007: NCCL_IB_DISABLE=1 or NCCL_NET=Socket while RDMA NICs exist or the scope configures RDMA."""

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
        if case.rule == "NET007":
            hit = setting_hit(case.setting, reason=case.evidence[0])
            hit.evidence.extend(case.evidence)
            yield hit
