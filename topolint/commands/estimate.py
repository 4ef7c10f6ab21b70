"""`topolint estimate`: what a collective should deliver on the topology given, per algorithm.

``run_estimate`` reads the inputs (the same collection ``check`` uses), calls
``topolint.estimate.estimate`` for each size and returns the estimates; ``render`` writes them
as text, JSON (docs/estimate.schema.json) or markdown. cli.py only parses the arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from topolint.model.numbers import byte_size
from topolint.parsers.nccl_log import printable

FORMATS = ("text", "json", "markdown", "html")
SCHEMA = "https://topolint.dev/schemas/estimate-1.json"


class EstimateUsageError(ValueError):
    pass


@dataclass
class EstimateRun:
    estimates: list  # one Estimate per size, smallest first
    problems: list = field(default_factory=list)  # InputProblem (TL001/TL002) from reading
    findings: list = field(default_factory=list)  # `topolint check` findings on these nodes (dicts)
    nodes: list = field(default_factory=list)  # the NodeModels read (their drawings: --format html)

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
                 collective: str = "allreduce", version=None, options=None, check: bool = True) -> EstimateRun:
    from topolint.estimate import EstimateError, estimate_sizes
    from topolint.estimate.topology import has_topology
    from topolint.inputs.collect import collect

    collection = collect(paths)
    usable = [n for n in collection.nodes if has_topology(n)]
    if not usable:
        if collection.problems:
            return EstimateRun([], collection.problems)
        raise EstimateUsageError("no NCCL topology XML or nvidia-smi topo -m matrix with GPUs among the inputs")
    try:
        estimates = estimate_sizes(usable, nodes, gpus_per_node, collective, sizes, version, options)
    except EstimateError as exc:
        raise EstimateUsageError(str(exc)) from None
    findings = topology_findings(paths, version, estimates) if check else []
    return EstimateRun(estimates, collection.problems, findings, usable)


def topology_findings(paths: list[str], version, estimates: list) -> list[dict]:
    """What `topolint check` says about the same inputs (built-in rules, no configuration), each
    finding marked with the algorithms whose bottleneck it is on. Findings qualify an estimate;
    they change it only through the links they describe (refine.py), never by a factor."""
    from topolint.commands.check import CheckOptions, run_check

    result = run_check(CheckOptions(paths=list(paths), nccl_version=str(version) if version else None,
                                    cache=False, isolated=True))
    bottlenecks: dict[str, set[str]] = {}
    for est in estimates:
        for algo in est.algorithms:
            bottlenecks.setdefault(algo.bottleneck.entity, set()).add(algo.name)
    found = []
    for f in result.active:
        if f.code.startswith("TL"):
            continue  # input problems are reported on their own
        on = sorted(bottlenecks.get(f.entity, set()))
        found.append({"code": f.code, "severity": f.severity, "message": f.message, "path": f.path,
                      "line": f.line, "entity": f.entity, "on_bottleneck_of": on, "node": f.node})
    return found


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
    """A value from an input (of any type), printable: the parsers' one escape of control and
    non-printing characters."""
    return printable(str(text))


def _where(bottleneck) -> str:
    place = f" ({shown(bottleneck.path)}:{bottleneck.line})" if bottleneck.path else ""
    return f"{bottleneck.link} {shown(bottleneck.entity)}{place}"


def render_json(run: EstimateRun) -> str:
    body = {"$schema": SCHEMA, "estimates": [e.as_dict() for e in run.estimates],
            "crossovers": crossovers(run.estimates), "findings": run.findings,
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
        for r in rows if est.algorithms else []:
            out.append("  ".join(r[c].ljust(widths[c]) if c in (0, 1) else r[c].rjust(widths[c]) for c in range(5))
                       + "  " + r[5])
        if not est.algorithms:
            out.append("one rank: nothing to communicate")
        out.append("")
        for a in est.algorithms:
            out.append(f"{a.name}: {shown(a.bottleneck.detail)}")
            out.extend(f"  {shown(note)}" for note in a.notes)
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
    out.extend(_findings_text(run.findings))
    out.append("")
    out.append("assumptions:")
    out.extend(f"  - {shown(a)}" for a in est.assumptions)
    return "\n".join(out) + "\n"


def _finding_line(f: dict) -> str:
    on = f" [bottleneck of {', '.join(f['on_bottleneck_of'])}]" if f["on_bottleneck_of"] else ""
    return f"{shown(f['path'])}:{f['line']}: {f['code']} [{f['severity']}] {shown(f['message'])}{on}"


def _findings_text(findings: list[dict]) -> list[str]:
    if not findings:
        return []
    ordered = sorted(findings, key=lambda f: (not f["on_bottleneck_of"], f["path"], f["line"], f["code"]))
    return ["", f"topology findings ({len(findings)}, from `topolint check`; they qualify the estimate):"] + [
        f"  {_finding_line(f)}" for f in ordered]


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
    if run.findings:
        out.append("")
        out.append("Topology findings (`topolint check`):")
        out.append("")
        out.extend(f"- {_md(_finding_line(f))}" for f in sorted(run.findings, key=lambda f: (
            not f["on_bottleneck_of"], f["path"], f["line"], f["code"])))
    if run.estimates:
        out.append("")
        out.append("Assumptions:")
        out.append("")
        out.extend(f"- {_md(a)}" for a in run.estimates[-1].assumptions)
    return "\n".join(out) + "\n"


def render_html(run: EstimateRun) -> str:
    """The tables, and the first node drawn as the estimate read it, with the bottlenecks of the
    largest size's algorithms marked and the channel orders of NCCL's selected one listed."""
    from topolint.drawing.views import Picture, estimate_diagram, mark_estimate
    from topolint.reporters.html import render_estimate_html

    last = run.estimates[-1]
    shown = None
    if last.hardware:
        hardware = last.hardware[0]
        node = next((n for n in run.nodes if n.name == hardware.node), None)
        diagram = estimate_diagram(node, hardware, hardware.system.version) if node is not None else None
        if diagram is not None:
            from topolint.drawing.marks import mark_findings

            mine = [f for f in run.findings if f.get("node") == hardware.node]
            mark_findings(diagram, mine)
            shown = Picture(hardware.node, diagram, last, last.inputs["nodes"], findings=mine)
            shown.estimate_note = "; ".join(mark_estimate(diagram, last)) or None
    return render_estimate_html(run, shown)


def render(fmt: str, run: EstimateRun) -> str:
    return {"text": render_text, "json": render_json, "markdown": render_markdown, "html": render_html}[fmt](run)


# ---- the training-step view ----------------------------------------------------------------------
@dataclass
class TrainingRun:
    spec: object  # TrainingSpec
    rows: list  # StepEstimate per node count
    assumptions: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def unreadable(self) -> bool:
        return any(p.code == "TL001" for p in self.problems)


def parse_sweep(text: str | None, nodes: int | None) -> list[int]:
    """``1..64`` doubles from the low end (as nccl-tests -f 2); ``1,2,3`` lists counts."""
    from topolint.model.numbers import decimal

    if not text:
        return [nodes or 1]
    if ".." in text:
        low, _, high = text.partition("..")
        first, last = decimal(low), decimal(high)
        if not first or not last or first < 1 or first > last:
            raise EstimateUsageError(f"--sweep {text!r}: expected MIN..MAX node counts, e.g. 1..64")
        counts = []
        while first <= last and len(counts) < 32:
            counts.append(first)
            first *= 2
        return counts if counts[-1] == last else counts + [last]
    counts = [decimal(part) for part in text.split(",")]
    if not counts or any(c is None or c < 1 for c in counts) or len(counts) > 64:
        raise EstimateUsageError(f"--sweep {text!r}: expected node counts such as 1,2,4 or 1..64")
    return sorted(set(counts))


def parse_compress(text: str | None) -> float | None:
    from topolint.model.numbers import positive_real

    if not text:
        return None
    kind, _, value = text.partition(":")
    fraction = positive_real(value)
    if kind.strip().lower() != "topk" or fraction is None or fraction > 1:
        raise EstimateUsageError(f"--compress {text!r}: expected topk:FRACTION with 0 < FRACTION <= 1, e.g. topk:0.01 "
                                 "(methods that need layer shapes, such as PowerSGD, are not modelled)")
    return fraction


def run_training(paths: list[str], node_counts: list[int], spec, gpus_per_node: int | None = None, version=None,
                 options=None, check: bool = True) -> TrainingRun:
    from topolint.estimate import EstimateError
    from topolint.estimate.topology import has_topology
    from topolint.estimate.training import sweep
    from topolint.inputs.collect import collect

    collection = collect(paths)
    usable = [n for n in collection.nodes if has_topology(n)]
    if not usable:
        if collection.problems:
            return TrainingRun(spec, [], problems=collection.problems)
        raise EstimateUsageError("no NCCL topology XML or nvidia-smi topo -m matrix with GPUs among the inputs")
    try:
        rows = sweep(usable, node_counts, spec, gpus_per_node, version, options)
        from topolint.estimate import estimate

        assumptions = estimate(usable, max(node_counts), gpus_per_node, "allreduce", 1 << 20, version,
                               options).assumptions
    except EstimateError as exc:
        raise EstimateUsageError(str(exc)) from None
    assumptions = [a for a in assumptions if not a.startswith("parameter server:")] + _training_assumptions(spec)
    findings = []
    if check and any(r.communication_bound for r in rows):
        bound = [r.bottleneck for r in rows if r.communication_bound and r.bottleneck]
        findings = [f for f in topology_findings(paths, version, []) if _explains(f, bound)]
    return TrainingRun(spec, rows, assumptions, findings, collection.problems)


def _explains(finding: dict, bottlenecks: list) -> bool:
    """A finding on the bottleneck link, or, when a NIC bounds the step, on any of the node's
    network ports: a port that is down or slow moves the traffic onto the others."""
    if any(finding["entity"] == b.entity for b in bottlenecks):
        return True
    return any(b.link == "NIC" and "/nic/" in finding["entity"] and finding["entity"].split("/", 1)[0]
               == b.entity.split("/", 1)[0] for b in bottlenecks)


def _training_assumptions(spec) -> list[str]:
    notes = ["gradients appear at an even rate over the backward pass (--compute-ms) and are all-reduced in DDP "
             f"buckets in reverse layer order: the first 1 MiB, then {spec.bucket_mb:g} MiB; collectives run one "
             "after another; the per-GPU batch is fixed (N nodes process N times the samples)"]
    if not spec.backward_ms:
        notes.append("no --compute-ms: nothing overlaps, every byte of communication is exposed")
    if spec.topk is not None:
        notes.append(f"top-k {spec.topk:g}: each rank sends its kept values and int32 indices and receives every "
                     "other rank's (an allgather whose volume grows with the rank count)")
    if spec.sync_every > 1:
        notes.append(f"synchronising every {spec.sync_every} steps is local SGD: it changes the optimisation "
                     "(convergence per step), not only the speed; traffic per step is divided by "
                     f"{spec.sync_every}")
    if spec.grad_dtype == "int8":
        notes.append("int8 gradients: the all-reduce moves a quarter of fp32's bytes; the quantisation and its "
                     "error feedback are not priced")
    return notes


def _step_cells(row) -> list[str]:
    return [str(row.nodes), str(row.gpus), row.selected or "-", f"{row.comm_ms:.1f}", f"{row.exposed_ms:.1f}",
            f"{row.step_ms:.1f}", f"{100 * row.gpu_busy:.0f}%", f"{1000 * row.throughput:.2f}",
            "-" if row.scaling_efficiency is None else f"{100 * row.scaling_efficiency:.0f}%",
            "-" if row.beats_previous is None else ("yes" if row.beats_previous else "NO")]


_STEP_HEADER = ["nodes", "GPUs", "NCCL algorithm", "comm ms", "exposed ms", "step ms", "GPU busy", "GPUs/s",
                "efficiency", "beats previous"]


def _training_heading(spec) -> str:
    compress = f", top-k {spec.topk:g}" if spec.topk is not None else ""
    sync = f", sync every {spec.sync_every} steps" if spec.sync_every > 1 else ""
    scale = next((f"{spec.params / v:g}{u}" for v, u in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))
                  if spec.params >= v), f"{spec.params:g}")
    return (f"training step: {scale} parameters, {spec.grad_dtype} gradients "
            f"({spec.gradient_bytes / 1e9:.4g} GB)"
            f"{compress}{sync}, backward {spec.backward_ms:g} ms, forward {spec.forward_ms:g} ms")


def _bound_lines(run: TrainingRun) -> list[str]:
    lines = []
    for row in run.rows:
        if row.communication_bound and row.bottleneck:
            b = row.bottleneck
            lines.append(f"{row.nodes} node(s): communication-bound (GPU {100 * row.gpu_busy:.0f}% busy, "
                         f"{row.exposed_ms:.1f} ms exposed); bottleneck {_where(b)}: {shown(b.detail)}")
    lines += [f"topology finding: {_finding_line(f)}" for f in run.findings]
    return lines


def render_training(fmt: str, run: TrainingRun) -> str:
    if fmt == "html":
        raise EstimateUsageError("--format html draws a collective's estimate; the training-step view "
                                 "(--model-params) prints text, json or markdown")
    if fmt == "json":
        body = {"$schema": SCHEMA, "training": {
            "params": run.spec.params, "grad_dtype": run.spec.grad_dtype, "gradient_bytes": run.spec.gradient_bytes,
            "topk": run.spec.topk, "sync_every": run.spec.sync_every, "backward_ms": run.spec.backward_ms,
            "forward_ms": run.spec.forward_ms, "bucket_mb": run.spec.bucket_mb,
            "rows": [r.as_dict() for r in run.rows], "assumptions": run.assumptions},
            "estimates": [], "crossovers": [], "findings": run.findings,
            "problems": [{"code": p.code, "path": p.path, "line": p.line, "message": p.message} for p in run.problems]}
        return json.dumps(body, indent=2, ensure_ascii=True) + "\n"
    rows = [_STEP_HEADER] + [_step_cells(r) for r in run.rows]
    if fmt == "markdown":
        out = [f"### {_md(_training_heading(run.spec))}", "", "| " + " | ".join(_STEP_HEADER) + " |",
               "|" + "---:|" * len(_STEP_HEADER)]
        out += ["| " + " | ".join(_md(c) for c in cells) + " |" for cells in rows[1:]]
        out += [""] + [f"- {_md(line)}" for line in _bound_lines(run)]
        out += ["", "Assumptions:", ""] + [f"- {_md(a)}" for a in run.assumptions]
        return "\n".join(out) + "\n"
    widths = [max(len(r[c]) for r in rows) for c in range(len(_STEP_HEADER))]
    out = [f"topolint estimate: {_training_heading(run.spec)}", ""]
    out += ["  ".join(cell.rjust(w) if i not in (2,) else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
            for r in rows]
    bound = _bound_lines(run)
    if bound:
        out += [""] + bound
    out += ["", "assumptions:"] + [f"  - {shown(a)}" for a in run.assumptions]
    return "\n".join(out) + "\n"


def _training_cli(args, version, options) -> int:
    import sys

    from topolint.commands import EXIT_CLEAN, EXIT_ERROR
    from topolint.estimate.training import TrainingSpec
    from topolint.model.numbers import count

    params = count(args.model_params)
    if params is None:
        raise EstimateUsageError(f"--model-params {args.model_params!r}: expected a count such as 10B or 350M")
    if args.sync_every < 1 or args.bucket_mb <= 0 or args.compute_ms < 0 or args.forward_ms < 0:
        raise EstimateUsageError("--sync-every must be at least 1, --bucket-mb positive, --compute-ms/--forward-ms >= 0")
    spec = TrainingSpec(params, args.grad_dtype, parse_compress(args.compress), args.sync_every, args.compute_ms,
                        args.forward_ms, args.bucket_mb)
    run = run_training(args.paths, parse_sweep(args.sweep, args.nodes), spec, args.gpus_per_node, version, options)
    for problem in run.problems:
        print(f"topolint: {problem.code}: {problem.path}:{problem.line}: {problem.message}", file=sys.stderr)
    if run.rows:
        sys.stdout.write(render_training(args.format, run))
    return EXIT_ERROR if run.unreadable or not run.rows else EXIT_CLEAN


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
                          nodes_per_leaf=args.nodes_per_leaf,
                          algorithm=(args.algorithm or "").lower() or None, nvlinks=args.nvlinks,
                          nic_gbps=args.nic_gbps, gpu_sm=args.gpu_sm, pcie_gen=args.pcie_gen)
        if getattr(args, "model_params", None):
            return _training_cli(args, version, options)
        run = run_estimate(args.paths, sizes, args.nodes, args.gpus_per_node, args.collective, version, options)
    except (VersionError, EstimateUsageError) as exc:
        raise UsageError(str(exc)) from None
    for problem in run.problems:
        print(f"topolint: {problem.code}: {problem.path}:{problem.line}: {problem.message}", file=sys.stderr)
    if run.estimates:
        sys.stdout.write(render(args.format, run))
    return EXIT_ERROR if run.unreadable or not run.estimates else EXIT_CLEAN
