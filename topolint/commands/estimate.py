"""`topolint estimate`: what a collective should deliver on the topology given, per algorithm.

``run_estimate`` reads the inputs (the same collection ``check`` uses), calls
``topolint.estimate.estimate`` for each size and returns the estimates; ``render`` writes them
as text, JSON (docs/estimate.schema.json) or markdown. cli.py only parses the arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from topolint.model.numbers import byte_size

FORMATS = ("text", "json", "markdown")
SCHEMA = "https://topolint.dev/schemas/estimate-1.json"


class EstimateUsageError(ValueError):
    pass


@dataclass
class EstimateRun:
    estimates: list  # one Estimate per size, smallest first
    problems: list = field(default_factory=list)  # InputProblem (TL001/TL002) from reading

    @property
    def unreadable(self) -> bool:
        return any(p.code == "TL001" for p in self.problems)


def parse_sizes(size: str | None, sizes: str | None) -> list[int]:
    """``--size 8G`` or ``--sizes 1M..8G`` (doubling, as nccl-tests -f 2)."""
    if size and sizes:
        raise EstimateUsageError("give --size or --sizes, not both")
    if sizes:
        low, sep, high = sizes.partition("..")
        first, last = byte_size(low), byte_size(high)
        if not sep or not first or not last or first > last:
            raise EstimateUsageError(f"--sizes {sizes!r}: expected MIN..MAX, e.g. 1M..8G")
        found = []
        while first <= last and len(found) < 64:
            found.append(first)
            first *= 2
        return found
    value = byte_size(size or "8G")
    if not value:
        raise EstimateUsageError(f"--size {size!r}: expected bytes with an optional K, M, G or T, e.g. 8G")
    return [value]


def run_estimate(paths: list[str], sizes: list[int], nodes: int | None = None, gpus_per_node: int | None = None,
                 collective: str = "allreduce", version=None, options=None) -> EstimateRun:
    from topolint.estimate import EstimateError, estimate
    from topolint.inputs.collect import collect

    collection = collect(paths)
    usable = [n for n in collection.nodes if any(t.gpus for t in n.topologies)]
    if not usable:
        if collection.problems:
            return EstimateRun([], collection.problems)
        raise EstimateUsageError("no NCCL topology XML with GPUs among the inputs")
    try:
        estimates = [estimate(usable, nodes, gpus_per_node, collective, s, version, options) for s in sizes]
    except EstimateError as exc:
        raise EstimateUsageError(str(exc)) from None
    return EstimateRun(estimates, collection.problems)


def crossovers(estimates: list) -> list[dict]:
    """Where NCCL's choice or the fastest algorithm changes between consecutive sizes."""
    found = []
    for before, after in zip(estimates, estimates[1:]):
        for key in ("selected", "fastest"):
            if getattr(before, key) != getattr(after, key):
                found.append({"kind": key, "from": getattr(before, key), "to": getattr(after, key),
                              "between_bytes": [before.inputs["size_bytes"], after.inputs["size_bytes"]]})
    return found


def human_size(value: int) -> str:
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{unit}"
    return f"{value}B"


def shown(text) -> str:
    """A value from an input, printable: control and non-printing characters as escapes."""
    text = str(text)
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def _where(bottleneck) -> str:
    place = f" ({shown(bottleneck.path)}:{bottleneck.line})" if bottleneck.path else ""
    return f"{bottleneck.link} {shown(bottleneck.entity)}{place}"


def render_json(run: EstimateRun) -> str:
    body = {"$schema": SCHEMA, "estimates": [e.as_dict() for e in run.estimates],
            "crossovers": crossovers(run.estimates),
            "problems": [{"code": p.code, "path": p.path, "line": p.line, "message": p.message} for p in run.problems]}
    return json.dumps(body, indent=2, sort_keys=False, ensure_ascii=True) + "\n"


def _heading(est) -> str:
    i = est.inputs
    return (f"{i['collective']} of {human_size(i['size_bytes'])} per rank on {i['nodes']} node(s) x "
            f"{i['gpus_per_node']} GPUs ({i['ranks']} ranks), NCCL {i['nccl_version']}")


def _algorithm_rows(est) -> list[tuple]:
    rows = []
    for a in est.algorithms:
        mark = " (NCCL)" if a.name == est.selected else ""
        mark += " (fastest)" if a.name == est.fastest and a.name != est.selected else ""
        rows.append((a.name + mark, a.protocol or "-", f"{a.busbw_GBps:.1f}", f"{a.algbw_GBps:.1f}",
                     f"{a.time_us:.1f}", _where(a.bottleneck)))
    return rows


