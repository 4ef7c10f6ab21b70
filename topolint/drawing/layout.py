"""Where everything of a diagram goes: pure, deterministic, and measured in fixed character cells.

Text is laid out in a monospace font at a fixed width per character (CHAR_WIDTH, SMALL_CHAR_WIDTH:
0.6 em, the advance of DejaVu Sans Mono, Menlo, Consolas and Liberation Mono); the SVG writer
also gives every text its computed length (``textLength``), so a browser that falls back to
another font still draws each text in the box computed for it. Every label is a rectangle
(``Layout.label_rects``), and no two of them intersect (tests/test_drawing.py).

A tree diagram runs left to right: the CPUs (NUMA nodes) in the first column, joined on their
left by the CPU interconnect; each PCIe switch in the column of its depth; every leaf device (GPUs,
NICs) in one column, so each GPU's NVLinks leave it on the right, to the NVSwitch column or, for
NVLinks between GPUs, through lanes of their own. Each subtree owns a band of rows, so a link to a
leaf that passes a column passes it between that column's boxes. A link's label sits on its last
segment, in the gap before the box it enters (that gap is as wide as its widest label); an NVLink's
label sits on its own stub beside the GPU. A matrix diagram is a table: one row box per GPU and
NIC, then a cell per column as printed, then the affinity columns.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from topolint.drawing.diagram import Box, Diagram

FONT_SIZE = 12
CHAR_WIDTH = 7.2  # 0.6 em at 12px
LINE_HEIGHT = 15
SMALL_FONT_SIZE = 10
SMALL_CHAR_WIDTH = 6.0
SMALL_LINE_HEIGHT = 12
PAD_X, PAD_Y = 6, 5
MAX_CHARS = 40  # a longer value from an input is cut ("..."); its tooltip keeps it whole
MARGIN = 16
ROW_GAP = 12  # between the bands of two siblings
CPU_GAP = 24  # between two CPUs' bands
ELBOW = 12  # from a box's right edge to where its links turn
LABEL_GAP = 4  # between a label and what it labels
BUS_LANE = 14  # per CPU interconnect, left of the CPUs
STUB_FIRST, STUB_PITCH = 12, 16  # a GPU's NVLink stubs on its right edge
LANE_PITCH = 8  # NVLink lanes between GPUs


def cells(text: str) -> int:
    """Character cells ``text`` takes in a monospace font: wide (East Asian) characters two,
    combining marks none."""
    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def clip(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` made visible (control characters as escapes) and cut to ``limit`` cells."""
    from topolint.reporters._text import visible

    text = visible(text)
    if cells(text) <= limit:
        return text
    kept, used = [], 0
    for char in text:
        width = cells(char)
        if used + width > limit - 3:
            break
        kept.append(char)
        used += width
    return "".join(kept) + "..."


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    def intersects(self, other: "Rect") -> bool:
        return self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom


@dataclass(frozen=True)
class Text:
    """One line of text: ``x`` its start, ``y`` its baseline, ``small`` the label font."""

    x: float
    y: float
    text: str
    small: bool = False
    role: str = ""  # title, line, note, label, header, legend

    @property
    def width(self) -> float:
        return cells(self.text) * (SMALL_CHAR_WIDTH if self.small else CHAR_WIDTH)

    @property
    def rect(self) -> Rect:
        size = SMALL_FONT_SIZE if self.small else FONT_SIZE
        # ascent 0.8 em above the baseline, descent 0.25 em below (DejaVu Sans Mono: 0.76 and 0.24)
        return Rect(self.x, self.y - 0.8 * size, self.width, 1.05 * size)


@dataclass
class PlacedBox:
    box: Box
    rect: Rect
    texts: list[Text]


@dataclass
class PlacedLink:
    """A drawn line: a Link, a Bus or a matrix cell's frame, with its points and its label."""

    item: object
    kind: str  # tree, nvswitch, peer, cpu, bus
    points: list[tuple[float, float]]
    label: Text | None = None
    bottleneck: bool = False


