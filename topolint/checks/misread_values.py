"""TOPO002: values NCCL silently misreads or skips when it loads a topology file.

NCCL converts attributes with strtol and prefix-matching dictionaries and never complains:
an unknown ``link_speed`` becomes Gen3, ``link_width="0"`` becomes x16, a net speed that is
missing or not positive becomes 10 Gb/s, an empty attribute counts as present (so NCCL does
not fill it from the system) and reads as 0 or "", and in a dump a ``gpu`` without ``rank``
makes NCCL skip the whole ``pci`` element. One finding per offending element, listing what
is misread.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._topology import gpu_label, where
from topolint.engine.finding import Hit
from topolint.model.facts import Location, TopologyFile
from topolint.model.node import cpu_entity, gpu_entity, nic_entity, pci_entity
from topolint.model.numbers import decimal_fraction, strtol_clean
from topolint.model.pcie import GT_PER_GENERATION, gts_generation, speed_value

NEEDS = ("topology",)

# Attributes NCCL reads as numbers (strtol/strtof): an empty one reads as 0.
_NUMERIC = {
    "version", "numaid", "familyid", "modelid", "link_width", "dev", "sm", "rank", "gdr", "count",
    "bw", "speed", "port", "latency", "guid", "maxconn", "coll", "net", "gin", "rma", "rail",
    "plane", "mlopart", "keep",
}
_OLD_SPELLING = {1: "2.5 GT/s", 2: "5 GT/s", 3: "8 GT/s", 4: "16 GT/s", 5: "32 GT/s"}
NET_DEFAULT_MBPS = 10000
_JUDGED = {"pci", "net", "gpu"}  # elements whose values are judged, not only their empty attributes
_NOTHING: frozenset[str] = frozenset()


class Parameters(CheckParameters):
    pass


class _Element:
    """One element's findings in the making: what NCCL misreads and how to repair it."""

    def __init__(self, loc: Location):
        self.loc = loc
        self.misread: list[str] = []
        self.repair: list[str] = []
        self.evidence: list[str] = []

    def add(self, misread: str, repair: str, evidence: str) -> None:
        self.misread.append(misread)
        if repair not in self.repair:
            self.repair.append(repair)
        self.evidence.append(f"{where(self.loc)}: {evidence}")


def _key(tag: str, loc: Location) -> tuple:
    return (tag, loc.line, loc.column)


def _identify(topology: TopologyFile) -> dict[tuple, tuple]:
    """(tag, line, column) -> (tag, fact, owner) for every element a fact came from; the owner is
    the gpu of an nvlink or c2c, the cpu of a nic without a bus id. Labels are made by _describe,
    only for the few elements that have something misread."""
    known: dict[tuple, tuple] = {_key("system", topology.system_loc): ("system", None, None)}
    for cpu in topology.cpus:
        known[_key("cpu", cpu.loc)] = ("cpu", cpu, None)
    for pci in topology.pci:
        known[_key("pci", pci.loc)] = ("pci", pci, None)
    for gpu in topology.gpus:
        known[_key("gpu", gpu.loc)] = ("gpu", gpu, None)
        for link in gpu.nvlinks:
            known[_key("nvlink", link.loc)] = ("nvlink", link, gpu)
        for link in gpu.c2c:
            known[_key("c2c", link.loc)] = ("c2c", link, gpu)
    for nic in topology.nics:
        known.setdefault(_key("nic", nic.loc), ("nic", nic, None if nic.bus_id else topology.cpus[nic.cpu_index]))
        for net in nic.nets:
            known[_key("net", net.loc)] = ("net", net, nic)
    return known


def _describe(node: str, tag: str, fact, owner) -> tuple[str, str]:
    """(label, entity) of an element _identify found."""
    system = f"{node}/system"
    if tag == "system":
        return "<system>", system
    if tag == "cpu":
        return f"cpu numaid={fact.numa_id if fact.numa_id is not None else '?'}", \
            cpu_entity(node, fact.numa_id, fact.index)
    if tag == "pci":
        return f"pci {fact.bus_id or '(no busid)'}", pci_entity(node, fact.bus_id) if fact.bus_id else system
    if tag in ("gpu", "nvlink", "c2c"):
        gpu = owner if owner is not None else fact
        entity = gpu_entity(node, gpu.bus_id) if gpu.bus_id else system
        if tag == "gpu":
            return f"{gpu_label(gpu)} ({gpu.bus_id})", entity
        if tag == "nvlink":
            return f"nvlink of {gpu_label(gpu)} to {fact.target or '(no target)'}", entity
        return f"c2c of {gpu_label(gpu)}", entity
    if tag == "nic":
        if fact.bus_id:
            return f"nic of pci {fact.bus_id}", pci_entity(node, fact.bus_id)
        return f"nic under cpu numaid={owner.numa_id if owner.numa_id is not None else '?'}", \
            cpu_entity(node, owner.numa_id, owner.index)
    name = fact.name or owner.bus_id or "net"  # a net
    return f"net {name}", nic_entity(node, name, fact.port)


def _suggest_speed(raw: str, version) -> tuple[int | None, str | None]:
    """The generation a link_speed string means, and how NCCL spells it."""
    match = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", raw)
    if not match:
        return None, None
    generation = gts_generation(decimal_fraction(match.group(1)))
    if generation is None:
        return None, None
    if version.knows_pcie_suffix:
        return generation, f"{GT_PER_GENERATION[generation]} GT/s PCIe"
    return generation, _OLD_SPELLING.get(generation)


