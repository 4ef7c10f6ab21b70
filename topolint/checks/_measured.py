"""Helpers the PERF checks share: the shape of a measured run and what busbw it should reach.

The expectation comes from ``topolint.estimate.estimate`` for the same shape (nodes x ranks per
node, collective, size) when a topology of the nodes is known (files of the same node, or
``--topology``); otherwise from what the output itself reveals (GPU model, ranks per host,
transports). When those facts do not settle it (a multi-node run whose NICs are unknown, a GPU
without a known NVLink board) there is no expectation, only the figures, and the reason says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topolint.model.measured import MeasuredFile, NcclLog, Plateau, TestRun
from topolint.model.nccl_version import NcclVersion, VersionError
from topolint.model.node import file_entity

# nccl-tests program names -> estimate()'s collective names.
COLLECTIVES = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather", "reduce_scatter_perf": "reducescatter",
               "broadcast_perf": "broadcast", "alltoall_perf": "alltoall"}
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "half": 2, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4,
              "int": 4, "float": 4, "float32": 4, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
              "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
REDUCTIONS = {"sum", "prod", "max", "min", "avg", "mulsum"}

# HGX/DGX boards whose GPUs all reach NVSwitches: model/devices.py gpu_model_by_name (the SXM
# parts with their NVLinks per GPU). perf-reference.md 1.1: measured ring busbw = links x NCCL's
# per-link constant x 0.96-1.00 (A100 232/240, H100 368/371, B300 695/722). The constant is
# nvlink_bw(sm) (NCCL topo.h SM80/SM90/SM100_NVLINK_BW). PCIe and NVL (bridged) variants: no NVSwitch.
BOARD_GPUS = 8  # an HGX baseboard: with 8 ranks on a host the NVSwitch board is certain
# Per-NIC busbw NCCL reaches, by line rate (perf-reference.md 1.3, maintainers in
# NVIDIA/nccl-tests#119 and #290): 12 GB/s per 100G, 24 per 200G, 46-48 per 400G = rate/8 x 0.96.
NIC_EFFICIENCY = 0.96


@dataclass
class Shape:
    collective: str | None
    ranks: int | None
    hosts: list[str]
    ranks_per_host: int | None
    single_host: bool | None  # None: not known
    gpu_model: str | None
    evidence: list[str] = field(default_factory=list)


@dataclass
class Expectation:
    busbw: float | None  # GB/s; None: no verdict
    source: str = ""  # one line: where the figure came from
    evidence: list[str] = field(default_factory=list)
    reason: str | None = None  # why there is no figure


def where(loc) -> str:
    return f"{loc.path}:{loc.line}"


def run_entity(node: str, measured: MeasuredFile, run: TestRun) -> str:
    return f"{file_entity(node, measured.path)}#{run.collective or 'nccl-tests'}@{run.loc.line}"


def version_in_force(log: NcclLog, configured: NcclVersion, context=None) -> tuple[NcclVersion, str]:
    """The NCCL version the log's banner names, else the configured one; ``--nccl-version`` and
    the configuration's ``nccl-version`` win over the banner (model/nccl_in_force.py)."""
    if context is not None and context.configured.origin != "default":
        return context.configured.version, context.configured.label()
    for line in log.versions:
        try:
            return NcclVersion.parse(line.message), f"NCCL {line.message} (banner at {where(line.loc)})"
        except VersionError:
            continue
    return configured, f"NCCL {configured} (assumed: the log names no version)"


def topologies(context) -> list:
    """Nodes whose topology describes the hardware (an NCCL XML, or a topo -m matrix the estimate
    builds one from): this node's own files, else --topology."""
    from topolint.estimate.topology import has_topology

    nodes = [context.node] if has_topology(context.node) else []
    nodes += [n for n in context.topology_nodes if has_topology(n) and n is not context.node]
    return nodes


def _collective(run: TestRun, ranks: int | None) -> str | None:
    if run.collective:
        return COLLECTIVES.get(run.collective)
    row = max(run.rows, key=lambda r: r.size, default=None)
    size = TYPE_BYTES.get(row.dtype) if row else None
    if row is None or size is None or row.count == 0:
        return None
    if row.redop in REDUCTIONS and row.root in (-1, None) and row.size == row.count * size:
        return "allreduce"  # reduce (root >= 0) and reduce_scatter (size = count x n) differ
    if row.redop == "none" and row.root in (-1, None) and ranks and row.size == row.count * size * ranks:
        return "allgather"  # alltoall prints the same size; only its program name tells it apart
    return None


