"""nccl-tests output (``all_reduce_perf`` and friends) into a MeasuredFile (nccl-formats.md 5.2).

Covers every layout in the corpus and the printing code of NVIDIA/nccl-tests@a0b82b22
(``src/util.cu`` writeDeviceReport / writeResultHeader / writeBenchmarkLine* / writeResultFooter;
``src/common.cu`` before 2.18):
- the header (``# nccl-tests version``, ``# Collective test starting``, ``# nThread ...``) and the
  device list (``#  Rank  0 Group  0 Pid ... on HOST device  0 [0000:07:00] MODEL``; before 2.16
  ``[0x07]``; before 2.13 without ``Group``);
- result rows with or without the ``root`` column (<= 2.11 ends in ``error``, not ``#wrong``),
  ``N/A`` for ``#wrong`` under ``-c 0``, in-place-only rows, ``-S`` timestamps, ``-I`` per-iteration
  columns;
- the footer (``# Out of bounds values : 0 OK``, ``# Avg bus bandwidth : 70.742``);
- pastes that lost their leading ``#``, launcher tags (``[1,0]<stdout>:``), blank lines inside
  the table, several collectives in one file, interleaved NCCL INFO lines (read by LogReader);
- the JSON report of ``-J`` (``JSON_FILE_VERSION 3``).
Lines of other programs are skipped; a line that starts like a result row but does not parse is
unreadable (TL001) with its line and column.
"""

from __future__ import annotations

import bisect
import json
import re
import sys

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.measured import LogLine, MeasuredFile, Placement, ResultRow, TestDevice, TestRun
from topolint.model.nesting import json_deepest
from topolint.model.numbers import decimal, printed_float
from topolint.parsers._lines import lines_of
from topolint.parsers.nccl_log import LogReader, printable, strip_launcher_tag

MALFORMED = "malformed nccl-tests output"  # collect.py reports these from folder walks too
HASH = r"(?:#\s*)?"
VERSION = re.compile(HASH + r"nccl-tests version (?P<ver>\S+)(?: nccl-headers=\d+)?(?: nccl-library=(?P<lib>\d+))?")
STARTING = re.compile(HASH + r"Collective test starting: (?P<name>\S+)")
HEADER = re.compile(
    HASH + r"nThread (?P<nThread>\d+) nGpus (?P<nGpus>\d+) minBytes (?P<minBytes>\d+) maxBytes (?P<maxBytes>\d+) "
    r"step: (?P<step>\d+)\((?P<kind>factor|bytes)\) warmup iters: (?P<warmup>\d+) iters: (?P<iters>\d+)"
    r"(?: agg iters: (?P<agg>\d+))? validation: (?P<validation>\d+)(?: graph: (?P<graph>\d+))?"
    r"(?: unalign: (?P<unalign>\d+))?"
)
DEVICE = re.compile(
    HASH + r"Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<dev>\d+)\s+\[(?P<bus>[0-9a-fA-Fx:]+)\]\s+(?P<model>.*?)\s*$"
)
COLUMNS = re.compile(HASH + r"size\s+count\s+type\s+redop(?P<root>\s+root)?\s+(?:cpu)?time\s+algbw\s+busbw\s+(?P<last>#wrong|error)")
OUT_OF_BOUNDS = re.compile(HASH + r"Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<verdict>OK|FAILED)?")
AVERAGE = re.compile(HASH + r"Avg bus bandwidth\s*:\s*(?P<bw>\S+)\s*(?P<verdict>OK|FAILED)?")
COMMAND = re.compile(r".*\b(?:mpirun|mpiexec|srun|orterun|prterun)\b.*\b\w+_perf\b.*")
ROW_START = re.compile(r"\s*\d+\s+\d+\s+[A-Za-z]\w*\s+[A-Za-z]\w*\s")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d")


