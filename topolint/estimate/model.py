"""``estimate``: what a collective should deliver on this hardware, per algorithm, and why.

NCCL's algorithms (ring, tree, PAT, NVLS, NVLSTree, CollNet) follow NCCL's own tuning model
(``tuning.py``) on graphs from ``search.py``; the hierarchical (2-D) all-reduce, the parameter
server and alltoall are first-principles alpha-beta models (docs/estimate.md gives the formulas
and their sources). Every algorithm names the link that bounds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from topolint.estimate import nccl_tables as T
from topolint.estimate import search, tuning
from topolint.estimate.hardware import Bottleneck, NodeHardware, node_hardware
from topolint.estimate.refine import refine
from topolint.model.nccl_version import NEWEST, NcclVersion

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall")
# nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md): busbw = algbw x factor.
_NET_HOP_SIMPLE = T.HW_LATENCY["NET"]["ring"][2]


def bus_factor(collective: str, ranks: int) -> float:
    if ranks <= 1:
        return 1.0
    if collective == "allreduce":
        return 2 * (ranks - 1) / ranks
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (ranks - 1) / ranks
    return 1.0


@dataclass(frozen=True)
class Options:
    nvls: bool | None = None  # None: assume NVLink SHARP where the hardware has it (Hopper+, NVSwitch)
    collnet: bool = False  # a CollNet/SHARP fabric is declared
    servers: int | None = None  # parameter servers; None: one per worker node
    colocated: bool = False  # servers run on the worker nodes (BytePS "colocated")
    server_GBps: float | None = None  # each server's network bandwidth; None: a worker node's
    oversubscription: float = 1.0  # fabric: the leaf-to-spine ratio every inter-node byte may cross
    algorithm: str | None = None  # NCCL_ALGO forced (one NCCL algorithm name)
    nvlinks: int | None = None  # NVLinks per GPU to NVSwitches, for files that state none (static files)


@dataclass(frozen=True)
class AlgorithmEstimate:
    name: str
    protocol: str | None
    busbw_GBps: float
    algbw_GBps: float
    time_us: float
    bottleneck: Bottleneck
    model: str  # "nccl-tuning" or "first-principles"
    channels: int | None = None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"name": self.name, "protocol": self.protocol, "busbw_GBps": round(self.busbw_GBps, 2),
                "algbw_GBps": round(self.algbw_GBps, 2), "time_us": round(self.time_us, 2),
                "channels": self.channels, "model": self.model, "bottleneck": self.bottleneck.as_dict(),
                "notes": list(self.notes)}


@dataclass
class Estimate:
    inputs: dict
    algorithms: list[AlgorithmEstimate]
    selected: str | None  # what NCCL would pick
    fastest: str | None
    assumptions: list[str] = field(default_factory=list)

    def algorithm(self, name: str) -> AlgorithmEstimate:
        for algo in self.algorithms:
            if algo.name == name:
                return algo
        raise KeyError(f"no {name} estimate (have {', '.join(a.name for a in self.algorithms)})")

    @property
    def selected_estimate(self) -> AlgorithmEstimate | None:
        return self.algorithm(self.selected) if self.selected else None

    def as_dict(self) -> dict:
        return {"inputs": self.inputs, "selected": self.selected, "fastest": self.fastest,
                "algorithms": [a.as_dict() for a in self.algorithms], "assumptions": list(self.assumptions)}


class EstimateError(ValueError):
    pass


def _with_nvlinks(topology, count: int, notes: list[str]):
    """The topology with ``count`` NVSwitch links on every GPU that states none. NCCL completes a
    static NCCL_TOPO_FILE from the driver at run time (ncclTopoFillGpu adds NVLinks from NVML);
    topolint cannot, so the user says what the hardware has."""
    from topolint.model.facts import NvLink, build

    if not any(not g.nvlinks for g in topology.gpus):
        return topology
    gpus = [g if g.nvlinks else g.model_copy(update={"nvlinks": [
        build(NvLink, target=None, count=count, tclass="0x068000", attrs={}, loc=g.loc)]}) for g in topology.gpus]
    notes.append(f"{topology.path}: {count} NVLinks to NVSwitches assumed on each GPU the file gives none (--nvlinks)")
    return topology.model_copy(update={"gpus": gpus})


def _systems(models, version: NcclVersion, options: Options, notes: list[str]) -> list[tuple[str, object]]:
    from topolint.model.system import System

    nodes = models if isinstance(models, (list, tuple)) else [models]
    found = []
    for node in nodes:
        for topology in node.topologies:
            if topology.gpus:
                if options.nvlinks:
                    topology = _with_nvlinks(topology, options.nvlinks, notes)
                elif topology.kind != "dump" and all(not g.nvlinks for g in topology.gpus):
                    notes.append(f"{topology.path}: a static topology file with no NVLinks; NCCL adds the GPUs' "
                                 "NVLinks from the driver at run time, so an NVLink system needs --nvlinks N")
                topology = refine(node, topology, notes)
                found.append((node.name, System(topology, version)))
                break
    if not found:
        raise EstimateError("no NCCL topology with GPUs among the inputs (the estimate needs an NCCL topology XML)")
    return found


def estimate(models, nodes: int | None = None, gpus_per_node: int | None = None, collective: str = "allreduce",
             size: int = 8 << 30, version: NcclVersion | str | None = None,
             options: Options | None = None) -> Estimate:
    """Expected nccl-tests results for ``collective`` of ``size`` bytes per rank over ``nodes`` x
    ``gpus_per_node`` ranks on the hardware of ``models`` (a NodeModel or a list of them).

    One node's topology for several nodes means identical nodes on a non-blocking fabric (stated in
    ``assumptions``); a list of nodes is min-combined as NCCL combines ranks' graphs."""
    return estimate_sizes(models, nodes, gpus_per_node, collective, [size], version, options)[0]


