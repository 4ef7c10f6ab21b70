"""Helpers the topology checks share: labels and locations of GPUs and NICs."""

from __future__ import annotations

from functools import lru_cache

from topolint.checks._memo import per_node
from topolint.engine.finding import Related
from topolint.model.facts import Gpu, TopologyFile
from topolint.model.node import gpu_entity, nic_entity
from topolint.model.numbers import hex_int


def numa_of(topology: TopologyFile, cpu_index: int) -> str:
    numa = topology.cpus[cpu_index].numa_id
    return str(numa) if numa is not None else "?"


def gpu_label(gpu: Gpu) -> str:
    return f"GPU {gpu.dev}" if gpu.dev is not None else f"GPU {gpu.bus_id}"


def gpu_sort_key(gpu: Gpu) -> tuple:
    return (gpu.dev if gpu.dev is not None else 1 << 30, gpu.bus_id)


def gpu_fields(topology: TopologyFile, gpu: Gpu) -> dict:
    return {
        "gpu": gpu_label(gpu),
        "gpu_bus": gpu.bus_id,
        "gpu_numa": numa_of(topology, gpu.cpu_index),
    }


def net_entity(node: str, system, net: tuple) -> str:
    nic, fact = system.nets[net]
    return nic_entity(node, fact.name or nic.bus_id or "nic", fact.port)


def net_related(node: str, system, net: tuple, message: str, via: tuple[str, ...] | None = None) -> Related:
    """``net`` as a related line; ``via``: it ends the path the finding is about (Related.via)."""
    _, fact = system.nets[net]
    return Related(location=fact.loc, entity=net_entity(node, system, net), message=message, via=via)


def where(loc) -> str:
    return f"{loc.path}:{loc.line}"


# ---- PCI identity and the PCIe tree (NUMA002, PCIE004, PCIE005) ---------------------------------
HYPERVISOR_BRIDGES = {"0x104c:0x8232"}  # TI bridge that hypervisors (IBM Cloud VSI, KVM) present


def pci_id(pci) -> str | None:
    """``0xvvvv:0xdddd`` (lower case, 4 hex digits each), or None when either is missing."""
    return _pci_id(pci.vendor, pci.device)


@lru_cache(maxsize=1024)  # a cluster has few device models; PCIE004, NVL001 and NUMA002 ask every device's
def _pci_id(vendor_text: str | None, device_text: str | None) -> str | None:
    vendor, device = hex_int(vendor_text), hex_int(device_text)
    return None if vendor is None or device is None else f"0x{vendor:04x}:0x{device:04x}"


def is_hypervisor_bridge(pci) -> bool:
    return pci.kind == "bridge" and pci_id(pci) in HYPERVISOR_BRIDGES


def pci_ancestors(pci_by_bus: dict, pci) -> list:
    """The bridges above ``pci``, nearest first."""
    found, parent = [], pci.parent_bus_id
    while parent is not None and parent in pci_by_bus and len(found) < 64:
        found.append(pci_by_bus[parent])
        parent = pci_by_bus[parent].parent_bus_id
    return found


def nearest_fabric_net(system, gpu: Gpu, fabric: list) -> tuple | None:
    """The fabric NET a GPU reaches best before PXN: most bandwidth, then the best type, as
    src/graph/topo.cc ncclTopoGetLocal ranks them (a 400G NIC at PHB beats a 100G one at PIX)."""
    raw = system.raw_paths[gpu.bus_id]
    reachable = [(-raw[n].bw, system.version.rank(raw[n].type), n) for n in fabric if n in raw]
    return min(reachable)[2] if reachable else None


def fabric_nearest(context, system) -> tuple[list, dict[str, tuple | None]]:
    """The system's fabric NETs and each GPU's nearest_fabric_net (by bus id), once per node:
    NUMA001 and NUMA002 ask both of every GPU."""
    def answer():
        fabric = [net for net in system.nets if system.is_fabric(net)]
        nearest = {gpu.bus_id: nearest_fabric_net(system, gpu, fabric) for gpu in system.topology.gpus} \
            if fabric else {}
        return fabric, nearest

    return per_node(context.shared, "fabric_nearest", system, answer)


def gpu_nic_hit(node: str, topology: TopologyFile, system, gpu: Gpu, net: tuple, path_note: str):
    """The Hit both GPU-to-NIC placement rules start from: fields, evidence and the NIC's line."""
    from topolint.engine.finding import Hit

    nic, fact = system.nets[net]
    fields = {
        **gpu_fields(topology, gpu),
        "nic": system.net_label(net),
        "nic_numa": numa_of(topology, nic.cpu_index),
        "path": system.raw_paths[gpu.bus_id][net].type,
    }
    evidence = [
        f"{where(gpu.loc)}: {gpu_label(gpu)} ({gpu.bus_id}) is under cpu numaid={fields['gpu_numa']}",
        f"{where(fact.loc)}: {fields['nic']} is under cpu numaid={fields['nic_numa']}{path_note}",
    ]
    return Hit(
        entity=gpu_entity(node, gpu.bus_id),
        location=gpu.loc,
        fields=fields,
        evidence=evidence,
        related=[net_related(node, system, net, f"nearest NIC {fields['nic']}", via=())],
    )


def hwloc_context(context):
    """The context with the node's hwloc exports as topologies (model/hwloc_topology.py), for a
    node with no NCCL XML; None when there is nothing to derive."""
    if context.node.topologies or not context.node.hwloc:
        return None
    if "hwloc" not in context.shared:
        import copy
        import dataclasses

        from topolint.model.hwloc_topology import derived_topology

        derived = [t for t in (derived_topology(h) for h in context.node.hwloc) if t is not None]
        view = copy.copy(context)
        view.node = dataclasses.replace(context.node, topologies=derived)
        context.shared["hwloc"] = view if derived else None
    return context.shared["hwloc"]


def _from_hwloc(hit, nvlinks: bool = False):
    if nvlinks:  # its NVLinkBandwidth matrix (model/hwloc_nvlink.py)
        hit.evidence.append("from an hwloc export (no NCCL dump on this node): the PCI tree, NUMA locality and "
                            "NVLinks are what NCCL reads too; GDR is not in it")
    else:
        hit.evidence.append("from an hwloc export (no NCCL dump on this node): the PCI tree and NUMA locality are "
                            "what NCCL reads too; NVLinks and GDR are not in it, so no PXN route is considered")
    if hit.severity is None:
        hit.severity = "warning"  # a PXN route through an NVLink peer cannot be ruled out
    return hit


def xml_then_matrix(context, xml_hits, matrix_hits):
    """Hits from the NCCL XML (or an hwloc export standing in for it), then from nvidia-smi
    matrices for GPUs it did not cover. A node with an NCCL dump needs no matrix: NCCL's own view
    is the better witness."""
    entities = set()
    for hit in xml_hits(context):
        entities.add(hit.entity)
        yield hit
    derived = hwloc_context(context)
    nvlinks = derived is not None and any(g.nvlinks for t in derived.node.topologies for g in t.gpus)
    for hit in xml_hits(derived) if derived is not None else ():
        entities.add(hit.entity)
        yield _from_hwloc(hit, nvlinks)
    if any(t.kind == "dump" for t in context.node.topologies):
        return
    for hit in matrix_hits(context):
        if hit.entity not in entities:
            yield hit
