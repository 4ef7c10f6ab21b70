"""FLEET001 and FLEET003: a node's value of an attribute differs from its group's majority
(docs/fleet.md). The rules share this check; ``kind`` picks the attributes (fleet/attributes.py):

- hardware (FLEET001): GPU count, model, NVLinks, PCIe generation and width and NUMA node of
  each GPU; the count, model, rate, link layer, netdev, MTUs, PCIe link and NUMA node of each
  RDMA port; the NUMA layout. A port that is not Active keeps a stale rate and MTU: NET003
  reports it, they are not compared. A GPU's PCIe generation is info: GPUs lower their link
  speed when idle.
- config (FLEET003): the NVIDIA driver, CUDA, OFED, kernel, the nvidia_peermem module, each
  RDMA port's firmware and RoCE GID index, and each NCCL_* setting the node's own files make (a
  node with NCCL settings that lacks one its group sets is "unset"). Versions are compared as
  the nodes print them.

The cluster stage runs it on the inventories of every node (fleet/cluster.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from topolint.checks import CheckParameters
from topolint.checks._fleet import differing
from topolint.engine.finding import Hit
from topolint.engine.rule import RuleError
from topolint.fleet.attributes import CONFIG, HARDWARE
from topolint.model.schema import Field

NEEDS = ("cluster", "inventories")
# What a hit gives messages and fixes: subject, node, value, group, total, count; with a majority
# majority, majority_count and verb; without one, distribution.
FIELDS = ("subject", "node", "value", "group", "total", "count", "majority", "majority_count", "verb", "distribution")


KINDS = (HARDWARE, CONFIG)


class Parameters(CheckParameters):
    # A plain str (checked below): a run takes the rule's value without building pydantic's model.
    kind: str = Field(default=HARDWARE, description="which attributes: hardware (FLEET001) or config (FLEET003)")


def check(context, params: Parameters) -> Iterator[Hit]:
    if params.kind not in KINDS:
        raise RuleError(f"kind {params.kind!r}: expected one of {', '.join(KINDS)}")
    yield from differing(context, params.kind)