def _ranks_from_factor(run: TestRun) -> int | None:
    """busbw / algbw = 2(n-1)/n for all-reduce: n from the largest row (nccl-tests PERFORMANCE.md)."""
    row = max((r for r in run.rows if r.size > 0), key=lambda r: r.size, default=None)
    half = row.placements()[-1] if row else None
    if half is None or not half.algbw or half.busbw is None or row.redop not in REDUCTIONS:
        return None
    factor = half.busbw / half.algbw
    if not 1.0 <= factor < 2.0:
        return None
    ranks = round(2 / (2 - factor))
    return ranks if abs(2 * (ranks - 1) / ranks - factor) < 0.01 else None


LAUNCH_RANKS = re.compile(r"(?:^|\s)(?:-np|-n|--np|--ntasks)[= ]\s*(\d+)\b")
LAUNCH_HOSTS = re.compile(r"(?:^|\s)(?:-H|--host)[= ]\s*(\S+)")
LAUNCH_NODES = re.compile(r"(?:^|\s)(?:-N\s*|--nodes[= ])(\d+)\b")
LAUNCH_GPUS = re.compile(r"_perf\b.*?\s-g\s*(\d+)\b")


def _from_command(measured: MeasuredFile) -> tuple[int | None, list[str]]:
    """(ranks, hosts) from a pasted launcher line: ``mpirun -np 16 -H a:8,b:8 ... all_reduce_perf -g 1``
    or ``srun -N2 -n16 ...``; (None, []) when it does not say."""
    from topolint.model.numbers import decimal

    if measured.command is None:
        return None, []
    text = measured.command.message
    procs, host_list, nodes = LAUNCH_RANKS.search(text), LAUNCH_HOSTS.search(text), LAUNCH_NODES.search(text)
    gpus = LAUNCH_GPUS.search(text)
    hosts = [h.split(":")[0] for h in host_list.group(1).split(",") if h] if host_list else []
    if not hosts and nodes:
        hosts = [f"node {i + 1}" for i in range(min(decimal(nodes.group(1)) or 0, 4096))]
    processes, per_process = decimal(procs.group(1)) if procs else None, decimal(gpus.group(1)) if gpus else 1
    return (processes * per_process if processes and per_process else None), hosts


def shape_of(run: TestRun, log: NcclLog, measured: MeasuredFile | None = None) -> Shape:
    evidence = []
    hosts = run.hosts
    ranks = len({d.rank for d in run.devices}) or None
    if ranks:
        evidence.append(f"{where(run.devices[0].loc)}: {ranks} ranks on {len(hosts)} host(s) ({', '.join(hosts)})")
    elif measured is not None and measured.command is not None:
        ranks, hosts = _from_command(measured)
        if ranks and hosts:
            evidence.append(f"{where(measured.command.loc)}: the launcher line starts {ranks} ranks on "
                            f"{len(hosts)} host(s)")
        else:
            ranks, hosts = None, []
    comms = [c for c in log.comms if c.nnodes is not None]
    if ranks is None and comms:
        ranks = comms[0].nranks
        evidence.append(f"{where(comms[0].loc)}: nRanks {ranks} nNodes {comms[0].nnodes}")
    if ranks is None:
        ranks = _ranks_from_factor(run)
        if ranks:
            evidence.append(f"{ranks} ranks, inferred from busbw/algbw = 2(n-1)/n of the largest row")
    if hosts:
        single = len(hosts) == 1
    elif comms:
        single = all(c.nnodes == 1 for c in comms)
    else:
        single = None
    per_host = (ranks // len(hosts) if hosts and ranks else ranks if single else
                comms[0].local_ranks if comms else None)
    models = sorted({d.model for d in run.devices})
    return Shape(_collective(run, ranks), ranks, hosts, per_host, single, models[0] if len(models) == 1 else None,
                 evidence)