class _Tables:
    def __init__(self, path: str) -> None:
        self.path = path
        self.runs: list[TestRun] = []
        self.run: TestRun | None = None
        self.log = LogReader(path)
        self.command: LogLine | None = None

    def loc(self, number: int, column: int) -> Location:
        return build(Location, path=self.path, line=number, column=column)

    def new_run(self, loc: Location) -> TestRun:
        self.run = build(TestRun, loc=loc)
        self.runs.append(self.run)
        return self.run

    def current(self, loc: Location, fresh: bool = False) -> TestRun:
        """The run a header line belongs to; ``fresh`` when the line can only open a run."""
        run = self.run
        if run is None or run.avg_busbw_loc is not None or (fresh and (run.rows or run.header_loc)):
            return self.new_run(loc)
        return run

    def feed(self, raw: str, number: int) -> None:
        text, cut = strip_launcher_tag(raw)
        if not text.strip() or self.log.feed(text, number, cut):
            return
        stripped = text.strip()
        column = cut + len(text) - len(text.lstrip()) + 1
        loc = self.loc(number, column)
        if stripped[:1].isdigit():  # most lines of a table are rows: try them first
            handlers = (self._row, self._header)
        else:
            handlers = (self._version, self._header, self._device, self._columns, self._footer)
        for handler in handlers:
            if handler(stripped, loc):
                return
        if self.command is None and not self.runs and COMMAND.fullmatch(stripped):
            self.command = build(LogLine, level="", message=printable(stripped), loc=loc)

    def _version(self, text: str, loc: Location) -> bool:
        version, starting = VERSION.fullmatch(text), STARTING.fullmatch(text)
        if version:
            run = self.current(loc, fresh=True)
            run.version = version.group("ver")
            run.nccl_library = decimal(version.group("lib")) if version.group("lib") else None
        elif starting:
            run = self.current(loc)
            if run.collective is not None or run.header_loc is not None:
                run = self.new_run(loc)
            run.collective = printable(starting.group("name"))
        return bool(version or starting)

    def _header(self, text: str, loc: Location) -> bool:
        match = HEADER.match(text)
        if not match:
            return False
        run = self.current(loc)
        if run.header_loc is not None or run.rows:
            run = self.new_run(loc)
        run.header = {k: decimal(v) for k, v in match.groupdict().items() if v is not None and k != "kind"}
        run.step_kind = match.group("kind")
        run.header_loc = loc
        return True

    def _device(self, text: str, loc: Location) -> bool:
        match = DEVICE.fullmatch(text)
        if not match:
            return False
        run = self.current(loc)
        if run.rows:
            run = self.new_run(loc)
        group = match.group("group")
        run.devices.append(build(TestDevice,
            rank=decimal(match.group("rank")), group=decimal(group) if group else None, pid=decimal(match.group("pid")),
            host=printable(match.group("host")), device=decimal(match.group("dev")), bus=match.group("bus").lower(),
            model=printable(match.group("model")), loc=loc))
        return True

    def _columns(self, text: str, loc: Location) -> bool:
        match = COLUMNS.match(text)
        if not match:
            return text.startswith(("#", "(B)", "out-of-place")) and ("(B)" in text or "out-of-place" in text)
        run = self.current(loc)
        if run.rows:
            run = self.new_run(loc)  # several collectives in one file, without their headers
        run.column_header_loc = loc
        run.old_columns = match.group("last") == "error" or not match.group("root")
        return True

    def _footer(self, text: str, loc: Location) -> bool:
        oob, average = OUT_OF_BOUNDS.match(text), AVERAGE.match(text)
        if not (oob or average):
            return False
        run = self.current(loc) if self.run is None or self.run.avg_busbw_loc is None else self.run
        if oob:
            run.out_of_bounds = decimal(oob.group("n"))
            run.out_of_bounds_verdict = oob.group("verdict")
            run.out_of_bounds_loc = loc
        else:
            run.avg_busbw = printed_float(average.group("bw"))
            run.avg_busbw_loc = loc
        return True

    def _row(self, text: str, loc: Location) -> bool:
        if not ROW_START.match(text):
            return False
        run = self.run if self.run is not None and self.run.avg_busbw_loc is None else None
        row = parse_row(text.split(), loc, run.old_columns if run is not None and run.column_header_loc else None)
        if row is None:
            raise InputError(self.path, loc.line, f"{MALFORMED}: a result row needs size, count, type, redop, "
                             f"[root,] then time, algbw, busbw and #wrong per placement; found {text[:60]!r}",
                             loc.column)
        (run or self.new_run(loc)).rows.append(row)
        return True


