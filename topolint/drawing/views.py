"""Which view of a node is drawn, and the drawing with its marks.

A node's NCCL topology XML (a dump first, else a static file completed from the node's outputs:
model/completion.py), else its hwloc export (as the topology NCCL would build from the same
machine: model/hwloc_topology.py), else its ``nvidia-smi topo -m`` matrix (the pairwise paths it
states). A bundle is a node folder: the same order applies to what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.drawing.diagram import Diagram, matrix_diagram, tree_diagram
from topolint.drawing.marks import SEVERITY_RANK, mark_bottleneck, mark_findings

# Estimate's algorithms in the order their bottlenecks are named on a box.
DEFAULT_SIZE = 8 << 30


def _bundle(node) -> str:
    return f"bundle {node.bundle.folder}: " if getattr(node, "bundle", None) is not None else ""


def node_diagram(node, version) -> Diagram | None:
    """The drawing of ``node`` (NodeModel) as NCCL ``version`` reads it; None without a topology,
    an hwloc export or a matrix."""
    from topolint.model.completion import complete
    from topolint.model.system import System

    for topology in sorted(node.topologies, key=lambda t: t.kind != "dump"):
        if not (topology.cpus or topology.pci):
            continue
        done = complete(node, topology)
        if topology.kind == "dump":
            source = f"{_bundle(node)}NCCL topology dump {topology.path}"
        elif done.assumptions:
            source = (f"{_bundle(node)}static topology file {topology.path}, completed from the node's outputs "
                      f"as NCCL completes it at run time (* assumed)")
        else:
            source = f"{_bundle(node)}static topology file {topology.path} (nothing in the node's outputs fills it)"
        diagram = tree_diagram(node.name, System(done.topology, version), source, done)
        diagram.notes += list(done.unresolved)
        return diagram
    from topolint.model.hwloc_topology import derived_topology

    for hwloc in node.hwloc:
        derived = derived_topology(hwloc)
        if derived is not None and (derived.gpus or derived.pci):
            from topolint.model.system import System

            diagram = tree_diagram(node.name, System(derived, version),
                                   f"{_bundle(node)}hwloc export {hwloc.path}, as the topology NCCL would build "
                                   "from it")
            diagram.notes.append("hwloc states no PCIe link speeds (NCCL reads them from sysfs), NIC rates or "
                                 "GPUDirect support: links show NCCL's defaults for what is unstated")
            return diagram
    from topolint.model.matrix import bus_ids

    for matrix in node.matrices:
        if matrix.kind == "topo" and matrix.rows:
            diagram = matrix_diagram(node.name, matrix, bus_ids(node, matrix))
            diagram.source = _bundle(node) + diagram.source
            return diagram
    return None


def estimate_diagram(node, hardware, version) -> Diagram | None:
    """The drawing of the hardware an estimate read (its completed, refined System), or, for a
    node the estimate read from a matrix, the matrix itself (never the tree it made up)."""
    if hardware.aliases:
        return node_diagram(node, version)
    topology = hardware.system.topology
    kind = "NCCL topology dump" if topology.kind == "dump" else "topology file"
    return tree_diagram(node.name, hardware.system,
                        f"{_bundle(node)}{kind} {topology.path} as the estimate reads it (completed and refined "
                        "from the node's outputs)")


@dataclass
class Picture:
    """One node drawn: its diagram with the findings and the estimate's bottlenecks marked."""

    node: str
    diagram: Diagram
    estimate: object = None  # estimate.Estimate, when one was made
    nodes: int | None = None  # the node count it was made for
    estimate_note: str | None = None  # why there is none, or what it assumed about the drawing
    findings: list = field(default_factory=list)

    @property
    def worst(self) -> int:
        return min((SEVERITY_RANK.get(_severity(f), 9) for f in self.findings), default=9)

    def svg(self) -> str:
        from topolint.drawing.layout import layout
        from topolint.drawing.svg import render_svg

        return render_svg(layout(self.diagram))


def _severity(finding) -> str:
    return finding.get("severity") if isinstance(finding, dict) else finding.severity


