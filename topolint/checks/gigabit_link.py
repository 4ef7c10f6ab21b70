"""NET005: a network link at 1 Gb/s or less: an NCCL topology dump's net speed, an ethtool speed,
or an Active port's rate. Info beside faster links (a management port), an error when it is the
only link known or NCCL_SOCKET_IFNAME selects it. "Only link known" is never concluded when an
RDMA tool said it failed: the fabric may be there unseen."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, link_rate, literal_env, matches_iflist
from topolint.checks._topology import net_entity, numa_of, where
from topolint.engine.finding import Hit, Related
from topolint.model.fabric import netdev_entity
from topolint.model.node import nic_entity

NEEDS = ("link speeds",)
GIGABIT_MBPS = 1000


class Parameters(CheckParameters):
    pass


def rate(mbps: int) -> str:
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps} Mb/s"


def check(context, params: Parameters) -> Iterator[Hit]:
    yield from _dump_links(context)
    yield from _fabric_links(context)


def _faster_fabric(context) -> list[tuple[str, float, object]]:
    """(name, Mb/s, location) of ethtool links and Active ports faster than a gigabit."""
    view = fabric(context)
    found = [(link.interface or "?", float(link.speed_mbps), link.at("speed")) for link in view.ethtool_links
             if link.speed_mbps and link.speed_mbps > GIGABIT_MBPS and link.link_detected is not False]
    found += [(p.label, p.value("rate_gbps") * 1000, p.report_with("rate_gbps").at("rate")) for p in view.ports.values()
              if p.active and (p.value("rate_gbps") or 0) * 1000 > GIGABIT_MBPS]
    return sorted(found, key=lambda item: -item[1])


def _fabric_links(context) -> Iterator[Hit]:
    node = context.node.name
    view = fabric(context)
    faster = _faster_fabric(context)
    faster += [(n.name or "?", float(n.speed_mbps), n.loc) for t in context.node.topologies if t.kind == "dump"
               for nic in t.nics for n in nic.nets if n.speed_mbps and n.speed_mbps > GIGABIT_MBPS]
    selected = literal_env(context, "NCCL_SOCKET_IFNAME")
    for link in view.ethtool_links:
        if not link.speed_mbps or link.speed_mbps > GIGABIT_MBPS or link.link_detected is False:
            continue
        name = link.interface or "the interface"
        fields = {"net": name, "rate": rate(link.speed_mbps), "speed": link.speed_mbps}
        hit = Hit(entity=netdev_entity(node, link.interface or "?"), location=link.at("speed"), fields=fields,
                  variant="link", evidence=[f"{where(link.at('speed'))}: ethtool {name}: Speed: {link.speed_text}"])
        chosen = [s for s in selected if link.interface and matches_iflist(s.value, link.interface)]
        if chosen:
            hit.variant = "link_selected"
            hit.evidence.append(f"{where(chosen[0].loc)}: NCCL_SOCKET_IFNAME={chosen[0].value} selects {name}")
        elif faster:
            hit.variant, hit.severity = "link_beside_faster", "info"
            names = sorted({item[0] for item in faster})
            hit.fields["faster"] = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            hit.fields["faster_rate"] = link_rate(faster[0][1])
            hit.evidence.append(f"{where(faster[0][2])}: {faster[0][0]} runs at {link_rate(faster[0][1])}")
        elif view.tool_failures:
            continue  # the RDMA tools failed: a fabric may exist that no input shows
        else:
            hit.evidence.append("no faster network link is known for this node (no faster ethtool speed, Active "
                                "RDMA port or NCCL dump net): NCCL's inter-node traffic runs over this one")
        yield hit


def _dump_links(context) -> Iterator[Hit]:
    node = context.node.name
    dumps = [t for t in context.node.topologies if t.kind == "dump"]  # a static file's speed is a claim
    faster = [
        (topology, nic, net)
        for topology in dumps
        for nic in topology.nics
        for net in nic.nets
        if net.speed_mbps is not None and net.speed_mbps > GIGABIT_MBPS
    ]
    others = [(name, mbps, loc) for name, mbps, loc in _faster_fabric(context)]
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
                if not faster and others:
                    hit.variant, hit.severity = "beside_faster", "info"
                    hit.fields["faster"], hit.fields["faster_rate"] = others[0][0], link_rate(others[0][1])
                    hit.evidence.append(f"{where(others[0][2])}: {others[0][0]} runs at {link_rate(others[0][1])}")
                elif faster:
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
