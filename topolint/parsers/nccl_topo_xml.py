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
)
from topolint.model.numbers import strtol_prefix
from topolint.parsers.xmlsafe import declaration_and_doctype, parse_xml, start_tag_positions, tab_lines


def pci_kind_from_class(pci_class: str | None) -> str:
    """NCCL's class dictionary, prefix matched as kvDictPciClass does."""
    if not pci_class:
        return "unknown"
    value = pci_class.lower()
    if value.startswith("0x0604"):
        return "bridge"
    if value.startswith("0x068000"):
        return "nvswitch"
    if value.startswith("0x068001"):
        return "cpu"
    if value.startswith("0x03"):
        return "gpu"
    if value.startswith("0x02"):
        return "nic"
    return "other"


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
        self.root = root
        self.positions: dict[etree._Element, Location] = {}
        self._children: dict[etree._Element, list] = {}
        elements = [e for e in root.iter() if isinstance(e.tag, str)]
        tags = start_tag_positions(source.text)
        # Tags before the root (none in practice) would shift the zip; align on the root tag.
        offset = next((i for i, t in enumerate(tags) if t.tag == root.tag), 0)
        tags = tags[offset:]
        for i, element in enumerate(elements):
            if i < len(tags) and tags[i].tag == element.tag:
                self.positions[element] = build(Location, path=source.path, line=tags[i].line, column=tags[i].column)
            else:
                self.positions[element] = build(Location, path=source.path, line=element.sourceline or 1, column=0)
        self.element_count = len(elements)
        self.stats: list[XmlElementStat] = []
        self.cpus: list[Cpu] = []
        self.pci: list[PciDevice] = []
        self.gpus: list[Gpu] = []
        self.nics: list[Nic] = []

    def loc(self, element: etree._Element) -> Location:
        return self.positions[element]

    def children(self, element: etree._Element, tag: str | None = None) -> list[etree._Element]:
        kids = self._children.get(element)
        if kids is None:  # each element's children are asked for several times: list them once
            kids = self._children[element] = [c for c in element if isinstance(c.tag, str)]
        return kids if tag is None else [c for c in kids if c.tag == tag]

    def walk(self) -> None:
        for element in self.positions:
            empty = [k for k, v in element.attrib.items() if v.strip() == ""]
            self.stats.append(
                build(XmlElementStat,
                    tag=element.tag,
                    child_count=len(self.children(element)),
                    empty_attrs=empty,
                    loc=self.loc(element),
                )
            )
        for cpu_el in self.children(self.root, "cpu"):
            cpu_index = len(self.cpus)
            a = dict(cpu_el.attrib)
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
                if child.tag == "pci":
                    self.walk_pci(child, cpu_index, None)
                elif child.tag == "nic":
                    self.add_nic(child, cpu_index, None)

    def walk_pci(self, element: etree._Element, cpu_index: int, parent: str | None) -> None:
        a = dict(element.attrib)
        bus_id = (a.get("busid") or "").lower()
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

    def add_gpu(self, element: etree._Element, bus_id: str, cpu_index: int) -> None:
        a = dict(element.attrib)
        nvlinks = [
            build(NvLink,
                target=(n.get("target") or "").lower() or None,
                count=_int(n.get("count")),
                tclass=n.get("tclass"),
                attrs=dict(n.attrib),
                loc=self.loc(n),
            )
            for n in self.children(element, "nvlink")
        ]
        c2c = [
            build(C2cLink, bw_mbps=_int(c.get("bw")), count=_int(c.get("count")), loc=self.loc(c))
            for c in self.children(element, "c2c")
        ]
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

    def add_nic(self, element: etree._Element, cpu_index: int, bus_id: str | None) -> None:
        nets = []
        for net_el in self.children(element, "net"):
            a = dict(net_el.attrib)
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
    walker.walk()
    decl_line, doctype_line = declaration_and_doctype(source.text)
    system_loc = walker.loc(root)

    def at(line: int) -> Location:
        return build(Location, path=source.path, line=line, column=0)

    return build(TopologyFile,
        path=source.path,
        kind=_classify(walker),
        version=root.get("version"),
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
