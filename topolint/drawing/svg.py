"""SVG of a layout: boxes, links, the paths findings are about, the bottleneck and a legend.

Self-contained (no fonts, images or scripts fetched; a ``<style>`` of its own), the same bytes for
the same input, and readable where only ``<img>`` shows it (a README). Every value from an input
is escaped for XML and made visible (control characters as escapes) before it is written; a box's
or link's ``<title>`` (its tooltip) gives its entity ids, its file and line, and what was assumed.
"""

from __future__ import annotations

import html
import re

from topolint.drawing.layout import (
    CHAR_WIDTH,
    FONT_SIZE,
    SMALL_CHAR_WIDTH,
    SMALL_FONT_SIZE,
    Layout,
    Text,
    cells,
)

FONT_FAMILY = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"
COLOURS = {"error": "#d7263d", "warning": "#e8710a", "info": "#1a73e8", "bottleneck": "#8e24aa"}
TINTS = {"error": "#fde8ea", "warning": "#fdeedd", "info": "#e6f0fd"}
MAX_TITLE_LINES = 24

STYLE = f"""
.tl-bg{{fill:#ffffff}}
.tl-box rect{{fill:#f6f8fa;stroke:#57606a;stroke-width:1}}
.tl-box.tl-cpu rect{{fill:#eef2f7}}
.tl-box.tl-gpu rect{{fill:#eaf5ea}}
.tl-box.tl-nic rect{{fill:#f3eefb}}
.tl-box.tl-nvswitch rect{{fill:#e8f4fa}}
.tl-title{{font-weight:bold}}
.tl-note{{fill:#24292f}}
.tl-link{{fill:none;stroke:#8c959f;stroke-width:1.5}}
.tl-link.tl-nvswitch,.tl-link.tl-peer{{stroke:#2da44e}}
.tl-link.tl-bus{{stroke:#57606a;stroke-width:3}}
.tl-link.tl-cpu{{stroke:#2da44e;stroke-dasharray:2 2}}
.tl-link.tl-bottleneck{{stroke:{COLOURS['bottleneck']};stroke-width:4}}
.tl-label{{fill:#57606a}}
.tl-label.tl-bottleneck{{fill:{COLOURS['bottleneck']};font-weight:bold}}
.tl-route{{fill:none;stroke-width:4;stroke-linejoin:round;opacity:0.85}}
.tl-relay{{stroke-dasharray:7 4}}
.tl-cell rect{{fill:#ffffff;stroke:#d0d7de}}
.tl-cell.tl-head rect{{fill:#f6f8fa}}
.tl-header{{fill:#24292f}}
""" + "".join(f".tl-mark-{k} rect{{stroke:{c};stroke-width:3;fill:{TINTS[k]}}}\n.tl-rel-{k} rect{{stroke:{c};"
              f"stroke-width:2;stroke-dasharray:4 2}}\n.tl-route.tl-{k}{{stroke:{c}}}\n"
              for k, c in COLOURS.items() if k in TINTS) + \
    f".tl-box.tl-bneck rect{{stroke:{COLOURS['bottleneck']};stroke-width:3}}\n"

_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def escape(text) -> str:
    """Any value as XML text or attribute content: visible, valid XML, escaped."""
    from topolint.reporters._text import visible

    shown = _NOT_XML.sub(lambda m: f"\\u{ord(m.group(0)):04x}", visible(str(text)))
    return html.escape(shown, quote=True)


