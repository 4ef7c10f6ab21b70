"""First-principles algorithms beside NCCL's: hierarchical all-reduce, parameter server, alltoall,
and the network bound no all-reduce beats. Alpha-beta models with NCCL's hop latencies; the
formulas and their sources are in docs/estimate.md."""

from __future__ import annotations

from dataclasses import replace

from topolint.estimate import nccl_tables as T
from topolint.estimate import search
from topolint.estimate.hardware import Bottleneck, NodeHardware, distinct
from topolint.estimate.results import AlgorithmEstimate, EstimateError, bus_factor

_NET_HOP_SIMPLE = T.HW_LATENCY["NET"]["ring"][2]
_MEMO_LIMIT = 256  # entries per cache: a long-lived caller (issue 15's checks) does not grow without bound


def memo(cache: dict, key, compute):
    """``cache[key]``, computed once; the searches and aggregates below are memoised per hardware."""
    if key not in cache:
        if len(cache) >= _MEMO_LIMIT:
            cache.clear()
        cache[key] = compute()
    return cache[key]


def network_bound(hws, comm, coll, options) -> tuple[float, Bottleneck] | None:
    """The bound no algorithm beats across nodes: all-reduce moves 2(N-1)/N x S in and out of each
    node (Patarasuk & Yuan 2009), so busbw <= K x ((p-1)/p) / ((N-1)/N) for K GB/s of NICs per node
    (perf-reference 4.4). NCCL's model doubles bwInter for two-node NVLSTree, slightly above it."""
    if comm.nodes < 2 or coll != "allreduce":
        return None
    nic_bw, bottleneck = nic_aggregate(hws)
    nic_bw /= options.fabric_ratio(comm.nodes)
    return nic_bw * ((comm.ranks - 1) / comm.ranks) / ((comm.nodes - 1) / comm.nodes), bottleneck


_NIC: dict[tuple, tuple] = {}


def hw_key(hws: list[NodeHardware]) -> tuple:
    return tuple((hw.node, hw.system.signature, tuple(hw.bus_ids)) for hw in distinct(hws))


def nic_aggregate(hws: list[NodeHardware]) -> tuple[float, Bottleneck]:
    return memo(_NIC, hw_key(hws), lambda: _nic_aggregate_uncached(hws))


def _nic_aggregate_uncached(hws: list[NodeHardware]) -> tuple[float, Bottleneck]:
    """Network bandwidth of the slowest node: the sum over head GPUs of what their NICs carry."""
    best = None
    for hw in hws:
        heads = sorted({p.local_gpu for p in hw.nets if p.local_gpu})
        caps = [(search.head_capacity(hw, h), h) for h in heads]
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


_INTRA: dict[tuple, tuple] = {}


def intra_ring(hws, graphs) -> tuple[float, Bottleneck | None]:
    return memo(_INTRA, hw_key(hws), lambda: _intra_ring_uncached(hws))


def _intra_ring_uncached(hws) -> tuple[float, Bottleneck | None]:
    """The one-node ring bandwidth (channels x speed) of the slowest node."""
    best = None
    for hw in distinct(hws):
        if len(hw.bus_ids) < 2:
            return float("inf"), None
        ring = search.ring_graph(hw, 1)
        if ring and (best is None or ring.channels * ring.bw_intra < best[0]):
            best = (ring.channels * ring.bw_intra, ring.bottleneck)
    return best or (float("inf"), None)


def hierarchical(hws, graphs, n_nodes, gpn, size, options) -> AlgorithmEstimate:
    """2-level all-reduce (Jia et al. 2018; perf-reference 4.4): reduce-scatter in the node, all-reduce
    of each 1/g shard across nodes on its rail, all-gather in the node; phases one after another."""
    intra_bw, intra_bn = intra_ring(hws, graphs)
    nic_bw, nic_bn = nic_aggregate(hws)
    nic_bw /= options.fabric_ratio(n_nodes)
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


def ps_assumption(hws, n_nodes, options) -> str:
    k = options.servers or n_nodes
    where = "colocated on the workers" if options.colocated else "on separate machines"
    server = options.server_GBps or nic_aggregate(hws)[0] / options.fabric_ratio(n_nodes)
    return f"parameter server: {k} servers {where}, each with {server:g} GB/s; workers sum on the GPUs first (BytePS)"


def parameter_server(hws, graphs, n_nodes, gpn, size, options) -> AlgorithmEstimate:
    """BytePS-style parameter server (Jiang et al., OSDI 2020; perf-reference 4.5): each node sums its
    GPUs' gradients, pushes S to the servers and pulls S back, pipelined by partition; servers
    receive and send N x S / k. Colocated servers move 2(N-1)/N x S per node, as all-reduce does."""
    k = options.servers or n_nodes
    nic_bw, nic_bn = nic_aggregate(hws)
    nic_bw /= options.fabric_ratio(n_nodes)
    host_bw, host_bn = min((_host_bandwidth(hw) for hw in distinct(hws)), key=lambda x: x[0])
    intra_bw, intra_bn = intra_ring(hws, graphs)
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


def alltoall(hws, graphs, n_nodes, gpn, size, options) -> AlgorithmEstimate:
    """alltoall as NCCL runs it, grouped send/recv: each rank sends S/p to every other rank; NVLink
    peers and remote peers are served at once, so the slower side bounds it."""
    ranks = n_nodes * gpn
    intra_bw, intra_bn = intra_ring(hws, graphs)
    t_intra = (gpn - 1) / ranks * size / (intra_bw * 1000) if gpn > 1 else 0.0
    t_inter, bottleneck = 0.0, intra_bn
    if n_nodes > 1:
        nic_bw, nic_bn = nic_aggregate(hws)
        per_gpu = nic_bw / options.fabric_ratio(n_nodes) / gpn
        t_inter = (ranks - gpn) / ranks * size / (per_gpu * 1000)
        if t_inter >= t_intra:
            bottleneck = nic_bn
    hop = _NET_HOP_SIMPLE if n_nodes > 1 else T.HW_LATENCY["NVLINK"]["ring"][2]
    t = max(t_intra, t_inter) + (ranks - 1) * hop / 8 + T.BASE_LATENCY["ring"][2]
    algbw = size / (t * 1000)
    return AlgorithmEstimate("alltoall", "Simple", algbw * bus_factor("alltoall", ranks), algbw, t,
                             bottleneck, "first-principles", None,
                             (f"NVLink part {t_intra:.0f} us, network part {t_inter:.0f} us",))
