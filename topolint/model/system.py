"""The graph NCCL builds from a topology file, and the path types it computes over it.

Nodes follow NCCL's types (GPU, PCI, NVS, CPU, NIC, NET); links carry a type and a bandwidth
in GB/s. Paths are found as ncclTopoSetPaths does: breadth first, fewest hops, then most
bandwidth, the type being the worst step; then P2C merging, PXN routes and the GDR decision
(nccl-formats.md 1.4-1.6). Path search runs on plain dicts; ``System.graph`` gives the same graph
as a networkx DiGraph, importing networkx only then.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

from topolint.model.facts import CPU_CLASS, NVSWITCH_CLASS, Cpu, Gpu, Net, Nic, PciDevice, TopologyFile, build
from topolint.model.nccl_version import NcclVersion
from topolint.model.pcie import link_bandwidth_gbs
from topolint.model.values import Values

LOC_BW = 5000.0
# Per-link NVLink bandwidth by SM (topo.h at HEAD); unknown SM gets 20.
_NVLINK_BW = [(100, 40.1), (90, 20.6), (87, 20.0), (86, 12.0), (80, 20.0), (70, 20.0), (60, 18.0)]


def networkx():
    """networkx, an optional dependency: only the graph export uses it (``topolint[graph]``)."""
    try:
        import networkx as nx
    except ImportError:
        raise ImportError("the graph export needs networkx: pip install 'topolint[graph]'") from None
    return nx


def nvlink_bw(sm: int | None) -> float:
    for min_sm, bw in _NVLINK_BW:
        if sm is not None and sm >= min_sm:
            return bw
    return 20.0


def sys_bw(cpu: Cpu) -> float:
    """The CPU interconnect bandwidth NCCL assumes (only used to break ties between paths)."""
    arch, vendor = (cpu.arch or "").lower(), (cpu.vendor or "")
    if arch.startswith("ppc"):
        return 32.0
    if arch.startswith("arm"):
        return 6.0
    if vendor == "GenuineIntel":
        model = cpu.model_id or 0
        return 40.0 if model >= 0xCF else 22.0 if model >= 0x8F else 10.0 if model >= 0x55 else 6.0
    if vendor == "AuthenticAMD":
        return 16.0
    return LOC_BW


@dataclass(frozen=True)
class Path:
    type: str  # NCCL path type name
    bw: float  # GB/s, the narrowest link
    hops: int
    via: tuple = ()  # node ids passed through, excluding both ends
    proxy_gpu: str | None = None  # PXN: the peer GPU whose NIC path is used


def gpu_id(bus_id: str) -> tuple:
    return ("gpu", bus_id)


def net_id(nic_index: int, net_index: int) -> tuple:
    return ("net", nic_index, net_index)


# Path tables and NCCL graphs by System.signature: a cluster's identical nodes share one
# computation. Bounded, least recently used first out, so a cluster of distinct nodes does not
# keep every node's graph. An evicted NCCL graph is released (its cycles broken): callers use a
# graph only within one call, and a node's own entries are the most recent.
_PATHS: OrderedDict[tuple, object] = OrderedDict()
_PATHS_LIMIT = 96


def _recall(key: tuple):
    value = _PATHS.get(key, _PATHS)
    if value is _PATHS:
        return None
    _PATHS.move_to_end(key)
    return value


def _remember(key: tuple, value):
    _PATHS[key] = value
    _PATHS.move_to_end(key)
    while len(_PATHS) > _PATHS_LIMIT:
        _, evicted = _PATHS.popitem(last=False)
        if hasattr(evicted, "release"):
            evicted.release()
    return value


class System:
    """NCCL's view of one topology file for one NCCL version."""

    def __init__(self, topology: TopologyFile, version: NcclVersion):
        self.topology = topology
        self.version = version
        self.pci_by_bus: dict[str, PciDevice] = topology.pci_by_bus()
        self.gpus: dict[str, Gpu] = {g.bus_id: g for g in topology.gpus}
        self.nets: dict[tuple, tuple[Nic, Net]] = {}
        self._nic_nodes: dict[int, tuple] = {}
        self._nearest: dict[tuple, list] = {}  # nearest_nets answers
        for nic_index, nic in enumerate(topology.nics):
            self._nic_nodes[nic_index] = ("nic", nic.bus_id) if nic.bus_id else ("nic", f"cpu{nic.cpu_index}#{nic_index}")
            # A NIC stated only by its PCI class (partial files) still is an endpoint.
            nets = nic.nets or [build(Net, name=None, dev=None, speed_mbps=None, port=None,
                                      gdr=None, guid=None, attrs={}, loc=nic.loc)]
            for net_index, net in enumerate(nets):
                self.nets[net_id(nic_index, net_index)] = (nic, net)

    @cached_property
    def links(self) -> dict[tuple, dict[tuple, dict]]:
        """Adjacency: node -> remote -> {"type", "bw"}. Plain dicts keep path search cheap."""
        self._adj: dict[tuple, dict[tuple, dict]] = {}
        self._build()
        return self._adj

    @cached_property
    def graph(self):
        """The same graph as a networkx DiGraph, for whoever wants to analyse or draw it."""
        nx = networkx()
        graph = nx.DiGraph()
        for node, remotes in self.links.items():
            graph.add_node(node, kind=node[0])
            for remote, link in remotes.items():
                graph.add_edge(node, remote, **link)
        return graph

    @cached_property
    def signature(self) -> tuple:
        """Everything paths depend on. Nodes of one cluster mostly share it, so their paths are
        computed once (host hashes reduced to which CPUs share a host; names left out)."""
        from topolint.model.nccl_graph import renamed_digest

        topo = self.topology
        hosts = {}
        return Values((  # hashed once: the tables of NCCL's answers are asked it several times a node
            str(self.version),
            tuple((c.index, hosts.setdefault(c.host_hash, len(hosts)), c.arch, c.vendor, c.model_id)
                  for c in topo.cpus),
            tuple((p.bus_id, p.kind, p.parent_bus_id, p.cpu_index, p.link_speed, p.link_width) for p in topo.pci),
            tuple((g.bus_id, g.sm, g.gdr, g.cpu_index,
                   tuple((n.target, n.count, n.tclass) for n in g.nvlinks),
                   tuple((c.bw_mbps, c.count) for c in g.c2c)) for g in topo.gpus),
            tuple((nic.bus_id, nic.cpu_index, tuple((n.speed_mbps, n.gdr) for n in nic.nets)) for nic in topo.nics),
            # NCCL's own graph reads the whole file (switch ids, <pcilink>, layout): the key its
            # load shares under (names, GUIDs and host hashes renamed, their lengths and equalities
            # kept), so identical nodes of a cluster still share one result.
            renamed_digest(topo, self.version) if topo.text else None,
        ))

    # ---- construction -------------------------------------------------------------------------
    def _node_for_pci(self, pci: PciDevice) -> tuple:
        if pci.kind == "gpu":
            return gpu_id(pci.bus_id)
        if pci.kind == "nic":
            return ("nic", pci.bus_id)
        return ("pci", pci.bus_id)

    def _link(self, a: tuple, b: tuple, link_type: str, bw: float, both: bool = True) -> None:
        for u, v in ((a, b), (b, a)) if both else ((a, b),):
            remotes = self._adj.setdefault(u, {})
            self._adj.setdefault(v, {})
            if v in remotes and remotes[v]["type"] == link_type:
                remotes[v]["bw"] += bw  # NCCL adds bandwidth of repeated links
            else:
                remotes[v] = {"type": link_type, "bw": bw}

    def _build(self) -> None:
        topo, version, adj = self.topology, self.version, self._adj
        for cpu in topo.cpus:
            adj.setdefault(("cpu", cpu.index), {})
        for pci in topo.pci:
            node = self._node_for_pci(pci)
            adj.setdefault(node, {})
            parent = ("cpu", pci.cpu_index) if pci.parent_bus_id is None else self._node_for_pci(
                self.pci_by_bus[pci.parent_bus_id]
            )
            bw = link_bandwidth_gbs(pci.link_speed, pci.link_width, version)
            self._link(node, parent, "PCI", bw)
        for nic_index, nic in enumerate(topo.nics):
            nic_node = self._nic_nodes[nic_index]
            if not nic.bus_id:
                self._link(nic_node, ("cpu", nic.cpu_index), "PCI", LOC_BW)
        for node, (nic, net) in self.nets.items():
            speed = net.speed_mbps if net.speed_mbps and net.speed_mbps > 0 else 10000
            self._link(self._nic_nodes[node[1]], node, "NET", speed / 8000.0)
        self._connect_cpus()
        for gpu in topo.gpus:
            self._add_gpu_links(gpu)

    def _connect_cpus(self) -> None:
        cpus = self.topology.cpus
        for a in cpus:
            for b in cpus:
                if a.index < b.index and (a.host_hash or "") == (b.host_hash or ""):
                    bw = min(sys_bw(a), sys_bw(b))
                    self._link(("cpu", a.index), ("cpu", b.index), "SYS", bw)

    def _add_gpu_links(self, gpu: Gpu) -> None:
        node = gpu_id(gpu.bus_id)
        per_link = nvlink_bw(gpu.sm)
        for link in gpu.nvlinks:
            tclass = (link.tclass or NVSWITCH_CLASS).lower()
            count = link.count or 0
            if count <= 0 or link.target == gpu.bus_id:
                continue  # a link to itself is not a peer link
            if tclass.startswith("0x03"):
                if link.target in self.gpus:
                    self._link(node, gpu_id(link.target), "NVL", count * per_link, both=False)
            elif tclass.startswith(CPU_CLASS):
                self._link(node, ("cpu", gpu.cpu_index), "NVL", count * per_link)
            else:
                self._link(node, ("nvs", 0), "NVL", count * per_link)
        for c2c in gpu.c2c:
            if c2c.bw_mbps and c2c.count:
                self._link(node, ("cpu", gpu.cpu_index), "C2C", c2c.bw_mbps * c2c.count / 1000.0)

    # ---- paths --------------------------------------------------------------------------------
    def _step_type(self, node: tuple, remote: tuple, link_type: str) -> str:
        if link_type == "NET":
            return "LOC"
        if link_type == "PCI":
            if node[0] == "cpu" or remote[0] == "cpu":
                return "PHB"
            if node[0] == "pci" and remote[0] == "pci":
                return "PXB"
            return "PIX"
        return link_type

    def nic_node(self, net: tuple) -> tuple:
        """The graph node of the NIC that holds ``net`` (its ("nic", bus id), or one under a CPU)."""
        return self._nic_nodes[net[1]]

    def link_type(self, a: tuple, b: tuple) -> str:
        """The path type one step over the link a-b counts as (PIX, PXB, PHB, NVL, SYS, C2C), or
        NET for a NIC's network link: what drawings label a link with."""
        kind = self.links[a][b]["type"]
        return "NET" if kind == "NET" else self._step_type(a, b, kind)

    def _worse(self, a: str, b: str) -> str:
        return a if self.version.rank(a) >= self.version.rank(b) else b

    def paths_from(self, source: tuple) -> dict[tuple, Path]:
        """Breadth-first paths from ``source`` (ncclTopoSetPaths), before PXN and P2C."""
        paths = {source: Path("LOC", LOC_BW, 0)}
        frontier = [source]
        while frontier:
            following = []
            for node in frontier:
                path = paths[node]
                for remote, link in self.links.get(node, {}).items():
                    # Routing through a GPU is allowed only as one NVLink hop to another GPU.
                    if node != source and node[0] == "gpu" and (
                        link["type"] != "NVL" or remote[0] != "gpu" or path.hops > 1
                    ):
                        continue
                    bw = min(path.bw, link["bw"])
                    known = paths.get(remote)
                    if known is not None and not (known.hops > path.hops and known.bw < bw):
                        continue
                    step = self._step_type(node, remote, link["type"])
                    if node[0] == "gpu" and node != source and path.type == "NVL" and step == "NVL":
                        step = "NVB"
                    via = path.via + ((node,) if node != source else ())
                    paths[remote] = Path(self._worse(path.type, step), bw, path.hops + 1, via)
                    following.append(remote)
            frontier = following
        return paths

    def node_of(self, bus_id: str) -> tuple | None:
        """The graph node of a PCI bus id (GPU, NIC, bridge), or None."""
        pci = self.pci_by_bus.get(bus_id)
        return self._node_for_pci(pci) if pci is not None else None

    def path_between(self, a: tuple, b: tuple) -> Path:
        """The path type between any two graph nodes; DIS when none exists."""
        if a[0] == "gpu" and b[0] == "net":
            return self.gpu_net_paths[a[1]].get(b, Path("DIS", 0.0, 0))
        if a[0] == "gpu" and a[1] in self.gpus:
            return self.raw_paths[a[1]].get(b, Path("DIS", 0.0, 0))
        return self.paths_from(a).get(b, Path("DIS", 0.0, 0))

    @cached_property
    def raw_paths(self) -> dict[str, dict[tuple, Path]]:
        """Each GPU's paths before P2P, PXN and GDR reroute them: type, bandwidth and hop count
        as NCCL's ncclTopoSetPaths computes them (model/nccl_graph.py) wherever NCCL loads the
        file; ``via`` (the nodes passed, which the estimate routes over) from this graph's own
        search, which also answers alone for files NCCL refuses."""
        cached = _recall(("raw", self.signature))
        if cached is None:
            cached = {bus: self.paths_from(gpu_id(bus)) for bus in self.gpus}
            nccl = self.nccl()
            if nccl is not None:
                self._take_nccl_set_paths(nccl, cached)
            _remember(("raw", self.signature), cached)
        return cached

    def _take_nccl_set_paths(self, nccl, paths: dict[str, dict[tuple, Path]]) -> None:
        from topolint.model.nccl_graph import CPU as NCCL_CPU
        from topolint.model.nccl_graph import GPU as NCCL_GPU
        from topolint.model.nccl_graph import NET as NCCL_NET

        cpu_by_line = {cpu.loc.line: ("cpu", cpu.index) for cpu in self.topology.cpus if cpu.loc is not None}
        targets = {
            NCCL_GPU: [gpu_id(bus) if bus in self.gpus else None for bus in nccl.gpu_bus],
            NCCL_NET: list(nccl.net_keys),
            NCCL_CPU: [cpu_by_line.get(node.attrs["element"].loc.line) for node in nccl.nodes[NCCL_CPU]],
        }
        # getPath: nodes of one type with one id (a numaid two hosts share, a duplicated bus id)
        # share the first one's slot, so each is judged by the path NCCL stores there.
        slots = {kind: [next(j for j, other in enumerate(nccl.nodes[kind]) if other.id == node.id)
                        for node in nccl.nodes[kind]] for kind in targets}
        for g, bus in enumerate(nccl.gpu_bus):
            mine = paths.get(bus)
            if mine is None:
                continue
            for kind, keys in targets.items():
                table = nccl.set_paths[g][kind]
                for key, slot in zip(keys, slots[kind]):
                    if key is None or key == gpu_id(bus) or slot >= len(table):
                        continue
                    type_index, bw, count = table[slot]
                    name = nccl.type_name(type_index)
                    if name == "DIS" or count == 0:  # count 0: a slot no search reached (calloc's LOC)
                        mine.pop(key, None)
                        continue
                    known = mine.get(key)
                    mine[key] = Path(name, bw, count, known.via if known is not None else ())

    def gpu_cpu_path(self, gpu: Gpu) -> Path | None:
        return self.raw_paths[gpu.bus_id].get(("cpu", gpu.cpu_index))

    def _merged(self, gpu: Gpu, net: tuple, path: Path) -> Path:
        """PHB through the GPU's own CPU reached over C2C is P2C (mergePathType, 2.27+)."""
        nic, _ = self.nets[net]
        local = self.gpu_cpu_path(gpu)
        if (
            self.version.has_p2c
            and path.type == "PHB"
            and local is not None
            and local.type == "C2C"
            and nic.cpu_index == gpu.cpu_index
        ):
            return Path("P2C", path.bw, path.hops, path.via)
        return path

    @cached_property
    def gpu_net_paths(self) -> dict[str, dict[tuple, Path]]:
        """Final GPU to NET paths: P2C merged, PXN routes applied, GDR-less paths through the CPU,
        as NCCL's own ncclTopoComputePaths gives them (model/nccl_graph.py); the simplified model
        only for GPUs or NETs NCCL does not have (or when NCCL refuses the file)."""
        cached = _recall(("net", self.signature))
        if cached is None:
            cached = self._gpu_net_paths()
            nccl = self.nccl()
            if nccl is not None:
                for (bus, net), path in self._nccl_net_paths(nccl).items():
                    cached.setdefault(bus, {})[net] = path
            _remember(("net", self.signature), cached)
        return cached

    def nccl(self, env: dict[str, str] | None = None):
        """NCCL's own graph for this file and version (NcclSystem), or None when NCCL refuses
        the file or its NETs cannot be matched to the file's <net> elements."""
        key = ("nccl", self.signature, tuple(sorted((env or {}).items())))
        if key in _PATHS:
            return _recall(key)
        return _remember(key, self._load_nccl(env))

    def _load_nccl(self, env):
        from topolint.model.nccl_graph import NET as NCCL_NET
        from topolint.model.nccl_graph import NcclSystem, TopologyRejected

        try:
            nccl = NcclSystem(self.topology, self.version, env)
        except TopologyRejected:
            return None
        nccl.net_keys = self._match_nets(nccl.nodes[NCCL_NET])
        nccl.gpu_bus = [g.attrs["bus"] for g in nccl.nodes["GPU"]]
        return nccl

    def _match_nets(self, nccl_nets) -> list:
        """The System net key of each of NCCL's NET nodes: same line, name and dev, taken in
        document order (both sides list <net> elements in file order)."""
        free = [(fact.loc.line, fact.name, str(fact.attrs.get("dev")), key) for key, (_, fact) in self.nets.items()
                if fact.loc is not None]
        keys = []
        for node in nccl_nets:
            element = node.attrs["element"]
            want = (element.loc.line, element.attrs.get("name"), str(element.attrs.get("dev")))
            match = next((item for item in free if item[:3] == want), None)
            if match is not None:
                free.remove(match)
            keys.append(match[3] if match else None)
        return keys

    def _nccl_net_paths(self, nccl) -> dict[tuple, Path]:
        from topolint.model.nccl_graph import GPU as NCCL_GPU
        from topolint.model.nccl_graph import NET as NCCL_NET

        out = {}
        for g, gpu in enumerate(nccl.nodes[NCCL_GPU]):
            bus = nccl.gpu_bus[g]
            if bus not in self.gpus:
                continue
            for n, key in enumerate(nccl.net_keys):
                if key is None:
                    continue
                p = gpu.paths[NCCL_NET][n]
                name = nccl.type_name(p.type)
                proxy = nccl.gpu_bus[nccl.intermediate(g, n)] if name == "PXN" else None
                out[(bus, key)] = Path(name, p.bw, p.count, (gpu_id(proxy),) if proxy else (), proxy_gpu=proxy)
        return out

    def _gpu_net_paths(self) -> dict[str, dict[tuple, Path]]:
        direct = {
            bus: {net: self._merged(self.gpus[bus], net, p) for net, p in paths.items() if net[0] == "net"}
            for bus, paths in self.raw_paths.items()
        }
        if not self.version.has_pxn:
            return direct
        final = {bus: dict(paths) for bus, paths in direct.items()}
        for net in self.nets:
            local = self.local_gpu(net, direct)
            if local is None:
                continue
            peer_path = direct[local][net]
            for bus in self.gpus:
                if bus == local or net not in direct[bus]:
                    continue
                own = direct[bus][net]
                nvlink = self.raw_paths[local].get(gpu_id(bus))
                if (
                    self.version.at_most(peer_path.type, "PXB")
                    and nvlink is not None
                    and self.version.at_most(nvlink.type, "NVL")
                    and self.gpus[local].gdr is not False
                    and (peer_path.bw > own.bw or not self.version.at_most(own.type, "PXB"))
                ):
                    final[bus][net] = Path(
                        "PXN", min(nvlink.bw, peer_path.bw), own.hops, (gpu_id(local),), proxy_gpu=local
                    )
        return final

    def local_gpu(self, net: tuple, paths: dict[str, dict[tuple, Path]] | None = None) -> str | None:
        """The GPU NCCL proxies ``net`` through (ncclTopoGetLocalGpu: among the NET's
        best-bandwidth GPUs, the first whose channels use it). Given ``paths`` (or without NCCL's
        graph): the best bandwidth, then type, then bus id among them."""
        nccl = self.nccl() if paths is None else None
        if nccl is not None and net in nccl.net_keys:
            from topolint.model.nccl_graph import TopologyRejected

            try:
                g = nccl.local_gpu(nccl.net_keys.index(net))
            except TopologyRejected:  # 2.18.1-2.18.3 with PXN off: NCCL never asks, and would fail
                g = -1
            if g >= 0 and nccl.gpu_bus[g] in self.gpus:
                return nccl.gpu_bus[g]
        paths = paths or self.gpu_net_paths
        candidates = [(-p[net].bw, self.version.rank(p[net].type), bus) for bus, p in paths.items() if net in p]
        return min(candidates)[2] if candidates else None

    def nearest_nets(self, gpu: Gpu, raw: bool = False) -> list[tuple[tuple, Path]]:
        """The NETs a GPU would use: most bandwidth first, then the best path type
        (src/graph/topo.cc ncclTopoGetLocal compares bandwidth before type)."""
        key = (gpu.bus_id, raw)
        found = self._nearest.get(key)
        if found is None:  # PCIE005, NUMA001 and the fabric view ask it of the same GPUs
            found = self._nearest[key] = self._nearest_nets(gpu, raw)
        return list(found)

    def _nearest_nets(self, gpu: Gpu, raw: bool) -> list[tuple[tuple, Path]]:
        table = self.raw_paths[gpu.bus_id] if raw else self.gpu_net_paths.get(gpu.bus_id, {})
        rank = self.version.rank
        paths = [((-p.bw, rank(p.type)), net, p) for net, p in table.items() if net[0] == "net"]
        if not paths:
            return []
        best = min(order for order, _, _ in paths)
        return sorted(((net, p) for order, net, p in paths if order == best), key=lambda x: x[0])

    def gdr_enabled(self, gpu: Gpu, net: tuple, level: str | None = None, read: bool = False,
                    gdr_read: str | None = None) -> bool:
        """ncclTopoCheckGdr for one direction (``read``: GDR reads, NCCL's sends; else writes, its
        receives): both ends support it, the distance is within NCCL_NET_GDR_LEVEL (``level``, else
        the version's default) and, for reads, NCCL_NET_GDR_READ (``gdr_read``) and the NVLink-peer
        rule allow it, as NCCL's code decides it (model/nccl_graph.py ``check_gdr``)."""
        env = {name: value for name, value in (("NCCL_NET_GDR_LEVEL", level), ("NCCL_NET_GDR_READ", gdr_read))
               if value is not None}
        nccl = self.nccl(env or None)
        if nccl is not None and net in nccl.net_keys and gpu.bus_id in nccl.gpu_bus:
            return nccl.check_gdr(nccl.gpu_bus.index(gpu.bus_id), nccl.net_keys.index(net), read=read) != 0
        _, net_fact = self.nets[net]
        if gpu.gdr is False or net_fact.gdr is False:
            return False
        if read and not self._gdr_read_allowed(gpu, gdr_read):
            return False
        path = self.gpu_net_paths[gpu.bus_id][net]
        if path.type == "PXN" and path.proxy_gpu:
            path = self.gpu_net_paths[path.proxy_gpu][net]
        return self.version.at_most(path.type, level or self.version.default_gdr_level)

    def _gdr_read_allowed(self, gpu: Gpu, gdr_read: str | None) -> bool:
        """The read-only conditions of ncclTopoCheckGdr (src/graph/paths.cc), where NCCL's graph
        is not available: NCCL_NET_GDR_READ=0 turns reads off; unset, a GPU that is not alone
        needs an NVLink peer (NcclVersion.gdr_read_needs_nvlink_peer)."""
        from topolint.model.nccl_env import param_read

        value = param_read(gdr_read)  # read as ncclLoadParam reads it; unset is the default, -2
        if value == 0:
            return False
        if value is not None and value > 0:
            return True
        return not (self.version.gdr_read_needs_nvlink_peer(gpu.sm) and len(self.gpus) > 1
                    and not self.nvlink_peers(gpu))

    def is_fabric(self, net: tuple) -> bool:
        """An RDMA-capable network device, as opposed to a socket interface such as eth0."""
        nic, fact = self.nets[net]
        if fact.gdr:
            return True
        pci = self.pci_by_bus.get(nic.bus_id or "")
        if pci is not None and (pci.pci_class or "").lower().startswith("0x0207"):
            return True
        name = fact.name or ""
        if re.match(r"(eth|ens|enp|eno|enx|em|bond|ib\d|lo|docker|veth|virbr|br-)", name):
            return False
        return fact.attrs.get("maxconn") != "65536" if fact.name else pci is not None

    def net_label(self, net: tuple) -> str:
        nic, fact = self.nets[net]
        return fact.name or f"NIC {nic.bus_id}"

    def nvlink_peers(self, gpu: Gpu) -> list[str]:
        paths = self.raw_paths[gpu.bus_id]
        return sorted(b for b in self.gpus if b != gpu.bus_id and gpu_id(b) in paths
                      and self.version.at_most(paths[gpu_id(b)].type, "NVL"))