@dataclass
class PlacedCell:
    row: str
    column: str
    cell: object  # diagram.Cell, or None for an affinity value
    rect: Rect
    text: Text


@dataclass
class Layout:
    diagram: Diagram
    width: float
    height: float
    header: list[Text] = field(default_factory=list)
    boxes: list[PlacedBox] = field(default_factory=list)
    links: list[PlacedLink] = field(default_factory=list)
    cells: list[PlacedCell] = field(default_factory=list)
    routes: list[tuple[object, list[list[tuple[float, float]]]]] = field(default_factory=list)
    legend: list[tuple[str, Text]] = field(default_factory=list)  # (swatch kind, its text)

    def label_rects(self) -> list[tuple[str, Rect]]:
        """Every rectangle text is drawn in: boxes whole, link labels, cells, header and legend."""
        found = [(f"box {b.box.id}", b.rect) for b in self.boxes]
        found += [(f"label {getattr(link.item, 'id', '?')}", link.label.rect) for link in self.links if link.label]
        found += [(f"cell {c.row}/{c.column}", c.rect) for c in self.cells]
        found += [(f"header {t.text[:20]}", t.rect) for t in self.header]
        found += [(f"legend {t.text[:20]}", _swatched(t)) for _, t in self.legend]
        return found


def _swatched(text: Text) -> Rect:
    rect = text.rect
    return Rect(rect.x - 22, rect.y, rect.w + 22, rect.h)


def box_lines(box: Box) -> list[tuple[str, str]]:
    return [("title", clip(box.title))] + [("line", clip(line)) for line in box.lines] + \
        [("note", clip(note)) for note in box.notes]


def _box_size(box: Box, min_height: float = 0) -> tuple[float, float]:
    lines = box_lines(box)
    width = 2 * PAD_X + max(max(cells(t) for _, t in lines), 8) * CHAR_WIDTH
    return width, max(2 * PAD_Y + len(lines) * LINE_HEIGHT, min_height)


def _box_texts(box: Box, rect: Rect) -> list[Text]:
    return [Text(rect.x + PAD_X, rect.y + PAD_Y + (i + 0.8) * LINE_HEIGHT - 1, text, role=role)
            for i, (role, text) in enumerate(box_lines(box))]


def _label_width(text: str) -> float:
    return cells(clip(text)) * SMALL_CHAR_WIDTH


def _header(diagram: Diagram) -> list[Text]:
    lines = [f"{diagram.node}: {diagram.source}"] + diagram.notes[:6]
    return [Text(MARGIN, MARGIN + (i + 0.8) * LINE_HEIGHT, clip(line, 160), role="header")
            for i, line in enumerate(lines)]


LEGEND = (("error", "error"), ("warning", "warning"), ("info", "info"), ("relay", "route through a relay (PXN)"),
          ("bottleneck", "the estimate's bottleneck"), ("assumed", "* value filled from the node's outputs"))


def _legend(y: float) -> list[tuple[str, Text]]:
    placed, x = [], MARGIN + 22
    for kind, text in LEGEND:
        item = Text(x, y, text, small=True, role="legend")
        placed.append((kind, item))
        x += item.width + 40
    return placed


def layout(diagram: Diagram) -> Layout:
    return _matrix_layout(diagram) if diagram.style == "matrix" else _TreeLayout(diagram).run()


