"""NCCL topology XML (``NCCL_TOPO_DUMP_FILE`` output and the static ``NCCL_TOPO_FILE`` files
vendors ship) into a TopologyFile of typed facts. Grammar: system > cpu > {pci, nic},
pci > {pci, gpu, nic}, gpu > {nvlink, c2c}, nic > net (nccl-formats.md 1.2-1.3).
"""

from __future__ import annotations

from array import array

from topolint.inputs.source import SourceFile
from topolint.model.facts import (
    C2cLink,
    Cpu,
    Gpu,
    Location,
    Net,
    Nic,
    NvLink,
    PciDevice,
    TopologyFile,
    TagNames,
    XmlElementStats,
    build,
    location,
    pci_kind_from_class,
)
from topolint.model.numbers import strtol_prefix
from topolint.parsers.xmlsafe import ElementLocations, declaration_and_doctype, iter_elements, tab_lines

__all__ = ["parse_topology", "pci_kind_from_class"]


def _int(value: str | None) -> int | None:
    """What NCCL's ``strtol(value, NULL, 0)`` reads (``010`` is 8, ``1.5`` is 1, huge values
    saturate); None when the attribute is absent or holds no digit. TOPO002 reports the
    misreadings."""
    return strtol_prefix(value)


def _flag(value: str | None) -> bool | None:
    number = _int(value)
    return None if number is None else number != 0


class _Walker:
    def __init__(self, source: SourceFile):
        self.source = source
        # Elements are known by their index in document order (the root is 0). libxml2 streams
        # them (xmlsafe.iter_elements): each one's tag, position, attributes and parent are read
        # as it comes, then it is freed, and the facts are built from these lists alone (issue
        # 20: lxml's whole tree was 20 bytes per input byte, its proxies a third of the peak).
        self.root = 0
        self.tags = TagNames()
        self.positions: list[Location] = []
        self._attrs: list[dict[str, str]] = []
        # Children as each element's first child and next sibling (-1: none), 4 bytes each in
        # an array: a list of children held an int object per element.
        self._first, self._next = array("i"), array("i")
        blanks: dict[int, list[str]] = {}
        attributes = _AttributeMaps()
        locate = ElementLocations(source.path, source.text)
        tags, positions, maps, first, after = self.tags, self.positions, self._attrs, self._first, self._next
        for element, parent, previous in iter_elements(source.path, source.text):
            tag = element.tag
            index = len(tags)
            tags.append(tag)
            positions.append(locate(element, tag))
            attrs = attributes.of(element)
            maps.append(attrs)
            if not all(map(str.strip, attrs.values())):  # most elements have no blank value: checked in C
                blanks[index] = [k for k, v in attrs.items() if not v.strip()]
            first.append(-1)
            after.append(-1)
            if previous is not None:
                after[previous] = index
            elif parent is not None:
                first[parent] = index
        self.element_count = len(tags)
        counts = {i: sum(1 for _ in self.children(i)) for i in range(len(tags)) if first[i] >= 0}
        self.stats = XmlElementStats(tags, positions, counts, blanks)
        self.cpus: list[Cpu] = []
        self.pci: list[PciDevice] = []
        self.gpus: list[Gpu] = []
        self.nics: list[Nic] = []

    def loc(self, element: int) -> Location:
        return self.positions[element]

    def attrs(self, element: int) -> dict[str, str]:
        """The element's attributes (each fact that keeps them gets this one dict: one fact per
        element)."""
        return self._attrs[element]

    def children(self, element: int, tag: str | None = None):
        """The element's children (named ``tag``), one at a time: the system's are every cpu."""
        child, after, tags = self._first[element], self._next, self.tags
        while child >= 0:
            if tag is None or tags[child] == tag:
                yield child
            child = after[child]

    def walk(self) -> None:
        for cpu_el in self.children(self.root, "cpu"):
            cpu_index = len(self.cpus)
            a = self.attrs(cpu_el)
            self.cpus.append(
                build(Cpu,
                    index=cpu_index,
                    numa_id=_int(a.get("numaid")),
                    affinity=a.get("affinity"),
                    arch=a.get("arch"),
                    vendor=a.get("vendor"),
                    family_id=_int(a.get("familyid")),
                    model_id=_int(a.get("modelid")),
                    host_hash=a.get("host_hash"),
                    attrs=a,
                    loc=self.loc(cpu_el),
                )
            )
            for child in self.children(cpu_el):
                if self.tags[child] == "pci":
                    self.walk_pci(child, cpu_index, None)
                elif self.tags[child] == "nic":
                    self.add_nic(child, cpu_index, None)

    def walk_pci(self, element: int, cpu_index: int, parent: str | None) -> None:
        a = self.attrs(element)
        bus_id = _lower(a.get("busid") or "")
        gpu_children = list(self.children(element, "gpu"))
        nic_children = list(self.children(element, "nic"))
        pci_children = list(self.children(element, "pci"))
        if gpu_children:
            kind = "gpu"
        elif nic_children:
            kind = "nic"
        else:
            kind = pci_kind_from_class(a.get("class"))
            if kind == "unknown" and pci_children:
                kind = "bridge"
        self.pci.append(
            build(PciDevice,
                bus_id=bus_id,
                kind=kind,
                pci_class=a.get("class"),
                vendor=a.get("vendor"),
                device=a.get("device"),
                subsystem_vendor=a.get("subsystem_vendor"),
                subsystem_device=a.get("subsystem_device"),
                link_speed=a.get("link_speed"),
                link_width=a.get("link_width"),
                parent_bus_id=parent,
                cpu_index=cpu_index,
                attrs=a,
                loc=self.loc(element),
            )
        )
        if gpu_children:
            for gpu_el in gpu_children:
                self.add_gpu(gpu_el, bus_id, cpu_index)
        elif kind == "gpu":  # partial file: only the class says it is a GPU
            self.gpus.append(
                build(Gpu,
                    bus_id=bus_id, dev=None, sm=None, rank=None, gdr=None, cpu_index=cpu_index,
                    nvlinks=[], c2c=[], attrs={}, loc=self.loc(element),
                )
            )
        if nic_children:
            for nic_el in nic_children:
                self.add_nic(nic_el, cpu_index, bus_id)
        elif kind == "nic":
            self.nics.append(
                build(Nic, bus_id=bus_id, cpu_index=cpu_index, nets=[], loc=self.loc(element))
            )
        for child in pci_children:
            self.walk_pci(child, cpu_index, bus_id)

    def add_gpu(self, element: int, bus_id: str, cpu_index: int) -> None:
        a = self.attrs(element)
        nvlinks = []
        for n in self.children(element, "nvlink"):
            link = self.attrs(n)
            nvlinks.append(
                build(NvLink,
                    target=_lower(link.get("target") or "") or None,
                    count=_int(link.get("count")),
                    tclass=link.get("tclass"),
                    attrs=link,
                    loc=self.loc(n),
                )
            )
        c2c = []
        for c in self.children(element, "c2c"):
            link = self.attrs(c)
            c2c.append(build(C2cLink, bw_mbps=_int(link.get("bw")), count=_int(link.get("count")), loc=self.loc(c)))
        self.gpus.append(
            build(Gpu,
                bus_id=bus_id,
                dev=_int(a.get("dev")),
                sm=_int(a.get("sm")),
                rank=_int(a.get("rank")),
                gdr=_flag(a.get("gdr")),
                cpu_index=cpu_index,
                nvlinks=nvlinks,
                c2c=c2c,
                attrs=a,
                loc=self.loc(element),
            )
        )

    def add_nic(self, element: int, cpu_index: int, bus_id: str | None) -> None:
        nets = []
        for net_el in self.children(element, "net"):
            a = self.attrs(net_el)
            nets.append(
                build(Net,
                    name=a.get("name"),
                    dev=_int(a.get("dev")),
                    speed_mbps=_int(a.get("speed")),
                    port=_int(a.get("port")),
                    gdr=_flag(a.get("gdr")),
                    guid=a.get("guid"),
                    attrs=a,
                    loc=self.loc(net_el),
                )
            )
        self.nics.append(
            build(Nic, bus_id=bus_id, cpu_index=cpu_index, nets=nets, loc=self.loc(element))
        )


