"""``estimate``: what a collective should deliver on this hardware, per algorithm, and why.

NCCL's algorithms (ring, tree, PAT, NVLS, NVLSTree, CollNet) follow NCCL's own tuning model
(``tuning.py``) on graphs from ``search.py``; the hierarchical (2-D) all-reduce, the parameter
server and alltoall are first-principles alpha-beta models (docs/estimate.md gives the formulas
and their sources). Every algorithm names the link that bounds it.
"""

from __future__ import annotations

from dataclasses import replace

from topolint.estimate import first_principles as fp
from topolint.estimate import nccl_tables as T
from topolint.estimate import search, tuning
from topolint.estimate.hardware import NodeHardware, distinct, node_hardware
from topolint.estimate.results import COLLECTIVES, AlgorithmEstimate, Estimate, EstimateError, Options, bus_factor
from topolint.estimate.topology import systems as read_systems
from topolint.model.nccl_version import NEWEST, NcclVersion

__all__ = ["COLLECTIVES", "AlgorithmEstimate", "Estimate", "EstimateError", "Options", "estimate", "estimate_sizes"]


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
    systems = read_systems(models, version, options, early)
    hws = [node_hardware(system, name, gpus_per_node, aliases) for name, system, aliases in systems]
    n_nodes = nodes or len(hws)
    gpn = len(hws[0].bus_ids)
    if any(len(hw.bus_ids) != gpn for hw in hws):
        raise EstimateError("nodes have different GPU counts; give --gpus-per-node")
    assumptions = early + _assumptions(hws, n_nodes, version, options)
    ranks = n_nodes * gpn
    inputs = {"nodes": n_nodes, "gpus_per_node": gpn, "ranks": ranks, "collective": collective,
              "nccl_version": str(version), "topologies": sorted({s.topology.path for _, s, _ in systems}),
              "gpu_sm": hws[0].sm}
    if ranks <= 1:
        return [Estimate({**inputs, "size_bytes": size}, [], None, None,
                         assumptions + ["one rank: nothing to communicate"], hws) for size in sizes]
    graphs = _graphs(hws, n_nodes, options)
    comm = _comm(hws, n_nodes, ranks, version, options, graphs)
    if collective == "allreduce" and n_nodes > 1:
        assumptions.append(fp.ps_assumption(hws, n_nodes, options))
    return [_evaluate(hws, graphs, comm, collective, size, options, {**inputs, "size_bytes": size}, assumptions)
            for size in sizes]


def _evaluate(hws, graphs, comm, collective, size, options, inputs, assumptions) -> Estimate:
    n_nodes, gpn = comm.nodes, comm.ranks // comm.nodes
    algorithms: list[AlgorithmEstimate] = []
    if collective != "alltoall":
        algorithms += _nccl_algorithms(collective, size, graphs, comm, options, hws)
    selected = min(algorithms, key=lambda a: a.time_us).name if algorithms else None
    if collective == "allreduce" and n_nodes > 1:
        algorithms.append(fp.hierarchical(hws, graphs, n_nodes, gpn, size, options))
        algorithms.append(fp.parameter_server(hws, graphs, n_nodes, gpn, size, options))
    if collective == "alltoall":
        algorithms.append(fp.alltoall(hws, graphs, n_nodes, gpn, size, options))
        selected = "alltoall"
    fastest = min(algorithms, key=lambda a: a.time_us).name if algorithms else None
    return Estimate(inputs, algorithms, selected, fastest, list(assumptions), hws)


def _assumptions(hws: list[NodeHardware], n_nodes: int, version: NcclVersion, options: Options) -> list[str]:
    notes = [note for hw in hws for note in hw.notes]
    notes.append(f"NCCL {version}: its search speeds, llMaxBws, NVLS formula and the latencies that changed "
                 "between releases (nccl_tables.py, read at each minor's newest tag from 2.17); every other "
                 f"tuning constant as in NCCL {NEWEST} (src/graph/tuning.cc, src/graph/search.cc)")
    if not version.at_least(21):
        notes.append(f"NCCL {version} is older than the releases whose tuning tables topolint holds in full "
                     "(2.21 and later): expect larger differences")
    notes.append("channels and per-channel bandwidths come from topolint's approximation of NCCL's graph search "
                 "(search.py), not from NCCL itself")
    ratio = options.fabric_ratio(n_nodes)
    fabric = (f"a fabric with {ratio:g}:1 oversubscription (every inter-node byte priced at the spine)"
              if ratio > 1 else "a non-blocking fabric")
    if n_nodes > len(hws):
        notes.append(f"{n_nodes} nodes identical to {', '.join(hw.node for hw in hws)}, on {fabric}")
    elif n_nodes > 1:
        notes.append(f"the nodes given, on {fabric}")
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


# Graphs by hardware, node-count class and options: a sweep over sizes or node counts searches once.
_GRAPHS: dict[tuple, dict] = {}


def _graphs(hws: list[NodeHardware], n_nodes: int, options: Options) -> dict[str, search.Graph | None]:
    key = (fp.hw_key(hws), min(n_nodes, 3), options.fabric_ratio(n_nodes), options)
    return fp.memo(_GRAPHS, key, lambda: _search_graphs(hws, n_nodes, options))


def _search_graphs(hws: list[NodeHardware], n_nodes: int, options: Options) -> dict[str, search.Graph | None]:
    per_node: dict[str, list[search.Graph]] = {}
    for hw in distinct(hws):
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
    graphs = {algo: search.combine(found) for algo, found in per_node.items() if len(found) == len(distinct(hws))}
    ratio = options.fabric_ratio(n_nodes)
    if ratio > 1:
        graphs = {a: replace(g, bw_inter=g.bw_inter / ratio,
                             bw_intra=g.bw_intra if n_nodes > 2 else min(g.bw_intra, 2 * g.bw_inter / ratio))
                  for a, g in graphs.items()}
    return graphs


def _comm(hws, n_nodes, ranks, version, options, graphs) -> tuning.Comm:
    sms = [g.sm for hw in hws for g in hw.gpus if g.sm]
    vendors = {hw.cpu_vendor for hw in hws}
    vendor = vendors.pop() if len(vendors) == 1 else "mixed"
    nvls = options.nvls is not False and version.has_nvls
    return tuning.Comm(n_nodes, ranks, min(sms, default=0), max(sms, default=0), vendor, hws[0].cpu_arch,
                       options.collnet, nvls, version.has_nvls_tree, version.has_pat,
                       all(hw.nvswitch for hw in hws), version)


def _nccl_algorithms(coll, size, graphs, comm, options, hws) -> list[AlgorithmEstimate]:
    choices = tuning.model(coll, graphs, comm)
    if options.algorithm:
        choices = [c for c in choices if c.algorithm == options.algorithm]
    if options.protocol:
        choices = [c for c in choices if c.protocol == options.protocol]
    ring_channels = graphs["ring"].channels if "ring" in graphs else 1
    best: dict[str, tuple[float, tuning.Choice]] = {}
    for choice in choices:
        t = tuning.time_us(choice, coll, size, comm, ring_channels)
        if choice.algorithm not in best or t < best[choice.algorithm][0]:
            best[choice.algorithm] = (t, choice)
    factor = bus_factor(coll, comm.ranks)
    bound = fp.network_bound(hws, comm, coll, options)
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
                                        "nccl-tuning", graph.channels, notes, graph.orders))
    return result