def _placement(tokens: list[str], old: bool) -> Placement | None:
    time_us, algbw, busbw = (printed_float(t) for t in tokens[:3])
    if busbw is None or algbw is None or (time_us is None and tokens[0].lower() != "nan"):
        return None
    last = tokens[3]
    value = printed_float(last)
    if value is None and last.upper() not in ("N/A", "NAN"):
        return None
    return build(Placement, time_us=time_us, algbw=algbw, busbw=busbw, wrong=None if old else value,
                 error=value if old else None, wrong_text=sys.intern(last))  # "0" on every row: one string


def parse_row(tokens: list[str], loc: Location, old_columns: bool | None = None) -> ResultRow | None:
    """A result row from its whitespace-separated fields, or None. ``old_columns``: the table's
    column header said <= 2.11 (no root, "error" last); None when no header was seen."""
    size, count = decimal(tokens[0]), decimal(tokens[1]) if len(tokens) > 1 else None
    if size is None or count is None or len(tokens) < 8:
        return None
    rest, root = tokens[4:], None
    if len(rest) >= 2 and TIMESTAMP.match(rest[-2]):
        rest = rest[:-2]  # -S: "2026-01-01 10:00:00" after the in-place half
    if len(rest) % 4 == 1:  # the root column (>= 2.12)
        root, rest = decimal(rest[0]), rest[1:]
        if root is None:
            return None
    old = root is None if old_columns is None else old_columns
    if len(rest) == 8:
        halves = [rest[:4], rest[4:]]
    elif len(rest) == 16:  # -I: time algbw busbw #wrong i_min i_max i_p99 i_cv% per placement
        halves = [rest[:4], rest[8:12]]
    elif len(rest) == 4:
        halves = [None, rest]  # in-place only (trace replay)
    else:
        return None
    placements = [_placement(h, old) if h is not None else None for h in halves]
    if any(p is None for p, h in zip(placements, halves) if h is not None):
        return None
    return build(ResultRow, size=size, count=count, dtype=sys.intern(tokens[2]), redop=sys.intern(tokens[3]), root=root,
                 out_of_place=placements[0], in_place=placements[1], loc=loc)


def parse_nccl_tests(source: SourceFile) -> MeasuredFile:
    if source.text.lstrip().startswith("{"):
        return _parse_json(source)
    tables = _Tables(source.path)
    for number, raw in enumerate(lines_of(source.text), start=1):
        tables.feed(raw, number)
    runs = [r for r in tables.runs if r.rows or r.header_loc or r.devices or r.avg_busbw_loc]
    if not runs:
        raise InputError(source.path, 1, f"{MALFORMED}: no nccl-tests header, device list, result row or footer")
    return build(MeasuredFile, path=source.path, kind="nccl-tests", runs=runs, log=tables.log.log,
                 command=tables.command)


# -J writes one JSON document (src/util.cu jsonOutputInit ... jsonOutputFinalize, version 3):
# {"version", "args", "env", "nccl_version", "config": {nthreads, ngpus, ..., "devices": [...]},
#  "results": [{size, count, type, redop, root, out_of_place|in_place: {time, alg_bw, bus_bw, nwrong}}],
#  "out_of_bounds": {count, okay}, "average_bus_bandwidth": {bandwidth, okay}}.
_JSON_CONFIG = {"nthreads": "nThread", "ngpus": "nGpus", "minimum_bytes": "minBytes", "maximum_bytes": "maxBytes",
                "warmup_iters": "warmup", "iterations": "iters", "aggregated_iterations": "agg",
                "validation": "validation", "graph": "graph"}


