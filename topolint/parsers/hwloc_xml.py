"""hwloc / lstopo XML exports (``lstopo --of xml``): NUMA nodes, the PCI tree and OS devices
(GPUs as CUDA/NVML devices, NICs as OpenFabrics / network devices).

The file carries a DOCTYPE; it is parsed by parsers/xmlsafe.py with DTD loading, entities and
the network off. An I/O object's NUMA locality is the nodeset of its nearest non-I/O ancestor
(hwloc attaches host bridges under the Package or NUMA group they are local to). Elements are
visited once in document order; each ancestor walk is bounded by libxml2's depth limit.
"""

from __future__ import annotations

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.host import HwlocObject, HwlocTopology
from topolint.model.numbers import CpuSet, decimal, decimal_fraction, hwloc_bitmap, pci_address
from topolint.parsers.xmlsafe import parse_xml

_IO_TYPES = {"Bridge", "PCIDev", "OSDev", "Misc"}
# osdev_type: an enum up to hwloc 2 (hwloc_obj_osdev_type_e), a bit mask from hwloc 3 (first match wins).
_OSDEV_ENUM = {0: "storage", 1: "gpu", 2: "network", 3: "openfabrics", 4: "dma", 5: "coproc"}
_OSDEV_BITS = ((1 << 5, "openfabrics"), (1 << 4, "network"), (1 << 3, "coproc"), (1 << 2, "gpu"),
               (1 << 6, "dma"), (1 << 1, "memory"), (1 << 0, "storage"))
MAX_ANCESTORS = 512
# NUMA ids listed per nodeset: above any shipping machine (32 sockets with HBM and CXL nodes stay
# far below). A nodeset may name 65,536 nodes in 22 KB; listing them for every I/O object below it
# took 71 s and 1.3 GB for a 47 KB file. Lists are built once per nodeset and shared.
MAX_LISTED_NODES = 256


def _loc(source: SourceFile, element) -> Location:
    return build(Location, path=source.path, line=max(element.sourceline or 1, 1), column=1)


def _node_ids(nodeset: str, listed: dict[str, list[int]]) -> list[int]:
    """The first MAX_LISTED_NODES NUMA ids of an hwloc nodeset, one shared list per nodeset text."""
    ids = listed.get(nodeset)
    if ids is None:
        ids = []
        for low, high in (hwloc_bitmap(nodeset) or CpuSet()).intervals:
            ids.extend(range(low, min(high + 1, low + MAX_LISTED_NODES - len(ids))))
            if len(ids) >= MAX_LISTED_NODES:
                break
        listed[nodeset] = ids
    return ids


def _locality(element, listed: dict[str, list[int]]) -> tuple[list[int], str | None]:
    """(NUMA node ids, cpuset) of the nearest ancestor that is not an I/O object."""
    parent = element.getparent()
    for _ in range(MAX_ANCESTORS):
        if parent is None or parent.tag != "object":
            return [], None
        if parent.get("type") not in _IO_TYPES and parent.get("nodeset"):
            return _node_ids(parent.get("nodeset"), listed), parent.get("cpuset")
        parent = parent.getparent()
    return [], None


def _pci_parent(element) -> str | None:
    parent = element.getparent()
    for _ in range(MAX_ANCESTORS):
        if parent is None or parent.tag != "object":
            return None
        if parent.get("pci_busid"):
            return pci_address(parent.get("pci_busid"))
        parent = parent.getparent()
    return None


def _osdev_class(value: str | None, bitmask: bool) -> str | None:
    number = decimal(value)
    if number is None:
        return None
    if not bitmask:
        return _OSDEV_ENUM.get(number)
    return next((name for bit, name in _OSDEV_BITS if number & bit), None)


def _object(source: SourceFile, element, kind: str, listed: dict[str, list[int]], bitmask: bool = True) -> HwlocObject:
    nodes, cpuset = _locality(element, listed) if kind in _IO_TYPES else ([], element.get("cpuset"))
    busid = pci_address(element.get("pci_busid")) if element.get("pci_busid") else None
    speed = element.get("pci_link_speed")
    return build(HwlocObject, kind=kind, index=decimal(element.get("os_index")), name=element.get("name"),
                 subtype=element.get("subtype"), bus_id=busid if kind != "OSDev" else _pci_parent(element),
                 parent_bus_id=_pci_parent(element) if kind in ("Bridge", "PCIDev") else None,
                 osdev_class=_osdev_class(element.get("osdev_type"), bitmask) if kind == "OSDev" else None,
                 pci_type=element.get("pci_type"), link_speed_gbs=decimal_fraction(speed) if speed else None,
                 numa_nodes=nodes, cpuset=cpuset, loc=_loc(source, element))


def parse_hwloc(source: SourceFile) -> HwlocTopology:
    root = parse_xml(source.path, source.text)
    if root.tag != "topology":
        raise InputError(source.path, max(root.sourceline or 1, 1), f"malformed hwloc XML: root <{root.tag}>, "
                                                                    "expected <topology>")
    numa, pci, os_devices, listed = [], [], [], {}
    bitmask = not (root.get("version") or "").startswith(("1.", "2."))
    for element in root.iter("object"):
        kind = element.get("type")
        if kind == "NUMANode":
            numa.append(_object(source, element, kind, listed))
        elif kind in ("Bridge", "PCIDev") and element.get("pci_busid"):
            pci.append(_object(source, element, kind, listed))
        elif kind == "OSDev":
            os_devices.append(_object(source, element, kind, listed, bitmask))
    return build(HwlocTopology, path=source.path, version=root.get("version"), numa_nodes=numa, pci=pci,
                 os_devices=os_devices, loc=_loc(source, root))
