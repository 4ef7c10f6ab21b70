"""NCCL's tuning model: bandwidth and latency per algorithm and protocol, and the choice it makes.

A reading of ncclTopoTuneModel and ncclTopoGetAlgoTime (src/graph/tuning.cc, v2.30.7-1) applied
to the graphs of ``search.py``; the constants are in ``nccl_tables.py``. NCCL picks, for each
call, the algorithm/protocol pair with the least predicted time (src/enqueue.cc,
topoGetAlgoInfo via ncclTopoGetAlgoTime); ``select`` does the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from topolint.estimate import nccl_tables as T
from topolint.estimate.search import Graph

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast")
_PATH_ORDER = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")


@dataclass(frozen=True)
class Comm:
    """What ncclTopoTuneModel reads from the communicator."""

    nodes: int
    ranks: int
    min_sm: int
    max_sm: int
    cpu_vendor: str  # intel, amd, other (mixed counts as amd, tuning.cc index1)
    cpu_arch: str
    collnet: bool  # NCCL_COLLNET_ENABLE with a CollNet (SHARP) plugin
    nvls: bool  # NVLink SHARP multicast available (not in the XML: an assumption)
    has_nvls_tree: bool
    has_pat: bool
    nvswitch: bool
    version: object = None  # NcclVersion: which of NCCL's tables and formulas apply


@dataclass(frozen=True)
class Choice:
    algorithm: str
    protocol: str
    bw: float  # algorithm bandwidth NCCL predicts, GB/s
    latency: float  # microseconds
    notes: tuple[str, ...] = ()


def _path_rank(name: str) -> int:
    return _PATH_ORDER.index(name) if name in _PATH_ORDER else len(_PATH_ORDER)


def _nsteps(coll: str, ranks: int) -> int:
    return 2 * (ranks - 1) if coll == "allreduce" else ranks - 1 if coll in ("allgather", "reducescatter") else ranks


def _applies(coll: str, algo: str, proto: str, comm: Comm) -> bool:
    if coll == "broadcast" and algo != "ring":
        return False
    if coll in ("allgather", "reducescatter") and algo not in ("pat", "ring", "nvls", "collnet_direct"):
        return False
    if coll == "allreduce" and algo == "pat":
        return False
    if algo in ("nvls", "nvls_tree") and proto != "Simple":
        return False
    if algo == "pat" and (proto != "Simple" or not _pat_enabled(comm)):
        return False
    return True


def _pat_enabled(comm: Comm) -> bool:
    """ncclPatEnable: SM60+, one GPU per node, host network (and NCCL 2.23 or later)."""
    return comm.has_pat and comm.min_sm >= 60 and comm.nodes == comm.ranks


def _bus_bw(coll: str, algo: str, proto: int, graph: Graph, comm: Comm, notes: list[str]) -> float:
    arch = T.arch_index_for(comm.min_sm, comm.version)
    nodes = T.nodes_index(comm.nodes)
    index1 = arch if comm.nodes == 1 else 1 if comm.cpu_vendor in ("amd", "mixed") else 0
    ppn = comm.ranks / comm.nodes
    collnet = algo in ("collnet_direct", "collnet_chain")
    bw = graph.bw_intra if comm.nodes <= 2 or collnet else graph.bw_inter
    if algo in ("nvls", "nvls_tree") and not (comm.version is None or comm.version.nvls_efficiency_tuning):
        # Before 2.28 (tuning.cc at v2.27.7-1): min(bwIntra, bwInter) per channel, bwInter / 2 for
        # NVLSTree beyond two nodes; allgather/reducescatter NVLS min(bwIntra (ppn-1)/ppn, 0.9 bwInter).
        if algo == "nvls" and coll != "allreduce":
            bw = min(graph.bw_intra * (ppn - 1) / ppn, graph.bw_inter * 0.9 if comm.nodes > 1 else math.inf)
        elif algo == "nvls":
            bw = min(graph.bw_intra, graph.bw_inter) if comm.nodes > 1 else graph.bw_intra
        else:
            bw = min(graph.bw_intra, graph.bw_inter if comm.nodes <= 2 else graph.bw_inter / 2)
        notes.append(f"per channel {bw:.1f} GB/s (NCCL before 2.28: min of bwIntra and bwInter, x 5/6)")
    elif algo in ("nvls", "nvls_tree"):
        if graph.channels < 2:
            return 0.0
        intra = graph.bw_intra * T.NVLS_EFFICIENCY[arch] * (graph.channels - 1) / graph.channels
        intra *= 2.0 if coll == "allreduce" else (ppn - 1) / ppn
        inter = graph.bw_inter * (2 if comm.nodes <= 2 and algo == "nvls_tree" else 1)
        cap = T.PER_CH_MAX_NVLS_TREE_BW[arch][nodes] if algo == "nvls_tree" else math.inf
        terms = {"NVLink (NVLS efficiency x bwIntra)": intra, "network (bwInter)": inter if comm.nodes > 1 else math.inf,
                 f"NCCL's per-channel NVLSTree cap {cap:g} GB/s (perChMaxNVLSTreeBws)": cap}
        limit, bw = min(terms.items(), key=lambda kv: kv[1])
        notes.append(f"per channel {bw:.1f} GB/s, bound by {limit}")
    bus = graph.channels * bw
    if algo == "ring" and proto == 0:
        bus = min(T.ll_max_bw(index1, nodes, comm.version), bus * 0.5)
    if algo == "ring" and proto == 1:
        bus = min(bus * 0.92, graph.channels * T.PER_CH_MAX_RING_LL128_BW[arch][nodes])
    if algo == "tree" and coll == "allreduce":
        cap = graph.channels * T.PER_CH_MAX_TREE_BW[arch][nodes]
        if cap < bus * 0.92:
            notes.append(f"NCCL's per-channel tree cap {T.PER_CH_MAX_TREE_BW[arch][nodes]:g} GB/s (perChMaxTreeBws)")
        bus = min(bus * 0.92, cap)
    if algo == "tree" and proto == 0:
        bus = min(bus / 3.8, T.ll_max_bw(index1, nodes, comm.version))
    if algo == "tree" and proto == 1:
        factor = 7.0 / 9.0 if comm.nodes == 1 else 120.0 / 128.0
        bus = min(bus * factor, graph.channels * T.PER_CH_MAX_TREE_LL128_BW[arch][nodes])
    if algo == "pat":
        bus *= T.pat_factor(comm.version)
    if collnet and proto != 2:
        return 0.0
    if algo == "collnet_direct":
        if coll in ("allgather", "reducescatter"):
            bus = ppn * min(graph.bw_intra, graph.bw_inter * 0.9)
        else:
            factor = ppn / graph.channels
            factor -= (factor - 1) / 2
            bus /= factor
            if comm.min_sm >= 90:
                bus *= 0.85
    if algo in ("nvls", "collnet_direct") and coll in ("allgather", "reducescatter") and comm.nodes > 1:
        return 0.0  # needs a CollNet plugin with iallgather/ireducescatter, one GPU per head
    if not (algo != "ring" and coll in ("allgather", "reducescatter")):
        legacy = comm.version is not None and not comm.version.nvls_efficiency_tuning
        if algo in ("nvls", "nvls_tree") and legacy:
            ratio = T.LEGACY_NVLS_RATIO
        else:
            ratio = comm.ranks / _nsteps(coll, comm.ranks) if algo in ("ring", "nvls", "nvls_tree") else 0.5
        bus *= ratio
    return bus


def _latency(coll: str, algo: str, proto: int, graph: Graph, comm: Comm) -> float:
    intra_hw = "NVLINK" if graph.type_intra == "NVL" else "PCI"
    hw = intra_hw if comm.nodes == 1 else "NET"
    ppn = comm.ranks / comm.nodes
    version = comm.version
    lat = T.base_latency(algo, proto, version)
    intra = T.hw_latency(intra_hw, algo, proto, version)
    inter = T.hw_latency("NET", "tree" if ppn == 1 else algo, proto, version)
    # graph->latencyInter is the NIC's latency attribute (0 in every dump seen); counted as 0.
    log_nodes = int(math.log2(comm.nodes)) if comm.nodes > 0 else 0
    if algo == "ring":
        step = T.hw_latency(hw, algo, proto, version)
        nsteps = _nsteps(coll, comm.ranks)
        if coll == "broadcast":
            return lat + nsteps * (T.hw_latency(hw, "tree", proto, version) if proto == 2 else step)
        overhead = 0.0
        if comm.nodes > 1:
            overhead = T.NET_OVERHEAD_AMD if comm.cpu_vendor == "amd" and comm.cpu_arch == "x86" else T.NET_OVERHEAD_INTEL
            overhead *= 3 if proto == 2 else 1
        intra = max(intra, overhead)
        inter_steps = 0 if comm.nodes == 1 else 2 * (comm.nodes - 1) if coll == "allreduce" else comm.nodes - 1
        return lat + (nsteps - inter_steps) * intra + inter_steps * inter
    if algo == "tree":
        return lat + (2 * ((ppn - 1) * intra + log_nodes * inter) if coll == "allreduce" else 0)
    if algo == "collnet_direct":
        return lat + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * 0.4) + inter
    if algo == "collnet_chain":
        return lat + 2 * (ppn - 1) * intra + inter
    if algo == "nvls":
        return intra + (inter if comm.nodes > 1 else 0)
    if algo == "nvls_tree":
        return lat + intra + 2 * log_nodes * inter
    if algo == "pat" and coll in ("allgather", "reducescatter"):
        return lat + log_nodes * (inter / 3.5) + comm.ranks * 2.8
    return lat


def _enabled(coll: str, algo: str, proto: int, graph: Graph, comm: Comm) -> bool:
    if algo == "nvls_tree" and (comm.nodes == 1 or not comm.has_nvls_tree):
        return False
    if algo in ("nvls", "nvls_tree") and not comm.nvls:
        return False
    if not comm.collnet and (algo in ("collnet_direct", "collnet_chain") or (algo == "nvls" and comm.nodes > 1)):
        return False
    if algo == "collnet_direct" and not comm.nvswitch:
        return False
    if proto == 1:  # LL128 on by default only where tuning.cc allows it
        limit = "PXN" if comm.min_sm >= 90 else "PXB"
        if _path_rank(graph.type_inter) > _path_rank(limit) and comm.nodes > 1:
            return False
        if _path_rank(graph.type_intra) > _path_rank("NVB"):
            return False
        if not (comm.min_sm == comm.max_sm or comm.min_sm >= 90) or comm.min_sm < 70:
            return False
    return True


def model(coll: str, graphs: dict[str, Graph | None], comm: Comm) -> list[Choice]:
    """Every (algorithm, protocol) NCCL would consider for ``coll``, with its bandwidth and latency."""
    choices = []
    if comm.ranks <= 1:
        return choices
    for algo in T.ALGORITHMS:
        graph = graphs.get(algo)
        if graph is None or graph.channels <= 0:
            continue
        for proto, name in enumerate(T.PROTOCOLS):
            if not _applies(coll, algo, name, comm) or not _enabled(coll, algo, proto, graph, comm):
                continue
            notes: list[str] = []
            bw = _bus_bw(coll, algo, proto, graph, comm, notes)
            if bw > 0:
                choices.append(Choice(algo, name, bw, _latency(coll, algo, proto, graph, comm), tuple(notes)))
    return choices


def time_us(choice: Choice, coll: str, size: int, comm: Comm, channels: int) -> float:
    """ncclTopoGetAlgoTime for one operation: latency plus bytes over bandwidth, with NCCL's tree
    correction by size and the multi-node ring Simple plateau."""
    bw, lat = choice.bw, choice.latency
    proto = T.PROTOCOLS.index(choice.protocol)
    log_size = int(math.log2(size >> 6)) if size >> 6 > 0 else -1
    if choice.algorithm == "tree" and coll == "allreduce" and 0 <= log_size < 23:
        bw *= T.TREE_CORRECTION[proto][log_size]
    if (choice.algorithm == "nvls_tree" and coll == "allreduce" and 0 <= log_size < 24 and comm.min_sm >= 100
            and comm.cpu_arch == "x86"):
        bw *= T.TREE_CORRECTION[proto][log_size]
    if (choice.algorithm == "ring" and proto == 2 and comm.nodes > 1 and coll == "allreduce"
            and size // max(1, channels * comm.ranks) >= 64):
        lat *= T.RING_PLATEAU_PRE_AMPERE if comm.min_sm < 80 else T.RING_PLATEAU
    return lat + size / (1000 * bw)
