"""`topolint graph`: one node drawn from its inputs, with its findings and the estimate's bottleneck.

``run_graph`` runs the checks for the findings, drawing each node while it is checked (nothing is
parsed twice), and shows one node (drawing/views.py): the node named by ``--host``, else the one with the most
severe finding, else the first that can be drawn. ``render_graph`` writes it as SVG, a
self-contained HTML page, Graphviz DOT or Mermaid. cli.py only parses the arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FORMATS = ("svg", "html", "dot", "mermaid")


class GraphUsageError(ValueError):
    pass


@dataclass
class GraphRun:
    picture: object | None  # drawing/views.py Picture
    findings: list = field(default_factory=list)  # the drawn node's active findings
    problems: list = field(default_factory=list)  # InputProblem (TL001/TL002) from reading
    nccl_version: str = ""

    @property
    def unreadable(self) -> bool:
        return any(p.code == "TL001" for p in self.problems)


def run_graph(paths: list[str], host: str | None = None, nccl_version: str | None = None, estimate: bool = True,
              nodes: int | None = None, config=None, isolated: bool = False,
              stdin_filename: str | None = None) -> GraphRun:
    from topolint.commands.check import CheckOptions, UsageError, drawings, run_check

    drawing = {"estimate": estimate, "nodes": nodes, "host": host}
    try:
        result = run_check(CheckOptions(paths=list(paths), nccl_version=nccl_version, config=config,
                                        isolated=isolated, cache=False, stdin_filename=stdin_filename,
                                        drawings=drawing))
    except UsageError as exc:
        raise GraphUsageError(str(exc)) from None
    problems = result.problems
    pictures, _ = drawings(result, result.active, limit=1)
    if pictures:
        shown = pictures[0]
        return GraphRun(shown, shown.findings, problems, str(result.plan.version))
    if host is not None:
        raise GraphUsageError(f"--host {host!r}: no such node to draw (nodes with a topology, hwloc export or "
                              f"matrix: {', '.join(dict.fromkeys(result.drawable)) or 'none'})")
    if problems:
        return GraphRun(None, [], problems, str(result.plan.version))
    raise GraphUsageError("nothing to draw: no NCCL topology XML, hwloc export or nvidia-smi topo -m matrix "
                          "among the inputs")


def render_graph(fmt: str, run: GraphRun) -> str:
    shown = run.picture
    if fmt == "svg":
        return shown.svg()
    if fmt == "dot":
        from topolint.drawing.dot import render_dot

        return render_dot(shown.diagram)
    if fmt == "mermaid":
        from topolint.drawing.mermaid import render_mermaid

        return render_mermaid(shown.diagram)
    from topolint.reporters.html import render_node_html

    return render_node_html(shown, run.findings, run.nccl_version)


def cli(args) -> int:
    import sys

    from topolint.commands import EXIT_CLEAN, EXIT_ERROR, UsageError
    from topolint.commands.check import _write

    if args.nodes is not None and args.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    try:
        run = run_graph(args.paths, args.host, args.nccl_version, not args.no_estimate, args.nodes, args.config,
                        args.isolated, args.stdin_filename)
    except GraphUsageError as exc:
        raise UsageError(str(exc)) from None
    for problem in run.problems:
        print(f"topolint: {problem.code}: {problem.path}:{problem.line}: {problem.message}", file=sys.stderr)
    if run.picture is None:
        return EXIT_ERROR
    _write(render_graph(args.format, run), args.output)
    return EXIT_ERROR if run.unreadable else EXIT_CLEAN
