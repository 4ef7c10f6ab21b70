"""hwloc / lstopo XML exports (``lstopo --of xml``): NUMA nodes, the PCI tree and OS devices
(GPUs as CUDA/NVML devices, NICs as OpenFabrics / network devices).

The file carries a DOCTYPE; it is parsed with parsers/xmlsafe.py's options (DTD loading,
entities and the network off), streamed: each element is read at its start and end and freed
once ended, so the tree (lxml's nodes are several times the text) is never whole (issue 20). A file
the stream refuses is parsed by xmlsafe.parse_xml, for its TL001. An I/O object's NUMA
locality is the nodeset of its nearest non-I/O ancestor (hwloc attaches host bridges under the
Package or NUMA group they are local to); what an element's children inherit is kept while it
is open.

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
from topolint.parsers.xmlsafe import MAX_ATTRIBUTES, check_element_count, parse_xml, pull_parser

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


def _osdev_class(value: str | None, bitmask: bool) -> str | None:
    number = decimal(value)
    if number is None:
        return None
    if not bitmask:
        return _OSDEV_ENUM.get(number)
    return next((name for bit, name in _OSDEV_BITS if number & bit), None)


def parse_hwloc(source: SourceFile) -> HwlocTopology:
    check_element_count(source.path, source.text)
    reader = _Reader(source)
    if not reader.read(_streamed(source.text), clear=True):
        # libxml2 stopped, an element has too many attributes or the root is not <topology>: the
        # tree parse says which, with its line and column (the streamed parse is its twin)
        from lxml import etree

        root = parse_xml(source.path, source.text)
        if root.tag != "topology":
            raise InputError(source.path, max(root.sourceline or 1, 1), f"malformed hwloc XML: root <{root.tag}>, "
                                                                        "expected <topology>")
        reader = _Reader(source)
        reader.read(etree.iterwalk(root, events=("start", "end")), clear=False)
    return reader.topology()


_CHUNK = 1 << 13  # characters encoded and fed to libxml2 at a time: their events are held until read


def _streamed(text: str):
    """(event, element) of each element's start and end, the text parsed a chunk at a time with
    xmlsafe's protections: no entity expanded, no DTD, external entity or network resource read
    (every one libxml2 asks for is an empty string), libxml2's own depth and size limits."""
    parser = pull_parser(("start", "end"))
    for offset in range(0, len(text), _CHUNK):
        parser.feed(text[offset:offset + _CHUNK].encode("utf-8"))
        yield from parser.read_events()
    parser.close()
    yield from parser.read_events()


_FOUND_NOTHING = object()


class _Open:
    """An element whose end is not read yet: what its children inherit (the nearest non-I/O
    object's nodeset and cpuset, the nearest PCI address) and what its children tell of it."""

    __slots__ = ("is_object", "kind", "nodeset", "cpuset", "pci", "keep", "gpu_model", "slot", "gp")

    def __init__(self, parent: "_Open | None", element, keep: bool):
        self.is_object = parent is not None and element.tag == "object"
        self.kind = element.get("type") if self.is_object else None
        self.keep, self.gpu_model, self.slot, self.gp = keep, _FOUND_NOTHING, None, None
        if not self.is_object:
            self.nodeset = self.cpuset = self.pci = None
            return
        nodeset = element.get("nodeset")
        if self.kind not in _IO_TYPES and nodeset:
            self.nodeset, self.cpuset = nodeset, element.get("cpuset")
        else:
            self.nodeset, self.cpuset = parent.nodeset, parent.cpuset
        busid = element.get("pci_busid")
        self.pci = pci_address(busid) if busid else parent.pci


