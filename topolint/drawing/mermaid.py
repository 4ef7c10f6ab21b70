"""Mermaid flowchart of a diagram (GitHub renders it in Markdown): boxes, links and labels, the
findings' boxes and paths in the severity's colour.

Mermaid reads directives (``%%{init: ...}%%``), ``click`` callbacks, ``:::`` class shorthands
and ``classDef`` from its source, and HTML and Markdown inside labels. Values from inputs go only
inside double-quoted labels, with every character outside letters, digits and ``.:/_-+=,*`` and the
space (and a colon beside another) written as Mermaid's numeric entity (``#34;`` for ``"``): no input
can end a label, start a statement, write ``:::``, open a fence in a Markdown summary or carry a tag.
Ids and classes are made here.
"""

from __future__ import annotations

import re

from topolint.drawing.diagram import Diagram
from topolint.drawing.plain import box_mark, node_texts, plain_edges
from topolint.drawing.svg import COLOURS, TINTS

_PLAIN = re.compile(r"[A-Za-z0-9 .:/_\-+=,*]")


def entity_text(text) -> str:
    """``text`` for a quoted Mermaid label: anything but plain characters as ``#NNN;``."""
    from topolint.reporters._text import visible

    shown = visible(str(text))
    out = []
    for i, char in enumerate(shown):
        # a colon next to a colon too: ``:::`` (a class shorthand) never appears, even inside a label
        doubled = char == ":" and (shown[i - 1:i] == ":" or shown[i + 1:i + 2] == ":")
        out.append(char if _PLAIN.fullmatch(char) and not doubled else f"#{ord(char)};")
    return "".join(out)


def render_mermaid(diagram: Diagram) -> str:
    ids = {box_id: f"n{i}" for i, box_id in enumerate(diagram.boxes)}
    out = ["flowchart LR"]
    classes: dict[str, list[str]] = {}
    for box_id, box in diagram.boxes.items():
        label = "<br/>".join(entity_text(line) for line in node_texts(box))
        out.append(f'  {ids[box_id]}["{label}"]')
        mark = box_mark(box)
        if mark:
            classes.setdefault(mark.replace("related-", "rel_"), []).append(ids[box_id])
    styles = []
    count = 0
    for edge in plain_edges(diagram):
        if edge.a not in ids or edge.b not in ids:
            continue
        out.append(f'  {ids[edge.a]} ---|"{entity_text(edge.label)}"| {ids[edge.b]}')
        colour = COLOURS.get(edge.severity or ("bottleneck" if edge.bottleneck else ""))
        if colour:
            dash = ",stroke-dasharray:6 3" if edge.relay else ""
            styles.append(f"  linkStyle {count} stroke:{colour},stroke-width:3px{dash}")
        count += 1
    out += styles
    for kind, colour in COLOURS.items():
        fill = TINTS.get(kind, "#ffffff")
        out.append(f"  classDef {kind} stroke:{colour},stroke-width:3px,fill:{fill}")
        if kind in TINTS:
            out.append(f"  classDef rel_{kind} stroke:{colour},stroke-width:2px,stroke-dasharray:4 2")
    for kind, members in classes.items():
        out.append(f"  class {','.join(members)} {kind}")
    return "\n".join(out) + "\n"
