"""Template: a node's topology dump shows at least `min_count` network devices NCCL can use
(`<net>` elements: HCA ports, EFA devices, interfaces), e.g. 8 on a rail-optimised fabric.

Judged on dumps only: a static topology file may leave NICs out for NCCL to detect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._site import dumps
from topolint.checks._topology import where
from topolint.engine.finding import Hit

NEEDS = ("topology-dump",)
PROFILE = {"min_count": "nic_count"}  # unset: the node's profile's value (profiles/params.py)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("count", "nets")


class Parameters(CheckParameters):
    min_count: Optional[int] = Field(default=None, ge=1, description="the fewest network devices a node may have "
                                                                     "(unset: the nic_count of the node's profile)")


def check(context, params: Parameters) -> Iterator[Hit]:
    if params.min_count is None:
        return
    for topology in dumps(context):
        nets = [net for nic in topology.nics for net in nic.nets]
        if len(nets) >= params.min_count:
            continue
        names = ", ".join(sorted(n.name or "?" for n in nets)) or "none"
        yield Hit(
            entity=f"{context.node.name}/system",
            location=topology.system_loc,
            fields={"count": len(nets), "nets": names},
            evidence=[f"{where(topology.system_loc)}: {topology.path} lists {len(nets)} <net> elements ({names})"],
        )
