"""Graphviz DOT of a diagram (``dot -Tsvg``, where users have graphviz): boxes with their lines and
tooltips, links with their labels, findings' boxes and paths in the severity's colour.

Every value from an input is written inside a double-quoted DOT string with backslashes and quotes
escaped (so an input cannot end the string or form one of DOT's label escapes such as ``\\l``) and
control characters made visible; node ids are made here (``n0``, ``n1``, ...), never taken from an
input.
"""

from __future__ import annotations

from topolint.drawing.diagram import Diagram
from topolint.drawing.plain import box_mark, node_texts, node_tooltip, plain_edges
from topolint.drawing.svg import COLOURS, TINTS

FILLS = {"cpu": "#eef2f7", "gpu": "#eaf5ea", "nic": "#f3eefb", "nvswitch": "#e8f4fa"}


def quoted(text) -> str:
    """A DOT double-quoted string holding ``text`` literally."""
    from topolint.reporters._text import visible

    return '"' + visible(str(text)).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(lines: list[str]) -> str:
    return '"' + "\\n".join(quoted(line)[1:-1] for line in lines) + '"'


def render_dot(diagram: Diagram) -> str:
    ids = {box_id: f"n{i}" for i, box_id in enumerate(diagram.boxes)}
    undirected = diagram.style == "matrix"
    out = [f"{'graph' if undirected else 'digraph'} {quoted('topolint ' + diagram.node)} {{",
           f"  graph [rankdir=LR, fontname=\"monospace\", labelloc=t, label={quoted(diagram.node + ': ' + diagram.source)}];",
           "  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\", fontsize=10, fillcolor=\"#f6f8fa\"];",
           f"  edge [fontname=\"monospace\", fontsize=9{'' if undirected else ', dir=none'}];"]
    for box_id, box in diagram.boxes.items():
        attrs = [f"label={_label(node_texts(box))}", f"tooltip={_label(node_tooltip(box))}"]
        fill = FILLS.get(box.kind)
        mark = box_mark(box)
        if mark in COLOURS and mark in TINTS:
            attrs += [f'color="{COLOURS[mark]}"', "penwidth=3", f'fillcolor="{TINTS[mark]}"']
        elif mark and mark.startswith("related-"):
            attrs += [f'color="{COLOURS[mark[8:]]}"', "penwidth=2", 'style="rounded,filled,dashed"']
            attrs += [f'fillcolor="{fill}"'] if fill else []
        elif fill:
            attrs.append(f'fillcolor="{fill}"')
        if mark == "bottleneck" or "bottleneck" in box.marks:
            attrs.append(f'peripheries=2, color="{COLOURS["bottleneck"]}"')
        out.append(f"  {ids[box_id]} [{', '.join(attrs)}];")
    arrow = "--" if undirected else "->"
    for edge in plain_edges(diagram):
        if edge.a not in ids or edge.b not in ids:
            continue
        attrs = [f"label={quoted(edge.label)}"]
        if edge.severity:
            attrs += [f'color="{COLOURS[edge.severity]}"', "penwidth=3"] + (["style=dashed"] if edge.relay else [])
        elif edge.bottleneck:
            attrs += [f'color="{COLOURS["bottleneck"]}"', "penwidth=3"]
        elif edge.kind in ("nvswitch", "peer"):
            attrs.append('color="#2da44e"')
        out.append(f"  {ids[edge.a]} {arrow} {ids[edge.b]} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"
