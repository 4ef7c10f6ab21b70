"""``nvidia-smi topo -m`` and ``nvidia-smi topo -p2p`` matrices of every era into a TopoMatrix.

Layout (output-formats.md 1.1-1.8): a header of column names (GPU0.., NIC0.. or mlx5_N in any
order, then CPU Affinity / NUMA Affinity / GPU NUMA ID as the driver prints them), one row per
GPU and per NIC, then a legend. Cells are split on runs of whitespace, never by fixed offsets;
tokens glued by a lost tab (``NIC8NIC9``, ``NODENODE``) are split against the header's vocabulary;
blank affinity cells (Windows) are placed by their position under the header. A matrix cut after
a complete row keeps its rows and records the missing ones (TL005); a row cut in its middle at
the end of the file is dropped and recorded the same way.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, MatrixRow, TopoMatrix, build, location
from topolint.model.numbers import decimal

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
AFFINITY_NAMES = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_HEADER_TOKEN = re.compile(
    r"CPU Affinity|NUMA Affinity|GPU NUMA ID|GPU\d+|NIC\d+|[A-Za-z][A-Za-z0-9]*_(?:[A-Za-z]+_)?\d+|\S+"
)
_TOKEN = re.compile(r"\S+")
TOPO_VALUES = re.compile(r"X|SYS|SOC|NODE|PHB|PXB|PIX|NV\d+|N/A")
P2P_VALUES = re.compile(r"X|OK|CNS|GNS|TNS|NS|DR|U|N/A")
_GLUED_TOPO = re.compile(r"NV\d+|NODE|SYS|SOC|PHB|PXB|PIX|X")
_GLUED_P2P = re.compile(r"CNS|GNS|TNS|OK|NS|DR|X|U")
_ROW_LABEL = re.compile(r"GPU\d+|NIC\d+|[A-Za-z][A-Za-z0-9]*_(?:[A-Za-z]+_)?[A-Za-z]*\d+")
_LEGEND_NIC = re.compile(r"\s*(NIC\d+)\s*:\s*(\S+)\s*$")


def tokens_at(line: str) -> list[tuple[str, int]]:
    """(token, 0-based offset) of each run of non-blanks, as ``_TOKEN.finditer`` gives them:
    str.split's tokens (the same blanks as ``\\s``), each found after the one before it (only
    blanks lie between, so the first match is the token itself). No regex, no match objects."""
    tokens, offset = [], 0
    find = line.find
    for token in line.split():
        offset = find(token, offset)
        tokens.append((token, offset))
        offset += len(token)
    return tokens


def _header_tokens(line: str) -> list[tuple[str, int]]:
    """(name, 0-based offset) of each header column; glued names are split."""
    return [(m.group(0), m.start()) for m in _HEADER_TOKEN.finditer(line)]


_ROW0 = re.compile(r"\s?GPU0\s+(\S+)")


def _is_row0(line: str) -> bool:
    match = _ROW0.match(line)
    return match is not None and (TOPO_VALUES.fullmatch(match.group(1)) is not None
                                  or P2P_VALUES.fullmatch(match.group(1)) is not None
                                  or _GLUED_TOPO.match(match.group(1)) is not None)


# Cells seen to be of a vocabulary, per vocabulary: a matrix repeats a few short cells (NV18,
# PIX, SYS), and a set lookup is a tenth of a fullmatch. Bounded: short cells, 4,096 at most.
_KNOWN_CELLS: dict[str, set[str]] = {}


def _is_cell(vocab: re.Pattern, known: set[str], token: str) -> bool:
    """``vocab.fullmatch(token)`` is not None; ``known`` holds cells already matched."""
    if token in known:
        return True
    if vocab.fullmatch(token) is None:
        return False
    if len(token) <= 8 and len(known) < 4096:
        known.add(token)
    return True


def find_header(lines: list[str]) -> int | None:
    """The index of the header line: it names GPU0 and the next line is GPU0's row."""
    for i, line in enumerate(lines[:-1]):
        if "GPU0" in line and re.search(r"GPU0(?!\d)", line) and not _is_row0(line) \
                and _is_row0(ANSI.sub("", lines[i + 1])):
            return i
    return None


def _split_glued(tokens: list[tuple[str, int]], want: int, vocab: re.Pattern, glued: re.Pattern,
                 repaired: list[int]) -> list[tuple[str, int]]:
    """Split tokens such as NODENODE into NODE, NODE until ``want`` matrix cells are found."""
    out: list[tuple[str, int]] = []
    for text, col in tokens:
        if len(out) >= want or vocab.fullmatch(text):
            out.append((text, col))
            continue
        parts = [(m.group(0), col + m.start()) for m in glued.finditer(text)]
        if len(parts) > 1 and "".join(p for p, _ in parts) == text:
            repaired.append(col)
            out.extend(parts)
        else:
            out.append((text, col))
    return out


def _place_affinity(rest: list[tuple[str, int]], names: list[str], header_cols: list[int],
                    raw: str) -> dict[str, str]:
    """Affinity values by column name. When cells are blank (fewer tokens than columns), each
    token goes under the header column it sits below (tabs expanded to 8-column stops)."""
    if len(rest) >= len(names):
        return {name: value for name, (value, _) in zip(names, rest)}
    expanded_cols = []
    for _, col in rest:
        expanded_cols.append(len(raw[:col].expandtabs(8)))
    placed: dict[str, str] = {}
    for (value, _), at in zip(rest, expanded_cols):
        best = max((i for i, c in enumerate(header_cols) if c <= at + 2), default=0)
        while names[best] in placed and best + 1 < len(names):
            best += 1
        placed[names[best]] = value
    return placed


