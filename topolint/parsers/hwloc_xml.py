"""hwloc / lstopo XML exports (``lstopo --of xml``): NUMA nodes, the PCI tree and OS devices
(GPUs as CUDA/NVML devices, NICs as OpenFabrics / network devices).

The file carries a DOCTYPE; it is parsed by parsers/xmlsafe.py with DTD loading, entities and
the network off. An I/O object's NUMA locality is the nodeset of its nearest non-I/O ancestor
(hwloc attaches host bridges under the Package or NUMA group they are local to). Elements are
visited once in document order; each ancestor walk is bounded by libxml2's depth limit.

hwloc's ``NVLinkBandwidth`` matrix (hwloc >= 2.5, its NVML backend) is kept as written: the
objects its indexes name (``OSDev:802`` is the object with gp_index 802) and every nonzero
value off the diagonal, with the line and column of the value. The format is what hwloc's
importer accepts (hwloc/topology-xml.c hwloc__xml_import_distances): ``nbobjs`` indexes,
``nbobjs*nbobjs`` values in row order, spread over ``<indexes>`` / ``<u64values>`` elements of at
most ten (hwloc__xml_v2export_distances, EXPORT_ARRAY); a matrix that breaks it is TL001.
"""

from __future__ import annotations

import re
from functools import partial

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.host import HwlocBandwidth, HwlocNvlinkMatrix, HwlocObject, HwlocTopology
from topolint.model.numbers import CpuSet, decimal, decimal_fraction, hwloc_bitmap, hwloc_u64, pci_address
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


def _gpu_model(element) -> str | None:
    return next((info.get("value") for info in element.iterchildren("info") if info.get("name") == "GPUModel"), None)


def _object(source: SourceFile, element, kind: str, listed: dict[str, list[int]], bitmask: bool = True,
            strings: dict | None = None) -> HwlocObject:
    # Repeated values (types, subtypes, PCI types, cpusets) are one string each per parse
    # (``strings``): lxml makes a new one each read (issue 20).
    share = (strings if strings is not None else {}).setdefault
    nodes, cpuset = _locality(element, listed) if kind in _IO_TYPES else ([], element.get("cpuset"))
    busid = pci_address(element.get("pci_busid")) if element.get("pci_busid") else None
    speed = element.get("pci_link_speed")
    subtype, pci_type = element.get("subtype"), element.get("pci_type")
    return build(HwlocObject, kind=share(kind, kind), index=decimal(element.get("os_index")), name=element.get("name"),
                 subtype=subtype and share(subtype, subtype),
                 bus_id=busid if kind != "OSDev" else _pci_parent(element),
                 parent_bus_id=_pci_parent(element) if kind in ("Bridge", "PCIDev") else None,
                 osdev_class=_osdev_class(element.get("osdev_type"), bitmask) if kind == "OSDev" else None,
                 pci_type=pci_type and share(pci_type, pci_type),
                 link_speed_gbs=decimal_fraction(speed) if speed else None,
                 numa_nodes=nodes, cpuset=cpuset and share(cpuset, cpuset), gp_index=decimal(element.get("gp_index")),
                 gpu_model=_gpu_model(element) if kind == "OSDev" else None, loc=_loc(source, element))