def estimate_sizes(models, nodes: int | None = None, gpus_per_node: int | None = None,
                   collective: str = "allreduce", sizes: list[int] = (8 << 30,),
                   version: NcclVersion | str | None = None, options: Options | None = None) -> list[Estimate]:
    """``estimate`` for several sizes: the hardware is read and the channels searched once."""
    if collective not in COLLECTIVES:
        raise EstimateError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")
    if not sizes or any(size <= 0 for size in sizes):
        raise EstimateError("sizes must be positive")
    options = options or Options()
    version = NcclVersion.parse(version or NEWEST) if not isinstance(version, NcclVersion) else version
    early: list[str] = []
    systems = _systems(models, version, options, early)
    hws = [node_hardware(system, name, gpus_per_node) for name, system in systems]
    n_nodes = nodes or len(hws)
    gpn = len(hws[0].bus_ids)
    if any(len(hw.bus_ids) != gpn for hw in hws):
        raise EstimateError("nodes have different GPU counts; give --gpus-per-node")
    assumptions = early + _assumptions(hws, n_nodes, version, options)
    ranks = n_nodes * gpn
    inputs = {"nodes": n_nodes, "gpus_per_node": gpn, "ranks": ranks, "collective": collective,
              "nccl_version": str(version), "topologies": sorted({s.topology.path for _, s in systems}),
              "gpu_sm": hws[0].sm}
    if ranks <= 1:
        return [Estimate({**inputs, "size_bytes": size}, [], None, None,
                         assumptions + ["one rank: nothing to communicate"]) for size in sizes]
    graphs = _graphs(hws, n_nodes, options)
    comm = _comm(hws, n_nodes, ranks, version, options, graphs)
    if collective == "allreduce" and n_nodes > 1:
        assumptions.append(_ps_assumption(hws, n_nodes, options))
    return [_evaluate(hws, graphs, comm, collective, size, options, {**inputs, "size_bytes": size}, assumptions)
            for size in sizes]


def _evaluate(hws, graphs, comm, collective, size, options, inputs, assumptions) -> Estimate:
    n_nodes, gpn = comm.nodes, comm.ranks // comm.nodes
    algorithms: list[AlgorithmEstimate] = []
    if collective != "alltoall":
        algorithms += _nccl_algorithms(collective, size, graphs, comm, options, hws)
    selected = min(algorithms, key=lambda a: a.time_us).name if algorithms else None
    if collective == "allreduce" and n_nodes > 1:
        algorithms.append(_hierarchical(hws, graphs, n_nodes, gpn, size, options))
        algorithms.append(_parameter_server(hws, graphs, n_nodes, gpn, size, options))
    if collective == "alltoall":
        algorithms.append(_alltoall(hws, graphs, n_nodes, gpn, size, options))
        selected = "alltoall"
    fastest = min(algorithms, key=lambda a: a.time_us).name if algorithms else None
    return Estimate(inputs, algorithms, selected, fastest, list(assumptions))