def _parse_nic_legend(lines: list[str], start: int) -> tuple[dict[str, str], str | None]:
    names: dict[str, str] = {}
    legend = None
    for line in lines[start:]:
        if "SOC" in line and "=" in line:
            legend = "soc"
        elif line.strip().startswith("NODE") and "=" in line:
            legend = legend or "sys"
        match = _LEGEND_NIC.match(line)
        if match:
            names[match.group(1)] = match.group(2)
    if legend is None and any(line.strip().startswith("SYS") and "=" in line for line in lines[start:]):
        legend = "sys"
    return names, legend


def parse_matrix(source: SourceFile) -> TopoMatrix:
    text = source.text
    lines = text.splitlines()
    head = find_header(lines)
    if head is None:
        raise InputError(source.path, 1, "no nvidia-smi topo header (a line naming GPU0 followed by GPU0's row)")
    path = source.path
    header_raw = ANSI.sub("", lines[head])
    header = _header_tokens(header_raw)
    columns = [name for name, _ in header if name not in AFFINITY_NAMES]
    affinity = [name for name, _ in header if name in AFFINITY_NAMES]
    expanded_header = header_raw.expandtabs(8)
    affinity_cols = [expanded_header.find(name) for name in affinity]
    kinds = ["gpu" if c.startswith("GPU") else "nic" for c in columns]

    first_row = lines[head + 1]
    first_tokens = _TOKEN.findall(first_row)[1:]
    is_p2p = bool(first_tokens) and all(P2P_VALUES.fullmatch(t) for t in first_tokens[: len(columns)]) \
        and any(t != "X" for t in first_tokens[: len(columns)])
    vocab, glued = (P2P_VALUES, _GLUED_P2P) if is_p2p else (TOPO_VALUES, _GLUED_TOPO)
    if is_p2p:
        affinity, affinity_cols = [], []
    known = _KNOWN_CELLS.setdefault(vocab.pattern, set())

    n = len(columns)
    rows: list[MatrixRow] = []
    repaired: list[Location] = []
    cut_line = None
    gpu_count = 0
    nic_positions = {label: i for i, label in enumerate(c for c in columns if not c.startswith("GPU"))}
    end = head + 1
    colored = "\x1b" in text  # ANSI.sub only where an escape can be
    # A matrix repeats a few cells (NV18, SYS) at a few columns: each row's lists point at one
    # string and one int per distinct value instead of a fresh object per cell (issue 20).
    shared: dict = {}
    share = shared.setdefault
    for number in range(head + 1, len(lines)):
        raw = ANSI.sub("", lines[number]) if colored else lines[number]
        if not raw.strip():
            break
        tokens = tokens_at(raw)
        label, label_col = tokens[0]
        if not _ROW_LABEL.fullmatch(label):
            break  # the legend or something else follows the matrix without a blank line
        end = number + 1
        fixed: list[int] = []
        cells = tokens[1:]
        bad = None
        if len(cells) < n or not all(t in known or _is_cell(vocab, known, t) for t, _ in cells[:n]):
            cells = _split_glued(cells, n, vocab, glued, fixed)
            bad = next((t for t in cells[:n] if not vocab.fullmatch(t[0])), None)
        matrix_cells = cells[:n]
        rest = cells[n:]
        if len(matrix_cells) < n or bad is not None:
            last = number == len(lines) - 1 or not any(s.strip() for s in lines[number + 1:])
            if last and len(matrix_cells) < n:
                cut_line = number + 1  # cut inside the row: keep what came before
                break
            if bad is not None:
                raise InputError(path, number + 1, f"row {label}: {bad[0]!r} is not a topology relation "
                                 f"(expected one of X, SYS, SOC, NODE, PHB, PXB, PIX, NV#)", bad[1] + 1)
            raise InputError(path, number + 1, f"row {label} has {len(matrix_cells)} cells, expected {n} "
                             f"(one per column of the header on line {head + 1})", 1)
        kind = "gpu" if label.startswith("GPU") else "nic"
        placed = _place_affinity(rest, affinity, affinity_cols, raw) if kind == "gpu" and affinity else {}
        if kind == "gpu":
            index = decimal(label[3:]) if label[3:].isascii() else None
            if index is None:
                raise InputError(path, number + 1, f"row {label[:24]}: not a GPU number", label_col + 1)
            gpu_count += 1
        else:
            index = nic_positions.get(label, len(rows) - gpu_count)
        loc = location(path, number + 1, label_col + 1)
        for col in fixed:
            repaired.append(location(path, number + 1, col + 1))
        rows.append(build(MatrixRow,
            label=label,
            kind=kind,
            index=index,
            cells=[share(t, t) for t, _ in matrix_cells],
            cell_columns=[share(c + 1, c + 1) for _, c in matrix_cells],
            cpu_affinity=placed.get("CPU Affinity") or None,
            numa_affinity=placed.get("NUMA Affinity") or None,
            gpu_numa_id=placed.get("GPU NUMA ID") or None,
            loc=loc,
        ))
    if not rows:
        raise InputError(path, head + 2, "the matrix has a header but no complete row")
    nic_names, legend = _parse_nic_legend(lines, end)
    present = {r.label for r in rows}
    missing = [c for c in columns if c not in present]
    matrix = build(TopoMatrix,
        path=path,
        kind="p2p" if is_p2p else "topo",
        columns=columns,
        column_kinds=kinds,
        affinity_columns=affinity,
        nic_names=nic_names,
        legend=legend,
        rows=rows,
        missing_rows=missing,
        cut_line=cut_line,
        repaired=repaired,
        restricted=None,
        header_loc=build(Location, path=path, line=head + 1, column=1),
    )
    if not is_p2p:
        from topolint.model.matrix import restricted_view

        matrix.restricted = restricted_view(matrix)
    return matrix
