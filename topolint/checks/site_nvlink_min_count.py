"""Template: every GPU in a node's topology dump has at least `min_links` NVLinks (the sum of
the `count` of its `<nvlink>` elements), e.g. 18 on an H100 SXM5 board.

Judged on dumps only: a static topology file may leave NVLinks out for NCCL to detect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._site import dumps
from topolint.checks._topology import gpu_label, where
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity

NEEDS = ("topology-dump",)
PROFILE = {"min_links": "nvlinks"}  # unset: the node's profile's value (profiles/params.py)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("gpu", "gpu_bus", "links")


class Parameters(CheckParameters):
    min_links: Optional[int] = Field(default=None, ge=1, description="the fewest NVLinks each GPU may have (unset: "
                                                                     "the nvlinks of the node's profile)")


def check(context, params: Parameters) -> Iterator[Hit]:
    if params.min_links is None:
        return
    for topology in dumps(context):
        for gpu in topology.gpus:
            links = sum(link.count or 0 for link in gpu.nvlinks)
            if links >= params.min_links:
                continue
            listed = "; ".join(f"{where(link.loc)}: nvlink target={link.target} count={link.count}"
                               for link in gpu.nvlinks) or f"{where(gpu.loc)}: no <nvlink> under this GPU"
            yield Hit(
                entity=gpu_entity(context.node.name, gpu.bus_id),
                location=gpu.loc,
                fields={"gpu": gpu_label(gpu), "gpu_bus": gpu.bus_id, "links": links},
                evidence=[listed],
            )