def _assumptions(hws: list[NodeHardware], n_nodes: int, version: NcclVersion, options: Options) -> list[str]:
    notes = [note for hw in hws for note in hw.notes]
    notes.append(f"NCCL {version}: algorithm availability by version (nccl_version.py); tuning constants, "
                 f"search speeds and caps from NCCL {NEWEST} (src/graph/tuning.cc, src/graph/search.cc)")
    notes.append("channels and per-channel bandwidths come from topolint's approximation of NCCL's graph search "
                 "(search.py), not from NCCL itself")
    if n_nodes > len(hws):
        notes.append(f"{n_nodes} nodes identical to {', '.join(hw.node for hw in hws)}, on a non-blocking fabric"
                     + (f" with {options.oversubscription:g}:1 oversubscription" if options.oversubscription > 1 else ""))
    hw = hws[0]
    if hw.nvswitch and hw.sm >= 90 and len(hw.bus_ids) > 1:
        if options.nvls is False:
            notes.append("NVLink SHARP (NVLS) taken as unavailable (--no-nvls)")
        else:
            notes.append("NVLink SHARP multicast assumed available (NVSwitch with SM90+; the XML cannot say: "
                         "--no-nvls if the driver or fabric manager does not offer it)")
    if options.collnet:
        notes.append("a CollNet/SHARP network is declared (--collnet): NCCL_COLLNET_ENABLE=1 with a SHARP plugin")
    for h in hws:
        for port in h.nets:
            if port.local_gpu and not port.gdr and h.system.is_fabric(port.key):
                notes.append(f"{port.entity}: no GPUDirect RDMA with its GPU; transfers are staged through host "
                             "memory, which NCCL's model does not price (expect less, no calibrated factor)")

        unstated = [p for p in h.nets if not p.speed_stated]
        if unstated:
            kind = "static file: NCCL reads the speed from the device at run time" if \
                h.system.topology.kind != "dump" else "NCCL then assumes 10 Gb/s"
            notes.append(f"{h.node}: {len(unstated)} network device(s) without a speed ({kind}); the estimate uses "
                         "NCCL's 10 Gb/s default: give the node's ibstat or ethtool output beside the file")
        if not any(p.local_gpu for p in h.nets) and n_nodes > 1:
            notes.append(f"{h.node}: no network device in the topology reaches a GPU")
        if h.nets and all(not h.system.is_fabric(p.key) for p in h.nets):
            notes.append(f"{h.node}: sockets only (no RDMA NIC): NCCL's socket transport reaches well below line "
                         "rate (about 60% observed, NVIDIA/nccl#209); not priced")
    return notes


def _graphs(hws: list[NodeHardware], n_nodes: int, options: Options) -> dict[str, search.Graph | None]:
    per_node: dict[str, list[search.Graph]] = {}
    for hw in _distinct(hws):
        ring = search.ring_graph(hw, n_nodes)
        if ring is None:
            continue
        per_node.setdefault("ring", []).append(ring)
        per_node.setdefault("tree", []).append(search.tree_graph(hw, n_nodes, ring))
        per_node.setdefault("pat", []).append(replace(ring, pattern="pat"))
        if options.nvls is not False:
            nvls = search.nvls_graph(hw, n_nodes)
            if nvls is not None:
                per_node.setdefault("nvls", []).append(nvls)
                per_node.setdefault("nvls_tree", []).append(replace(nvls, pattern="nvls_tree"))
        if options.collnet and n_nodes > 1:
            direct, chain = search.collnet_graphs(hw, ring)
            if direct:
                per_node.setdefault("collnet_direct", []).append(direct)
            if chain:
                per_node.setdefault("collnet_chain", []).append(chain)
    graphs = {algo: search.combine(found) for algo, found in per_node.items() if len(found) == len(_distinct(hws))}
    if options.oversubscription > 1 and n_nodes > 1:
        graphs = {a: replace(g, bw_inter=g.bw_inter / options.oversubscription,
                             bw_intra=g.bw_intra if n_nodes > 2 else min(g.bw_intra, 2 * g.bw_inter / options.oversubscription))
                  for a, g in graphs.items()}
    return graphs


