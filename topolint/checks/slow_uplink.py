"""TOPO003: a PCIe bridge's own link is slower than a device directly below it.

NCCL gives every PCI link width x speed / 80 GB/s (src/graph/topo.cc ncclTopoAddPci), with its
misreads applied (unknown speed = Gen3, width 0 = x16), and a path's bandwidth is the minimum
over its links: every path that leaves the bridge upwards (to the CPU, to NICs and GPUs under
other bridges) is capped at the bridge's link. Bridges whose file states no link_speed are
skipped (a static file leaves them for NCCL to fill in), and so are children without one.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import describes_the_file_as_written
from topolint.checks._topology import where
from topolint.engine.finding import Hit, Related
from topolint.model.facts import PciDevice
from topolint.model.node import pci_entity
from topolint.model.pcie import link_bandwidth_gbs, read_speed, read_width, speed_value

NEEDS = ("topology",)

_GT = {15: "2.5", 30: "5.0", 60: "8.0", 120: "16.0", 240: "32.0", 480: "64.0"}


class Parameters(CheckParameters):
    pass


def describe_link(pci: PciDevice, version) -> str:
    """The link as the file states it, with what NCCL reads where the two differ."""
    speed, width = pci.link_speed, pci.link_width
    text = f'"{speed}" x{width if width is not None else "?"}'
    notes = []
    if speed_value(speed, version) is None:
        notes.append(f"speed read as {_GT[read_speed(speed, version)]} GT/s")
    if width is None or str(read_width(width)) != width.strip():
        notes.append(f"width read as x{read_width(width)}")
    return text + (f" ({', '.join(notes)})" if notes else "")


def _gbs(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _label(pci: PciDevice) -> str:
    names = {"gpu": "GPU", "nic": "NIC", "bridge": "bridge", "nvswitch": "NVSwitch"}
    return f"{names.get(pci.kind, 'device')} {pci.bus_id}"


@describes_the_file_as_written
def check(context, params: Parameters) -> Iterator[Hit]:
    node, version = context.node.name, context.version
    for topology in context.node.topologies:
        children: dict[str, list[PciDevice]] = {}
        for pci in topology.pci:
            if pci.parent_bus_id is not None:
                children.setdefault(pci.parent_bus_id, []).append(pci)
        for bridge in topology.pci:
            if bridge.kind != "bridge" or bridge.link_speed is None:
                continue
            own = link_bandwidth_gbs(bridge.link_speed, bridge.link_width, version)
            faster = [
                (link_bandwidth_gbs(child.link_speed, child.link_width, version), child)
                for child in children.get(bridge.bus_id, [])
                if child.link_speed is not None
            ]
            faster = [(bw, child) for bw, child in faster if bw > own]
            if not faster:
                continue
            best_bw, best = max(faster, key=lambda item: item[0])  # max keeps the first of equals
            others = len(faster) - 1
            yield Hit(
                entity=pci_entity(node, bridge.bus_id),
                location=bridge.loc,
                fields={
                    "bridge": bridge.bus_id,
                    "bridge_link": describe_link(bridge, version),
                    "bridge_gbs": _gbs(own),
                    "child": _label(best),
                    "child_bus": best.bus_id,
                    "child_link": describe_link(best, version),
                    "child_gbs": _gbs(best_bw),
                    "child_speed": best.link_speed or "32.0 GT/s PCIe",
                    "child_width": read_width(best.link_width),
                    "others": f" (and {others} more device{'s' if others > 1 else ''})" if others else "",
                    "nccl_version": str(version),
                },
                evidence=[
                    f"{where(bridge.loc)}: bridge {bridge.bus_id} link {describe_link(bridge, version)} "
                    f"= {_gbs(own)} GB/s to NCCL {version}"
                ] + [
                    f"{where(child.loc)}: {_label(child)} link {describe_link(child, version)} = {_gbs(bw)} GB/s"
                    for bw, child in faster
                ],
                related=[Related(location=best.loc, entity=pci_entity(node, best.bus_id),
                                 message=f"{_label(best)} links at {_gbs(best_bw)} GB/s")],
            )
