"""NCCL's topology graph and path computation, reimplemented in Python after its code, version by version.

A file-only load as NCCL does it (src/graph/topo.cc ncclTopoGetSystemFromXml, then
src/graph/paths.cc ncclTopoComputePaths(system, NULL)): nodes are created in the order NCCL
creates them, links are kept in NCCL's order (ncclTopoConnectNodes sorts by bandwidth,
ncclTopoSortSystem puts the PCI uplink last), bandwidths are float32 as NCCL computes them, and
ties are broken as NCCL's loops break them. What differs by version comes from
``NcclVersion.behaviour`` (topolint/model/nccl_version.py), never from a check here. The
differential test (tests/test_oracle.py) holds this module to answers of NCCL's own code.

GPUs stand for NCCL's DEV nodes too (2.30+): without MLOPart a DEV has exactly one GPU behind a
LOC link of LOC_BW, which changes no path type, bandwidth or comparison.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from topolint.model.facts import TopologyFile
from topolint.model.nccl_memory import MemoryFault, NodeMemory, flatten_bcm_switches
from topolint.model.nccl_version import ALIASES, NcclVersion
from topolint.model.numbers import c_int, float32, strtol, strtoull
from topolint.model.nccl_xml import NcclXmlError, read_nccl_xml

LOC_BW = 5000.0
GPU, PCI, NVS, CPU, NIC, NET = "GPU", "PCI", "NVS", "CPU", "NIC", "NET"
LINK_LOC, LINK_NVL, LINK_C2C, LINK_PCI, LINK_SYS, LINK_NET = "LOC", "NVL", "C2C", "PCI", "SYS", "NET"
# Interconnect bandwidths (src/graph/topo.h), GB/s.
_INTER_CPU_BW = {"POWER": 32.0, "ARM": 6.0, "AMD": 16.0, "BDW": 6.0, "SRP": 22.0, "ERP": 40.0,
                 "ZHAOXIN": 6.0, "YONGFENG": 9.0}


class TopologyRejected(Exception):
    """NCCL fails to build the system from this file; the message is NCCL's WARN text ("" where
    NCCL fails without one: ``detail`` then says what failed).

    ``stage``: "xml" (src/graph/xml.cc, ``line`` where the reader stopped, ``within`` the line
    of the top-level element it was reading), "system" (topo.cc ncclTopoGetSystemFromXml;
    ``line`` the element's, when it is one NCCL never fills in) or "paths" (paths.cc).
    ``undefined``: NCCL reads memory it does not own (no single answer); ``crash``: NCCL's code
    crashes or never returns. ``misreads``: single-quoted values NCCL read to the next double
    quote before it stopped (model/nccl_xml.py Misread)."""

    def __init__(self, message: str, line: int = 0, undefined: bool = False, crash: bool = False,
                 stage: str = "system", within: int | None = None, misreads: tuple = (), detail: str = ""):
        super().__init__(message or detail)
        self.message, self.line, self.undefined, self.crash = message, line, undefined, crash
        self.stage, self.within, self.misreads, self.detail = stage, within, misreads, detail or message


@dataclass(eq=False)
class Link:
    type: str
    rem: "Node"
    bw: float


@dataclass
class PathInfo:
    type: int  # index into the version's path order
    bw: float
    count: int
    hops: tuple = ()  # Links from this node towards the base, as NCCL's path->list


@dataclass(eq=False)
class Node:
    type: str
    id: object
    links: list = field(default_factory=list)
    paths: dict = field(default_factory=dict)  # base type -> list[PathInfo] by base index
    attrs: dict = field(default_factory=dict)


def _c_int(text: str | None, name: str, owner: str) -> int:
    """xmlGetAttrInt: strtol(str, NULL, 0); a missing attribute fails NCCL's load."""
    if text is None:
        raise TopologyRejected(f"Attribute {name} of node {owner} not found")
    return c_int(strtol(text, 0)[0])  # the long strtol returns, stored in an int


def _c_str(text: str | None, name: str, owner: str) -> str:
    if text is None:
        raise TopologyRejected(f"Attribute {name} of node {owner} not found")
    return text


def _int_default(text: str | None, default: int) -> int:
    return default if text is None else c_int(strtol(text, 0)[0])  # xmlGetAttrIntDefault


def _bus_int(bus_id: str) -> int:
    """busIdToInt64: hex digits of the bus id, dots and colons skipped, up to 16 digits."""
    digits = []
    for ch in bus_id:
        if ch in ".:":
            continue
        if ch in "0123456789abcdefABCDEF" and len(digits) < 16:
            digits.append(ch)
        else:
            break
    return strtol("".join(digits), 16)[0] if digits else 0


def _pci_class_type(pci_class: str) -> str:
    """kvDictPciClass, prefix matched (kvConvertToInt); unknown classes are PCI."""
    for prefix, kind in (("0x060400", PCI), ("0x080100", PCI), ("0x068000", NVS), ("0x068001", CPU),
                         ("0x03", GPU), ("0x02", NIC)):
        if pci_class.startswith(prefix):
            return kind
    return PCI


def _pci_speed(text: str, version: NcclVersion) -> int:
    for spelling, value in version.behaviour("pci_speeds"):
        if text.startswith(spelling):
            return value
    return 60


class NcclSystem:
    """The system NCCL builds from one topology file, with its computed paths."""

    def __init__(self, topology: TopologyFile, version: NcclVersion, env: dict[str, str] | None = None):
        self.topology = topology
        self.version = version
        self.env = env or {}
        self.order = version.path_order
        self.rank_of_type = {name: i for i, name in enumerate(self.order)}
        self.nodes: dict[str, list[Node]] = {t: [] for t in (GPU, PCI, NVS, CPU, NIC, NET)}
        self._local_memo: dict = {}
        self._local_gpu_memo: dict = {}
        self.flattened = 0  # Broadcom sub-switches merged (ncclTopoFlattenBcmSwitches)
        self.misreads: list = []  # single-quoted values read to the next double quote (<= 2.26)
        try:
            self._build()
            self._compute_paths()
        except TopologyRejected as error:
            error.misreads = error.misreads or tuple(self.misreads)  # misread, then refused later
            raise

    @classmethod
    def from_path_types(cls, version: NcclVersion, gpu_numa: list, net_numa: list, gpu_gpu: dict,
                        gpu_net: dict) -> "NcclSystem":
        """The system NCCL would compute for paths known only by type, as a ``topo -m`` matrix
        gives them: GPUs and NETs in their matrix order (dev = rank = index), ``gpu_gpu[a, b]``
        ("NVL", NVLink count) for direct NVLink peers, ``gpu_net[g, n]`` a path name (None:
        unknown, DIS to NCCL), a CPU per NUMA node of ``gpu_numa``/``net_numa``. Every link of a
        kind has one bandwidth, GPUDirect is assumed on, and what ncclTopoSetPaths would leave is
        taken as given: only the end of ncclTopoComputePaths runs (``_route_nets``: PXN by the
        version's pxn_rule and local_net_rule rows, the GDR reroute), so a matrix meets the same
        rows as a file. P2P reroutes only paths between GPUs that NVLink does not join, and the
        P2C merge needs a C2C path, which a matrix does not show: neither changes a PXN answer."""
        self = cls.__new__(cls)
        self.topology, self.version, self.env = None, version, {}
        self.order = version.path_order
        self.rank_of_type = {name: i for i, name in enumerate(self.order)}
        self.nodes = {t: [] for t in (GPU, PCI, NVS, CPU, NIC, NET)}
        self._local_memo, self._local_gpu_memo, self.flattened, self.misreads = {}, {}, 0, []
        numas = list(dict.fromkeys(list(gpu_numa) + list(net_numa)))
        for numa in numas:
            self.create(CPU, numa, arch=None, vendor=None, model=None, numa=numa)
        for g in range(len(gpu_numa)):
            self.create(GPU, g, dev=g, rank=g, sm=0, gdr=1, mlopart=False, bus=str(g))
        for n in range(len(net_numa)):
            self.create(NET, n, dev=n, gdr=1, bw=_MATRIX_BW)
        t = self.t

        def path(type_name: str | None, count: int, bw: float = _MATRIX_BW, hops: tuple = ()) -> PathInfo:
            if type_name is None:
                return PathInfo(t("DIS"), 0.0, 0)
            return PathInfo(t(ALIASES.get(type_name, type_name)), bw, count, hops)

        def to_cpus(numa) -> list[PathInfo]:
            return [path("PHB", 2) if c == numa else path("SYS", 3) for c in numas]

        gpus, nets, cpus = self.nodes[GPU], self.nodes[NET], self.nodes[CPU]
        for g, gpu in enumerate(gpus):
            row = []
            for p, peer in enumerate(gpus):
                link = gpu_gpu.get((g, p))
                if p == g:
                    row.append(PathInfo(t("LOC"), LOC_BW, 0))
                elif link is not None:
                    row.append(path("NVL", 1, float32(link[1]), (Link(LINK_NVL, peer, float32(link[1])),)))
                else:
                    row.append(path("SYS", 3))  # not NVLink: P2P or not, never a relay
            gpu.paths = {GPU: row, NET: [path(gpu_net.get((g, n)), 3) for n in range(len(nets))],
                         CPU: to_cpus(gpu_numa[g])}
        for n, net in enumerate(nets):
            net.paths = {GPU: [path(gpu_net.get((g, n)), 3) for g in range(len(gpus))], CPU: to_cpus(net_numa[n])}
        for cpu in cpus:
            cpu.paths = {GPU: [path("PHB" if gpu_numa[g] == cpu.id else "SYS", 2) for g in range(len(gpus))],
                         NET: [path("PHB" if net_numa[n] == cpu.id else "SYS", 2) for n in range(len(nets))]}
        self._route_nets()
        return self

    def relay(self, g: int, n: int) -> int | None:
        """The GPU index NCCL proxies GPU ``g``'s traffic to NET ``n`` through (PXN), or None."""
        if self.nodes[GPU][g].paths[NET][n].type != self.t("PXN"):
            return None
        return self.intermediate(g, n)

    def release(self) -> None:
        """Break the graph's cycles (node -> link -> node, paths -> links) so that reference
        counting frees it: a check run turns the cycle collector off (cli.py), and a cluster of
        distinct nodes builds one graph per node. The graph is unusable afterwards."""
        for nodes in self.nodes.values():
            for node in nodes:
                node.links.clear()
                node.paths.clear()
                node.attrs.clear()
        self.nodes.clear()
        self._local_memo.clear()
        self._local_gpu_memo.clear()

    # ---- parameters -----------------------------------------------------------------------------
    def param(self, name: str, default: int) -> int:
        """NCCL_PARAM: strtoll(value, NULL, 0) when set and not empty, else the default."""
        text = self.env.get(f"NCCL_{name}")
        return strtol(text, 0)[0] if text else default

    def t(self, name: str) -> int:
        return self.rank_of_type[name]

    # ---- construction (src/graph/topo.cc) -------------------------------------------------------
    def create(self, kind: str, node_id, **attrs) -> Node:
        node = Node(kind, node_id, attrs=attrs)
        self.nodes[kind].append(node)
        return node

    def find(self, kind: str, node_id) -> Node | None:
        return next((n for n in self.nodes[kind] if n.id == node_id), None)

    @staticmethod
    def connect(node: Node, rem: Node, link_type: str, bw: float) -> None:
        """ncclTopoConnectNodes: aggregate a repeated link, keep links sorted by bandwidth."""
        for i, link in enumerate(node.links):
            if link.rem is rem and link.type == link_type:
                link.bw = float32(link.bw + bw)
                node.links.pop(i)
                break
        else:
            link = Link(link_type, rem, float32(bw))
        at = len(node.links)
        while at > 0 and node.links[at - 1].bw < link.bw:
            at -= 1
        node.links.insert(at, link)

    def _build(self) -> None:
        topo = self.topology
        data = (b"\xef\xbb\xbf" if topo.bom else b"") + topo.text.encode("utf-8")
        try:
            elements = read_nccl_xml(data, topo.path, self.version, self.misreads)
        except NcclXmlError as error:
            raise TopologyRejected(error.message, error.line, error.undefined, stage="xml", within=error.within,
                                   misreads=error.misreads) from None
        if elements is None:
            if not self.version.behaviour("system_node_checked"):  # topNode NULL, dereferenced
                raise TopologyRejected("", crash=True, detail="a file without <system>: ncclTopoGetSystemFromXml "
                                                                "dereferences a NULL topNode (NCCL crashes)")
            raise TopologyRejected("ncclTopoGetSystemFromXml: system node not found in XML")
        for cpu_el in elements.kids("cpu"):
            self._add_cpu(cpu_el)
        self._add_nvlinks(elements)
        self._add_c2c(elements)
        if self.version.behaviour("pcilinks"):
            self._add_pcilinks(elements)
        self._flatten_connect_sort()

    def _add_cpu(self, el) -> None:
        a = el.attrs
        numa = _c_int(a.get("numaid"), "numaid", "cpu")
        cpu = self.create(CPU, numa, element=el)
        arch_text = _c_str(a.get("arch"), "arch", "cpu")
        arch = next((v for k, v in (("x86_64", "X86"), ("arm64", "ARM"), ("ppc64", "POWER"))
                     if arch_text.startswith(k)), None)
        vendor = model = None
        if arch == "X86":
            vendor_text = _c_str(a.get("vendor"), "vendor", "cpu")
            vendor = next((v for k, v in (("GenuineIntel", "INTEL"), ("AuthenticAMD", "AMD"),
                                          ("CentaurHauls", "ZHAOXIN"), ("  Shanghai  ", "ZHAOXIN"))
                           if vendor_text.startswith(k)), None)
            if vendor == "INTEL":
                family = _c_int(a.get("familyid"), "familyid", "cpu")
                model_id = _c_int(a.get("modelid"), "modelid", "cpu")
                model = self.version.intel_cpu_model(family, model_id)
            elif vendor == "ZHAOXIN":
                family = _c_int(a.get("familyid"), "familyid", "cpu")
                model_id = _c_int(a.get("modelid"), "modelid", "cpu")
                model = "YONGFENG" if (family, model_id) == (7, 0x5B) else None
        cpu.attrs.update(arch=arch, vendor=vendor, model=model, numa=numa)
        for child in el.kids():
            if child.name == "pci":
                self._add_pci(child, cpu, numa)
            elif child.name == "nic":
                nic_id = self.version.nic_id(numa, 0)
                nic = self.find(NIC, nic_id)
                if nic is None:
                    nic = self.create(NIC, nic_id, bus=None)
                    self.connect(cpu, nic, LINK_PCI, LOC_BW)
                    self.connect(nic, cpu, LINK_PCI, LOC_BW)
                self._add_nic(child, nic)

    def _add_pci(self, el, parent: Node, numa: int) -> None:
        """ncclTopoAddPci."""
        a, owner = el.attrs, el.name
        kind = _pci_class_type(_c_str(a.get("class"), "class", owner))
        bus_text = _c_str(a.get("busid"), "busid", owner)
        bus = _bus_int(bus_text)
        bw = self._pci_bw(el) if self.version.behaviour("pci_link_read_first") else None
        node = None
        for gpu_el in el.kids("gpu")[: None if self.version.behaviour("gpu_dev_node") else 1]:
            if "rank" not in gpu_el.attrs:
                return  # a <gpu> without a rank is not part of the job: the whole <pci> is skipped
            ga = gpu_el.attrs
            attrs = dict(bus=bus_text.lower(), element=gpu_el, rank=_c_int(ga.get("rank"), "rank", "gpu"),
                         sm=_c_int(ga.get("sm"), "sm", "gpu"), dev=_c_int(ga.get("dev"), "dev", "gpu"),
                         gdr=_c_int(ga.get("gdr"), "gdr", "gpu"), mlopart="mlopart" in ga)
            owner = self.find(GPU, bus) if self.version.behaviour("gpu_id_per_dev") and "mlopart" not in ga else None
            if owner is not None:
                self._add_gpu_on_dev(owner, attrs)
            else:
                node = self.create(GPU, bus, **attrs)
        nic_el = el.first("nic")
        if nic_el is not None:
            nic_id = self.version.nic_id(numa, bus)
            nic = self.find(NIC, nic_id)
            if nic is None:
                nic = node = self.create(NIC, nic_id, bus=bus_text.lower())
            self._add_nic(nic_el, nic)
        elif kind == PCI and node is None:
            device = 0
            for attr, shift in (("vendor", 48), ("device", 32), ("subsystem_vendor", 16), ("subsystem_device", 0)):
                if a.get(attr) is not None:
                    device += strtol(a[attr], 0)[0] << shift
            node = self.create(PCI, bus, bus=bus_text.lower(), device=device & ((1 << 64) - 1), element=el)
            for child in el.kids():
                if child.name != "pcilink" or not self.version.behaviour("pcilinks"):
                    self._add_pci(child, node, numa)
        if node is not None:
            if bw is None:
                bw = self._pci_bw(el)
            self.connect(node, parent, LINK_PCI, bw)
            self.connect(parent, node, LINK_PCI, bw)

    def _add_gpu_on_dev(self, owner: Node, attrs: dict) -> None:
        """ncclTopoAddGpuSub (2.30.7+): a GPU whose bus id has a DEV node already (a duplicated
        <pci>, or a second <gpu>) gets its own id, NCCL_TOPO_GPU_LOCAL_ID(busId, nGpus), and a LOC
        link to that DEV; the DEV is not linked to the PCI parent again. Here the owner GPU stands
        for the DEV, so the new GPU hangs off it (its paths: _copy_dev_sibling_paths)."""
        siblings = sum(1 for g in self.nodes[GPU] if g is owner or g.attrs.get("dev_gpu") is owner)
        gpu = self.create(GPU, owner.id | (siblings << 40), dev_gpu=owner, **attrs)
        self.connect(owner, gpu, LINK_LOC, LOC_BW)
        self.connect(gpu, owner, LINK_LOC, LOC_BW)

    def _pci_bw(self, el) -> float:
        """width x speed / 80 GB/s; a zero width is x16, an unknown speed Gen3 (kvDictPciGen)."""
        width = _c_int(el.attrs.get("link_width"), "link_width", el.name)
        speed = _pci_speed(_c_str(el.attrs.get("link_speed"), "link_speed", el.name), self.version)
        return float32((width or 16) * speed / 80.0)

    def _add_nic(self, el, nic: Node) -> None:
        for net_el in el.kids("net"):
            a = net_el.attrs
            if "dev" not in a:
                continue
            if not _int_default(a.get("net"), 1):
                continue
            dev = _c_int(a.get("dev"), "dev", "net")
            mbps = _int_default(a.get("speed"), 0)
            if mbps <= 0:
                mbps = 10000
            bw = float32(mbps / 8000.0)
            net = self.create(NET, dev, dev=dev, bw=bw, gdr=_int_default(a.get("gdr"), 0),
                              port=_int_default(a.get("port"), 0), element=net_el, nic=nic)
            self.connect(nic, net, LINK_NET, bw)
            self.connect(net, nic, LINK_NET, bw)

    def _gpu_for_element(self, gpu_el) -> Node | None:
        """The GPU node for a <gpu>: NCCL looks it up by bus id (ncclTopoGetNode: the first)."""
        mine = next((g for g in self.nodes[GPU] if g.attrs["element"] is gpu_el), None)
        if mine is not None and mine.attrs.get("dev_gpu") is not None:
            return mine.attrs["dev_gpu"]  # its DEV node's links (ncclTopoGetGpuDevNode)
        return None if mine is None else self.find(GPU, mine.id)

    def _local_cpu_of(self, node: Node, came_from: Node | None = None, stack: tuple = ()) -> Node | None:
        """findLocalCpu: depth first over PCI links to switches and CPUs. Before 2.26 it does not
        skip the node it came from: back at a node already on the stack it recurses forever."""
        if node.type == CPU:
            return node
        if any(n is node for n in stack):
            raise TopologyRejected("findLocalCpu recurses without end (NCCL crashes)", crash=True)
        skip_from = self.version.behaviour("find_local_cpu_skips_from")
        any_node = not self.version.behaviour("find_local_cpu_switches_only")
        for link in node.links:
            if link.type == LINK_PCI and (link.rem is not came_from or not skip_from) and (
                    any_node or link.rem.type in (PCI, CPU)):
                found = self._local_cpu_of(link.rem, node, stack + (node,))
                if found is not None:
                    return found
        return None

    def _add_nvlinks(self, root) -> None:
        """ncclTopoAddNvLinks: count x per-link bandwidth to the target GPU, the CPU or the switch."""
        for parent_bus, gpu_el in _gpus_with_parent_bus(root):
            gpu = self._gpu_for_element(gpu_el)
            for nv in gpu_el.kids("nvlink"):
                if gpu is None:  # e.g. its <pci> was skipped (a <gpu> without rank)
                    raise self._gpu_missing(0, parent_bus)
                with _AtElement(nv):
                    count = _c_int(nv.attrs.get("count"), "count", "nvlink")
                    target_type = _pci_class_type(_c_str(nv.attrs.get("tclass"), "tclass", "nvlink"))
                bw = float32(count * float32(self.version.nvlink_bw(gpu.attrs["sm"])))
                if target_type == GPU:
                    with _AtElement(nv):
                        target = _bus_int(_c_str(nv.attrs.get("target"), "target", "nvlink"))
                    remote = self.find(GPU, target)
                    if remote is not None:
                        self.connect(gpu, remote, LINK_NVL, bw)
                else:
                    if target_type == CPU:
                        remote = self._local_cpu_of(gpu)
                    else:
                        remote = self.nodes[NVS][0] if self.nodes[NVS] else self.create(NVS, 0)
                    if remote is not None:
                        self.connect(gpu, remote, LINK_NVL, bw)
                        self.connect(remote, gpu, LINK_NVL, bw)

    def _add_c2c(self, root) -> None:
        if not self.version.behaviour("c2c_links"):
            return
        for parent_bus, gpu_el in _gpus_with_parent_bus(root):
            gpu = self._gpu_for_element(gpu_el)
            for c2c in gpu_el.kids("c2c"):
                if gpu is None:
                    raise self._gpu_missing(1, parent_bus)
                with _AtElement(c2c):
                    count = _c_int(c2c.attrs.get("count"), "count", "c2c")
                    bw_mbps = _c_int(c2c.attrs.get("bw"), "bw", "c2c")
                bw = float32((bw_mbps * count) / 1000.0)
                cpu = self._local_cpu_of(gpu)
                link_type = LINK_C2C if "C2C" in self.rank_of_type else LINK_NVL  # before 2.26: an NVLink
                if cpu is not None:
                    self.connect(gpu, cpu, link_type, bw)
                    self.connect(cpu, gpu, link_type, bw)

    def _add_pcilinks(self, root) -> None:
        """ncclTopoAddPciLinks: a LOC link from the switch holding <pcilink> to its target switch."""
        for pci_el in root.descendants("pci"):
            for link_el in pci_el.kids("pcilink"):
                bus = _bus_int(pci_el.attrs.get("busid") or "")
                switch = self.find(PCI, bus)
                if switch is None:
                    raise TopologyRejected(f"Add PCI Link error : could not find PCI SW {bus:x}")
                with _AtElement(link_el):
                    target = self.find(PCI, _bus_int(_c_str(link_el.attrs.get("target"), "target", "pcilink")))
                if target is not None:
                    self.connect(switch, target, LINK_LOC, LOC_BW)

    def _gpu_missing(self, which: int, parent_bus: str) -> TopologyRejected:
        """ncclTopoAddNvLinks (0) / ncclTopoAddC2c (1): no GPU (DEV from 2.30.3) has the bus id of
        the <gpu>'s nearest parent with a busid; the WARN names it as the version prints it."""
        text = self.version.behaviour("gpu_link_missing_warn")[which]
        return TopologyRejected(text.format(id=_bus_int(parent_bus), bus=parent_bus))

    def _bcm_gen(self, device: int, level: int) -> int:
        if device & 0xFFFFFFFFFFFFF000 == 0x1000C0101000A000:
            return 4
        if self.version.behaviour("bcm_gen5") and device & 0xFFFFFFFFFFFFF000 == (0x1000C03010000000 | level * 0x1000):
            return 5
        return 0

    def _flatten_connect_sort(self) -> None:
        """ncclTopoFlattenBcmSwitches, ncclTopoConnectCpus, ncclTopoSortSystem, on NCCL's arrays as
        memory (model/nccl_memory.py): the flattening leaves stale link slots the other two read."""
        v = self.version
        memory = NodeMemory(self.nodes, Link, v.behaviour("topo_max_links"), v.behaviour("topo_links_checked"))
        try:
            self.flattened = flatten_bcm_switches(memory, self._bcm_gen, v.behaviour("bcm_gen5"),
                                                  v.behaviour("bcm_flatten_restart"))
            cpus = memory.count[CPU]
            for a in range(cpus):
                for b in range(cpus):
                    if a != b:
                        memory.connect((CPU, a), (CPU, b), LINK_SYS, self._inter_cpu_bw(memory.at((CPU, a)).node))
            for a in range(cpus):
                memory.sort((CPU, a), None)
            memory.hand_back()
        except MemoryFault as fault:
            raise TopologyRejected(fault.message, crash=fault.crash, detail=fault.detail) from None

    def _inter_cpu_bw(self, cpu: Node) -> float:
        arch, vendor, model = cpu.attrs["arch"], cpu.attrs["vendor"], cpu.attrs["model"]
        if arch in ("POWER", "ARM"):
            return _INTER_CPU_BW[arch]
        if arch == "X86" and vendor == "INTEL" and model == "SKL":
            return self.version.behaviour("skl_inter_cpu_bw")
        if arch == "X86" and vendor == "INTEL":
            return _INTER_CPU_BW[model if model in ("ERP", "SRP") else "BDW"]
        if arch == "X86" and vendor == "AMD":
            return self.version.behaviour("amd_inter_cpu_bw")
        if arch == "X86" and vendor == "ZHAOXIN":
            return _INTER_CPU_BW["YONGFENG" if model == "YONGFENG" else "ZHAOXIN"]
        return LOC_BW

    # ---- paths (src/graph/paths.cc) -------------------------------------------------------------
    def _node_text(self, node: Node) -> str:
        """A node as NCCL's WARN texts print it, ``%d/%lx``: its type number and id. A GPU here
        stands for its DEV node from 2.30.3 (the node PCI and NVLinks link to); NCCL_TOPO_ID
        keeps the low 56 bits of an id (one host: system id 0)."""
        number = _TYPE_NUMBERS[node.type]
        if node.type == GPU and node.attrs.get("dev_gpu") is None and self.version.behaviour("dev_node_type"):
            number = self.version.behaviour("dev_node_type")
        node_id = node.id[1] if isinstance(node.id, tuple) else node.id  # NIC: (NUMA, bus), NUMA masked off
        return f"{number}/{node_id & _LOCAL_ID_MASK:x}"

    def _nlinks(self, node: Node) -> int:
        """nlinks as NCCL counts it: a DEV node (2.30.3+) has a LOC link to its own GPU too."""
        own = node.type == GPU and node.attrs.get("dev_gpu") is None and self.version.behaviour("dev_node_type")
        return len(node.links) + (1 if own else 0)

    def index(self, node: Node) -> int:
        return next(i for i, n in enumerate(self.nodes[node.type]) if n is node)

    def _set_paths(self, base: Node) -> None:
        """ncclTopoSetPaths: breadth first from ``base``; the update rule is the version's."""
        kind, count = base.type, len(self.nodes[base.type])
        # getPath: the first node of that type with the base's id (duplicates share one slot)
        base_index = next(i for i, n in enumerate(self.nodes[kind]) if n.id == base.id)
        # A table is allocated once, by the first search that reaches the node; before 2.21 (2.23
        # for the base's own table) calloc leaves its entries LOC at 0 GB/s, after that DIS.
        starts = self.version.behaviour("paths_start_dis")
        dis_rem = self.t("DIS") if starts in ("rem", "all") else self.t("LOC")
        dis_base = self.t("DIS") if starts == "all" else self.t("LOC")

        def path_of(node: Node) -> PathInfo:
            table = node.paths.get(kind)
            if table is None:
                first = dis_base if node is base else dis_rem
                table = node.paths[kind] = [PathInfo(first, 0.0, 0) for _ in range(count)]
            return table[base_index]

        start = path_of(base)
        start.type, start.bw, start.count, start.hops = self.t("LOC"), LOC_BW, 0, ()
        nvb_disabled = self.param("NVB_DISABLE", 0)
        prefers_type = self.version.behaviour("set_paths_type_first")
        frontier = [base]
        while frontier:
            following: list[Node] = []
            for node in frontier:
                path = path_of(node)
                for link in node.links:
                    rem = link.rem
                    rem_path = path_of(rem)
                    bw = min(path.bw, link.bw)
                    if node is not base and node.type == GPU and (
                        nvb_disabled or link.type != LINK_NVL or rem.type != GPU or path.count > 1
                    ):
                        continue
                    new_type = self._step_type(node, rem, link, path)
                    if prefers_type:
                        better = (new_type < rem_path.type or (new_type == rem_path.type and rem_path.bw < bw)
                                  or (new_type == rem_path.type and rem_path.bw == bw
                                      and rem_path.count > path.count + 1))
                    else:
                        better = (rem_path.bw == 0 or rem_path.count > path.count) and rem_path.bw < bw
                    if not better:
                        continue
                    reverse = next((ln for ln in rem.links if ln.rem is node and ln.type == link.type), None)
                    if reverse is None and not self.version.behaviour("reverse_link_same_type"):
                        reverse = next((ln for ln in rem.links if ln.rem is node), None)
                    if reverse is None:  # e.g. a <pcilink> given on one side only
                        raise TopologyRejected(
                            f"Failed to find reverse path from remNode {self._node_text(rem)} nlinks "
                            f"{self._nlinks(rem)} to node {self._node_text(node)}", stage="paths")
                    rem_path.hops = (reverse,) + path.hops
                    rem_path.count = path.count + 1
                    rem_path.bw = bw
                    rem_path.type = new_type
                    if rem not in following:
                        following.append(rem)
            frontier = following

    def _step_type(self, node: Node, rem: Node, link: Link, path: PathInfo) -> int:
        t = self.t
        new_type = t("LOC") if link.type in (LINK_NET, LINK_LOC) else t(link.type if link.type != LINK_PCI else "PIX")
        if link.type == LINK_C2C:
            new_type = t("C2C") if "C2C" in self.rank_of_type else t("NVL")
        if node.type == PCI and rem.type == PCI:
            new_type = t("PXB")
        if link.type == LINK_PCI and (node.type == CPU or rem.type == CPU):
            new_type = t("PHB")
        if node.type == GPU and path.type == t("NVL") and new_type == t("NVL") and path.count + 1 > 1:
            new_type = t("NVB")
        return max(path.type, new_type)

    def merge_type(self, type0: int, type1: int) -> int:
        """mergePathType (2.27.5+): PHB over C2C is P2C; else the worse of the two."""
        high, low = max(type0, type1), min(type0, type1)
        if "P2C" in self.rank_of_type and self.version.behaviour("p2c_merge") in ("merge", "merge_local") \
                and high == self.t("PHB") and low == self.t("C2C"):
            return self.t("P2C")
        return high

    def _inter_step(self, tx: str, ix: int, t1: str, i1: int, t2: str, i2: int) -> None:
        """addInterStep: route node (t1, i1) to (t2, i2) through (tx, ix)."""
        mid = self.nodes[tx][ix]
        src = self.nodes[t1][i1]
        first = src.paths[tx][ix]
        second = mid.paths[t2][i2]
        target = src.paths[t2][i2]
        target.hops = first.hops + second.hops
        target.count = first.count + second.count
        merged = self.merge_type(first.type, second.type) if self.version.behaviour("p2c_merge") in (
            "merge", "merge_local") else max(first.type, second.type)
        target.type = self.t("PXN") if tx == GPU else merged
        target.bw = min(first.bw, second.bw)
        self._changed()

    def _changed(self) -> None:
        self._local_memo.clear()
        self._local_gpu_memo.clear()

    def local(self, kind: str, index: int, result: str) -> list[int]:
        """ncclTopoGetLocal: the result nodes with the best bandwidth, then the best type.
        Memoised; any change to a path (addInterStep, the P2C merge) clears the memo."""
        key = (kind, index, result)
        found = self._local_memo.get(key)
        if found is None:
            found = self._local_memo[key] = self._local(kind, index, result)
        return found

    def _local(self, kind: str, index: int, result: str) -> list[int]:
        paths = self.nodes[kind][index].paths.get(result)
        if paths is None:
            return []
        min_type, max_bw, found = self.t("DIS"), 0.0, []
        for i, p in enumerate(paths):
            if p.bw > max_bw or (p.bw == max_bw and p.type < min_type):
                max_bw, min_type, found = p.bw, p.type, []
            if p.bw == max_bw and p.type == min_type:
                found.append(i)
        return found

    def local_cpu(self, g: int) -> int | None:
        """ncclGetLocalCpu: the CPU fewest hops away (2.30.7: among the best-bandwidth CPUs)."""
        paths = self.nodes[GPU][g].paths.get(CPU)
        rule = self.version.behaviour("local_cpu")
        if rule != "best_then_hops":
            best, min_hops = None, 0
            for c, p in enumerate(paths or []):
                if (p.count > 0 or rule == "fewest_hops_any") and (min_hops == 0 or p.count < min_hops):
                    best, min_hops = c, p.count
            return best
        cpus = self.local(GPU, g, CPU)
        if not cpus:
            return None
        paths = self.nodes[GPU][g].paths[CPU]
        best = cpus[0]
        for c in cpus[1:]:
            if paths[c].count < paths[best].count:
                best = c
        return best

    def rank_index(self, rank: int) -> int | None:
        return next((i for i, g in enumerate(self.nodes[GPU]) if g.attrs["rank"] == rank), None)

    def cpu_type(self) -> tuple:
        cpu = self.nodes[CPU][0] if self.nodes[CPU] else None
        return (cpu.attrs["arch"], cpu.attrs["vendor"], cpu.attrs["model"]) if cpu else (None, None, None)

    def p2p(self, g1: int, g2: int) -> bool:
        """ncclTopoCheckP2p with no communicator; NVML is taken to report P2P as supported."""
        path = self.nodes[GPU][g1].paths[GPU][g2]
        arch, vendor, _ = self.cpu_type()
        level = self.version.p2p_level(arch, vendor, len(self.nodes[GPU]), self.t)
        user = self.user_level("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL")
        if user is not None:
            level = user
        return path.type <= level

    def user_level(self, disable_env: str | None, level_env: str) -> int | None:
        """ncclGetLevel: a path name, or an old-style number, from the environment."""
        if disable_env and self.env.get(disable_env) is not None and strtol(self.env[disable_env], 0)[0] == 1:
            return self.t("LOC")
        text = self.env.get(level_env)
        if text is None:
            return None
        for i, name in enumerate(self.order):
            if name == "NET":
                break
            if text == name:
                return i
            if name == "SYS":
                break
        if text[:1].isdigit():
            old = self.version.levels_old_to_new
            number = min(strtol(text, 0)[0], len(old) - 1)
            return self.t(old[number])
        return None

    def local_net(self, g: int, channel: int) -> int | None:
        """ncclTopoGetLocalNet: the NET index a GPU uses on ``channel`` (-1: NCCL's "no NET" id
        before 2.18, None: no local NET after)."""
        rule = self.version.behaviour("local_net_rule")
        if rule == "one_per_rank":
            return self._local_net_of_rank(g)
        if rule == "net_mask":
            return self._local_net_by_mask(g, channel)
        nets = self.local(GPU, g, NET)
        if not nets:
            return None
        gpus = self.local(NET, nets[0], GPU)
        if not gpus:
            return None
        return nets[local_net_index(self.nodes[GPU][g].attrs["dev"], len(nets), len(gpus), channel, self.version)]

    def _local_net_of_rank(self, g: int) -> int:
        """ncclTopoGetLocalNet before 2.18 (src/graph/search.cc): one NET per rank for every
        channel, among the NETs with the most bandwidth, then the best type, towards the GPU
        (NET to GPU paths, which PXN does not change), the GPU's dev modulo their count."""
        min_type, max_bw, found = self.t("SYS"), 0.0, []
        for n, net in enumerate(self.nodes[NET]):
            p = net.paths[GPU][g]
            if p.bw > max_bw or (p.bw == max_bw and p.type < min_type):
                max_bw, min_type, found = p.bw, p.type, []
            if p.bw == max_bw and p.type == min_type:
                found.append(n)
        return found[self.nodes[GPU][g].attrs["dev"] % len(found)] if found else -1

    def _net_mask(self, g: int) -> tuple[tuple[int, ...], int] | None:
        """getLocalNetMask (2.18.1-2.18.3, src/graph/topo.cc): the ids of the NETs with the most
        NET-to-GPU bandwidth, then the best type, as a 64-bit mask (sorted ids), and that type
        (PATH_DIS when no path beats an unreached one). None: an id of 64 or more
        (ncclInternalError)."""
        min_type, max_bw, ids, best = self.t("DIS"), 0.0, [], self.t("DIS")
        for net in self.nodes[NET]:
            p = net.paths[GPU][g]
            if p.bw > max_bw or (p.bw == max_bw and p.type < min_type):
                max_bw, min_type, ids, best = p.bw, p.type, [], p.type
            if p.bw == max_bw and p.type == min_type:
                ids.append(net.attrs["dev"])
        if any(i >= 64 for i in ids):
            return None
        return tuple(sorted(set(ids))), best

    def _net_index(self, net_id: int) -> int:
        """ncclTopoIdToIndex: the first NET with that id (a NET's id is its dev before 2.24)."""
        return next(n for n, net in enumerate(self.nodes[NET]) if net.attrs["dev"] == net_id)

    def _local_net_by_mask(self, g: int, channel: int) -> int | None:
        """ncclTopoGetLocalNet 2.18.1-2.18.3: the GPUs with the same NET mask as this one share
        its NETs round robin, GPU after GPU, then channel after channel (None: the call fails)."""
        masks = [self._net_mask(h) for h in range(len(self.nodes[GPU]))]
        if any(m is None for m in masks) or not masks[g][0]:
            return None
        mask = masks[g][0]
        sharing = [h for h, m in enumerate(masks) if m[0] == mask]
        return self._net_index(mask[(channel * len(sharing) + sharing.index(g)) % len(mask)])

    def _local_gpu_by_mask(self, n: int) -> int:
        """ncclTopoGetLocalGpu 2.18.1-2.18.3: among the GPUs whose NET mask holds the NET, those
        with the best type; the NET's position in their mask, modulo their count, picks one.
        Two such GPUs with different masks fail the call (WARN, ncclInternalError)."""
        net_id = self.nodes[NET][n].attrs["dev"]
        min_type, local_mask, gpus = self.t("DIS"), (), []
        for h in range(len(self.nodes[GPU])):
            found = self._net_mask(h)
            if found is None:
                raise TopologyRejected("getLocalNetMask: a NET id of 64 or more (ncclInternalError)")
            mask, best = found
            if net_id not in mask:
                continue
            if best < min_type:
                local_mask, gpus, min_type = mask, [], best
            if best == min_type:
                if local_mask and mask != local_mask:  # the format string ends in "\n" (topo.cc)
                    raise TopologyRejected(
                        f"Gpus {h} and {gpus[-1]} both have a type of {min_type} with net {net_id} yet have "
                        f"different netMasks of {_mask_hex(mask)} and {_mask_hex(local_mask)}\n", stage="paths")
                gpus.append(h)
        if not local_mask:
            return -1
        return gpus[local_mask.index(net_id) % len(gpus)]

    def local_gpu(self, n: int) -> int:
        """ncclTopoGetLocalGpu: the first GPU (of the NET's best GPUs) whose channels use it."""
        found = self._local_gpu_memo.get(n)
        if found is None:
            found = self._local_gpu_memo[n] = self._local_gpu(n)
        return found

    def _local_gpu(self, n: int) -> int:
        if self.version.behaviour("local_net_rule") == "net_mask":
            return self._local_gpu_by_mask(n)
        candidates = self.local(NET, n, GPU) if self.version.behaviour("local_gpu_among_best") \
            else list(range(len(self.nodes[GPU])))
        for channel in range(self.version.max_channels):
            for g in candidates:
                if self.local_net(g, channel) == n:
                    return g
        return -1

    def check_gdr(self, g: int, n: int, read: bool) -> int:
        """ncclTopoCheckGdr: 0 disabled, 1 enabled, 2 enabled with PCI mapping (C2C systems)."""
        net, gpu = self.nodes[NET][n], self.nodes[GPU][g]
        if net.attrs["gdr"] == 0 or gpu.attrs["gdr"] == 0:
            return 0
        if gpu.attrs["mlopart"] and self.version.behaviour("gdr_off_mlopart") and not self.param("NET_GDR_MLOPART", 0):
            return 0
        if read:
            gdr_read = self.param("NET_GDR_READ", -2)
            if gdr_read == 0:
                return 0
            if gdr_read < 0 and (gpu.attrs["sm"] < 80 or not self.version.behaviour("gdr_read_sm80")):
                gpus = self.nodes[GPU]
                nvlink = len(gpus) == 1 or any(i != g and gpu.paths[GPU][i].type == self.t("NVL")
                                               for i in range(len(gpus)))
                if not nvlink:
                    return 0
        gdr_c2c = self.param("NET_GDR_C2C", self.version.behaviour("net_gdr_c2c_default"))
        rule = self.version.behaviour("gdr_level")
        level = self.t("P2C") if rule == "p2c_if_gdr_c2c" and gdr_c2c else self.t("PXB")
        user = self.user_level(None, "NCCL_NET_GDR_LEVEL")
        if user is not None:
            level = user
        distance = gpu.paths[NET][n].type
        if distance == self.t("PXN"):
            g = self.intermediate(g, n)
            gpu = self.nodes[GPU][g]
            distance = gpu.paths[NET][n].type
        c = self.local_cpu(g)
        local_c2c = c is not None and "C2C" in self.rank_of_type and gpu.paths[CPU][c].type == self.t("C2C")
        if rule == "phb_c2c_as_c2c" and gdr_c2c and distance == self.t("PHB") and local_c2c:
            distance = self.t("C2C")
        if rule == "p2c_as_c2c" and gdr_c2c and distance == self.t("P2C"):
            distance = self.t("C2C")
        if distance > level:
            return 0
        if "C2C" not in self.rank_of_type:
            return 1
        direct = self.t("P2C") if rule == "p2c_if_gdr_c2c" else self.t("C2C")
        return 2 if local_c2c and distance != direct else 1

    def intermediate(self, g: int, n: int) -> int:
        """ncclTopoGetIntermediateRank, as a GPU index: the first GPU on a PXN path."""
        path = self.nodes[GPU][g].paths[NET][n]
        if path.type != self.t("PXN"):
            return g
        for link in path.hops:
            if link.rem.type != NVS:
                if link.rem.type == GPU:
                    return self.index(link.rem)
                break
        raise TopologyRejected(f"Could not find intermediate GPU between GPU rank {g} and NIC {n}")

    def _compute_paths(self) -> None:
        """ncclTopoComputePaths(system, NULL)."""
        for kind in (CPU, GPU, NET, NVS):
            for node in self.nodes[kind]:
                if node.attrs.get("dev_gpu") is None:
                    self._set_paths(node)
        self._copy_dev_sibling_paths()
        gpus = self.nodes[GPU]
        # What ncclTopoSetPaths gives each GPU, before P2P, PXN and GDR reroute paths through a
        # CPU or a relay: the hardware's paths, which topolint's rules judge (System.raw_paths).
        self.set_paths = [{kind: [(p.type, p.bw, p.count) for p in gpu.paths.get(kind, ())]
                           for kind in (CPU, GPU, NET)} for gpu in gpus]
        for g in range(len(gpus)):
            for p in range(len(gpus)):
                if not self.p2p(p, g):
                    cpu = self.local_cpu(g)
                    self._inter_step(CPU, cpu, GPU, p, GPU, g)
        self._route_nets()

    def _route_nets(self) -> None:
        """The end of ncclTopoComputePaths: the P2C merge, then per NET and GPU the PXN rule of
        the version and the reroute through the CPU when GDR fails."""
        gpus, nets = self.nodes[GPU], self.nodes[NET]
        self._merge_p2c()
        pxn_disabled = self.param("PXN_DISABLE", 0) == 1 or self.version.behaviour("pxn_rule") is None
        for n, net in enumerate(nets):
            for g, gpu in enumerate(gpus):
                if not pxn_disabled:
                    self._maybe_pxn(n, g)
                below_phb = gpu.paths[NET][n].type < self.t("PHB")
                if below_phb or not self.version.behaviour("gdr_divert_below_phb_only"):
                    if self.check_gdr(g, n, read=False) == 0:
                        cpu = self.local_cpu(g)
                        self._inter_step(CPU, cpu, NET, n, GPU, g)
                        self._inter_step(CPU, cpu, GPU, g, NET, n)

    def _copy_dev_sibling_paths(self) -> None:
        """A GPU behind another GPU's DEV node (2.30.7+) sees and is seen as that GPU: every path
        runs through the shared DEV and ends with a LOC hop of LOC_BW, which changes no type or
        bandwidth (ncclTopoSetPaths lets a DEV forward to its GPUs over LOC). Between the two the
        path is LOC over the DEV."""
        gpus = self.nodes[GPU]
        for s, sibling in enumerate(gpus):
            owner = sibling.attrs.get("dev_gpu")
            if owner is None:
                continue
            o = self.index(owner)
            for kind in (CPU, GPU, NET, NVS):
                for node in self.nodes[kind]:
                    table = node.paths.get(GPU)
                    if table is not None:
                        table[s] = _copy_path(table[o])
            sibling.paths = {kind: [_copy_path(p) for p in table] for kind, table in owner.paths.items()}
            for a, b in ((o, s), (s, o)):
                gpus[a].paths[GPU][b] = PathInfo(self.t("LOC"), LOC_BW, 2)
            sibling.paths[GPU][s] = PathInfo(self.t("LOC"), LOC_BW, 0)

    def _merge_p2c(self) -> None:
        rule = self.version.behaviour("p2c_merge")
        if rule is None:
            return
        P2C = self.t("P2C")
        for g, gpu in enumerate(self.nodes[GPU]):
            c = self.local_cpu(g)
            if c is None:
                continue
            nets = self.local(GPU, g, NET) if rule == "merge_local" else range(len(self.nodes[NET]))
            for n in nets:
                net = self.nodes[NET][n]
                if rule == "phb_c2c":
                    hit = gpu.paths[NET][n].type == self.t("PHB") and gpu.paths[CPU][c].type == self.t("C2C")
                    if hit:
                        gpu.paths[NET][n].type = net.paths[GPU][g].type = P2C
                        self._changed()
                elif self.merge_type(gpu.paths[CPU][c].type, net.paths[CPU][c].type) == P2C:
                    gpu.paths[NET][n].type = min(P2C, gpu.paths[NET][n].type)
                    net.paths[GPU][g].type = min(P2C, net.paths[GPU][g].type)
                    self._changed()

    def _maybe_pxn(self, n: int, g: int) -> None:
        """The PXN condition of ncclTopoComputePaths, as the version states it."""
        rule = self.version.behaviour("pxn_rule")
        if rule in ("first_preferring_peer", "last_peer_prefer_local", "best_peer_prefer_local"):
            relay = self._pxn_relay_before_2_18(n, g, rule)
            if relay is not None:
                self._inter_step(GPU, relay, GPU, g, NET, n)
            return
        peer_index = self.local_gpu(n)
        if peer_index in (g, -1):
            return
        t, rule = self.t, self.version.behaviour("pxn_rule")
        peer, gpu = self.nodes[GPU][peer_index], self.nodes[GPU][g]
        peer_net, own = peer.paths[NET][n], gpu.paths[NET][n]
        pxn_c2c = self.param("PXN_C2C", self.version.behaviour("pxn_c2c_default"))
        if rule == "pxb":
            peer_ok, worse = peer_net.type <= t("PXB"), t("PXB")
        elif rule == "pxb_or_p2c":
            peer_ok = peer_net.type <= t("PXB") or (pxn_c2c and peer_net.type == t("P2C"))
            worse = t("PXB")
        else:
            level = t("P2C") if pxn_c2c else t("PXB")
            peer_ok, worse = peer_net.type <= level, (level if rule == "pxn_type" else t("PXN"))
        if peer_ok and self.version.behaviour("pxn_relay_needs_gdr"):
            peer_ok = self.check_gdr(peer_index, n, read=True) != 0
        if peer_ok and peer.paths[GPU][g].type <= t("NVL") and (peer_net.bw > own.bw or own.type > worse):
            self._inter_step(GPU, peer_index, GPU, g, NET, n)

    def _pxn_relay_before_2_18(self, n: int, g: int, rule: str) -> int | None:
        """Before 2.12.12: for a GPU whose path is worse than PXB, the first GPU whose own NET is
        ``n`` (ncclTopoGetLocalNet), at PXB from the NET and NVLink-attached. 2.12.12-2.13: any
        GPU at PXB to the NET and NVLink-attached, the last one found or the first whose own NET
        is ``n``. 2.14-2.17: the same without the PXB gate on the GPU's own path, but the relay
        must have more bandwidth to the NET or spare the GPU a CPU hop."""
        t, gpus = self.t, self.nodes[GPU]
        own, net = gpus[g].paths[NET][n], self.nodes[NET][n]
        if rule != "best_peer_prefer_local" and own.type <= t("PXB"):
            return None
        if rule == "first_preferring_peer":
            return next((p for p in range(len(gpus)) if p != g and self.local_net(p, 0) == n
                         and net.paths[GPU][p].type <= t("PXB") and gpus[p].paths[GPU][g].type <= t("NVL")), None)
        relay = None
        for p, peer in enumerate(gpus):
            peer_net = peer.paths[NET][n]
            if p == g or peer_net.type > t("PXB") or peer.paths[GPU][g].type > t("NVL") or (
                    rule == "best_peer_prefer_local" and peer_net.bw <= own.bw and own.type <= t("PXB")):
                continue
            relay = p
            if self.local_net(p, 0) == n:
                break
        return relay

    # ---- answers --------------------------------------------------------------------------------
    def type_name(self, index: int) -> str:
        return self.order[index]


_MATRIX_BW = 12.0  # one bandwidth for every PCIe path of a matrix (it shows none)
_TYPE_NUMBERS = {GPU: 0, PCI: 1, NVS: 2, CPU: 3, NIC: 4, NET: 5}  # src/graph/topo.h
_LOCAL_ID_MASK = 0x00FFFFFFFFFFFFFF  # NCCL_TOPO_ID_LOCAL_ID_MASK


class _AtElement:
    """Gives an attribute error of an element NCCL never fills in (<nvlink>, <c2c>, <pcilink>)
    that element's line."""

    def __init__(self, element):
        self.element = element

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if isinstance(error, TopologyRejected) and not error.line and self.element.loc is not None:
            error.line = self.element.loc.line
        return False


def _gpus_with_parent_bus(root) -> list[tuple[str, object]]:
    """Each <gpu> with the busid of its nearest ancestor that has one (ncclTopoAddNvLinks passes
    ``busId ? busId : parentBusId`` down), in document order (iterative: nesting is unbounded)."""
    out, stack = [], [(root, "")]
    while stack:
        node, bus = stack.pop()
        bus = node.attrs.get("busid") or bus
        for child in reversed(node.children):
            stack.append((child, bus))
        if node.name == "gpu":
            out.append((bus, node))
    return out


def _copy_path(path: PathInfo) -> PathInfo:
    return PathInfo(path.type, path.bw, path.count, path.hops)


# Files NCCL's reader and graph builder accepted, by version and the file's text with names, GUIDs
# and host hashes renamed canonically: the nodes of a cluster differ mostly in those, so one
# acceptance answers for all of them. What NCCL's load can see of such values is kept: their
# length (the reader's 255-character limit) and which of them are equal. Host hashes and GUIDs
# are compared as NCCL reads them (strtoull base 16: topo.cc `ncclGetSystemId` gives CPUs with
# one hash one system, `ncclTopoAddNet` keys the ASIC by GUID), names as written. Only
# acceptances are kept: a refusal may stop on one of these values.
_ACCEPTED: set[bytes] = set()
# A value of plain characters (no quote, '<', '>', '#' or line end); '#' marks the stand-ins.
_RENAMEABLE = re.compile(r'(\s(host_hash|name|guid)=")([0-9A-Za-z_.:]*)(?=")')


_DIGESTS: OrderedDict = OrderedDict()  # (id(topology), version) -> (topology, digest), the latest few
_DIGESTS_LIMIT = 4  # a node's topologies (each kept alive while here: few, so memory stays a node's)


def renamed_digest(topology: TopologyFile, version: NcclVersion) -> bytes:
    """The key under which nodes share NCCL's answers for a file: its text with names, GUIDs and
    host hashes renamed canonically (see above), its byte-order mark and the version. A node's
    checks ask it several times (System.signature, check_loads): the latest few are kept, each
    with its topology so that the id is not reused meanwhile."""
    key = (id(topology), version)
    kept = _DIGESTS.get(key)
    if kept is not None and kept[0] is topology:
        return kept[1]
    digest = _renamed_digest(topology, version)
    _DIGESTS[key] = (topology, digest)
    while len(_DIGESTS) > _DIGESTS_LIMIT:
        _DIGESTS.popitem(last=False)
    return digest


def _renamed_digest(topology: TopologyFile, version: NcclVersion) -> bytes:
    text = renamed_text(topology.text or "")
    return hashlib.blake2b(f"{version}\0{topology.bom}\0{text}".encode("utf-8", "surrogatepass"),
                           digest_size=20).digest()


_RENAMED_NEEDLES = tuple((attribute, f'{attribute}="') for attribute in ("host_hash", "name", "guid"))
_RENAMED_VALUE = re.compile(r'[0-9A-Za-z_.:]*(?=")')


def renamed_text(text: str) -> str:
    """``_RENAMEABLE.sub`` with the stand-ins (see above), found with str.find: the regex tried
    every blank of the file, which was most of the digest's time. A value's characters are never
    blanks, so no occurrence starts inside another's match, and the occurrences in text order
    are the regex's matches."""
    found = []
    for attribute, needle in _RENAMED_NEEDLES:
        at = text.find(needle, 1)
        while at != -1:
            if text[at - 1].isspace():  # \s: str.isspace is the same test (Py_UNICODE_ISSPACE)
                found.append((at, attribute, at + len(needle)))
            at = text.find(needle, at + 1)
    found.sort()
    seen: dict[tuple, int] = {}
    pieces, done = [], 0
    for _, attribute, start in found:
        match = _RENAMED_VALUE.match(text, start)
        if match is None:
            continue
        value = match.group()
        identity = (attribute, value) if attribute == "name" else ("hex", strtoull(value, 16)[0])
        index = seen.setdefault(identity, len(seen))
        pieces += (text[done:start], f"#{index}#{len(value)}")
        done = match.end()
    pieces.append(text[done:])
    return "".join(pieces)


def check_loads(topology: TopologyFile, version: NcclVersion) -> tuple:
    """Raises TopologyRejected as ``NcclSystem(topology, version)`` would, building the system
    only for a file that differs from every accepted one in more than renameable values.
    Returns the values NCCL misread in a file it accepts (model/nccl_xml.py Misread; usually
    none, and only a file without them is remembered as accepted)."""
    key = renamed_digest(topology, version)
    if key in _ACCEPTED:
        return ()
    system = NcclSystem(topology, version)
    misreads = tuple(system.misreads)
    system.release()  # only the answer is kept
    if not misreads:
        _ACCEPTED.add(key)
    return misreads


def local_net_index(dev: int, net_count: int, gpu_count: int, channel: int, version: NcclVersion) -> int:
    """ncclTopoGetLocalNet's choice among a GPU's ``net_count`` best NETs, shared by ``gpu_count``
    GPUs: the GPU's dev (modulo the GPU count from 2.29.7), bit-mirrored when the count is a power
    of two, then one step per channel within the GPU's share."""
    per_gpu = -(-net_count // gpu_count)
    net = dev % gpu_count if version.behaviour("local_net_dev_modulo") else dev
    if net_count & (net_count - 1) == 0:
        net = _mirror_bits(net, net_count)
    return (net + channel % per_gpu) % net_count


def _mask_hex(ids: tuple[int, ...]) -> str:
    return f"{sum(1 << i for i in ids):x}"


def _mirror_bits(value: int, pow2: int) -> int:
    mirror, b, mb = 0, 1, pow2 >> 1
    while b < pow2:
        if value & b:
            mirror |= mb
        b, mb = b << 1, mb >> 1
    return mirror
