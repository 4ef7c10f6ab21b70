"""PCIE004: a GPU or NIC of a known model sits on a PCIe link slower than it supports (from dumps, and
from lspci's LnkCap of both ends: checks/_lspci_slow.py)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import describes_the_file_as_written
from topolint.checks._topology import (
    gpu_label,
    is_hypervisor_bridge,
    numa_of,
    pci_ancestors,
    pci_id,
    where,
)
from topolint.engine.finding import Hit
from topolint.model.devices import DEVICES, known_devices  # noqa: F401 (re-exported)
from topolint.model.node import gpu_entity, nic_entity, pci_entity
from topolint.model.pcie import GT_PER_GENERATION, generation, nccl_width

NEEDS = ("topology-dump or lspci",)


class Parameters(CheckParameters):
    pass


def _label(topology, system_gpus: dict, pci) -> tuple[str, str]:
    """A label for the device and its entity id's kind-specific part."""
    if pci.kind == "gpu":
        gpu = system_gpus.get(pci.bus_id)
        return (gpu_label(gpu) if gpu is not None else f"GPU {pci.bus_id}"), "gpu"
    names = [n.name for nic in topology.nics if nic.bus_id == pci.bus_id for n in nic.nets if n.name]
    return (f"NIC {'/'.join(names)}" if names else f"NIC {pci.bus_id}"), "nic"


@describes_the_file_as_written
def check(context, params: Parameters) -> Iterator[Hit]:
    devices = known_devices()
    for lspci in context.node.lspci:
        from topolint.checks._host import lspci_unjudged

        context.notes.extend(lspci_unjudged(lspci, "GPU and NIC link capabilities"))
        if lspci.kind in ("verbose", "excerpt"):
            from topolint.checks._host import pci_tree
            from topolint.checks._lspci_slow import lspci_hits

            yield from lspci_hits(context.node.name, pci_tree(context, lspci), devices)
    version = context.version
    node = context.node.name
    for topology in context.node.topologies:
        if topology.kind != "dump":  # a static file's link values are claims, not measurements
            context.notes.append(f"{topology.path}: a static topology file states link values, NCCL did not read "
                                 "them from the system: not judged")
            continue
        pci_by_bus = topology.pci_by_bus()
        gpus = {g.bus_id: g for g in topology.gpus}
        for pci in topology.pci:
            if pci.kind not in ("gpu", "nic"):
                continue
            model = devices.get(pci_id(pci) or "")
            if model is None or model.get("kind") != pci.kind:
                continue
            gen, width = generation(pci.link_speed, version), nccl_width(pci.link_width)
            if gen is None or not width:
                continue  # unknown/empty speed is TOPO002; width 0 is a virtual (VM) link
            want_gen, want_lanes = int(model["pcie_gen"]), int(model["lanes"])
            slow_speed, narrow = gen < want_gen, width < want_lanes
            if not slow_speed and not narrow:
                continue
            if any(is_hypervisor_bridge(b) for b in pci_ancestors(pci_by_bus, pci)):
                continue  # behind a hypervisor's virtual bridge the link values are made up
            label, kind = _label(topology, gpus, pci)
            fields = {
                "device": label,
                "bus": pci.bus_id,
                "model": model["name"],
                "numa": numa_of(topology, pci.cpu_index),
                "speed": pci.link_speed,
                "width": width,
                "gen": gen,
                "want_gen": want_gen,
                "want_speed": f"{GT_PER_GENERATION[want_gen]} GT/s",
                "want_lanes": want_lanes,
            }
            evidence = [
                f"{where(pci.loc)}: {pci.bus_id} vendor={pci.vendor} device={pci.device} ({model['name']}) "
                f"link_speed=\"{pci.link_speed}\" link_width=\"{pci.link_width}\"",
                f"{model['name']} supports PCIe Gen{want_gen} x{want_lanes} (topolint/data/pci_devices.toml)",
                f"{topology.path} is an NCCL topology dump: link values are what NCCL read from the system",
            ]
            parent = pci_by_bus.get(pci.parent_bus_id or "")
            if parent is not None and generation(parent.link_speed, version):
                evidence.append(f"{where(parent.loc)}: the bridge above, {parent.bus_id}, links at "
                                f"\"{parent.link_speed}\" x{parent.link_width}")
            if kind == "gpu":
                entity = gpu_entity(node, pci.bus_id)
            else:
                nets = [n for nic in topology.nics if nic.bus_id == pci.bus_id for n in nic.nets if n.name]
                entity = nic_entity(node, nets[0].name, nets[0].port) if nets else pci_entity(node, pci.bus_id)
            hit = Hit(entity=entity, location=pci.loc, fields=fields, evidence=evidence)
            if kind == "gpu" and not narrow:
                hit.variant, hit.severity = "gpu_speed", "info"
                hit.evidence.append("GPUs lower their link speed when idle; a full-width link at a lower "
                                    "speed may be power saving")
            elif narrow:
                hit.variant = "width"
            yield hit