def expect(context, measured: MeasuredFile, run: TestRun, plateau: Plateau, shape: Shape) -> Expectation:
    if shape.ranks is not None and shape.ranks <= 1:
        return Expectation(None, reason="a 1-rank run moves nothing: its busbw is 0 by definition")
    if shape.collective is None:
        return Expectation(None, reason="the collective is not known (no '# Collective test starting' line and "
                                        "the rows do not tell)")
    if shape.ranks is None or shape.single_host is None:
        return Expectation(None, reason="the run's ranks and hosts are not known (no device list, no comm lines)")
    nodes = topologies(context)
    if nodes:
        return _estimated(context, measured, nodes, plateau, shape)
    return _from_output(measured.log, shape)


def model_options(shape: Shape):
    """The SM of the GPUs the output names (nccl-tests' device list), for topologies that state
    none (a matrix, a static file): what NCCL reads from the driver at run time."""
    from topolint.estimate import Options
    from topolint.model.devices import gpu_model_by_name

    model = gpu_model_by_name(shape.gpu_model)
    if model is None:
        return Options()
    return Options(gpu_sm=model.sm, gpu_sm_source=f"the output's GPU model {shape.gpu_model} ({model.name}, "
                                                  f"SM{model.sm})")


def _estimated(context, measured: MeasuredFile, nodes: list, plateau: Plateau, shape: Shape) -> Expectation:
    from topolint.estimate import EstimateError
    from topolint.estimate.expected import expected

    version, said = version_in_force(measured.log, context.version, context)
    hosts = 1 if shape.single_host else len(shape.hosts) or None
    if hosts is None:
        return Expectation(None, reason="the run spans several nodes, but how many is not known")
    try:
        result = expected(nodes[:1], hosts, shape.ranks_per_host, shape.collective,
                          [(plateau.size, plateau.busbw)], measured.log, version, model_options(shape))
    except EstimateError as exc:
        return Expectation(None, reason=f"estimate: {exc}")
    judged = result.measurements[0] if result.measurements else None
    if judged is None or judged.expected_busbw_GBps is None:
        return Expectation(None, reason="estimate gives no NCCL algorithm for this shape")
    est = result.estimates[plateau.size]
    chosen = est.algorithm(judged.algorithm)
    topology = result.topology
    source = (f"topolint estimate for {hosts} x {shape.ranks_per_host} ranks, {shape.collective} of "
              f"{plateau.size} B on {topology} ({said}): {chosen.name} {chosen.busbw_GBps:.1f} GB/s, bounded by "
              f"{chosen.bottleneck.link} {chosen.bottleneck.entity}")
    evidence = [source, f"algorithm: {judged.basis}"]
    evidence += [f"estimate: {a}" for a in result.notes if "not in the file: assumed" in a][:4]
    evidence += [f"estimate: {a}" for a in est.assumptions[2:4]]
    evidence += [n for n in result.notes if n.startswith(("the log shows 0 NVLS", "NVLink SHARP is not confirmed"))]
    nvls = [a for a in est.algorithms if a.name.startswith("nvls")]
    if judged.assumed and nvls and not chosen.name.startswith("nvls"):
        best = max(nvls, key=lambda a: a.busbw_GBps)
        evidence.append(f"with NVLS the estimate is {best.busbw_GBps:.1f} GB/s")
    ring = next((a for a in est.algorithms if a.name == "ring"), None)
    if ring is not None and ring is not chosen:
        evidence.append(f"estimate: ring alone would give {ring.busbw_GBps:.1f} GB/s")
    return Expectation(chosen.busbw_GBps, source=f"topolint estimate ({chosen.name}) on {topology}", evidence=evidence)


def _board(shape: Shape, log: NcclLog) -> tuple[str, int, int] | None:
    from topolint.model.devices import gpu_model_by_name

    model = gpu_model_by_name(shape.gpu_model)
    if model is None or not model.nvswitch_links:
        return None
    switch_seen = any(t.node_type == "NVS" for t in log.topology)
    if shape.ranks_per_host == BOARD_GPUS or switch_seen or model.name.startswith("GB"):
        return model.name, model.sm, model.nvswitch_links
    return None


