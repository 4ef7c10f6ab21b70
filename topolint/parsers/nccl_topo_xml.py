"""NCCL topology XML (``NCCL_TOPO_DUMP_FILE`` output and the static ``NCCL_TOPO_FILE`` files
vendors ship) into a TopologyFile of typed facts. Grammar: system > cpu > {pci, nic},
pci > {pci, gpu, nic}, gpu > {nvlink, c2c}, nic > net (nccl-formats.md 1.2-1.3).
"""

from __future__ import annotations

from lxml import etree

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
    XmlElementStat,
    build,
    location,
    pci_kind_from_class,
)
from topolint.model.numbers import strtol_prefix
from topolint.parsers.xmlsafe import declaration_and_doctype, parse_xml, start_tags, tab_lines

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
    def __init__(self, source: SourceFile, root: etree._Element):
        self.source = source
        # Elements are walked by their index in document order (the root is 0). One pass over
        # lxml's elements reads each one's tag, position, attributes and children, then lxml's
        # proxies go: the facts are built from these lists alone (issue 20: a proxy and a dict
        # entry each per element were a third of a parse's peak).
        self.root = 0
        elements = list(root.iter(etree.Element))  # elements only: no comments, PIs, entities
        names: dict[str, str] = {}
        self.tags = [names.setdefault(e.tag, e.tag) for e in elements]
        self.positions = _element_locations(source.path, source.text, root, self.tags, elements)
        index = {element: i for i, element in enumerate(elements)}
        # Only elements with children get a list (most have none: a list each cost 56 bytes).
        self._children: dict[int, list[int]] = {}
        for i in range(1, len(elements)):
            parent = index[elements[i].getparent()]
            kids = self._children.get(parent)
            if kids is None:
                self._children[parent] = [i]
            else:
                kids.append(i)
        del index
        self._attrs = _attribute_maps(elements)
        self.element_count = len(elements)
        self.stats: list[XmlElementStat] = []
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

    def children(self, element: int, tag: str | None = None) -> list[int]:
        kids = self._children.get(element, ())
        return kids if tag is None else [c for c in kids if self.tags[c] == tag]

    def walk(self) -> None:
        for element, loc in enumerate(self.positions):
            self.stats.append(
                build(XmlElementStat,
                    tag=self.tags[element],
                    child_count=len(self._children.get(element, ())),
                    empty_attrs=_blank_names(self._attrs[element]),
                    loc=loc,
                )
            )
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
        gpu_children = self.children(element, "gpu")
        nic_children = self.children(element, "nic")
        pci_children = self.children(element, "pci")
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


def _attribute_maps(elements: list) -> list[dict[str, str]]:
    """Each element's attributes as a dict. Elements with the same attributes share one dict, and
    names and values are shared strings (issue 20: a real file repeats them on every GPU, link and
    NIC). Sharing is safe: facts' attribute dicts are read, never changed in place (edits copy)."""
    strings: dict[str, str] = {}
    maps: dict[tuple, dict[str, str]] = {}
    share = strings.setdefault
    found = []
    for element in elements:
        items = tuple([(share(k, k), share(v, v)) for k, v in element.items()])
        attrs = maps.get(items)
        if attrs is None:
            attrs = maps[items] = dict(items)
        found.append(attrs)
    return found


_NO_NAMES: list[str] = []  # shared by every element without a blank attribute (read, never changed)


def _blank_names(attrs: dict[str, str]) -> list[str]:
    """Names of the attributes whose value is blank (most elements have none: checked in C)."""
    if all(map(str.strip, attrs.values())):
        return _NO_NAMES
    return [k for k, v in attrs.items() if not v.strip()]


def _element_locations(path: str, text: str, root: etree._Element, names: list[str], elements: list) -> list:
    """Each element's Location: its start tag's line and column from the text where the tags
    line up with lxml's elements, else lxml's line with no column."""
    tags = start_tags(text)
    # Tags before the root (none in practice) would shift the zip; align on the root tag.
    offset = next((i for i, t in enumerate(tags) if t[0] == root.tag), 0)
    tags = tags[offset:]
    positions = []
    for i, element in enumerate(elements):
        if i < len(tags) and tags[i][0] == names[i]:
            positions.append(location(path, tags[i][1], tags[i][2]))
        else:
            positions.append(location(path, element.sourceline or 1, 0))
    return positions


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
    root = parse_xml(source.path, source.text)
    walker = _Walker(source, root)
    version = root.get("version")
    del root  # the tree is read: libxml2 frees it before the facts are built
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