def _distinct(hws: list[NodeHardware]) -> list[NodeHardware]:
    seen, kept = set(), []
    for hw in hws:
        key = (hw.system.signature, tuple(hw.bus_ids))
        if key not in seen:
            seen.add(key)
            kept.append(hw)
    return kept


def _comm(hws, n_nodes, ranks, version, options, graphs) -> tuning.Comm:
    sms = [g.sm for hw in hws for g in hw.gpus if g.sm]
    vendors = {hw.cpu_vendor for hw in hws}
    vendor = vendors.pop() if len(vendors) == 1 else "mixed"
    nvls = options.nvls is not False and version.has_nvls
    return tuning.Comm(n_nodes, ranks, min(sms, default=0), max(sms, default=0), vendor, hws[0].cpu_arch,
                       options.collnet, nvls, version.has_nvls_tree, version.has_pat,
                       all(hw.nvswitch for hw in hws))


def _network_bound(hws, comm, coll, options) -> tuple[float, Bottleneck] | None:
    """The bound no algorithm beats across nodes: all-reduce moves 2(N-1)/N x S in and out of each
    node (Patarasuk & Yuan 2009), so busbw <= K x ((p-1)/p) / ((N-1)/N) for K GB/s of NICs per node
    (perf-reference 4.4). NCCL's model doubles bwInter for two-node NVLSTree, slightly above it."""
    if comm.nodes < 2 or coll != "allreduce":
        return None
    nic_bw, bottleneck = _nic_aggregate(hws)
    nic_bw /= options.oversubscription
    return nic_bw * ((comm.ranks - 1) / comm.ranks) / ((comm.nodes - 1) / comm.nodes), bottleneck


def _nccl_algorithms(coll, size, graphs, comm, options, hws) -> list[AlgorithmEstimate]:
    choices = tuning.model(coll, graphs, comm)
    if options.algorithm:
        choices = [c for c in choices if c.algorithm == options.algorithm]
    ring_channels = graphs["ring"].channels if "ring" in graphs else 1
    best: dict[str, tuple[float, tuning.Choice]] = {}
    for choice in choices:
        t = tuning.time_us(choice, coll, size, comm, ring_channels)
        if choice.algorithm not in best or t < best[choice.algorithm][0]:
            best[choice.algorithm] = (t, choice)
    factor = bus_factor(coll, comm.ranks)
    bound = _network_bound(hws, comm, coll, options)
    result = []
    for algo in T.ALGORITHMS:
        if algo not in best:
            continue
        t, choice = best[algo]
        graph = graphs[algo]
        bottleneck = graph.bottleneck
        if graph.inter_bottleneck and any("network" in note for note in choice.notes):
            bottleneck = graph.inter_bottleneck
        notes = (f"NCCL {T.NCCL_NAMES[algo]}/{choice.protocol}: {graph.channels} channels x "
                 f"{graph.bw_intra:g}/{graph.bw_inter:g} GB/s (intra/inter)",) + choice.notes
        busbw = size / (t * 1000) * factor
        if bound and busbw > bound[0]:
            notes += (f"NCCL's model gives {busbw:.1f} GB/s, above the network bound {bound[0]:.1f} GB/s "
                      f"(2(N-1)/N x S through {bound[0] / ((comm.ranks - 1) / comm.ranks) * ((comm.nodes - 1) / comm.nodes):g} "
                      "GB/s of NICs per node): the bound is kept",)
            busbw, bottleneck = bound[0], bound[1]
            t = size / (busbw / factor * 1000)
        algbw = busbw / factor
        result.append(AlgorithmEstimate(algo, choice.protocol, busbw, algbw, t, bottleneck,
                                        "nccl-tuning", graph.channels, notes))
    return result