class _Reader:
    """An hwloc export read from its elements' start and end events, in document order. Each
    element is freed once ended (``clear``), so the tree is never whole: what a later element
    needs of an earlier one is kept here (the locality its children inherit, the objects by
    gp_index, copies of the NVLink matrices)."""

    def __init__(self, source: SourceFile):
        self.source, self.rows = source, _ForwardLines(source)
        self.numa, self.pci, self.os_devices, self.listed, self.by_gp, self.strings = [], [], [], {}, {}, {}
        self.matrices: list[HwlocNvlinkMatrix] = []
        self.deferred: list[_Kept] | None = None  # matrices read at the end (one named an object not seen yet)
        self.error: InputError | None = None  # a bad matrix: the file's error once the parse ends well
        self.kept, self.numbers = 0, {}  # values kept of all matrices; one int per bandwidth word
        self.version = self.root_line = None
        self.bitmask = True
        self.release = self.first_release = _FOUND_NOTHING
        self.first_object: _Open | None = None

    def read(self, events, clear: bool) -> bool:
        """False where the streamed parse cannot go on (see parse_hwloc)."""
        from lxml import etree

        stack: list[_Open] = []
        try:
            for event, element in events:
                if event == "start":
                    if len(element.attrib) > MAX_ATTRIBUTES or (not stack and element.tag != "topology"):
                        return False
                    stack.append(self._start(stack, element))
                else:
                    self._end(stack, element, clear)
        except etree.XMLSyntaxError:
            return False
        return True

    def _start(self, stack: list[_Open], element) -> _Open:
        parent = stack[-1] if stack else None
        if parent is None:
            self.version, self.root_line = element.get("version"), element.sourceline
            self.bitmask = not (self.version or "").startswith(("1.", "2."))
            return _Open(None, element, False)
        matrix = len(stack) == 1 and element.tag in _DISTANCES and element.get("name") == NVLINK_MATRIX
        opened = _Open(parent, element, parent.keep or matrix)
        if opened.is_object:
            if len(stack) == 1 and self.first_object is None:
                self.first_object = opened
            kind = opened.kind
            if kind == "NUMANode":
                opened.slot = self.numa
            elif kind in ("Bridge", "PCIDev") and element.get("pci_busid"):
                opened.slot = self.pci
            elif kind == "OSDev":
                opened.slot = self.os_devices
            if opened.slot is not None:  # its place in document order; the fact is made at its end
                opened.slot.append(None)
                opened.slot = (opened.slot, len(opened.slot) - 1)
            gp = element.get("gp_index")
            if gp is not None and gp not in self.by_gp:
                self.by_gp[gp] = None
                opened.gp = gp
        return opened

    def _end(self, stack: list[_Open], element, clear: bool) -> None:
        ended = stack.pop()
        parent = stack[-1] if stack else None
        if ended.is_object and (ended.slot is not None or ended.gp is not None):
            self._made(ended, parent, element)
        elif element.tag == "info" and parent is not None:
            self._info(parent, element, len(stack) == 1)
        elif ended.keep and not parent.keep:
            self._matrix(element)
        if clear and (parent is None or not parent.keep):  # a matrix's children go with it
            element.clear()
            if parent is not None:  # and the ended siblings before it, with their tails
                while element.getprevious() is not None:
                    del element.getparent()[0]

    def _info(self, parent: _Open, element, at_root: bool) -> None:
        """An ``<info>``: an OS device's GPUModel, or the hwlocVersion (on the topology in hwloc 3
        exports, on the root object before); the first of each counts."""
        name = element.get("name")
        if name == "GPUModel" and parent.kind == "OSDev" and parent.gpu_model is _FOUND_NOTHING:
            parent.gpu_model = element.get("value")
        elif name == "hwlocVersion":
            if at_root and self.release is _FOUND_NOTHING:
                self.release = element.get("value")
            elif parent is self.first_object and self.first_release is _FOUND_NOTHING:
                self.first_release = element.get("value")

    def _made(self, ended: _Open, parent: _Open, element) -> None:
        obj = self._object(ended, parent, element)
        if ended.slot is not None:
            found, index = ended.slot
            found[index] = obj
        elif element.get("nodeset"):  # not a fact of its own: a matrix may name it (the CPU side
            obj.numa_nodes = _node_ids(element.get("nodeset"), self.listed)  # of an IBM NPU link)
        if ended.gp is not None:
            self.by_gp[ended.gp] = obj

    def _object(self, ended: _Open, parent: _Open, element) -> HwlocObject:
        # Repeated values (types, subtypes, PCI types, cpusets) are one string each per parse:
        # lxml makes a new one each read (issue 20).
        share, kind = self.strings.setdefault, ended.kind
        if kind in _IO_TYPES:
            nodes = _node_ids(parent.nodeset, self.listed) if parent.nodeset else []
            cpuset = parent.cpuset if parent.nodeset else None
        else:
            nodes, cpuset = [], element.get("cpuset")
        speed = element.get("pci_link_speed")
        subtype, pci_type = element.get("subtype"), element.get("pci_type")
        pci_parent = parent.pci
        bus_id = pci_parent if kind == "OSDev" else ended.pci if element.get("pci_busid") else None
        gpu_model = ended.gpu_model if ended.gpu_model is not _FOUND_NOTHING else None
        return build(HwlocObject, kind=share(kind, kind), index=decimal(element.get("os_index")),
                     name=element.get("name"), subtype=subtype and share(subtype, subtype),
                     bus_id=bus_id,
                     parent_bus_id=pci_parent if kind in ("Bridge", "PCIDev") else None,
                     osdev_class=_osdev_class(element.get("osdev_type"), self.bitmask) if kind == "OSDev" else None,
                     pci_type=pci_type and share(pci_type, pci_type),
                     link_speed_gbs=decimal_fraction(speed) if speed else None,
                     numa_nodes=nodes, cpuset=cpuset and share(cpuset, cpuset),
                     gp_index=decimal(element.get("gp_index")),
                     gpu_model=gpu_model if kind == "OSDev" else None, loc=_loc(self.source, element))

    def _matrix(self, element) -> None:
        """An NVLink matrix, read as it ends while every object it names came before it (as hwloc
        writes them): the file's objects are not held for it."""
        if self.error is not None:
            return
        if self.deferred is None:
            try:
                self._take(element, final=False)
                return
            except _Unseen:
                self.deferred = []
            except InputError as exc:
                self.error = exc.with_traceback(None)
                return
        self.deferred.append(_Kept(element))

    def _take(self, element, final: bool) -> None:
        matrix = _nvlink_matrix(self.rows, element, self.by_gp, MAX_NVLINK_VALUES - self.kept, self.numbers, final)
        if matrix is not None:
            self.matrices.append(matrix)
            self.kept += len(matrix.values)

    def topology(self) -> HwlocTopology:
        if self.error is not None:
            raise self.error
        for element in self.deferred or ():
            self._take(element, final=True)
        release = self.release if self.release is not _FOUND_NOTHING else \
            (self.first_release if self.first_release is not _FOUND_NOTHING else None)
        return build(HwlocTopology, path=self.source.path, version=self.version, numa_nodes=self.numa, pci=self.pci,
                     os_devices=self.os_devices, release=release, nvlink_matrices=self.matrices,
                     loc=build(Location, path=self.source.path, line=max(self.root_line or 1, 1), column=1))