class _TreeLayout:
    def __init__(self, diagram: Diagram):
        self.diagram = diagram
        self.boxes = diagram.boxes
        self.children: dict[str, list[str]] = {}
        for box in self.boxes.values():
            if box.parent is not None:
                self.children.setdefault(box.parent, []).append(box.id)
        self.roots = [b.id for b in self.boxes.values() if b.kind == "cpu"]
        self.roots += [b.id for b in self.boxes.values() if b.parent is None and b.kind not in ("cpu", "nvswitch")]
        self.nvswitch = [b.id for b in self.boxes.values() if b.kind == "nvswitch" and b.parent is None]
        self.tree_links = {link.b: link for link in diagram.links if link.kind == "tree"}
        self.cpu_links = {link.b: link for link in diagram.links if link.kind == "cpu"}
        self.stubs = self._stubs()
        self.extents: dict[str, float] = {}

    def _stubs(self) -> dict[str, list[tuple[str, object]]]:
        """Each GPU's NVLink stubs, top to bottom: its NVSwitch link first, then its peers in order."""
        stubs: dict[str, list[tuple[str, object]]] = {}
        for link in self.diagram.links:
            if link.kind == "nvswitch":
                stubs.setdefault(link.a, []).insert(0, ("nvswitch", link))
            elif link.kind == "peer":
                stubs.setdefault(link.a, []).append(("from", link))
                stubs.setdefault(link.b, []).append(("to", link))
        return stubs

    # ---- columns and sizes -----------------------------------------------------------------
    def _depths(self) -> dict[str, int]:
        depth: dict[str, int] = {}
        stack = [(root, 0) for root in reversed(self.roots)]
        while stack:
            box_id, d = stack.pop()
            depth[box_id] = d
            stack.extend((child, d + 1) for child in reversed(self.children.get(box_id, [])))
        return depth

    def run(self) -> Layout:
        diagram = self.diagram
        depth = self._depths()
        internal = [d for b, d in depth.items() if self.children.get(b) and self.boxes[b].kind != "cpu"]
        leaf_column = max(internal, default=0) + 1
        column = {b: (d if self.children.get(b) or self.boxes[b].kind == "cpu" else leaf_column)
                  for b, d in depth.items()}
        size = {}
        for box_id in column:
            stubs = len(self.stubs.get(box_id, []))
            size[box_id] = _box_size(self.boxes[box_id], STUB_FIRST + stubs * STUB_PITCH if stubs else 0)
        widths = [0.0] * (leaf_column + 1)
        for box_id, c in column.items():
            widths[c] = max(widths[c], size[box_id][0])
        gaps = [ELBOW + 2 * LABEL_GAP + 24] * (leaf_column + 1)
        for child, c in column.items():
            for link in (self.tree_links.get(child), self.cpu_links.get(child)):
                if link is not None and c > 0:
                    gaps[c - 1] = max(gaps[c - 1], ELBOW + 2 * LABEL_GAP + 8 + _label_width(link.label))
        header = _header(diagram)
        top = (header[-1].rect.bottom if header else MARGIN) + 8
        buses = len(diagram.buses)
        if buses:
            top += buses * SMALL_LINE_HEIGHT + 10  # the rows the CPU interconnects' labels take
        x = [MARGIN + buses * BUS_LANE + (8 if buses else 0)]
        for c in range(leaf_column):
            x.append(x[c] + widths[c] + gaps[c])
        self.column, self.x, self.size, self.widths = column, x, size, widths
        placed: dict[str, Rect] = {}
        cursor = top
        self.band_top: dict[str, float] = {}
        for root in self.roots:
            extent = self._extent(root)
            self._place(root, cursor, extent, placed)
            self.band_top[root] = cursor
            cursor += extent + CPU_GAP
        layout = Layout(diagram, 0, 0, header=header)
        for box_id in self.boxes:
            if box_id in placed:
                layout.boxes.append(PlacedBox(self.boxes[box_id], placed[box_id], _box_texts(self.boxes[box_id],
                                                                                           placed[box_id])))
        leaf_right = x[leaf_column] + widths[leaf_column]
        right = self._nvlinks(layout, placed, leaf_right, top)
        self._tree_edges(layout, placed)
        self._buses(layout, placed, top)
        self._routes(layout, placed)
        bottom = max([r.bottom for r in placed.values()] + [cursor - CPU_GAP, top]) + 20
        layout.legend = _legend(bottom + SMALL_LINE_HEIGHT)
        legend_right = max((_swatched(t).right for _, t in layout.legend), default=0)
        header_right = max((t.rect.right for t in header), default=0)
        layout.width = round(max(right, leaf_right, legend_right, header_right) + MARGIN)
        layout.height = round(bottom + SMALL_LINE_HEIGHT + 8 + MARGIN)
        return layout

    def _extent(self, box_id: str) -> float:
        """The height of the band a box and its subtree take."""
        found = self.extents.get(box_id)
        if found is None:
            kids = self.children.get(box_id, [])
            own = self.size[box_id][1]
            found = own if not kids else max(own, sum(self._extent(k) for k in kids) + ROW_GAP * (len(kids) - 1))
            self.extents[box_id] = found
        return found

    def _place(self, box_id: str, top: float, extent: float, placed: dict[str, Rect]) -> None:
        width, height = self.size[box_id]
        kids = self.children.get(box_id, [])
        inner = sum(self._extent(k) for k in kids) + ROW_GAP * (len(kids) - 1) if kids else 0
        cursor = top + (extent - inner) / 2
        for kid in kids:
            kid_extent = self._extent(kid)
            self._place(kid, cursor, kid_extent, placed)
            cursor += kid_extent + ROW_GAP
        placed[box_id] = Rect(self.x[self.column[box_id]], top + (extent - height) / 2, width, height)

    # ---- links ------------------------------------------------------------------------------
    def _tree_edges(self, layout: Layout, placed: dict[str, Rect]) -> None:
        for child, link in list(self.tree_links.items()) + list(self.cpu_links.items()):
            parent = placed.get(link.a)
            rect = placed.get(child)
            if parent is None or rect is None:
                continue
            if link.kind == "cpu":
                points = self._cpu_link(link, parent, rect)
                y = points[-1][1]
            else:
                elbow = self.x[self.column[link.a]] + self.widths[self.column[link.a]] + ELBOW
                y = rect.cy
                points = [(parent.right, parent.cy), (elbow, parent.cy), (elbow, y), (rect.x, y)]
            text = clip(link.label)
            width = cells(text) * SMALL_CHAR_WIDTH
            baseline = y - LABEL_GAP if link.kind == "tree" else y + LABEL_GAP + 0.8 * SMALL_FONT_SIZE
            label = Text(rect.x - LABEL_GAP - width, baseline, text, small=True, role="label")
            layout.links.append(PlacedLink(link, link.kind, points, label, bool(link.bottleneck)))

    def _cpu_link(self, link, cpu: Rect, rect: Rect) -> list[tuple[float, float]]:
        """A GPU's C2C (or NVLink) link to its CPU, which is its ancestor: up from the CPU to the
        corridor above its band (where no box is), along it, and down beside the leaf column, so it
        passes none of the switches between them; it enters the GPU below its PCIe link."""
        corridor = self.band_top.get(link.a, cpu.y) - CPU_GAP / 4
        lane = rect.x - 2
        y = rect.cy + 6
        middle = cpu.x + cpu.w / 2
        return [(middle, cpu.y), (middle, corridor), (lane, corridor), (lane, y), (rect.x, y)]

    def _stub_y(self, rect: Rect, index: int) -> float:
        return rect.y + STUB_FIRST + index * STUB_PITCH

    def _nvlinks(self, layout: Layout, placed: dict[str, Rect], leaf_right: float, top: float) -> float:
        """NVLink stubs on the GPUs' right, lanes between GPUs, then the NVSwitch column."""
        label_x = leaf_right + 2 * LABEL_GAP
        label_w = max((_label_width(link.label) for stubs in self.stubs.values() for role, link in stubs
                       if role != "to"), default=0)
        lanes_x = label_x + label_w + 2 * LABEL_GAP
        peers = [link for link in self.diagram.links if link.kind == "peer" and link.a in placed and link.b in placed]
        at: dict[tuple[str, str], float] = {}  # (gpu, link id) -> stub y
        for gpu, stubs in self.stubs.items():
            if gpu in placed:
                for index, (_, link) in enumerate(stubs):
                    at[(gpu, link.id)] = self._stub_y(placed[gpu], index)
        lane_of = _lanes([(min(at[(p.a, p.id)], at[(p.b, p.id)]), max(at[(p.a, p.id)], at[(p.b, p.id)]), p.id)
                          for p in peers])
        lanes = max(lane_of.values(), default=-1) + 1
        right = lanes_x + lanes * LANE_PITCH
        for link in peers:
            lane = lanes_x + lane_of[link.id] * LANE_PITCH + LANE_PITCH / 2
            ya, yb = at[(link.a, link.id)], at[(link.b, link.id)]
            points = [(placed[link.a].right, ya), (lane, ya), (lane, yb), (placed[link.b].right, yb)]
            layout.links.append(PlacedLink(link, "peer", points, self._stub_label(link, label_x, ya),
                                           bool(link.bottleneck)))
        switches = [link for link in self.diagram.links if link.kind == "nvswitch" and link.a in placed]
        if not switches or not self.nvswitch:
            return right
        nvs = self.boxes[self.nvswitch[0]]
        width, height = _box_size(nvs)
        ys = [at[(link.a, link.id)] for link in switches]
        elbow = right + ELBOW
        cy = max((min(ys) + max(ys)) / 2, top + height / 2)
        rect = Rect(elbow + ELBOW, cy - height / 2, width, height)
        layout.boxes.append(PlacedBox(nvs, rect, _box_texts(nvs, rect)))
        placed[nvs.id] = rect
        for link, y in zip(switches, ys):
            points = [(placed[link.a].right, y), (elbow, y), (elbow, rect.cy), (rect.x, rect.cy)]
            layout.links.append(PlacedLink(link, "nvswitch", points, self._stub_label(link, label_x, y),
                                           bool(link.bottleneck)))
        return rect.right

    def _stub_label(self, link, x: float, y: float) -> Text:
        return Text(x, y - LABEL_GAP, clip(link.label), small=True, role="label")

    def _buses(self, layout: Layout, placed: dict[str, Rect], top: float) -> None:
        for number, bus in enumerate(self.diagram.buses):
            cpus = [placed[c] for c in bus.cpus if c in placed]
            if len(cpus) < 2:
                continue
            lane = MARGIN + number * BUS_LANE + BUS_LANE / 2
            head = top - SMALL_LINE_HEIGHT - 4
            points = [(lane, head)]
            for rect in cpus:  # down the lane, out to each CPU and back
                points += [(lane, rect.cy), (rect.x, rect.cy), (lane, rect.cy)]
            # one row each above the CPUs; a second host's interconnect (a multi-host file) above the first's
            label = Text(lane - BUS_LANE / 2, head - LABEL_GAP - number * SMALL_LINE_HEIGHT, clip(bus.label),
                         small=True, role="label")
            layout.links.append(PlacedLink(bus, "bus", points, label, bool(bus.bottleneck)))

    def _routes(self, layout: Layout, placed: dict[str, Rect]) -> None:
        drawn = {}
        for item in layout.links:
            if item.kind == "bus":
                continue
            link = item.item
            drawn[(link.a, link.b)] = item.points
            drawn[(link.b, link.a)] = list(reversed(item.points))
        for route in self.diagram.routes:
            pieces = []
            for a, b in route.legs:
                if (a, b) in drawn:
                    pieces.append(drawn[(a, b)])
                elif a in placed and b in placed and self.diagram.bus_of(a, b) is not None:
                    bus = self.diagram.buses.index(self.diagram.bus_of(a, b))
                    lane = MARGIN + bus * BUS_LANE + BUS_LANE / 2
                    ra, rb = placed[a], placed[b]
                    pieces.append([(ra.x, ra.cy), (lane, ra.cy), (lane, rb.cy), (rb.x, rb.cy)])
            if pieces:
                layout.routes.append((route, pieces))