def _pci(element: _Element, pci, version) -> set[str]:
    handled = set()
    raw = pci.link_speed
    sysfs = f"/sys/bus/pci/devices/{pci.bus_id}"
    if raw is not None:
        handled.add("link_speed")
        if raw.strip() == "":
            element.add(
                'link_speed="" is read as Gen3 (8.0 GT/s), and NCCL does not fill in an attribute '
                "that is present",
                f'set link_speed to what {sysfs}/max_link_speed shows (e.g. "16.0 GT/s PCIe") or delete '
                "the attribute so NCCL reads it from sysfs",
                'link_speed="" (empty)',
            )
        elif speed_value(raw, version) is None:
            generation, spelling = _suggest_speed(raw, version)
            if generation != 3:  # an unknown spelling of Gen3 is read right by accident
                meant = f", though the file means Gen{generation}" if generation else ""
                element.add(
                    f'link_speed="{raw}" is not in NCCL {version}\'s speed table and is read as Gen3 '
                    f"(8.0 GT/s){meant}",
                    f'write link_speed="{spelling}"' if spelling
                    else f'set link_speed to what {sysfs}/max_link_speed shows (e.g. "32.0 GT/s PCIe")',
                    f'link_speed="{raw}" matches no entry of NCCL\'s kvDictPciGen (prefix match)',
                )
    width = pci.link_width
    if width is not None:
        handled.add("link_width")
        if strtol_clean(width)[0] == 0:
            element.add(
                f'link_width="{width}" is read as x16',
                f"set link_width to the real lane count ({sysfs}/max_link_width) if it is not 16",
                f'link_width="{width}" reads as 0, which NCCL replaces with 16',
            )
    return handled


def _speed_repair(net) -> str:
    name = net.name or ""
    tool = f"`ethtool {name}`" if re.match(r"(eth|en|ib\d)", name) else f"`ibstat {name}`".replace(" `", "`")
    return f'set speed to the port rate in Mb/s, e.g. speed="400000" for 400 Gb/s ({tool} shows the rate)'


def _net(element: _Element, net, topology: TopologyFile) -> set[str]:
    raw = net.attrs.get("speed")
    if raw is None:
        # A static file is completed from the net plugin (xmlInitAttrInt fills a missing speed).
        if topology.kind == "dump":
            element.add("no speed attribute, read as 10 Gb/s", _speed_repair(net), "no speed attribute")
        return set()
    value, clean = strtol_clean(raw)
    if value <= 0:
        element.add(f'speed="{raw}" is read as 10 Gb/s ({NET_DEFAULT_MBPS} Mb/s)', _speed_repair(net),
                    f'speed="{raw}" reads as {value}, which NCCL replaces with {NET_DEFAULT_MBPS}')
    elif not clean:
        element.add(f'speed="{raw}" is read as {value} Mb/s ({value / 1000:g} Gb/s)', _speed_repair(net),
                    f'speed="{raw}" is not a plain number; strtol stops after {value}')
    return {"speed"}


def _gpu(element: _Element, gpu, topology: TopologyFile) -> None:
    if topology.kind == "dump" and "rank" not in gpu.attrs:
        element.add(
            "no rank attribute, so NCCL skips its pci element and everything below it",
            f"add rank to the gpu element of {gpu.bus_id}, or dump the topology again with "
            "NCCL_TOPO_DUMP_FILE from a job that uses this GPU",
            "gpu without rank in a dump-shaped file (ncclTopoAddPci returns before adding it)",
        )


def _empty(element: _Element, tag: str, names: list[str]) -> None:
    for name in names:
        if tag == "net" and name == "speed":
            continue
        if name in _NUMERIC:
            misread = f'{name}="" is read as 0'
        elif name == "affinity":
            misread = 'affinity="" is read as an empty CPU set'
        elif tag == "pci" and name == "class":
            # src/graph/xml.cc ncclTopoGetXmlFromSys re-reads class from sysfs for every device on
            # the path of a GPU or NIC it detects; the file's class only counts for the others.
            misread = ('class="" is re-read from sysfs for the devices on a detected GPU or NIC path '
                       '(ncclTopoGetXmlFromSys); elsewhere NCCL reads it as an empty class')
        else:
            misread = f'{name}="" is kept empty (NCCL does not fill in an attribute that is present)'
        element.add(misread, "give the empty attributes real values or delete them so NCCL fills them "
                    "in from the system", f'{name}="" (empty)')


def check(context, params: Parameters) -> Iterator[Hit]:
    node, version = context.node.name, context.version
    for topology in context.node.topologies:
        known = _identify(topology)
        for stat in topology.elements:
            empty = stat.empty_attrs
            if not empty and stat.tag not in _JUDGED:
                continue  # nothing of it is read wrong
            tag, fact, owner = known.get(_key(stat.tag, stat.loc), (stat.tag, None, None))
            element = _Element(stat.loc)
            handled: set[str] = _NOTHING
            if stat.tag == "pci" and fact is not None:
                handled = _pci(element, fact, version)
            elif stat.tag == "net" and fact is not None:
                handled = _net(element, fact, topology)
            elif stat.tag == "gpu" and fact is not None:
                _gpu(element, fact, topology)
            if empty:
                _empty(element, stat.tag, [a for a in empty if a not in handled])
            if element.misread:
                label, entity = (_describe(node, tag, fact, owner) if tag == "system" or fact is not None
                                 else (f"<{stat.tag}>", f"{node}/system"))
                yield Hit(
                    entity=entity,
                    location=element.loc,
                    fields={
                        "element": label,
                        "misread": "; ".join(element.misread),
                        "repair": "; ".join(element.repair),
                        "nccl_version": str(version),
                    },
                    evidence=element.evidence + [f"assumed NCCL {version} (--nccl-version)"],
                )