def mark_estimate(diagram: Diagram, estimate) -> list[str]:
    """Mark each algorithm's bottleneck (NCCL's selected one first); the notes on what could not be."""
    by_link: dict[tuple, list[str]] = {}
    first = {}
    ordered = sorted(estimate.algorithms, key=lambda a: a.name != estimate.selected)
    for algo in ordered:
        key = (algo.bottleneck.entity, algo.bottleneck.link)
        by_link.setdefault(key, []).append(algo.name)
        first.setdefault(key, algo.bottleneck)
    missing = []
    for key, names in by_link.items():
        if not mark_bottleneck(diagram, first[key], names):
            missing.append(f"the bottleneck of {', '.join(names)} ({first[key].link} {first[key].entity}) is not "
                           "an element of this drawing" + (" (a PCIe switch the estimate assumes from the matrix)"
                                                            if diagram.style == "matrix" else ""))
    return missing


def picture(node, findings, version, estimate: bool = True, nodes: int | None = None,
            size: int = DEFAULT_SIZE) -> Picture | None:
    """``node`` drawn with ``findings`` (of this node) marked and, with ``estimate``, the bottlenecks
    of an all-reduce of ``size`` bytes on ``nodes`` nodes like it (default: 2 where a network device
    reaches a GPU, else 1)."""
    shown = unmarked_picture(node, version, estimate, nodes, size)
    return None if shown is None else marked(shown, findings)


def unmarked_picture(node, version, estimate: bool = True, nodes: int | None = None,
                     size: int = DEFAULT_SIZE) -> Picture | None:
    """``node`` drawn with the estimate's bottlenecks and no findings yet: what a run keeps of a
    node while its facts are in memory (DrawingRequest), to be ``marked`` once the findings are
    final (suppressions, cross-node groups)."""
    diagram = node_diagram(node, version)
    if diagram is None:
        return None
    shown = Picture(node.name, diagram)
    if estimate:
        _add_estimate(shown, node, version, nodes, size)
    return shown


def marked(shown: Picture, findings) -> Picture:
    """A copy of ``shown`` with the findings about its node marked (the kept picture stays
    unmarked: a second report of the same run marks it again)."""
    from copy import deepcopy

    shown = deepcopy(shown)
    mine = [f for f in findings if _node_of(f) == shown.node]
    mark_findings(shown.diagram, mine)
    shown.findings = mine
    return shown


@dataclass(frozen=True)
class DrawingRequest:
    """What a run draws of each node while the node's facts are in memory (the runner drops them
    once the node is checked, and a worker process has them only there): engine/runner.py calls
    it per node (RunOptions.node_view), so nothing is parsed a second time to draw. Picklable: it
    travels to the worker processes."""

    version: object  # model/nccl_version.py NcclVersion the drawing reads the topology with
    estimate: bool = True
    nodes: int | None = None
    size: int = DEFAULT_SIZE
    host: str | None = None  # draw only this node (topolint graph --host)

    def __call__(self, node) -> Picture | None:
        if self.host is not None and node.name != self.host:
            return None
        if not (node.topologies or node.hwloc or node.matrices):
            return None
        return unmarked_picture(node, self.version, self.estimate, self.nodes, self.size)


def _node_of(finding) -> str | None:
    if isinstance(finding, dict):
        return finding.get("node") or (finding.get("entity") or "").split("/", 1)[0]
    return finding.node


def _add_estimate(shown: Picture, node, version, nodes: int | None, size: int) -> None:
    from topolint.estimate import EstimateError, estimate_sizes
    from topolint.estimate.topology import has_topology

    if not has_topology(node):
        shown.estimate_note = "no estimate: the node has no NCCL topology or matrix with GPUs"
        return
    counts = [nodes] if nodes else [2, 1]
    for count in counts:
        try:
            (found,) = estimate_sizes([node], count, None, "allreduce", [size], version)
        except EstimateError as exc:
            shown.estimate_note = f"no estimate: {exc}"
            return
        reaches = any(p.local_gpu for hw in found.hardware for p in hw.nets)
        if nodes or count == 1 or reaches:
            break
    shown.estimate, shown.nodes = found, count
    if not found.algorithms:
        shown.estimate_note = "one rank: nothing to communicate"
        return
    missing = mark_estimate(shown.diagram, found)
    shown.estimate_note = "; ".join(missing) or None