def _lower(text: str) -> str:
    """``text.lower()``, the attribute's own string when it is lowercase already (as NCCL writes
    bus ids): the fact then shares it with the attribute dict."""
    low = text.lower()
    return text if low == text else low


class _AttributeMaps:
    """Each element's attributes as a dict. Elements with the same attributes share one dict, and
    names and values are shared strings (issue 20: a real file repeats them on every GPU, link and
    NIC). Sharing is safe: facts' attribute dicts are read, never changed in place (edits copy).
    The tables are emptied when full: a file of distinct values would otherwise hold a key per
    element until the end (most repeats are near each other: a GPU's links, a NIC's ports)."""

    LIMIT = 64

    def __init__(self):
        self.strings: dict[str, str] = {}
        self.maps: dict[tuple, dict[str, str]] = {}

    def of(self, element) -> dict[str, str]:
        strings, maps = self.strings, self.maps
        if len(strings) > 4 * self.LIMIT:
            strings.clear()
        if len(maps) > self.LIMIT:
            maps.clear()
        share = strings.setdefault
        items = tuple([(share(k, k), share(v, v)) for k, v in element.items()])
        attrs = maps.get(items)
        if attrs is None:
            attrs = maps[items] = dict(items)
        return attrs


def _classify(walker: _Walker) -> str:
    """Dump (what NCCL measured) or static (what a vendor claims, completed by NCCL at run time)."""
    if any(c.host_hash for c in walker.cpus):
        return "dump"
    classed = [p for p in walker.pci if p.pci_class]
    if (
        walker.cpus
        and classed
        and all(p.vendor and p.device for p in classed)
        and all(c.affinity and c.arch for c in walker.cpus)
        and any(g.rank is not None for g in walker.gpus)
    ):
        return "dump"
    return "static"


def parse_topology(source: SourceFile) -> TopologyFile:
    """Parse an NCCL topology XML; raises InputError (TL001) when it is not well-formed."""
    walker = _Walker(source)
    version = walker.attrs(walker.root).get("version")
    walker.walk()
    decl_line, doctype_line = declaration_and_doctype(source.text)
    system_loc = walker.loc(walker.root)

    def at(line: int) -> Location:
        return build(Location, path=source.path, line=line, column=0)

    return build(TopologyFile,
        path=source.path,
        kind=_classify(walker),
        version=version,
        system_loc=system_loc,
        xml_declaration=at(decl_line) if decl_line else None,
        doctype=at(doctype_line) if doctype_line else None,
        tabs_between_elements=[at(line) for line in tab_lines(source.text)],
        element_count=walker.element_count,
        elements=walker.stats,
        cpus=walker.cpus,
        pci=walker.pci,
        gpus=walker.gpus,
        nics=walker.nics,
        text=source.text,
        bom=source.bom,
    )