def render_text(run: EstimateRun) -> str:
    out = []
    if not run.estimates:
        return "topolint: no estimate\n"
    if len(run.estimates) == 1:
        est = run.estimates[0]
        out.append(f"topolint estimate: {_heading(est)}")
        out.append("")
        header = ("algorithm", "proto", "busbw GB/s", "algbw GB/s", "time us", "bottleneck")
        rows = [header] + _algorithm_rows(est)
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        for r in rows:
            out.append("  ".join(r[c].ljust(widths[c]) if c in (0, 1) else r[c].rjust(widths[c]) for c in range(5))
                       + "  " + r[5])
        out.append("")
        for a in est.algorithms:
            out.append(f"{a.name}: {shown(a.bottleneck.detail)}")
            out.extend(f"  {shown(note)}" for note in a.notes)
        out.append("")
        if est.selected:
            sel = est.selected_estimate
            out.append(f"NCCL would select: {sel.name} ({sel.protocol}), {sel.busbw_GBps:.1f} GB/s busbw")
        if est.fastest and est.fastest != est.selected:
            fast = est.algorithm(est.fastest)
            out.append(f"fastest: {fast.name}, {fast.busbw_GBps:.1f} GB/s busbw")
    else:
        first = run.estimates[0]
        out.append(f"topolint estimate: {_heading(first).split(' of ', 1)[0]}, "
                   f"{human_size(first.inputs['size_bytes'])}..{human_size(run.estimates[-1].inputs['size_bytes'])}")
        out.append("")
        out.append(f"{'size':>6}  {'NCCL selects':<18} {'busbw':>8}  {'fastest':<18} {'busbw':>8}")
        for est in run.estimates:
            sel = est.selected_estimate
            fast = est.algorithm(est.fastest) if est.fastest else None
            out.append(f"{human_size(est.inputs['size_bytes']):>6}  {(sel.name + '/' + sel.protocol) if sel else '-':<18} "
                       f"{sel.busbw_GBps if sel else 0:>8.1f}  {fast.name if fast else '-':<18} "
                       f"{fast.busbw_GBps if fast else 0:>8.1f}")
        out.append("")
        for c in crossovers(run.estimates):
            lo, hi = c["between_bytes"]
            what = "NCCL's choice" if c["kind"] == "selected" else "the fastest"
            out.append(f"crossover: {what} goes from {c['from']} to {c['to']} between {human_size(lo)} and "
                       f"{human_size(hi)}")
        est = run.estimates[-1]
    out.append("")
    out.append("assumptions:")
    out.extend(f"  - {shown(a)}" for a in est.assumptions)
    return "\n".join(out) + "\n"


def _md(text) -> str:
    return shown(text).replace("|", "\\|")


def render_markdown(run: EstimateRun) -> str:
    out = []
    for est in run.estimates:
        out.append(f"### {_md(_heading(est))}")
        out.append("")
        out.append("| algorithm | protocol | busbw (GB/s) | algbw (GB/s) | time (us) | bottleneck |")
        out.append("|---|---|---:|---:|---:|---|")
        for row in _algorithm_rows(est):
            out.append("| " + " | ".join(_md(cell) for cell in row) + " |")
        out.append("")
        if est.selected:
            out.append(f"NCCL would select **{est.selected}**; fastest: **{est.fastest}**.")
            out.append("")
    for c in crossovers(run.estimates):
        lo, hi = c["between_bytes"]
        out.append(f"- crossover ({c['kind']}): {c['from']} -> {c['to']} between {human_size(lo)} and {human_size(hi)}")
    if run.estimates:
        out.append("")
        out.append("Assumptions:")
        out.append("")
        out.extend(f"- {_md(a)}" for a in run.estimates[-1].assumptions)
    return "\n".join(out) + "\n"


def render(fmt: str, run: EstimateRun) -> str:
    return {"text": render_text, "json": render_json, "markdown": render_markdown}[fmt](run)


def cli(args) -> int:
    """`topolint estimate`: the command line over run_estimate()."""
    import sys

    from topolint.commands import EXIT_CLEAN, EXIT_ERROR, UsageError
    from topolint.estimate import Options
    from topolint.model.nccl_version import NEWEST, NcclVersion, VersionError

    if (args.nodes is not None and args.nodes < 1) or (args.gpus_per_node is not None and args.gpus_per_node < 1):
        raise UsageError("--nodes and --gpus-per-node must be at least 1")
    try:
        version = NcclVersion.parse(args.nccl_version or NEWEST)
        sizes = parse_sizes(args.size, args.sizes)
        options = Options(nvls=False if args.no_nvls else None, collnet=args.collnet, servers=args.servers,
                          colocated=args.colocated, oversubscription=max(1.0, args.oversubscription),
                          algorithm=(args.algorithm or "").lower() or None, nvlinks=args.nvlinks)
        run = run_estimate(args.paths, sizes, args.nodes, args.gpus_per_node, args.collective, version, options)
    except (VersionError, EstimateUsageError) as exc:
        raise UsageError(str(exc)) from None
    for problem in run.problems:
        print(f"topolint: {problem.code}: {problem.path}:{problem.line}: {problem.message}", file=sys.stderr)
    if run.estimates:
        sys.stdout.write(render(args.format, run))
    return EXIT_ERROR if run.unreadable or not run.estimates else EXIT_CLEAN