# str.splitlines' line ends, which SourceFile.line_text counts by
_LINE_END = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


class _ForwardLines:
    """The source as the NVLink reader reads it (its path, its head, its lines by number), the
    lines found by reading on from the last one asked for, as the matrices' words come in
    document order: SourceFile.line_text would split and hold every line of the file."""

    def __init__(self, source: SourceFile):
        self.path, self.text = source.path, source.text
        self.line, self.start, self.row = 1, 0, None

    def line_text(self, line: int) -> str:
        if line < self.line:
            self.line, self.start, self.row = 1, 0, None
        while self.line < line:
            found = _LINE_END.search(self.text, self.start)
            if found is None:
                return ""
            self.line, self.start, self.row = self.line + 1, found.end(), None
        if self.row is None:
            found = _LINE_END.search(self.text, self.start)
            self.row = self.text[self.start:found.start() if found else len(self.text)]
        return self.row


class _Unseen(Exception):
    """A matrix names a gp_index no element before it has: it is read at the end of the file."""


class _Kept:
    """An element copied out of the tree before it is freed: what the NVLink reader reads of one."""

    __slots__ = ("tag", "attrib", "text", "sourceline", "children")

    def __init__(self, element):
        self.tag, self.attrib, self.text, self.sourceline = element.tag, dict(element.attrib), element.text, \
            element.sourceline
        self.children = [_Kept(child) for child in element]

    def get(self, name: str, default=None):
        return self.attrib.get(name, default)

    def __iter__(self):
        return iter(self.children)


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
          final: bool) -> HwlocObject:
    """The object an index names: ``Type:gp_index`` in a heterogeneous matrix, a gp_index of the
    matrix's ``type`` otherwise (hwloc_get_obj_by_type_and_gp_index)."""
    kind, _, gp = word.rpartition(":") if hetero else (matrix.get("type") or "", "", word)
    found = by_gp.get(gp)
    if found is None and not final:
        raise _Unseen
    if found is None or decimal(gp) is None or (found.kind or "").lower() != kind.lower():
        raise _bad(source, matrix, line, column, f"names {word!r}, which is no object of this file")
    return found


def _nvlink_matrix(source: SourceFile, matrix, by_gp: dict, room: int, numbers: dict,
                   final: bool = True) -> HwlocNvlinkMatrix | None:
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
            peer = partial(_peer, hetero=hetero, by_gp=by_gp, final=final)
            _read_indexes(source, matrix, child, found.objects, size, peer)
        elif child.tag == "u64values":
            position = _read_values(source, matrix, child, found, size, position, room, numbers)
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
