"""NVL003: NCCL_P2P_DISABLE=1 or a restrictive NCCL_P2P_LEVEL while GPUs could use P2P."""

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
        if case.rule == "NVL003":
            hit = setting_hit(case.setting, reason=case.evidence[0])
            hit.evidence.extend(case.evidence)
            yield hit
