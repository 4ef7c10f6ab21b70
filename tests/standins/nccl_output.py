"""Recorded-style nccl-tests and NCCL_DEBUG=INFO output, written by hand-chosen parameters.

The stand-in executables beside this file (all_reduce_perf, srun) print it for the live-mode
tests, and scripts/gen_measured_fixtures.py writes the PERF rule fixtures with it. The layout
follows nccl-tests 2.19's src/util.cu and NCCL 2.27's INFO lines; the numbers are made up.
"""

from __future__ import annotations

BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
GPU_SIZES = (1 << 30, 2 << 30, 4 << 30, 8 << 30)


def header(ranks_per_host: int, hosts: list[str], model: str, sizes=GPU_SIZES, collective="all_reduce_perf",
           first_rank: int = 0) -> list[str]:
    lines = ["# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703",
             f"# Collective test starting: {collective}",
             f"# nThread 1 nGpus {ranks_per_host if len(hosts) == 1 else 1} minBytes {sizes[0]} maxBytes {sizes[-1]} "
             "step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
             "#", "# Using devices"]
    rank = first_rank
    for host in hosts:
        for device in range(ranks_per_host):
            lines.append(f"#  Rank {rank:2d} Group  0 Pid {4242 + rank:6d} on {host:>10s} device {device:2d} "
                         f"[0000:{BUSES[device % 8]:02x}:00] {model}")
            rank += 1
    return lines + ["#"]


def column_header() -> list[str]:
    return ["#                                                              out-of-place                       in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]


def _time(value: float) -> str:
    return f"{value:.0f}" if value >= 10000 else f"{value:.1f}" if value >= 100 else f"{value:.2f}"


def row(size: int, busbw: float, ranks: int, wrong: int = 0) -> str:
    factor = 2 * (ranks - 1) / ranks
    algbw = busbw / factor if factor else 310.0  # one rank: a local copy, busbw 0 by definition
    time_us = size / algbw / 1e3
    half = f"  {_time(time_us):>7s}  {algbw:6.2f}  {busbw:6.2f}  {{w:6d}}"
    return f"{size:12d}  {size // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}" + half.format(w=0) + half.format(w=wrong)


def footer(busbws: list[float], wrong: bool = False, collective="all_reduce_perf") -> list[str]:
    return [f"# Out of bounds values : {1 if wrong else 0} {'FAILED' if wrong else 'OK'}",
            f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):g} ", "#",
            f"# Collective test concluded: {collective}"]


def table(busbws: list[float], ranks_per_host: int = 8, hosts=("hgx01",), model="NVIDIA H100 80GB HBM3",
          sizes=GPU_SIZES, wrong_last: int = 0) -> str:
    hosts = list(hosts)
    ranks = ranks_per_host * len(hosts)
    lines = header(ranks_per_host, hosts, model, sizes) + column_header()
    lines += [row(s, b, ranks, wrong_last if i == len(sizes) - 1 else 0) for i, (s, b) in enumerate(zip(sizes, busbws))]
    return "\n".join(lines + footer(list(busbws), wrong=wrong_last > 0)) + "\n"


def info(host: str, rank: int, device: int, message: str, pid: int = 4242) -> str:
    return f"{host}:{pid + rank}:{pid + rank + 100} [{device}] NCCL INFO {message}"


def init_lines(host: str, ranks: range, nranks: int, nnodes: int, version: str = "2.27.3") -> list[str]:
    """Banner, init and comm lines of the ranks of one host; local rank i drives device i."""
    lines = []
    for device, rank in enumerate(ranks):
        lines += [info(host, rank, device, f"NCCL version {version}+cuda12.9"),
                  info(host, rank, device, f"ncclCommInitRankConfig comm 0x55{rank:04x}0 rank {rank} nranks {nranks} "
                                           f"cudaDev {device} nvmlDev {device} busId {BUSES[device % 8]:x}000 "
                                           f"commId 0x1234 - Init START"),
                  info(host, rank, device, f"comm 0x55{rank:04x}0 rank {rank} nRanks {nranks} nNodes {nnodes} "
                                           f"localRanks {len(ranks)} localRank {device} MNNVL 0")]
    return lines


def ring_channels(host: str, ranks: range, via: str) -> list[str]:
    """One channel per local rank to the next, via ``via`` (P2P/CUMEM/read, SHM/direct/direct)."""
    ordered = list(ranks)
    local = {rank: device for device, rank in enumerate(ordered)}
    return [info(host, r, local[r], f"Channel 00/0 : {r}[{local[r]}] -> {n}[{local[n]}] via {via}")
            for r, n in zip(ordered, ordered[1:] + ordered[:1])]


def net_channels(host: str, rank: int, peer: int, net: str, dev: int, gdr: bool, device: int = 0,
                 peer_device: int = 0) -> list[str]:
    suffix = "/GDRDMA" if gdr else ""
    return [info(host, rank, device, f"Channel 00/0 : {peer}[{peer_device}] -> {rank}[{device}] [receive] via "
                                     f"NET/{net}/{dev}{suffix}"),
            info(host, rank, device, f"Channel 00/0 : {rank}[{device}] -> {peer}[{peer_device}] [send] via "
                                     f"NET/{net}/{dev}{suffix}")]
