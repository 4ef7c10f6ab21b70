"""PCIE005: NICs under a PCI switch, fed by GPUs outside it, need more than the switch's uplink.

A rule about the node: it reads the completed topology (model/completion.py), so a static file's
NICs carry the rate the node's ports report, and the evidence names that port report."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import silent_on_files_nccl_refuses
from topolint.checks._topology import (
    gpu_label,
    is_hypervisor_bridge,
    net_entity,
    net_related,
    pci_ancestors,
    where,
)
from topolint.engine.finding import Hit, Related
from topolint.model.node import gpu_entity, pci_entity
from topolint.model.numbers import hex_int
from topolint.model.pcie import link_bandwidth_gbs, nccl_width, speed_value

NEEDS = ("topology",)


class Parameters(CheckParameters):
    pass


def synthetic(pci) -> bool:
    """Switches that files invent to group devices (Azure's ffff:ff:0N.0), not hardware."""
    if pci.bus_id.startswith("ffff:ff"):
        return True
    return hex_int(pci.vendor) in (0x0000, 0xFFFF)


def stated_width(pci) -> int | None:
    width = nccl_width(pci.link_width)
    return width if width is not None and width > 0 else None


def gbps(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.3g}"


@silent_on_files_nccl_refuses("PCIE005")
def check(context, params: Parameters) -> Iterator[Hit]:
    version = context.version
    node = context.node.name
    for stated in context.node.topologies:
        done = context.completion(stated)
        topology = done.topology
        pci_by_bus = topology.pci_by_bus()
        bridges = [p for p in topology.pci if p.kind == "bridge"]
        if not bridges or not topology.nics or not topology.gpus:
            continue
        system = context.system(topology)
        above = {p.bus_id: {a.bus_id for a in pci_ancestors(pci_by_bus, p)} for p in topology.pci}
        nearest = {bus: system.nearest_nets(gpu) for bus, gpu in system.gpus.items()}
        for switch in bridges:
            if synthetic(switch) or is_hypervisor_bridge(switch):
                continue
            width = stated_width(switch)
            if width is None or speed_value(switch.link_speed, version) is None:
                continue  # no stated uplink
            uplink = link_bandwidth_gbs(switch.link_speed, switch.link_width, version) * 8

            def inside(bus: str | None) -> bool:
                return bus is not None and switch.bus_id in above.get(bus, ())

            used: dict[tuple, set[str]] = {}  # net -> outside GPUs feeding it
            for bus, nets in nearest.items():
                if inside(bus):
                    continue
                for net, path in nets:
                    nic, fact = system.nets[net]
                    feeder = path.proxy_gpu if path.type == "PXN" and path.proxy_gpu else bus
                    if inside(nic.bus_id) and not inside(feeder) and fact.speed_mbps and fact.speed_mbps > 0:
                        used.setdefault(net, set()).add(bus)
            if not used:
                continue
            per_nic: dict[str, list[tuple]] = {}
            for net in used:
                per_nic.setdefault(system.nets[net][0].bus_id, []).append(net)
            total, nic_parts = 0.0, []
            for nic_bus, nets in sorted(per_nic.items()):
                rate = sum(system.nets[n][1].speed_mbps for n in nets) / 1000.0
                nic_pci = pci_by_bus.get(nic_bus)
                if nic_pci is not None and stated_width(nic_pci) and speed_value(nic_pci.link_speed, version):
                    rate = min(rate, link_bandwidth_gbs(nic_pci.link_speed, nic_pci.link_width, version) * 8)
                total += rate
                nic_parts.append((nic_bus, nets, rate))
            if total <= uplink:
                continue
            gpus = sorted({b for feeders in used.values() for b in feeders},
                          key=lambda b: (system.gpus[b].dev if system.gpus[b].dev is not None else 1 << 30, b))
            nic_names = [system.net_label(n) for _, nets, _ in nic_parts for n in sorted(nets)]
            fields = {
                "switch": switch.bus_id,
                "uplink_speed": switch.link_speed,
                "uplink_width": width,
                "uplink_gbps": gbps(uplink),
                "nics": ", ".join(nic_names),
                "nic_desc": ("NIC " if len(nic_names) == 1 else "NICs ") + ", ".join(nic_names),
                "nic_gbps": gbps(total),
                "gpus": ", ".join(gpu_label(system.gpus[b]) for b in gpus),
                "gpu_count": len(gpus),
            }
            evidence = [
                f"{where(switch.loc)}: PCI switch {switch.bus_id} link_speed=\"{switch.link_speed}\" "
                f"link_width=\"{switch.link_width}\" = {gbps(uplink)} Gb/s to its parent"
            ]
            for nic_bus, nets, rate in nic_parts:
                names = ", ".join(system.net_label(n) for n in sorted(nets))
                feeders = sorted({b for n in nets for b in used[n]})
                evidence.append(
                    f"{names} ({nic_bus}, {gbps(rate)} Gb/s) is under {switch.bus_id} and is the nearest NIC of "
                    + ", ".join(f"{gpu_label(system.gpus[b])} ({b})" for b in feeders)
                    + ", outside the switch"
                )
                evidence += [f"not in the file: {a.text()}" for n in sorted(nets)
                             for a in done.assumed(net_entity(node, system, n)) if a.field in ("speed", "net")]
            related = [net_related(node, system, n, f"NIC {system.net_label(n)} under {switch.bus_id}")
                       for _, nets, _ in nic_parts for n in sorted(nets)]
            related += [Related(location=system.gpus[b].loc, entity=gpu_entity(node, b),
                                message=f"{gpu_label(system.gpus[b])} outside {switch.bus_id} uses its NICs")
                        for b in gpus]
            yield Hit(
                entity=pci_entity(node, switch.bus_id),
                location=switch.loc,
                fields=fields,
                evidence=evidence,
                related=related,
            )
