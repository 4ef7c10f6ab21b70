"""Template: a node's topology dump shows exactly `count` GPUs (a GPU that fell off the bus,
or a node of the wrong SKU in the pool, shows as fewer).

Judged on dumps only: a static topology file may leave GPUs out for NCCL to detect.
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
PROFILE = {"count": "gpu_count"}  # unset: the node's profile's value (profiles/params.py)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("found",)


class Parameters(CheckParameters):
    count: Optional[int] = Field(default=None, ge=1, description="the number of GPUs every node has (unset: the "
                                                                 "gpu_count of the node's profile)")


def check(context, params: Parameters) -> Iterator[Hit]:
    if params.count is None:
        return
    for topology in dumps(context):
        found = len(topology.gpus)
        if found == params.count:
            continue
        yield Hit(
            entity=f"{context.node.name}/system",
            location=topology.system_loc,
            fields={"found": found},
            evidence=[f"{where(topology.system_loc)}: {topology.path} lists {found} <gpu> elements"],
        )
