"""TOPO004: more XML nodes, or more children of one element, than NCCL's parser holds.

NCCL loads the file into a fixed array (src/graph/xml.cc xmlLoadSub): before it reads each
token it fails with "XML parser is limited to N nodes" once it holds N nodes, so a file of N
elements is already refused; an element may have at most MAX_SUBS children ("limited to N
subnodes"). Only elements NCCL's grammar knows count: unknown ones are skipped unstored. Limits
depend on the NCCL version (nccl-formats.md 1.2).
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._topology import gpu_label
from topolint.engine.finding import Hit
from topolint.model.facts import Location, TopologyFile
from topolint.model.node import cpu_entity, gpu_entity, pci_entity

NEEDS = ("topology",)

# The elements NCCL's topology grammar stores (system > cpu > pci/nic, pci > pci/gpu/nic/pcilink,
# gpu > nvlink/c2c, nic > net).
KNOWN_TAGS = {"system", "cpu", "pci", "gpu", "nvlink", "c2c", "nic", "net", "pcilink"}


class Parameters(CheckParameters):
    pass


def _owner(node: str, topology: TopologyFile, tag: str, loc: Location) -> tuple[str, str]:
    """Label and entity of the element at ``loc``."""
    key = (loc.line, loc.column)
    if tag == "pci":
        for pci in topology.pci:
            if (pci.loc.line, pci.loc.column) == key:
                return f"pci {pci.bus_id}", pci_entity(node, pci.bus_id)
    if tag == "cpu":
        for cpu in topology.cpus:
            if (cpu.loc.line, cpu.loc.column) == key:
                numa = cpu.numa_id if cpu.numa_id is not None else "?"
                return f"cpu numaid={numa}", cpu_entity(node, cpu.numa_id, cpu.index)
    if tag == "gpu":
        for gpu in topology.gpus:
            if (gpu.loc.line, gpu.loc.column) == key:
                return f"{gpu_label(gpu)} ({gpu.bus_id})", gpu_entity(node, gpu.bus_id)
    if tag == "nic":
        for nic in topology.nics:
            if (nic.loc.line, nic.loc.column) == key and nic.bus_id:
                return f"nic of pci {nic.bus_id}", pci_entity(node, nic.bus_id)
    return f"<{tag}>", f"{node}/system"


def _stored(topology: TopologyFile) -> int:
    return sum(1 for stat in topology.elements if stat.tag in KNOWN_TAGS)


def past_limits(topology: TopologyFile, version) -> str | None:
    """Why NCCL ``version`` would not load ``topology`` (this rule's limits), or None. The runner
    runs no other rule of the node on such a file: NCCL refuses it, so nothing else about it
    matters, and no rule pays all-pairs cost past the sizes NCCL itself holds."""
    counted = _stored(topology)
    if counted >= version.max_xml_nodes:
        return f"{counted} XML nodes, NCCL {version} holds fewer than {version.max_xml_nodes}"
    for stat in topology.elements:
        if stat.tag in KNOWN_TAGS and stat.child_count > version.max_xml_children:
            return (f"<{stat.tag}> on line {stat.loc.line} has {stat.child_count} child elements, "
                    f"NCCL {version} holds {version.max_xml_children}")
    return None


def check(context, params: Parameters) -> Iterator[Hit]:
    node, version = context.node.name, context.version
    max_nodes, max_children = version.max_xml_nodes, version.max_xml_children
    for topology in context.node.topologies:
        counted = _stored(topology)
        if counted >= max_nodes:
            yield Hit(
                entity=f"{node}/system",
                location=topology.system_loc,
                variant="nodes",
                fields={"count": counted, "max": max_nodes, "max_ok": max_nodes - 1, "nccl_version": str(version)},
                evidence=[
                    f"{topology.path}: {counted} elements NCCL stores "
                    f"({', '.join(sorted(KNOWN_TAGS))}), {topology.element_count} in all",
                    f"NCCL {version}: the topology XML has room for {max_nodes} nodes and the parser "
                    f"fails as soon as it is full",
                ],
            )
        for stat in topology.elements:
            if stat.tag in KNOWN_TAGS and stat.child_count > max_children:
                label, entity = _owner(node, topology, stat.tag, stat.loc)
                yield Hit(
                    entity=entity,
                    location=stat.loc,
                    variant="children",
                    fields={"element": label, "count": stat.child_count, "max": max_children,
                            "nccl_version": str(version)},
                    evidence=[f"{stat.loc.path}:{stat.loc.line}: {label} has {stat.child_count} child elements",
                              f"NCCL {version}: MAX_SUBS = {max_children}"],
                )
