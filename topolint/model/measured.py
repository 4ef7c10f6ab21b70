"""Measured evidence: what nccl-tests printed and what NCCL logged (NCCL_DEBUG=INFO).

Both parsers produce a ``MeasuredFile``: the nccl-tests runs it holds (a file may hold several
collectives) and the NCCL log lines found in it (nccl-tests output often carries the INFO lines
of its ranks; an NCCL log has no runs). Every fact keeps the line it came from.
Formats: nccl-formats.md sections 4 (logs) and 5 (nccl-tests).
"""

from __future__ import annotations

from typing import Literal, Optional

from topolint.model.facts import Fact, Location, build

MeasuredKind = Literal["nccl-tests", "nccl-log"]


class Placement(Fact):
    """One half of a result row: out-of-place or in-place."""

    time_us: Optional[float] = None
    algbw: Optional[float] = None  # GB/s (1e9 B/s), as printed
    busbw: Optional[float] = None
    wrong: Optional[float] = None  # #wrong; None for N/A (-c 0); for <=2.11 tables: None (see error)
    error: Optional[float] = None  # <=2.11 tables: max abs error (the last column was "error")
    wrong_text: str = ""


class ResultRow(Fact):
    size: int  # bytes
    count: int  # elements
    dtype: str
    redop: str
    root: Optional[int] = None  # absent in <=2.11 tables
    out_of_place: Optional[Placement] = None
    in_place: Optional[Placement] = None
    loc: Location

    def placements(self) -> list[Placement]:
        return [p for p in (self.out_of_place, self.in_place) if p is not None]


class TestDevice(Fact):
    """``#  Rank  0 Group  0 Pid 123 on host device  0 [0000:07:00] NVIDIA H100 80GB HBM3``."""

    rank: int
    group: Optional[int] = None
    pid: Optional[int] = None
    host: str
    device: int
    bus: str  # as printed: "0000:07:00" (>=2.16) or "0x07" (older: bus number only)
    model: str
    loc: Location


class TestRun(Fact):
    """One nccl-tests table with its header and footer."""

    collective: Optional[str] = None  # "all_reduce_perf" from "# Collective test starting", or None
    version: Optional[str] = None  # nccl-tests version (>=2.18 header)
    nccl_library: Optional[int] = None  # nccl-library=23007
    header: dict[str, int] = {}  # nThread, nGpus, minBytes, maxBytes, step, warmup iters, iters, validation, ...
    step_kind: Optional[str] = None  # "factor" or "bytes"
    header_loc: Optional[Location] = None
    devices: list[TestDevice] = []
    column_header_loc: Optional[Location] = None
    old_columns: bool = False  # <=2.11: no root column, "error" instead of "#wrong"
    rows: list[ResultRow] = []
    out_of_bounds: Optional[int] = None
    out_of_bounds_verdict: Optional[str] = None  # OK / FAILED
    out_of_bounds_loc: Optional[Location] = None
    avg_busbw: Optional[float] = None  # nccl-tests' mean over every row: never the plateau
    avg_busbw_loc: Optional[Location] = None
    loc: Location  # where this run starts

    @property
    def hosts(self) -> list[str]:
        return sorted({d.host for d in self.devices})


class LogLine(Fact):
    """An NCCL log line kept as is (warnings, plugin messages, failures)."""

    level: str  # INFO, WARN, TRACE, or "" for lines without the prefix (banner, nccl-tests failures)
    host: Optional[str] = None
    device: Optional[int] = None
    message: str
    loc: Location


class Setting(Fact):
    """``NCCL_X set by environment to V`` (or ``NCCL_IB_HCA set to V``)."""

    name: str
    value: str
    host: Optional[str] = None
    loc: Location


class Channel(Fact):
    """``Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA`` and the P2P/SHM forms."""

    channel: int
    src: int  # rank
    src_device: str  # nvml dev (2.18+) or busId (2.14-2.16), as printed
    dst: int
    dst_device: str
    direction: Optional[str] = None  # send / receive (NET only)
    transport: str  # P2P, SHM, NET, COLLNET
    detail: str  # what follows "via ": "P2P/CUMEM/read", "NET/IB/0/GDRDMA"
    net: Optional[str] = None  # IB, Socket, Libfabric, "AWS Libfabric", ...
    net_device: Optional[int] = None
    proxy: Optional[int] = None  # PXN proxy rank
    gdr: bool = False
    host: Optional[str] = None  # the host of the line's prefix (the local rank's host)
    loc: Location


class Comm(Fact):
    """``comm 0x.. rank R nRanks N nNodes K localRanks L localRank l MNNVL m`` (2.20+)."""

    rank: int
    nranks: int
    nnodes: Optional[int] = None
    local_ranks: Optional[int] = None
    host: Optional[str] = None
    loc: Location


class RankInit(Fact):
    """``... comm 0x.. rank R nranks N cudaDev D [nvmlDev d] busId B ... - Init START|COMPLETE``."""

    rank: int
    nranks: int
    cuda_device: int
    bus_id: str  # as printed by NCCL (%lx): "9e000"
    host: Optional[str] = None
    loc: Location


class NetDevice(Fact):
    """A device NCCL's network lists: ``NET/IB : Using [0]mlx5_0:1/IB`` or ``NET/Socket : Using [0]eth0:..``;
    ``speed`` (Mb/s) from the 2.20+ per-device line ``NET/IB: [0] mlx5_0:..:1/IB speed=400000 ...``."""

    net: str  # IB or Socket
    index: int
    name: str
    port: Optional[int] = None
    link: Optional[str] = None  # IB / RoCE
    speed_mbps: Optional[int] = None
    host: Optional[str] = None
    loc: Location


