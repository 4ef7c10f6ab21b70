"""``nvidia-smi -q`` / ``-a`` and ``nvidia-smi --query-gpu=... --format=csv`` into a GpuQueryFile
(model/gpu_query.py): each GPU's identity and its Fabric section.

``-q`` prints ``Key : value`` lines and section names (a line without a colon) indented by four
spaces a level, under a ``GPU 00000000:DB:00.0`` header per GPU, after the banner
(``==============NVSMI LOG==============``) and the node's lines (Driver Version, Attached GPUs).
The parser keeps the path of section names above each line, so ``Fabric / Health / Summary`` is
not the ``Summary`` of another section; the fields it has no use for are read and passed over.
A grep of the output (``nvidia-smi -q | grep -C3 ClusterUUID``: no GPU headers, ``--`` between
groups) is an excerpt: each ``Fabric`` section is one GPU, numbered in file order. A leading echo
of the command is skipped.

The CSV has a header naming the queried fields (``index, name, fabric.state, fabric.status``;
units in brackets after a name) and one row per GPU. Anything else is unreadable (TL001) with
its line and column. One pass over the lines: linear.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build, location
from topolint.model.gpu_query import GpuFabric, GpuQueryFile, QueriedGpu, Stated
from topolint.model.numbers import decimal, pci_address
from topolint.parsers._lines import lines_of

MALFORMED = "malformed nvidia-smi -q output"  # inputs/collect.py reports these from folder walks too
MALFORMED_CSV = "malformed nvidia-smi --query-gpu output"
BANNER = re.compile(r"=+ ?NVSMI LOG ?=+")
GPU_HEADER = re.compile(r"GPU ([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7])")
NAME = re.compile(r"[A-Za-z0-9][\w .()/+&'\[\]#%,=-]{0,119}")  # a key or a section name
MAX_DEPTH = 16  # -q nests four levels; deeper indentation is no nvidia-smi output
EXPECTED = "'Key : value', a section name or 'GPU 00000000:BB:DD.F'"

# Fields kept, by their path below the GPU header: (section..., key) -> attribute.
_GPU_FIELDS = {("Product Name",): "name", ("GPU UUID",): "uuid", ("Serial Number",): "serial",
               ("Module ID",): "module_id", ("Platform Info", "Module Id"): "module_id"}
_FABRIC_FIELDS = {("Fabric", "State"): "state", ("Fabric", "Status"): "status", ("Fabric", "CliqueId"): "clique_id",
                  ("Fabric", "ClusterUUID"): "cluster_uuid", ("Fabric", "Health", "Summary"): "health_summary",
                  ("Fabric", "Health", "Bandwidth"): "health_bandwidth"}
_BUS_ID = ("PCI", "Bus Id")


def is_command_echo(text: str) -> bool:
    """A line that echoes the command before its output (``$ nvidia-smi -q``, ``# nvidia-smi -q | grep``)."""
    return "nvidia-smi" in text


class _Reader:
    def __init__(self, source: SourceFile):
        self.path = source.path
        self.result = build(GpuQueryFile, path=source.path, kind="query", gpus=[])
        self.gpu: QueriedGpu | None = None
        self.stack: list[tuple[int, str]] = []  # (indent, section name) above the current line
        self.seen: dict[str, int] = {}  # bus id -> line of its header
        self.banner = False

    def error(self, number: int, message: str, column: int = 1) -> InputError:
        return InputError(self.path, number, f"{MALFORMED}: {message}", column)

    def new_gpu(self, number: int, column: int, bus: str | None) -> QueriedGpu:
        gpu = build(QueriedGpu, index=len(self.result.gpus), bus_id=bus, loc=location(self.path, number, column))
        self.result.gpus.append(gpu)
        self.gpu = gpu
        return gpu

    def line(self, number: int, raw: str) -> None:
        text = raw.strip()
        if not text or text == "--":
            return  # grep -C separates its groups with "--"
        if BANNER.fullmatch(text):
            self.banner = True
            return
        if not self.result.gpus and not self.banner and self.result.driver is None and is_command_echo(text):
            return
        column = len(raw) - len(raw.lstrip()) + 1
        indent = len(raw[:column - 1].expandtabs(4))
        header = GPU_HEADER.fullmatch(text)
        if header:
            bus = pci_address(header.group(1))
            if bus is None:
                raise self.error(number, f"{text[:40]!r} names no PCI address", column)
            if bus in self.seen:
                raise self.error(number, f"GPU {bus} appears twice (first on line {self.seen[bus]})", column)
            self.seen[bus] = number
            self.new_gpu(number, column, bus)
            self.stack = [(indent, "")]
            return
        while self.stack and self.stack[-1][0] >= indent and self.stack[-1][1]:
            self.stack.pop()
        key, colon, value = text.partition(":")
        key = key.rstrip()
        if not NAME.fullmatch(key):
            raise self.error(number, f"expected {EXPECTED}; found {text[:40]!r}", column)
        if not colon:
            if len(self.stack) >= MAX_DEPTH:
                raise self.error(number, f"sections nested deeper than {MAX_DEPTH} levels", column)
            self.stack.append((indent, key))
            if self.stack[-1][1] == "Fabric" and self._excerpt_gpu_needed():
                self.new_gpu(number, column, None)
                self.result.kind = "excerpt"
            if key == "Fabric" and self.gpu is not None and len(self._path()) == 1:
                if self.gpu.fabric is not None:
                    raise self.error(number, f"GPU {self._name()} has two Fabric sections", column)
                self.gpu.fabric = build(GpuFabric, loc=location(self.path, number, column))
            return
        value = value.strip()
        stated = build(Stated, text=value, loc=location(self.path, number, _value_column(raw, value, column)))
        path = self._path() + (key,)
        if self.gpu is None:
            if path == ("Driver Version",):
                self.result.driver = stated
            elif path == ("Attached GPUs",):
                self.result.attached = decimal(value)
            return
        self._field(path, stated, number, column)

    def _excerpt_gpu_needed(self) -> bool:
        """An excerpt (no GPU headers): each top-level Fabric section is the next GPU."""
        if self.seen or len(self.stack) != 1:
            return False
        return self.gpu is None or self.gpu.fabric is not None

    def _path(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.stack if name)

    def _name(self) -> str:
        gpu = self.gpu
        return gpu.bus_id or f"#{gpu.index}"

    def _field(self, path: tuple[str, ...], stated: Stated, number: int, column: int) -> None:
        gpu = self.gpu
        attribute = _GPU_FIELDS.get(path)
        target = gpu
        if attribute is None:
            attribute = _FABRIC_FIELDS.get(path)
            target = gpu.fabric
            if attribute is None or target is None:
                if path == _BUS_ID and gpu.bus_id is None:
                    gpu.bus_id = pci_address(stated.text)
                return
        if getattr(target, attribute) is not None:
            raise self.error(number, f"GPU {self._name()} states {' / '.join(path)} twice "
                                     f"(first on line {getattr(target, attribute).loc.line})", column)
        setattr(target, attribute, stated)


def _value_column(raw: str, value: str, column: int) -> int:
    if not value:
        return column
    index = raw.rfind(value)
    return index + 1 if index >= 0 else column


def parse_gpu_query(source: SourceFile) -> GpuQueryFile:
    reader = _Reader(source)
    number = 0
    for number, raw in enumerate(source.text.splitlines(), start=1):
        reader.line(number, raw)
    result = reader.result
    if not result.gpus and not reader.banner and result.driver is None:
        raise InputError(source.path, max(number, 1), f"{MALFORMED}: no 'GPU 00000000:BB:DD.F' block, "
                                                      "Fabric section or NVSMI LOG banner")
    return result


# ---- --query-gpu CSV ------------------------------------------------------------------------------
_COLUMN = re.compile(r"([A-Za-z][\w.]{0,63})(?: \[[^\]\n]{0,32}\])?")
# Field names (nvidia-smi --help-query-gpu) by their lowercase spelling without underscores.
_CSV_FIELDS = {"index": "index", "name": "name", "gpuname": "name", "pci.busid": "bus_id", "gpubusid": "bus_id",
               "uuid": "uuid", "gpuuuid": "uuid", "serial": "serial", "gpuserial": "serial",
               "fabric.state": "state", "fabric.status": "status", "fabric.cliqueid": "clique_id",
               "fabric.clusteruuid": "cluster_uuid", "fabric.health.summary": "health_summary",
               "fabric.health.bandwidth": "health_bandwidth"}
_FABRIC_ATTRIBUTES = frozenset({"state", "status", "clique_id", "cluster_uuid", "health_summary", "health_bandwidth"})


def csv_field(name: str) -> str | None:
    """The attribute a CSV column holds (``fabric.cliqueId`` -> clique_id), None for another field."""
    return _CSV_FIELDS.get(name.lower().replace("_", ""))


def _cells(raw: str) -> list[tuple[str, int]]:
    """The comma-separated cells of a line, stripped, with each one's 1-based column."""
    cells, start = [], 0
    for piece in raw.split(","):
        lead = len(piece) - len(piece.lstrip())
        cells.append((piece.strip(), start + lead + 1))
        start += len(piece) + 1
    return cells


def parse_gpu_query_csv(source: SourceFile) -> GpuQueryFile:
    path, text = source.path, source.text
    columns: list[str | None] | None = None
    indices: dict[int, int] = {}
    rows = array("q")  # line number, start and end offset of each GPU row
    number, at = 0, 0
    for number, raw in enumerate(lines_of(text), start=1):
        start, at = at, at + len(raw) + (2 if text.startswith("\r\n", at + len(raw)) else 1)
        stripped = raw.strip()
        if not stripped:
            continue
        if columns is None:
            if is_command_echo(stripped):
                continue
            columns = []
            for cell, column in _cells(raw):
                match = _COLUMN.fullmatch(cell)
                if match is None:
                    raise InputError(path, number, f"{MALFORMED_CSV}: header cell {cell[:40]!r} is no field name "
                                                   "(expected 'index, name, fabric.state, ...')", column)
                columns.append(csv_field(match.group(1)))
            continue
        cells = _cells(raw)
        if len(cells) != len(columns):
            raise InputError(path, number, f"{MALFORMED_CSV}: {len(cells)} values for the header's {len(columns)} "
                                           "fields", len(raw) - len(raw.lstrip()) + 1)
        _row(path, number, raw, cells, columns, indices, len(rows) // 3, {})  # its errors now; the GPU later
        rows.extend((number, start, start + len(raw)))
    if not rows:
        raise InputError(path, max(number, 1), f"{MALFORMED_CSV}: no GPU row below the header")
    return build(GpuQueryFile, path=path, kind="csv", gpus=CsvRows(path, text, columns, rows))


class CsvRows(Sequence):
    """The GPUs of a --query-gpu CSV, read and checked by the parse and made on first use: a row
    is some 60 bytes of text, its GPU, fabric and a Stated and Location per cell twenty times
    that (issue 20, memory bounded by the input). Until then it holds the text and three ints a
    row; then the GPUs, made once, as the list a parse would have held. Compares equal to it."""

    __slots__ = ("path", "text", "columns", "rows", "_gpus")

    def __init__(self, path: str, text: str, columns: list, rows: array):
        self.path, self.text, self.columns, self.rows, self._gpus = path, text, columns, rows, None

    def _made(self) -> list[QueriedGpu]:
        if self._gpus is None:
            rows, indices, shared = self.rows, {}, {}  # one string per distinct cell text (a model name, a state)
            self._gpus = [_row(self.path, rows[i], raw, _cells(raw), self.columns, indices, i // 3, shared)
                          for i in range(0, len(rows), 3) for raw in (self.text[rows[i + 1]:rows[i + 2]],)]
            self.text = self.rows = None
        return self._gpus

    def __len__(self) -> int:
        return len(self._gpus) if self._gpus is not None else len(self.rows) // 3

    def __getitem__(self, index):
        return self._made()[index]

    def __iter__(self):
        return iter(self._made())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (CsvRows, list)):
            return self._made() == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self._made())

    def __reduce__(self):  # a worker sends the rows, not the GPUs made of them
        if self._gpus is not None:
            return list, (self._gpus,)
        return CsvRows, (self.path, self.text, self.columns, self.rows)


def _row(path: str, number: int, raw: str, cells, columns, indices: dict[int, int], position: int,
         shared: dict[str, str]) -> QueriedGpu:
    row_loc = location(path, number, len(raw) - len(raw.lstrip()) + 1)
    gpu = build(QueriedGpu, index=position, loc=row_loc)
    fabric = build(GpuFabric, loc=row_loc) if any(c in _FABRIC_ATTRIBUTES for c in columns) else None
    gpu.fabric = fabric
    for (cell, column), attribute in zip(cells, columns):
        if attribute is None:
            continue
        if attribute == "index":
            index = decimal(cell)
            if index is None or index > 1024:
                raise InputError(path, number, f"{MALFORMED_CSV}: index {cell[:20]!r} is not a GPU number", column)
            if index in indices:
                raise InputError(path, number, f"{MALFORMED_CSV}: GPU {index} appears twice "
                                               f"(first on line {indices[index]})", column)
            indices[index] = number
            gpu.index, gpu.index_stated = index, True
            continue
        stated = build(Stated, text=shared.setdefault(cell, cell), loc=location(path, number, column))
        if attribute == "bus_id":
            gpu.bus_id = pci_address(cell)
            if gpu.bus_id is None and stated.value is not None:
                raise InputError(path, number, f"{MALFORMED_CSV}: pci.bus_id {cell[:40]!r} is no PCI address",
                                 column)
        elif attribute in _FABRIC_ATTRIBUTES:
            setattr(fabric, attribute, stated)
        else:
            setattr(gpu, attribute, stated)
    return gpu
