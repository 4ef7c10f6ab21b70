"""A diagram as plain nodes and edges, for the text formats (DOT, Mermaid) that lay out themselves.

Tree diagrams keep their links; the CPU interconnect becomes one edge per pair of CPUs (what the
model holds). A matrix becomes one edge per pair of its rows, labelled with the cell as printed
(the row's own cell where both rows state one). An edge a route follows carries the route's
severity (the worst, where several follow it) and whether it is a relay's.
"""

from __future__ import annotations

from dataclasses import dataclass

from topolint.drawing.diagram import Box, Diagram
from topolint.drawing.layout import box_lines
from topolint.drawing.marks import worse


@dataclass
class PlainEdge:
    a: str
    b: str
    label: str
    kind: str  # tree, nvswitch, peer, cpu, bus, cell
    severity: str | None = None  # a route follows it
    relay: bool = False
    bottleneck: bool = False


def node_texts(box: Box) -> list[str]:
    return [text for _, text in box_lines(box)]


def node_tooltip(box: Box) -> list[str]:
    return [line for line in [*box.entities, box.where or "", *box.details[:8]] if line]


def box_mark(box: Box) -> str | None:
    """The class a box is drawn with: its finding's severity, a related line's, or the bottleneck."""
    if "finding" in box.marks:
        return box.marks["finding"]
    if "related" in box.marks:
        return f"related-{box.marks['related']}"
    return "bottleneck" if "bottleneck" in box.marks else None


def plain_edges(diagram: Diagram) -> list[PlainEdge]:
    edges: list[PlainEdge] = []
    if diagram.style == "matrix":
        labels = diagram.grid.labels
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                cell = diagram.grid.cells.get((a, b)) or diagram.grid.cells.get((b, a))
                if cell is not None and cell.text:
                    edges.append(PlainEdge(f"m:{a}", f"m:{b}", cell.text, "cell"))
    else:
        edges += [PlainEdge(link.a, link.b, link.label, link.kind, bottleneck=bool(link.bottleneck))
                  for link in diagram.links]
        for bus in diagram.buses:
            edges += [PlainEdge(a, b, bus.label, "bus", bottleneck=bool(bus.bottleneck))
                      for i, a in enumerate(bus.cpus) for b in bus.cpus[i + 1:]]
    index = {frozenset((e.a, e.b)): e for e in edges}
    for route in diagram.routes:
        for a, b in route.legs:
            edge = index.get(frozenset((a, b)))
            if edge is not None:  # dashed only where every route that follows it is a relay's
                edge.relay = route.relay if edge.severity is None else edge.relay and route.relay
                edge.severity = worse(edge.severity, route.severity)
    return edges