def _n(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _points(points) -> str:
    return " ".join(f"{_n(x)},{_n(y)}" for x, y in points)


def _text(item: Text, css: str = "") -> str:
    size = SMALL_FONT_SIZE if item.small else FONT_SIZE
    per = SMALL_CHAR_WIDTH if item.small else CHAR_WIDTH
    classes = " ".join(c for c in (f"tl-{item.role}" if item.role else "", css) if c)
    return (f'<text x="{_n(item.x)}" y="{_n(item.y)}"{f" class={chr(34)}{classes}{chr(34)}" if classes else ""}'
            f'{f" font-size={chr(34)}{size}{chr(34)}" if item.small else ""} textLength="{_n(cells(item.text) * per)}" '
            f'lengthAdjust="spacingAndGlyphs" xml:space="preserve">{escape(item.text)}</text>')


def _title(lines: list[str]) -> str:
    """A tooltip: each line escaped (a newline from an input shows as an escape), lines apart."""
    kept = [escape(line) for line in lines if line][:MAX_TITLE_LINES]
    return f"<title>{chr(10).join(kept)}</title>"


def render_svg(layout: Layout) -> str:
    diagram = layout.diagram
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {layout.width} {layout.height}" '
           f'width="{layout.width}" height="{layout.height}" font-family="{FONT_FAMILY}" font-size="{FONT_SIZE}" '
           f'role="img" class="tl-drawing">',
           _title([f"topolint: {diagram.node}", diagram.source]),
           f"<style>{STYLE}</style>",
           f'<rect class="tl-bg" x="0" y="0" width="{layout.width}" height="{layout.height}"/>',
           '<g class="tl-headers">', *(_text(t) for t in layout.header), "</g>",
           '<g class="tl-links">']
    for item in layout.links:
        link = item.item
        css = f"tl-link tl-{item.kind}" + (" tl-bottleneck" if item.bottleneck else "")
        about = [getattr(link, "label", ""), getattr(link, "where", None) or ""] + list(getattr(link, "details", []))
        if item.bottleneck:
            about.append(f"the estimate's bottleneck: {', '.join(link.bottleneck)}")
        out.append(f'<g>{_title(about)}<polyline class="{css}" points="{_points(item.points)}"/>'
                   + (_text(item.label, "tl-bottleneck" if item.bottleneck else "") if item.label else "") + "</g>")
    out.append("</g>")
    out.extend(_cells(layout))
    out.append('<g class="tl-routes">')
    for route, pieces in layout.routes:
        css = f"tl-route tl-{route.severity}" + (" tl-relay" if route.relay else "")
        about = f"{route.code}: {'route through a relay' if route.relay else 'the path this finding is about'}"
        for piece in pieces:
            out.append(f'<polyline class="{css}" points="{_points(piece)}">{_title([about])}</polyline>')
    out.append("</g>")
    out.append('<g class="tl-boxes">')
    for placed in layout.boxes:
        box, rect = placed.box, placed.rect
        css = ["tl-box", f"tl-{box.kind}"]
        if "finding" in box.marks:
            css.append(f"tl-mark-{box.marks['finding']}")
        elif "related" in box.marks:
            css.append(f"tl-rel-{box.marks['related']}")
        if "bottleneck" in box.marks:
            css.append("tl-bneck")
        about = [box.title, *box.entities, box.where or "", *box.notes, *box.details]
        out.append(f'<g class="{" ".join(css)}">{_title(about)}'
                   f'<rect x="{_n(rect.x)}" y="{_n(rect.y)}" width="{_n(rect.w)}" height="{_n(rect.h)}" rx="3"/>'
                   + "".join(_text(t) for t in placed.texts) + "</g>")
    out.append("</g>")
    out.append('<g class="tl-legend">')
    for kind, text in layout.legend:
        x, y = text.x - 20, text.y - 4
        if kind == "assumed":
            swatch = ""
        elif kind == "relay":
            swatch = (f'<line class="tl-route tl-warning tl-relay" x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x + 16)}" '
                      f'y2="{_n(y)}"/>')
        else:
            swatch = (f'<line class="tl-route tl-{kind}" x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x + 16)}" y2="{_n(y)}"'
                      + (f' style="stroke:{COLOURS[kind]}"' if kind == "bottleneck" else "") + "/>")
        out.append(swatch + _text(text))
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def _cells(layout: Layout) -> list[str]:
    if not layout.cells:
        return []
    out = ['<g class="tl-cells">']
    for placed in layout.cells:
        rect = placed.rect
        head = placed.cell is None and not placed.row
        where = placed.cell.where if placed.cell is not None else None
        about = [f"{placed.row} - {placed.column}: {placed.text.text}" if placed.row else placed.column, where or ""]
        out.append(f'<g class="tl-cell{" tl-head" if head else ""}">{_title(about)}'
                   f'<rect x="{_n(rect.x)}" y="{_n(rect.y)}" width="{_n(rect.w)}" height="{_n(rect.h)}"/>'
                   f"{_text(placed.text)}</g>")
    out.append("</g>")
    return out
