"""Template: every NCCL network device in a node's topology runs at `min_gbps` or more, e.g.
400 on an NDR InfiniBand fabric (static topology files only with `include_static`).

PROF005 instantiates it with the net_gbps of the node's profile (docs/profiles.md); a site
instantiates it with its own rate from its own rule folder (`--rule-dir`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._topology import where
from topolint.engine.finding import Hit
from topolint.model.node import nic_entity

NEEDS = ("topology",)
PROFILE = {"min_gbps": "net_gbps"}  # unset: the node's profile's value (profiles/params.py)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("net", "gbps")


class Parameters(CheckParameters):
    min_gbps: Optional[float] = Field(default=None, gt=0, description="lowest acceptable rate of a network device, "
                                                                      "Gb/s (unset: the net_gbps of the node's profile)")
    include_static: bool = Field(default=False, description="also judge the speeds static files state")


def check(context, params: Parameters) -> Iterator[Hit]:
    if params.min_gbps is None:
        return
    for topology in context.node.topologies:
        if topology.kind == "static" and not params.include_static:
            continue
        for nic in topology.nics:
            for net in nic.nets:
                if net.speed_mbps is None or net.speed_mbps <= 0:
                    continue  # unknown speed: TOPO002's business
                gbps = net.speed_mbps / 1000
                if gbps >= params.min_gbps:
                    continue
                name = net.name or nic.bus_id or "net"
                yield Hit(
                    entity=nic_entity(context.node.name, name, net.port),
                    location=net.loc,
                    fields={"net": name, "gbps": f"{gbps:g}"},
                    evidence=[f"{where(net.loc)}: net {name} speed={net.speed_mbps} (Mb/s)"],
                )

