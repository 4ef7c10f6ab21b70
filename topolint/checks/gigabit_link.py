"""NET005: a network link at 1 Gb/s or less in an NCCL topology dump."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._topology import net_entity, numa_of, where
from topolint.engine.finding import Hit, Related
from topolint.model.node import nic_entity

NEEDS = ("topology-dump",)
GIGABIT_MBPS = 1000


class Parameters(CheckParameters):
    pass


def rate(mbps: int) -> str:
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps} Mb/s"


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    dumps = [t for t in context.node.topologies if t.kind == "dump"]  # a static file's speed is a claim
    faster = [
        (topology, nic, net)
        for topology in dumps
        for nic in topology.nics
        for net in nic.nets
        if net.speed_mbps is not None and net.speed_mbps > GIGABIT_MBPS
    ]
    for topology in dumps:
        system = None
        for nic in topology.nics:
            for net in nic.nets:
                if net.speed_mbps is None or not 0 < net.speed_mbps <= GIGABIT_MBPS:
                    continue  # missing or <= 0 reads as 10 Gb/s in NCCL: TOPO002
                if system is None:
                    system = context.system(topology)
                key = next(k for k, (n, f) in system.nets.items() if f is net)
                fields = {
                    "net": system.net_label(key),
                    "bus": nic.bus_id or "no PCI device",
                    "numa": numa_of(topology, nic.cpu_index),
                    "rate": rate(net.speed_mbps),
                    "speed": net.speed_mbps,
                }
                evidence = [f"{where(net.loc)}: net name=\"{net.name}\" speed=\"{net.speed_mbps}\" (Mb/s) in an "
                            f"NCCL topology dump, the rate NCCL read from the network plugin"]
                hit = Hit(entity=net_entity(node, system, key), location=net.loc, fields=fields, evidence=evidence)
                if faster:
                    best = max(faster, key=lambda item: item[2].speed_mbps)
                    names = sorted({f.name or "?" for _, _, f in faster})
                    hit.variant, hit.severity = "beside_faster", "info"
                    hit.fields["faster"] = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
                    hit.fields["faster_rate"] = rate(best[2].speed_mbps)
                    hit.evidence.append(f"{len(faster)} faster net(s) on the node, up to {rate(best[2].speed_mbps)}: "
                                        f"{hit.fields['faster']}")
                    hit.related = [Related(location=best[2].loc,
                                           entity=nic_entity(node, best[2].name or "nic", best[2].port),
                                           message=f"faster link {best[2].name} ({rate(best[2].speed_mbps)})")]
                else:
                    hit.evidence.append("no faster network link is known for this node: NCCL's inter-node "
                                        "traffic runs over this one")
                yield hit
