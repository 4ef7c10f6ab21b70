"""NET007: NCCL_IB_DISABLE=1 or NCCL_NET=Socket while RDMA NICs exist or the scope configures RDMA."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._transport import evidenced_hits
from topolint.engine.finding import Hit

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    return evidenced_hits(context, "NET007")