def _nic_aggregate(hws: list[NodeHardware]) -> tuple[float, Bottleneck]:
    """Network bandwidth of the slowest node: the sum over head GPUs of what their NICs carry."""
    best = None
    for hw in hws:
        heads = sorted({p.local_gpu for p in hw.nets if p.local_gpu})
        caps = [(search._head_capacity(hw, h), h) for h in heads]
        total = sum(cap for (cap, _), _ in caps)
        if not caps:
            continue
        (cap, tight), head = min(caps, key=lambda x: x[0][0])
        port = min((p for p in hw.nets if p.local_gpu), key=lambda p: p.bw)
        bottleneck = tight or hw.port_bottleneck(port, port.bw, "")
        bottleneck = replace(bottleneck, detail=f"{len(heads)} GPUs drive {total:g} GB/s of NICs in all; "
                                                f"least per GPU: {cap:g} GB/s ({bottleneck.detail.lstrip(': ')})")
        if best is None or total < best[0]:
            best = (total, bottleneck)
    if best is None:
        raise EstimateError("no network device reaches a GPU: a multi-node estimate needs NICs in the topology")
    return best


def _intra_ring(hws, graphs) -> tuple[float, Bottleneck | None]:
    """The one-node ring bandwidth (channels x speed) of the slowest node."""
    best = None
    for hw in _distinct(hws):
        if len(hw.bus_ids) < 2:
            return float("inf"), None
        ring = search.ring_graph(hw, 1)
        if ring and (best is None or ring.channels * ring.bw_intra < best[0]):
            best = (ring.channels * ring.bw_intra, ring.bottleneck)
    return best or (float("inf"), None)


def _hierarchical(hws, graphs, n_nodes, gpn, size, options) -> AlgorithmEstimate:
    """2-level all-reduce (Jia et al. 2018; perf-reference 4.4): reduce-scatter in the node, all-reduce
    of each 1/g shard across nodes on its rail, all-gather in the node; phases one after another."""
    intra_bw, intra_bn = _intra_ring(hws, graphs)
    nic_bw, nic_bn = _nic_aggregate(hws)
    nic_bw /= options.oversubscription
    t_intra = 2 * (gpn - 1) / gpn * size / (intra_bw * 1000) if gpn > 1 else 0.0
    t_inter = 2 * (n_nodes - 1) / n_nodes * size / (nic_bw * 1000)
    hop = T.HW_LATENCY["NVLINK" if hws[0].nvswitch else "PCI"]["ring"][2]
    t = 2 * (gpn - 1) * hop + 2 * (n_nodes - 1) * _NET_HOP_SIMPLE + t_intra + t_inter
    algbw = size / (t * 1000)
    bottleneck = nic_bn if t_inter >= t_intra or intra_bn is None else intra_bn
    notes = (f"intra-node phases {t_intra:.0f} us at {intra_bw:g} GB/s ring bandwidth; inter-node phase "
             f"{t_inter:.0f} us over {nic_bw:g} GB/s of NICs per node",)
    return AlgorithmEstimate("hierarchical", None, algbw * bus_factor("allreduce", n_nodes * gpn), algbw, t,
                             bottleneck, "first-principles", None, notes)


def _host_bandwidth(hw: NodeHardware) -> tuple[float, Bottleneck]:
    """How fast all GPUs of a node can move data to host memory at once (PS workers stage there):
    g x the fair share of the most crowded link on the GPUs' paths to their CPUs."""
    crossings: dict[tuple, int] = {}
    for bus in hw.bus_ids:
        gpu = hw.gpu(bus)
        path = hw.system.raw_paths[bus].get(("cpu", gpu.cpu_index))
        if path is None:
            continue
        nodes = [("gpu", bus), *path.via, ("cpu", gpu.cpu_index)]
        for link in zip(nodes, nodes[1:]):
            crossings[link] = crossings.get(link, 0) + 1
    if not crossings:
        bus = hw.bus_ids[0]
        return float("inf"), hw.nvlink_bottleneck(bus, hw.nvlink_total(bus), "")
    share, link = min((hw.system.links[u][v]["bw"] / n, (u, v)) for (u, v), n in crossings.items())
    n = crossings[link]
    bottleneck = hw.link_bottleneck(*link, hw.system.links[link[0]][link[1]]["bw"],
                                    f"{n} GPU{'s share' if n > 1 else ' uses'} this link to host memory")
    return share * len(hw.bus_ids), bottleneck


