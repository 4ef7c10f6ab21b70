"""NVL003: NCCL_P2P_DISABLE=1 or a restrictive NCCL_P2P_LEVEL while GPUs could use P2P."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._transport import evidenced_hits
from topolint.engine.finding import Hit

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    return evidenced_hits(context, "NVL003")