class _Positions:
    """Line and column of the n-th occurrence of a JSON key, for facts read with json.loads."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def of(self, key: str) -> list[Location]:
        found = []
        for match in re.finditer(r'"%s"\s*:' % re.escape(key), self.text):
            line = bisect.bisect_right(self.starts, match.start())
            found.append(build(Location, path=self.path, line=line, column=match.start() - self.starts[line - 1] + 1))
        return found


def _json_number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return printed_float(str(value))


def _json_int(value) -> int | None:
    return decimal(str(value)) if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _parse_json(source: SourceFile) -> MeasuredFile:
    path = source.path
    try:
        document = json.loads(source.text)
    except RecursionError:
        line, column = json_deepest(source.text)
        raise InputError(path, line, f"{MALFORMED}: JSON does not parse (too deeply nested)", column) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", 1)
        raise InputError(path, line, f"{MALFORMED}: JSON does not parse ({getattr(exc, 'msg', 'too deeply nested')})",
                         getattr(exc, "colno", 0)) from None
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise InputError(path, 1, f"{MALFORMED}: a -J report is an object with a \"results\" list")
    positions = _Positions(path, source.text)
    first = build(Location, path=path, line=1, column=1)
    run = build(TestRun, loc=first, header_loc=(positions.of("config") or [first])[0])
    config = document.get("config") if isinstance(document.get("config"), dict) else {}
    run.header = {name: _json_int(config[key]) for key, name in _JSON_CONFIG.items() if _json_int(config.get(key)) is not None}
    library = _json_int(document.get("nccl_version"))
    run.nccl_library = library
    device_locs = positions.of("hostname")
    for index, device in enumerate(d for d in config.get("devices") or [] if isinstance(d, dict)):
        rank, number = _json_int(device.get("rank")), _json_int(device.get("device"))
        if rank is None or number is None:
            continue
        run.devices.append(build(TestDevice, rank=rank, group=_json_int(device.get("group")),
                                 pid=_json_int(device.get("pid")), host=printable(str(device.get("hostname") or "?")),
                                 device=number, bus=printable(str(device.get("device_hex") or "").lower()),
                                 model=printable(str(device.get("device_info") or "").strip()),
                                 loc=device_locs[index] if index < len(device_locs) else first))
    row_locs = positions.of("size")
    for index, result in enumerate(document["results"]):
        loc = row_locs[index] if index < len(row_locs) else first
        row = _json_row(result, loc)
        if row is None:
            raise InputError(path, loc.line, f"{MALFORMED}: result {index + 1} lacks size, count or bus_bw", loc.column)
        run.rows.append(row)
        names = result.get("experiment_name")
        if run.collective is None and isinstance(names, str):
            run.collective = printable(names)
    _json_footer(document, run, positions)
    return build(MeasuredFile, path=path, kind="nccl-tests", runs=[run], log=LogReader(path).log)


def _json_row(result, loc: Location) -> ResultRow | None:
    if not isinstance(result, dict):
        return None
    size, count = _json_int(result.get("size")), _json_int(result.get("count"))
    halves = []
    for key in ("out_of_place", "in_place"):
        half = result.get(key)
        if not isinstance(half, dict):
            halves.append(None)
            continue
        wrong = half.get("nwrong")
        halves.append(build(Placement, time_us=_json_number(half.get("time", half.get("cpu_time"))),
                            algbw=_json_number(half.get("alg_bw")), busbw=_json_number(half.get("bus_bw")),
                            wrong=_json_number(wrong), wrong_text="N/A" if wrong is None else str(wrong)))
    if size is None or count is None or not any(h is not None and h.busbw is not None for h in halves):
        return None
    return build(ResultRow, size=size, count=count, dtype=str(result.get("type", "")), redop=str(result.get("redop", "")),
                 root=_json_int(str(result.get("root", "")).strip()), out_of_place=halves[0], in_place=halves[1], loc=loc)


def _json_footer(document: dict, run: TestRun, positions: _Positions) -> None:
    oob = document.get("out_of_bounds")
    if isinstance(oob, dict):
        run.out_of_bounds = _json_int(oob.get("count"))
        run.out_of_bounds_verdict = "OK" if oob.get("okay") is True else "FAILED" if oob.get("okay") is False else None
        run.out_of_bounds_loc = (positions.of("out_of_bounds") or [run.loc])[0]
    average = document.get("average_bus_bandwidth")
    if isinstance(average, dict):
        run.avg_busbw = _json_number(average.get("bandwidth"))
        run.avg_busbw_loc = (positions.of("average_bus_bandwidth") or [run.loc])[0]


def summarise(measured: MeasuredFile) -> str:
    """One line for --verbose: the runs and what the NCCL lines hold."""
    parts = []
    for run in measured.runs:
        ranks = f", {len(run.devices)} ranks on {len(run.hosts)} host(s)" if run.devices else ""
        parts.append(f"{run.collective or 'a run'}{ranks}, {len(run.rows)} rows")
    log = measured.log
    if log.line_count:
        versions = sorted({v.message for v in log.versions})
        parts.append(f"{log.line_count} NCCL lines" + (f" of NCCL {', '.join(versions)}" if versions else "")
                     + f", {len(log.channels)} channels, {len(log.warnings)} warnings")
    return "; ".join(parts) or "nothing measured"
