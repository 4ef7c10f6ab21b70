"""PERF006: nccl-tests found wrong results: ``#wrong`` above 0 in a row, or out-of-bounds values.

``#wrong`` is the count of wrong elements of the correctness check (``-c 1``, the default);
``N/A`` means the check was off (``-c 0``) and says nothing. Tables of nccl-tests <= 2.11 print
the maximum error instead of a count: only their out-of-bounds footer is judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._measured import run_entity, where
from topolint.engine.finding import Hit

NEEDS = ("nccl-tests",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    for measured in context.node.measured:
        for run in measured.runs:
            hit = _wrong(node, measured, run)
            if hit is not None:
                yield hit


def _wrong(node: str, measured, run) -> Hit | None:
    wrong_rows = [(row, half, p.wrong) for row in run.rows
                  for half, p in (("out-of-place", row.out_of_place), ("in-place", row.in_place))
                  if p is not None and p.wrong is not None and p.wrong > 0]
    out_of_bounds = (run.out_of_bounds or 0) > 0 or run.out_of_bounds_verdict == "FAILED"
    if not wrong_rows and not out_of_bounds:
        return None
    evidence = [f"{where(row.loc)}: {row.size} B {half}: #wrong {p:g}" for row, half, p in wrong_rows[:6]]
    if len(wrong_rows) > 6:
        evidence.append(f"... {len(wrong_rows) - 6} more rows with wrong elements")
    if out_of_bounds and run.out_of_bounds_loc is not None:
        evidence.append(f"{where(run.out_of_bounds_loc)}: Out of bounds values : {run.out_of_bounds} "
                        f"{run.out_of_bounds_verdict or ''}".rstrip())
    location = wrong_rows[0][0].loc if wrong_rows else run.out_of_bounds_loc
    total = sum(p for _, _, p in wrong_rows)
    fields = {"collective": run.collective or "nccl-tests run", "rows": len(wrong_rows), "wrong": f"{total:g}",
              "out_of_bounds": run.out_of_bounds or 0}
    return Hit(entity=run_entity(node, measured, run), location=location, fields=fields, evidence=evidence,
               variant="default" if wrong_rows else "out_of_bounds")