def parse_hwloc(source: SourceFile) -> HwlocTopology:
    root = parse_xml(source.path, source.text)
    if root.tag != "topology":
        raise InputError(source.path, max(root.sourceline or 1, 1), f"malformed hwloc XML: root <{root.tag}>, "
                                                                    "expected <topology>")
    numa, pci, os_devices, listed, by_gp, strings = [], [], [], {}, {}, {}
    bitmask = not (root.get("version") or "").startswith(("1.", "2."))
    for element in root.iter("object"):
        kind = element.get("type")
        obj = None
        if kind == "NUMANode":
            numa.append(obj := _object(source, element, kind, listed, strings=strings))
        elif kind in ("Bridge", "PCIDev") and element.get("pci_busid"):
            pci.append(obj := _object(source, element, kind, listed, strings=strings))
        elif kind == "OSDev":
            os_devices.append(obj := _object(source, element, kind, listed, bitmask, strings))
        if element.get("gp_index") is not None:
            # The fact made of the element (its kind is the element's type), else the element: lxml's
            # proxy of every device is not held to the end (issue 20)
            by_gp.setdefault(element.get("gp_index"), element if obj is None else obj)
    matrices, kept, numbers = [], 0, {}  # numbers: one int per bandwidth word, as strings share
    for element in root:
        if element.tag in _DISTANCES and element.get("name") == NVLINK_MATRIX:
            matrix = _nvlink_matrix(source, element, by_gp, listed, MAX_NVLINK_VALUES - kept, numbers)
            if matrix is not None:
                matrices.append(matrix)
                kept += len(matrix.values)
    return build(HwlocTopology, path=source.path, version=root.get("version"), numa_nodes=numa, pci=pci,
                 os_devices=os_devices, release=_release(root), nvlink_matrices=matrices, loc=_loc(source, root))


def _release(root) -> str | None:
    """The hwlocVersion info: on the topology in hwloc 3 exports, on the root object before."""
    first = next(root.iterchildren("object"), None)
    for parent in (root, first) if first is not None else (root,):
        for info in parent.iterchildren("info"):
            if info.get("name") == "hwlocVersion":
                return info.get("value")
    return None


# ---- the NVLinkBandwidth matrix ------------------------------------------------------------------
NVLINK_MATRIX = "NVLinkBandwidth"  # hwloc/topology-nvml.c hwloc__nvml_add_nvlink_bandwidth
_DISTANCES = ("distances2", "distances2hetero")
# Objects of one NVLink matrix: NVML's GPUs and their NVSwitch and CPU peers (28 on a DGX-2, the
# largest single node), and the values kept from all of a file's NVLink matrices (hwloc writes
# one): nonzero values are facts, so a file of "1 1 1 ..." must not become millions of them.
MAX_NVLINK_OBJECTS = 256
MAX_NVLINK_VALUES = 65536
_TOKEN = re.compile(r"\S+")


def _tokens(source: SourceFile, element):
    """(text, line, column) of each space-separated word of the element's text; the column is 0
    where the text does not start on its tag's line right after the tag."""
    text, line = element.text or "", max(element.sourceline or 1, 1)
    row = source.line_text(line)
    tag = row.find(f"<{element.tag}")
    start = row.find(">", tag) + 1 if tag >= 0 else 0
    first_line = text.split("\n", 1)[0]
    base = start if start and row[start:start + len(first_line)] == first_line else -1
    newlines, scanned, line_start = 0, 0, -1
    for match in _TOKEN.finditer(text):
        gap = text.count("\n", scanned, match.start())
        if gap:  # the newline before this word lies in the gap: no scan back over earlier words
            newlines += gap
            line_start = text.rfind("\n", scanned, match.start())
        scanned = match.end()
        if newlines:
            column = match.start() - line_start
        else:
            column = base + match.start() + 1 if base >= 0 else 0
        yield match.group(), line + newlines, column


def _bad(source: SourceFile, element, line: int, column: int, message: str) -> InputError:
    # head: the start of the file, so a folder walk knows it for hwloc and reports it (TL001)
    return InputError(source.path, line or max(element.sourceline or 1, 1),
                      f"malformed hwloc XML: {NVLINK_MATRIX} {message}", column, head=source.text[:65536])


