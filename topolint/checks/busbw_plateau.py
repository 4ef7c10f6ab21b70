"""PERF001 / PERF002: the large-message busbw plateau of an nccl-tests run against what the
hardware should deliver (checks/_measured.py says where the expectation comes from).

Rules instantiate it with a band: PERF001 fires below a third of the expectation (the field
guide's test), PERF002 between a third and 80%. The plateau is the best busbw of the largest
sizes (model/measured.py ``plateau``), never nccl-tests' size-averaged "Avg bus bandwidth".
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._measured import expect, run_entity, shape_of, where
from topolint.engine.finding import Hit
from topolint.model.measured import PLATEAU_MIN_BYTES, plateau

NEEDS = ("nccl-tests",)


class Parameters(CheckParameters):
    below: float = 1 / 3  # fires when plateau / expectation is below this
    at_least: float = 0.0  # ... and not below this (the stricter rule's band)
    report_single_rank_copies: bool = False  # report a non-MPI build run under a launcher (once, in PERF002)


def size_label(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    for measured in context.node.measured:
        if params.report_single_rank_copies:
            copies = single_rank_copies(measured)
            if copies:
                yield copies_hit(node, measured, copies)
        for run in measured.runs:
            hit = judge(context, params, node, measured, run)
            if hit is not None:
                yield hit


def judge(context, params: Parameters, node: str, measured, run) -> Hit | None:
    top = plateau(run)
    name = run.collective or "nccl-tests run"
    if top is None:
        if run.rows:
            context.notes.append(f"{where(run.loc)}: {name}: no verdict, the sweep stops below "
                                 f"{size_label(PLATEAU_MIN_BYTES)} (busbw has not reached its plateau; use -e 1G or more)")
        return None
    shape = shape_of(run, measured.log, measured)
    expected = expect(context, measured, run, top, shape)
    if expected.busbw is None or expected.busbw <= 0:
        _say_once(context, top, f"{name}: plateau {top.busbw:g} GB/s at {size_label(top.size)}; no verdict: "
                                f"{expected.reason}")
        return None
    ratio = top.busbw / expected.busbw
    _say_once(context, top, f"{name}: plateau {top.busbw:g} GB/s at {size_label(top.size)} is {100 * ratio:.0f}% "
                            f"of {expected.busbw:.1f} GB/s ({expected.source})")
    if not params.at_least <= ratio < params.below:
        return None
    fields = {"collective": shape.collective, "measured": f"{top.busbw:g}", "size": size_label(top.size),
              "expected": f"{expected.busbw:.1f}", "percent": f"{100 * ratio:.0f}", "source": expected.source,
              "ranks": shape.ranks, "hosts": len(shape.hosts) or (1 if shape.single_host else "?")}
    evidence = [f"{where(r.loc)}: {size_label(r.size)}: busbw "
                f"{' / '.join(f'{p.busbw:g}' for p in r.placements())} GB/s (out-of-place / in-place)"
                for r in top.rows]
    evidence += shape.evidence + expected.evidence
    if run.avg_busbw is not None and run.avg_busbw_loc is not None:
        evidence.append(f"{where(run.avg_busbw_loc)}: 'Avg bus bandwidth' {run.avg_busbw:g} averages every size, "
                        "small ones included: not used")
    return Hit(entity=run_entity(node, measured, run), location=top.loc, fields=fields, evidence=evidence)


def _say_once(context, top, text: str) -> None:
    """PERF001 and PERF002 judge the same run: its figures go to --verbose once."""
    key = ("busbw verdict", top.loc.path, top.loc.line)
    if key not in context.shared:
        context.shared[key] = True
        context.notes.append(f"{where(top.loc)}: {text}")


def single_rank_copies(measured) -> int:
    """N copies of a 1-rank header: all_reduce_perf built without MPI, started N times by a launcher."""
    runs = [r for r in measured.runs if r.devices]
    if len(runs) >= 2 and all(len(r.devices) == 1 and r.devices[0].rank == 0 for r in runs):
        return len(runs)
    return 0


def copies_hit(node: str, measured, copies: int) -> Hit:
    runs = [r for r in measured.runs if r.devices]
    hosts = sorted({r.devices[0].host for r in runs})
    evidence = [f"{where(r.devices[0].loc)}: rank 0 of 1 on {r.devices[0].host}" for r in runs[:4]]
    if len(runs) > 4:
        evidence.append(f"... and {len(runs) - 4} more headers with one rank each")
    return Hit(entity=f"{run_entity(node, measured, runs[0])}", location=runs[0].devices[0].loc, variant="copies",
               severity="info", fields={"copies": copies, "hosts": len(hosts), "collective": runs[0].collective or
                                        "nccl-tests", "measured": "0", "size": "-", "expected": "-", "percent": "-",
                                        "source": "-", "ranks": 1},
               evidence=evidence)
