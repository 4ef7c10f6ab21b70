"""NET006: a config that sets NCCL variables leaves NCCL_SOCKET_IFNAME unset while the --topology
node's fabric is RoCE (an Active Ethernet RDMA port in ibstat/ibv_devinfo).

Unset, NCCL takes ``ib*`` interfaces first, then any but docker, lo and virbr (src/misc/socket.cc
``ncclFindInterfaces``): on RoCE there is no ``ib*``, so the first other interface wins, often a
management or container network.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric_nodes, matches_iflist, running_address, unset_hit, where
from topolint.engine.finding import Hit

NEEDS = ("config", "ports")
# What --verbose says when they are missing.
NEEDS_HELP = {"ports": "no port facts: give --topology a node folder with `ibstat` or `ibv_devinfo` output"}


class Parameters(CheckParameters):
    pass


def _default_choice(view) -> str | None:
    """The interface NCCL would pick unset, from ip addr (ib* first, then not docker/lo/virbr), in the
    order ip lists them (getifaddrs order)."""
    for prefix in ("ib", "^docker,lo,virbr"):
        for name, interface in view.interfaces.items():  # getifaddrs order: the order ip prints
            if matches_iflist(prefix, name) and running_address(interface)[0]:
                return name
    return None


def check(context, params: Parameters) -> Iterator[Hit]:
    roce = [(node, view) for node, view in fabric_nodes(context)
            if any(p.active and p.link_layer == "ethernet" for p in view.ports.values())]
    if not roce:
        return
    node, view = roce[0]
    port = next(p for p in view.ports.values() if p.active and p.link_layer == "ethernet")
    for config in context.configs:
        if any(s.name == "NCCL_SOCKET_IFNAME" for s in config.settings):
            continue
        hit = unset_hit(config, "NCCL_SOCKET_IFNAME", node=node.name, hca=port.hca,
                        netdev=port.netdev or "the RoCE netdev")
        if hit is None:
            continue
        report = port.report_with("link_layer")
        hit.evidence.append(f"{where(report.at('link_layer'))}: {port.label} is Active with link layer Ethernet "
                            f"(RoCE) on node {node.name}")
        choice = _default_choice(view)
        if choice:
            hit.evidence.append(f"unset, NCCL would bootstrap over {choice} (ib* first, then the first interface "
                                "that is not docker, lo or virbr)")
        yield hit