def _peer(source: SourceFile, matrix, word: str, line: int, column: int, hetero: bool, by_gp: dict,
          listed: dict) -> HwlocObject:
    """The object an index names: ``Type:gp_index`` in a heterogeneous matrix, a gp_index of the
    matrix's ``type`` otherwise (hwloc_get_obj_by_type_and_gp_index)."""
    kind, _, gp = word.rpartition(":") if hetero else (matrix.get("type") or "", "", word)
    found = by_gp.get(gp)
    made = isinstance(found, HwlocObject)
    if found is None or decimal(gp) is None or \
            ((found.kind if made else found.get("type")) or "").lower() != kind.lower():
        raise _bad(source, matrix, line, column, f"names {word!r}, which is no object of this file")
    if made:
        return found
    element = found
    obj = _object(source, element, element.get("type"), listed)
    if element.get("nodeset"):  # the CPU side of an IBM NPU link (a Package on POWER8)
        obj.numa_nodes = _node_ids(element.get("nodeset"), listed)
    return obj


def _nvlink_matrix(source: SourceFile, matrix, by_gp: dict, listed: dict, room: int,
                   numbers: dict | None = None) -> HwlocNvlinkMatrix | None:
    size = decimal(matrix.get("nbobjs"))
    if size is None or size <= 0:
        raise _bad(source, matrix, 0, 0, f"nbobjs={matrix.get('nbobjs')!r}: expected a count of objects")
    if size > MAX_NVLINK_OBJECTS:
        raise _bad(source, matrix, 0, 0, f"nbobjs={size}: more than the {MAX_NVLINK_OBJECTS} objects an NVLink "
                                         "matrix of one node can hold (NVML's GPUs, their NVSwitches and CPUs)")
    hetero = matrix.tag == "distances2hetero"
    if not hetero and matrix.get("indexing") != "gp":
        return None  # hwloc ignores a matrix of I/O objects that is not gp-indexed
    found = build(HwlocNvlinkMatrix, loc=_loc(source, matrix))
    position = 0
    for child in matrix:
        if child.tag == "indexes":
            peer = partial(_peer, hetero=hetero, by_gp=by_gp, listed=listed)
            _read_indexes(source, matrix, child, found.objects, size, peer)
        elif child.tag == "u64values":
            position = _read_values(source, matrix, child, found, size, position, room,
                                    {} if numbers is None else numbers)
    if len(found.objects) != size or position != size * size:
        raise _bad(source, matrix, 0, 0, f"has {len(found.objects)} indexes and {position} values; nbobjs={size} "
                                         f"needs {size} and {size * size}")
    return found if size >= 2 else None  # hwloc's importer ignores a one-object matrix, valid as it is


def _read_indexes(source: SourceFile, matrix, child, objects: list, size: int, peer) -> None:
    for word, line, column in _tokens(source, child):
        if len(objects) == size:
            raise _bad(source, matrix, line, column, f"has more than nbobjs={size} indexes")
        objects.append(peer(source, matrix, word, line, column))


def _read_values(source: SourceFile, matrix, child, found: HwlocNvlinkMatrix, size: int, position: int,
                 room: int, numbers: dict) -> int:
    """Reads one ``<u64values>`` element on from cell ``position``; returns the next cell.
    ``numbers``: each word's value, one int per word of the parse (a link rate repeats)."""
    for word, line, column in _tokens(source, child):
        value = numbers.get(word)
        if value is None:
            value = hwloc_u64(word)
            if value is not None:
                numbers[word] = value
        if value is None:
            raise _bad(source, matrix, line, column, f"value {word!r} is not a number")
        if position == size * size:
            raise _bad(source, matrix, line, column, f"has more than {size}x{size} values")
        row, column_index = divmod(position, size)
        if column_index == 0:
            found.row_locs.append(build(Location, path=source.path, line=line, column=column))
        if value and row != column_index:
            if len(found.values) == room:
                raise _bad(source, matrix, line, column, f"values: more than {MAX_NVLINK_VALUES} nonzero "
                                                         "in the file's NVLink matrices")
            loc = build(Location, path=source.path, line=line, column=column)
            found.values.append(build(HwlocBandwidth, source=row, target=column_index, mbps=value, loc=loc))
        position += 1
    return position