def _ps_assumption(hws, n_nodes, options) -> str:
    k = options.servers or n_nodes
    where = "colocated on the workers" if options.colocated else "on separate machines"
    server = options.server_GBps or _nic_aggregate(hws)[0] / options.oversubscription
    return f"parameter server: {k} servers {where}, each with {server:g} GB/s; workers sum on the GPUs first (BytePS)"


def _parameter_server(hws, graphs, n_nodes, gpn, size, options) -> AlgorithmEstimate:
    """BytePS-style parameter server (Jiang et al., OSDI 2020; perf-reference 4.5): each node sums its
    GPUs' gradients, pushes S to the servers and pulls S back, pipelined by partition; servers
    receive and send N x S / k. Colocated servers move 2(N-1)/N x S per node, as all-reduce does."""
    k = options.servers or n_nodes
    nic_bw, nic_bn = _nic_aggregate(hws)
    nic_bw /= options.oversubscription
    host_bw, host_bn = min((_host_bandwidth(hw) for hw in _distinct(hws)), key=lambda x: x[0])
    intra_bw, intra_bn = _intra_ring(hws, graphs)
    worker_bw = min(nic_bw, host_bw)
    worker_bn = nic_bn if nic_bw <= host_bw else host_bn
    phases = {"intra-node reduce and broadcast": (2 * (gpn - 1) / gpn * size / (intra_bw * 1000) if gpn > 1 else 0.0,
                                                  intra_bn)}
    if options.colocated:
        phases["push and pull, colocated servers"] = (2 * (n_nodes - 1) / n_nodes * size / (worker_bw * 1000), worker_bn)
    else:
        phases["worker push and pull"] = (size / (worker_bw * 1000), worker_bn)
        server_bw = (options.server_GBps or nic_bw)
        phases[f"{k} servers receive and send"] = (n_nodes * size / (k * server_bw * 1000), replace(
            nic_bn, link="server NIC", detail=f"{k} servers x {server_bw:g} GB/s for {n_nodes} workers"))
    name, (t_phase, bottleneck) = max(phases.items(), key=lambda kv: kv[1][0])
    hop = T.HW_LATENCY["NVLINK" if hws[0].nvswitch else "PCI"]["ring"][2]
    t = t_phase + 2 * (gpn - 1) * hop + 2 * _NET_HOP_SIMPLE  # local reduce and broadcast steps, push, pull
    algbw = size / (t * 1000)
    notes = tuple(f"{phase}: {value:.0f} us" for phase, (value, _) in phases.items()) + (
        f"bound by the {name} phase; phases overlap (partitions are pipelined)",)
    return AlgorithmEstimate("parameter_server", None, algbw * bus_factor("allreduce", n_nodes * gpn), algbw, t,
                             bottleneck or worker_bn, "first-principles", None, notes)


def _alltoall(hws, graphs, n_nodes, gpn, size, options) -> AlgorithmEstimate:
    """alltoall as NCCL runs it, grouped send/recv: each rank sends S/p to every other rank; NVLink
    peers and remote peers are served at once, so the slower side bounds it."""
    ranks = n_nodes * gpn
    intra_bw, intra_bn = _intra_ring(hws, graphs)
    t_intra = (gpn - 1) / ranks * size / (intra_bw * 1000) if gpn > 1 else 0.0
    t_inter, bottleneck = 0.0, intra_bn
    if n_nodes > 1:
        nic_bw, nic_bn = _nic_aggregate(hws)
        per_gpu = nic_bw / options.oversubscription / gpn
        t_inter = (ranks - gpn) / ranks * size / (per_gpu * 1000)
        if t_inter >= t_intra:
            bottleneck = nic_bn
    hop = _NET_HOP_SIMPLE if n_nodes > 1 else T.HW_LATENCY["NVLINK"]["ring"][2]
    t = max(t_intra, t_inter) + (ranks - 1) * hop / 8 + T.BASE_LATENCY["ring"][2]
    algbw = size / (t * 1000)
    return AlgorithmEstimate("alltoall", "Simple", algbw * bus_factor("alltoall", ranks), algbw, t,
                             bottleneck, "first-principles", None,
                             (f"NVLink part {t_intra:.0f} us, network part {t_inter:.0f} us",))