def _lanes(spans: list[tuple[float, float, str]]) -> dict[str, int]:
    """Interval colouring: the lowest lane whose spans do not overlap this one, in order of top."""
    ends: list[float] = []
    lane_of = {}
    for low, high, key in sorted(spans):
        for lane, end in enumerate(ends):
            if end < low:
                ends[lane] = high
                lane_of[key] = lane
                break
        else:
            lane_of[key] = len(ends)
            ends.append(high)
    return lane_of


def _matrix_layout(diagram: Diagram) -> Layout:
    grid = diagram.grid
    header = _header(diagram)
    top = (header[-1].rect.bottom if header else MARGIN) + 12
    rows = [diagram.boxes[f"m:{label}"] for label in grid.labels]
    sizes = [_box_size(box) for box in rows]
    row_w = max((w for w, _ in sizes), default=60)
    columns = [(label, [grid.cells[(r, label)].text for r in grid.labels if (r, label) in grid.cells])
               for label in grid.labels]
    columns += [(name, list(values.values())) for name, values in grid.affinity]
    widths = [2 * PAD_X + max(cells(clip(t)) for t in [name, *texts]) * CHAR_WIDTH for name, texts in columns]
    head_h = 2 * PAD_Y + LINE_HEIGHT
    layout = Layout(diagram, 0, 0, header=header)
    x0 = MARGIN + row_w + 8
    xs = [x0]
    for width in widths:
        xs.append(xs[-1] + width + 2)
    for (name, _), x, width in zip(columns, xs, widths):
        rect = Rect(x, top, width, head_h)
        layout.cells.append(PlacedCell("", name, None, rect, _centred(name, rect, "header")))
    y = top + head_h + 4
    for box, label, (_, row_h) in zip(rows, grid.labels, sizes):
        rect = Rect(MARGIN, y, row_w, row_h)
        layout.boxes.append(PlacedBox(box, rect, _box_texts(box, rect)))
        for (name, _), x, width in zip(columns, xs, widths):
            cell = grid.cells.get((label, name))
            if cell is None and name in dict(grid.affinity):
                text = dict(grid.affinity)[name].get(label, "")
            else:
                text = cell.text if cell is not None else ""
            cell_rect = Rect(x, y, width, row_h)
            layout.cells.append(PlacedCell(label, name, cell, cell_rect, _centred(text, cell_rect, "cell")))
        y += row_h + 2
    at = {(c.row, c.column): c.rect for c in layout.cells if c.cell is not None}
    for route in diagram.routes:
        pieces = []
        for a, b in route.legs:
            ra, rb = a.removeprefix("m:"), b.removeprefix("m:")
            rect = at.get((ra, rb)) if (ra, rb) in at and grid.cells[(ra, rb)].text else at.get((rb, ra))
            if rect is not None:
                pieces.append([(rect.x + 2, rect.y + 2), (rect.right - 2, rect.y + 2), (rect.right - 2, rect.bottom - 2),
                               (rect.x + 2, rect.bottom - 2), (rect.x + 2, rect.y + 2)])
        if pieces:
            layout.routes.append((route, pieces))
    bottom = y + 20
    layout.legend = _legend(bottom + SMALL_LINE_HEIGHT)
    legend_right = max((_swatched(t).right for _, t in layout.legend), default=0)
    layout.width = round(max(xs[-1], legend_right, max((t.rect.right for t in header), default=0)) + MARGIN)
    layout.height = round(bottom + SMALL_LINE_HEIGHT + 8 + MARGIN)
    return layout


def _centred(text: str, rect: Rect, role: str) -> Text:
    shown = clip(text)
    return Text(rect.x + (rect.w - cells(shown) * CHAR_WIDTH) / 2, rect.cy + 0.3 * FONT_SIZE, shown, role=role)