class TopoPrintLine(Fact):
    """A line of the ``=== System :`` print (NCCL_DEBUG_SUBSYS=GRAPH) or of the paths print."""

    kind: Literal["node", "link", "path"]
    node_type: Optional[str] = None  # GPU, PCI, NIC, NET, CPU, NVS, ...
    node_id: Optional[str] = None
    link_type: Optional[str] = None  # for links: NVL, PCI, SYS, NET, C2C, LOC
    bandwidth: Optional[float] = None  # GB/s as NCCL printed it
    info: Optional[str] = None
    path_from: Optional[str] = None  # paths: GPU/0-9e000
    path_type: Optional[str] = None  # paths: LOC, NVL, PHB, ...
    host: Optional[str] = None
    loc: Location


class ChannelCounts(Fact):
    """``24 coll channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer``."""

    coll: int
    collnet: Optional[int] = None
    nvls: Optional[int] = None
    p2p: int
    host: Optional[str] = None
    loc: Location


class TuningChoice(Fact):
    """What NCCL chose for one call (NCCL_DEBUG_SUBSYS=TUNING, rank 0; src/enqueue.cc):
    ``AllReduce: 8589934592 Bytes -> Algo NVLS_TREE proto SIMPLE channel{Lo..Hi}={0..15}`` (2.24+),
    ``AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 40.5`` (2.23; 2.21-2.22 without the function).
    Numbers are NCCL's NCCL_ALGO_* / NCCL_PROTO_* indices (src/include/nccl_common.h). One fact per
    distinct choice: nccl-tests repeats each call for its iterations."""

    function: Optional[str] = None  # AllReduce, AllGather, ... (None before 2.23)
    bytes: int  # count x type size, as NCCL prints it
    algorithm: str  # as printed: RING, NVLS_TREE, or an index
    protocol: str  # LL, LL128, SIMPLE, or an index
    host: Optional[str] = None
    loc: Location


class NcclLog(Fact):
    versions: list[LogLine] = []  # "NCCL version 2.27.3+cuda12.9": message is the version
    networks: list[LogLine] = []  # "Using network X": message is X
    net_devices: list[NetDevice] = []
    plugin_lines: list[LogLine] = []  # NET/Plugin, TUNER/Plugin, PROFILER/Plugin, NET/OFI ...
    rdma_attempts: list[LogLine] = []  # lines that show RDMA was tried and failed or was turned off
    settings: list[Setting] = []
    channels: list[Channel] = []
    comms: list[Comm] = []
    inits: list[RankInit] = []
    counts: list[ChannelCounts] = []
    topology: list[TopoPrintLine] = []
    warnings: list[LogLine] = []
    connected: list[LogLine] = []  # "Connected all rings, use ring PXN p GDR g"
    rings: list[LogLine] = []  # "Channel 00/02 :    0   1   2   3": message is the rank order
    trees: list[LogLine] = []  # "Trees [0] 1/-1/-1->0->-1 ...": message is the items
    tuning: list[TuningChoice] = []  # "AllReduce: N Bytes -> Algo X proto Y": what NCCL chose per call
    failures: list[LogLine] = []  # "host: Test NCCL failure ...", "Test CUDA failure", "Test timeout"
    line_count: int = 0  # NCCL lines read

    def host_of_rank(self) -> dict[int, str]:
        """Rank -> host from the lines each rank printed itself (init and comm lines)."""
        hosts: dict[int, str] = {}
        for fact in [*self.inits, *self.comms]:
            if fact.host:
                hosts.setdefault(fact.rank, fact.host)
        return hosts


class MeasuredFile(Fact):
    path: str
    kind: MeasuredKind
    runs: list[TestRun] = []
    log: NcclLog
    command: Optional[LogLine] = None  # a pasted launcher line (mpirun/srun ... all_reduce_perf)


# ---- the large-message plateau -------------------------------------------------------------------
# busbw climbs with the message size until latency stops mattering; nccl-tests' "Avg bus bandwidth"
# averages every row, small ones included (src/common.cu: bw[0] += busBw per row and placement),
# so it is never the figure to judge. The plateau is the best busbw among the largest sizes: rows
# within a factor of 4 of the largest. Below 512 MiB even healthy systems are short of their peak
# ("256 MB is too small to reach peak" on H100, NVIDIA/nccl-tests#212; perf-reference.md 5).
PLATEAU_WINDOW = 4
PLATEAU_MIN_BYTES = 512 << 20


class Plateau(Fact):
    busbw: float
    size: int  # the size of the row that gave it
    rows: list[ResultRow] = []  # the rows considered
    loc: Location


def plateau(run: TestRun) -> Plateau | None:
    """The large-message plateau of a run, or None when its sweep stops short of 512 MiB."""
    rows = [r for r in run.rows if r.size > 0 and any(p.busbw is not None for p in r.placements())]
    if not rows:
        return None
    largest = max(r.size for r in rows)
    if largest < PLATEAU_MIN_BYTES:
        return None
    window = [r for r in rows if r.size * PLATEAU_WINDOW >= largest]
    best, row = max(((p.busbw, r) for r in window for p in r.placements() if p.busbw is not None),
                    key=lambda pair: (pair[0], pair[1].size))
    return build(Plateau, busbw=best, size=row.size, rows=window, loc=row.loc)