def _from_output(log: NcclLog, shape: Shape) -> Expectation:
    from topolint.model.system import nvlink_bw

    board = _board(shape, log)
    if shape.single_host and board is None:
        why = (f"{shape.gpu_model} is not a GPU of a known NVSwitch board" if shape.gpu_model
               else "the GPU model is not known (no device list)")
        return Expectation(None, reason=f"{why}, and no topology is given (--topology)")
    if board is None:
        return Expectation(None, reason="a multi-node run on GPUs of unknown NVLink and unknown NICs: give "
                                        "--topology with a node's NCCL topology dump")
    label, sm, links = board
    intra = links * nvlink_bw(sm)
    detail = (f"{shape.ranks_per_host} x {shape.gpu_model} per host ({label} NVSwitch board): {links} NVLinks x "
              f"{nvlink_bw(sm)} GB/s (NCCL topo.h per-link constant for sm{sm}) = {intra:.1f} GB/s ring ceiling; "
              "measured rings reach 0.96-1.00 of it (perf-reference.md 1.1)")
    if shape.single_host:
        return Expectation(intra, source=f"{label} NVSwitch board from the GPU model in the output: {links} NVLinks x "
                                         f"{nvlink_bw(sm)} GB/s", evidence=[detail])
    return _with_nics(log, shape, intra, detail)


def _with_nics(log: NcclLog, shape: Shape, intra: float, detail: str) -> Expectation:
    """Multi-node from the log alone: every host must list its IB devices with their speed (2.20+)."""
    per_host: dict[str, list] = {}
    for device in log.net_devices:
        if device.net == "IB" and device.host:
            per_host.setdefault(device.host, []).append(device)
    if not per_host or any(d.speed_mbps is None for ds in per_host.values() for d in ds):
        return Expectation(None, reason=f"a multi-node run ({len(shape.hosts) or 'several'} hosts) whose NICs' "
                                        "rates are unknown: give --topology with a node's NCCL topology dump")
    nics = min(len({d.name for d in ds}) for ds in per_host.values())
    slowest = min(d.speed_mbps for ds in per_host.values() for d in ds)
    inter = nics * slowest / 8000 * NIC_EFFICIENCY
    nic_detail = (f"{nics} IB NICs per host at {slowest // 1000} Gb/s (NET/IB lines): {nics} x {slowest / 8000:.1f} "
                  f"GB/s x {NIC_EFFICIENCY} = {inter:.1f} GB/s (perf-reference.md 1.3, 4.4 flat ring bound)")
    busbw = min(intra, inter)
    return Expectation(busbw, source=f"the output's GPU model and NICs: min({intra:.1f}, {inter:.1f}) GB/s",
                       evidence=[detail, nic_detail])


# ---- ranks to the GPUs of a topology (PERF004, PERF005) ------------------------------------------
def bus_from_nccl(text: str) -> str | None:
    """NCCL prints a busId as ``%lx`` of its int64 form (busIdToInt64 of "0000:9e:00.0" reads the
    hex digits: 0x9e000); back to a PCI address, or None."""
    from topolint.model.numbers import hex_int, pci_address

    if hex_int(text) is None or len(text) > 9:
        return None
    digits = text.lower().zfill(9)
    return pci_address(f"{digits[:4]}:{digits[4:6]}:{digits[6:8]}.{digits[8]}")


def gpu_for_rank(log: NcclLog, topology, rank: int, printed: str):
    """The topology GPU a rank drives: by the busId its init line gives, else by the device the
    channel line prints (nvml index since 2.18, a busId in 2.14-2.16)."""
    by_bus = {g.bus_id: g for g in topology.gpus}
    for init in log.inits:
        if init.rank == rank:
            gpu = by_bus.get(bus_from_nccl(init.bus_id) or "")
            if gpu is not None:
                return gpu
    if len(printed) >= 4:
        return by_bus.get(bus_from_nccl(printed) or "")
    from topolint.model.numbers import decimal

    index = decimal(printed)
    return next((g for g in topology.gpus if g.dev is not None and g.dev == index), None)


def setting(log: NcclLog, name: str):
    """The last echo of an NCCL setting in the log, or None."""
    found = [s for s in log.settings if s.name == name]
    return found[-1] if found else None
