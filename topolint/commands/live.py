"""`topolint live`: run nccl-tests' all_reduce_perf here or through the site's launcher, with
NCCL_DEBUG=INFO captured, and judge what it measured against the estimate for the same shape.

``run_live(LiveOptions)`` does the work and returns a ``LiveResult`` (the check result of the
captured output, the argv, where the raw output is kept); ``cli(args)`` prints. The measured
output goes through the same parsers and PERF rules as ``topolint check`` (with ``--topology``
for the expectation), so live mode and a pasted table give the same findings.

Processes (commands/_processes.py, shared with ``collect``): argv only (the launcher string is
split with shlex, never given to a shell), one process group per run, a timeout; on timeout or
Ctrl-C the group and every descendant that left it get SIGTERM, then SIGKILL after ``--grace``
(a launcher such as srun or mpirun needs that time to stop its remote tasks), and whatever is
left is killed when the run ends. Each stream is kept up to OUTPUT_CAP bytes (the report says
when one was cut), progress lines are bounded, and reading stops ``--grace`` seconds after the
run ended whatever still holds its pipes.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from topolint.commands import EXIT_ERROR

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall")
# Where nccl-tests usually lands when it is not on PATH (README build: ./build/<name>).
USUAL_PLACES = ("/usr/local/bin", "/opt/nccl-tests/build", "/usr/local/nccl-tests/build", "/opt/nccl_tests/build",
                "~/nccl-tests/build", "/workspace/nccl-tests/build", "/opt/hpcx/nccl-tests/build")
STDOUT_NAME, STDERR_NAME, REPORT_NAME = "nccl-tests.txt", "nccl-stderr.log", "report.txt"
OUTPUT_CAP = 32 * 1024 * 1024  # bytes kept per stream (inputs/source.py MAX_INPUT_BYTES: check reads no more)
GPU_LIST_CAP = 1024 * 1024  # bytes of `nvidia-smi -L` kept: a line per GPU; more is not that list
GPU_LIST_TIMEOUT = 30.0  # seconds `nvidia-smi -L` may take (a node whose driver hangs)
GPU_LIST_GRACE = 2.0  # seconds reading goes on after it ended, whatever holds its pipes
# What each isolation run disables, as the field runs them (docs/measured.md): NVLink only keeps
# P2P to NVLink paths and turns SHM off; network only turns P2P and SHM off, so every peer
# connection, also inside a node, goes through the NICs.
ISOLATION = {"nvlink": {"NCCL_P2P_LEVEL": "NVL", "NCCL_SHM_DISABLE": "1"},
             "network": {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}}


class LiveError(Exception):
    """A run that gave nothing to judge: missing binary, crash, hang, garbage. Exit 2."""


@dataclass
class LiveOptions:
    topology: str | None = None
    nccl_tests: str | None = None  # the binary, or a folder holding it (or its build/)
    launcher: str | None = None  # "srun -N2 --ntasks-per-node=8", "mpirun -np 16 -H a:8,b:8"
    collective: str = "all_reduce"
    sizes: str = "1M..8G"
    timeout: float = 900.0
    grace: float = 10.0
    isolate: str | None = None
    gpus: int | None = None  # GPUs of this node (single-node runs); default: nvidia-smi -L, else --topology's
    output_dir: Path = Path("topolint-live")
    nccl_version: str | None = None
    progress: object | None = None  # callable(line) for each result row, or None


@dataclass
class LiveResult:
    argv: list[str]
    environment: dict[str, str]
    output_dir: Path
    check: object  # commands.check.CheckResult of the captured output
    verdicts: list[str] = field(default_factory=list)  # plateau against expectation, per run
    warnings: list[str] = field(default_factory=list)
    measurements: list = field(default_factory=list)  # estimate.expected.Measurement per run and size
    measurement_notes: list[str] = field(default_factory=list)  # what the expectation assumed, or why none


# ---- finding the binary ---------------------------------------------------------------------------
def find_binary(name: str, given: str | None) -> Path:
    """``given`` (a file, or a folder with NAME or build/NAME), else PATH, else the usual places."""
    looked = []
    if given:
        path = Path(given).expanduser()
        candidates = [path] if path.is_file() else [path / name, path / "build" / name]
    else:
        found = shutil.which(name)
        candidates = [Path(found)] if found else []
        looked.append("PATH")
        candidates += [Path(p).expanduser() / name for p in USUAL_PLACES]
    for candidate in candidates:
        looked.append(str(candidate))
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise LiveError(f"{name} not found (looked in {', '.join(dict.fromkeys(looked))}); build nccl-tests "
                    "(make MPI=1 for multi-node) and give --nccl-tests BIN_OR_DIR")


def local_gpus(given: int | None, topology: str | None = None) -> int:
    """--gpus, else CUDA_VISIBLE_DEVICES, else nvidia-smi -L, else the GPUs of --topology."""
    if given:
        return given
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible and visible.strip():
        return len([d for d in visible.split(",") if d.strip()])
    listed = _gpu_list()
    count = listed.count("GPU ") if listed is not None else 0
    if not count and topology:
        count = topology_gpus(topology)
    if not count:
        raise LiveError("cannot tell how many GPUs this node has (nvidia-smi -L gave none"
                        + (", nor does --topology" if topology else "") + "): give --gpus N")
    return count


def _gpu_list() -> str | None:
    """What ``nvidia-smi -L`` prints, through the bounded runner (a byte cap, a deadline, reading
    stopped ``GPU_LIST_GRACE`` s after it ended whatever holds its pipes); None when it fails, is
    cut or does not end in time."""
    from topolint.commands._processes import Stream, run

    out, err = Stream(GPU_LIST_CAP), Stream(GPU_LIST_CAP)
    try:
        ran = run(["nvidia-smi", "-L"], env=dict(os.environ), stdout=out, stderr=err,
                  timeout=GPU_LIST_TIMEOUT, grace=GPU_LIST_GRACE)
    except OSError:
        return None
    if ran.interrupted:
        raise KeyboardInterrupt
    if ran.timed_out or ran.exit_code != 0 or out.truncated:
        return None
    return out.kept.decode("utf-8", "replace")


def topology_gpus(path: str) -> int:
    """The GPUs of the node --topology describes (its NCCL XML, else its topo -m matrix); 0 when unknown."""
    for node in _topology_nodes(path):
        counts = [len(t.gpus) for t in node.topologies if t.gpus]
        counts += [sum(1 for k in m.column_kinds if k == "gpu") for m in node.matrices if m.kind == "topo" and m.rows]
        if counts:
            return max(counts)
    return 0


def _topology_nodes(path: str) -> list:
    from topolint.inputs.collect import collect

    try:
        return collect([path]).nodes
    except (OSError, ValueError):
        return []


def size_range(sizes: str) -> tuple[int, int]:
    from topolint.model.numbers import byte_size

    low, sep, high = sizes.partition("..")
    first, last = byte_size(low), byte_size(high if sep else low)
    if not first or not last or first > last:
        raise LiveError(f"--sizes {sizes!r}: expected MIN..MAX with K, M or G, e.g. 1M..8G")
    return first, last


def build_argv(binary: Path, options: LiveOptions) -> list[str]:
    """Single node: one process driving every local GPU (-g N). Multi-node: the site's launcher
    starts one process per GPU (-g 1), which needs an MPI build of nccl-tests."""
    first, last = size_range(options.sizes)
    test = [str(binary), "-b", str(first), "-e", str(last), "-f", "2", "-c", "1"]
    if options.launcher:
        launcher = shlex.split(options.launcher)
        if not launcher:
            raise LiveError("--launcher is empty")
        return launcher + test + ["-g", "1"]
    return test + ["-g", str(local_gpus(options.gpus, options.topology))]


MPI_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun")


def launcher_warnings(options: LiveOptions) -> list[str]:
    """Open MPI passes only the variables named with -x to remote ranks (srun exports all)."""
    words = shlex.split(options.launcher or "")
    if words and Path(words[0]).name in MPI_LAUNCHERS and "NCCL_DEBUG" not in options.launcher:
        return ["the launcher does not pass NCCL_DEBUG to remote ranks: add -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS "
                "so their INFO lines reach the log (PERF003-PERF005 read them)"]
    return []


def environment(options: LiveOptions) -> dict[str, str]:
    """What the run adds to the environment: NCCL's INFO lines (with the topology and paths
    print, GRAPH) and the isolation settings."""
    added = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH,ENV,TUNING"}  # TUNING: the algorithm per size
    added.update(ISOLATION.get(options.isolate or "", {}))
    return added


# ---- running it -----------------------------------------------------------------------------------
@dataclass
class Finished:
    exit_code: int | None
    timed_out: bool = False
    interrupted: bool = False
    seconds: float = 0.0
    truncated: dict = field(default_factory=dict)  # file name -> {"kept": bytes, "read": bytes}
    left_running: list[str] = field(default_factory=list)  # "pid N (name)" that could not be stopped
    held_open: bool = False  # its pipes were still open --grace seconds after it ended

    def notes(self, grace: float) -> list[str]:
        """What the report and stderr say about the run itself: cut outputs, processes left."""
        notes = [f"{name}: output over the {OUTPUT_CAP}-byte cap: the first {size['kept']} bytes kept, "
                 f"{size['read']} read" for name, size in self.truncated.items()]
        if self.held_open:
            notes.append(f"a process the run left kept its output open: reading stopped {grace:g} s after it ended")
        if self.left_running:
            notes.append(f"could not stop {', '.join(self.left_running)}")
        return notes


def run_process(argv: list[str], env: dict[str, str], stdout_path: Path, stderr_path: Path, timeout: float,
                grace: float, on_line=None) -> Finished:
    from topolint.commands._processes import Stream, run

    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        streams = {stdout_path.name: Stream(OUTPUT_CAP, out, on_line), stderr_path.name: Stream(OUTPUT_CAP, err)}
        try:
            ran = run(argv, env={**os.environ, **env}, stdout=streams[stdout_path.name],
                      stderr=streams[stderr_path.name], timeout=timeout, grace=grace, terminate=True)
        except OSError as exc:
            raise LiveError(f"{argv[0]}: cannot start ({exc.strerror or exc})") from None
    stopped = ran.timed_out or ran.interrupted
    return Finished(None if stopped else ran.exit_code, ran.timed_out, ran.interrupted, ran.seconds,
                    {name: s.report() for name, s in streams.items() if s.truncated}, ran.left_running,
                    ran.held_open)


# ---- judging what it printed ------------------------------------------------------------------------
def _failure_lines(stdout_path: Path, stderr_path: Path) -> list[str]:
    lines = []
    for path in (stdout_path, stderr_path):
        text = path.read_text(encoding="utf-8", errors="replace")
        lines += [line.strip() for line in text.splitlines()
                  if " Test NCCL failure" in line or " Test CUDA failure" in line or "NCCL WARN" in line]
    return lines[:5]


def _tail(path: Path, lines: int = 5) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])


def explain_failure(finished: Finished, argv: list[str], options: LiveOptions, stdout_path: Path,
                    stderr_path: Path) -> None:
    """Raise LiveError for a run that did not finish with results."""
    name = Path(argv[0]).name
    where = f"raw output in {stdout_path.parent}"
    left = "".join(f"; {note}" for note in finished.notes(options.grace))
    if finished.timed_out:
        raise LiveError(f"{name} ran past --timeout {options.timeout:g} s: its process group got SIGTERM, then "
                        f"SIGKILL after {options.grace:g} s ({where}){left}")
    if finished.interrupted:
        raise LiveError(f"interrupted: {name}'s process group got SIGTERM, then SIGKILL after {options.grace:g} s "
                        f"({where}){left}")
    if finished.exit_code != 0:
        failures = _failure_lines(stdout_path, stderr_path)
        said = "; ".join(failures) if failures else _tail(stderr_path) or _tail(stdout_path) or "no output"
        raise LiveError(f"{name} exited with status {finished.exit_code}: {said} ({where}){left}")


def _measured_runs(stdout_path: Path):
    from topolint.inputs.source import InputError, SourceFile
    from topolint.parsers.nccl_tests import parse_nccl_tests

    text = stdout_path.read_text(encoding="utf-8", errors="replace")
    try:
        measured = parse_nccl_tests(SourceFile(str(stdout_path), text))
    except InputError as exc:
        raise LiveError(f"the output is not nccl-tests output: {exc.path}:{exc.line}: {exc.message}") from None
    if not any(run.rows for run in measured.runs):
        raise LiveError(f"the output has no nccl-tests result rows ({_tail(stdout_path, 3) or 'empty'}); raw output in "
                        f"{stdout_path.parent}")
    return measured


def judge(options: LiveOptions, stdout_path: Path, stderr_path: Path):
    from topolint.commands.check import CheckOptions, run_check
    from topolint.inputs.sniff import sniff

    _measured_runs(stdout_path)
    paths = [str(stdout_path)]
    if sniff(stderr_path.read_text(encoding="utf-8", errors="replace")):
        paths.append(str(stderr_path))  # NCCL_DEBUG_FILE or a launcher may put the INFO lines here
    return run_check(CheckOptions(paths=paths, node="live", topology=options.topology, cache=False,
                                  nccl_version=options.nccl_version, topology_findings=True))


def run_live(options: LiveOptions) -> LiveResult:
    if options.collective not in COLLECTIVES:
        raise LiveError(f"--collective {options.collective!r}: one of {', '.join(COLLECTIVES)}")
    binary = find_binary(f"{options.collective}_perf", options.nccl_tests)
    argv = build_argv(binary, options)
    env = environment(options)
    out = options.output_dir
    out.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = out / STDOUT_NAME, out / STDERR_NAME
    finished = run_process(argv, env, stdout_path, stderr_path, options.timeout, options.grace,
                           _row_progress(options.progress))
    explain_failure(finished, argv, options, stdout_path, stderr_path)
    check = judge(options, stdout_path, stderr_path)
    verdicts = [n.split(" ", 1)[1] for n in check.notes if n.startswith(("PERF001 ", "PERF002 ")) and "plateau" in n]
    measurements, notes = measure(options, stdout_path, stderr_path)
    run_notes = finished.notes(options.grace)
    (out / REPORT_NAME).write_text("".join(f"# warning: {n}\n" for n in run_notes)
                                   + "".join(f"# {v}\n" for v in verdicts + measurement_lines(measurements))
                                   + check.render("full"), encoding="utf-8")
    return LiveResult(argv, env, out, check, verdicts, launcher_warnings(options) + run_notes, measurements, notes)


def measure(options: LiveOptions, stdout_path: Path, stderr_path: Path) -> tuple[list, list[str]]:
    """Each measured size against the estimate of --topology for the algorithm and protocol NCCL
    used (estimate/expected.py): the same estimate ``topolint estimate`` gives on that node."""
    from topolint.checks._measured import COLLECTIVES as ESTIMATE_NAMES
    from topolint.checks._measured import model_options, shape_of, version_in_force
    from topolint.estimate import EstimateError
    from topolint.estimate.expected import Measurement, expected
    from topolint.estimate.topology import has_topology
    from topolint.model.nccl_version import NEWEST, NcclVersion

    measured = _measured_runs(stdout_path)
    log = _joined_log(measured, stderr_path)
    nodes = [n for n in _topology_nodes(options.topology) if has_topology(n)] if options.topology else []
    found, notes = [], []
    for run in measured.runs:
        shape = shape_of(run, log, measured)
        collective = ESTIMATE_NAMES.get(run.collective or "") or shape.collective or "allreduce"
        rows = [(r.size, max(p.busbw for p in r.placements() if p.busbw is not None)) for r in run.rows
                if r.size > 0 and any(p.busbw is not None for p in r.placements())]
        hosts = 1 if shape.single_host else len(shape.hosts) or None
        if not nodes or hosts is None or not shape.ranks_per_host:
            why = ("no --topology with an NCCL XML or topo -m matrix" if not nodes
                   else "the run's hosts and ranks per host are not known")
            notes.append(f"{run.collective or 'nccl-tests'}: measured sizes not judged against an estimate: {why}")
            found += [Measurement(collective, size, busbw, None, None, None, None, True, why) for size, busbw in rows]
            continue
        try:
            version, _ = version_in_force(log, NcclVersion.parse(options.nccl_version or NEWEST))
            result = expected(nodes[:1], hosts, shape.ranks_per_host, collective, rows, log, version,
                              model_options(shape))
        except EstimateError as exc:
            notes.append(f"{run.collective or 'nccl-tests'}: no estimate: {exc}")
            continue
        found += result.measurements
        notes += [n for n in result.notes if "assumed" in n or n.startswith(("the log shows 0 NVLS", "NVLink SHARP"))]
    return found, list(dict.fromkeys(notes))


def _joined_log(measured, stderr_path: Path):
    """The INFO lines of stdout and, when NCCL_DEBUG_FILE or a launcher put them there, stderr."""
    from types import SimpleNamespace

    from topolint.inputs.source import InputError, SourceFile
    from topolint.parsers.nccl_log import parse_nccl_log

    logs = [measured.log]
    try:
        logs.append(parse_nccl_log(SourceFile(str(stderr_path), stderr_path.read_text(encoding="utf-8",
                                                                                     errors="replace"))).log)
    except InputError:
        pass
    joined = SimpleNamespace(**{name: [item for log in logs for item in getattr(log, name)]
                                for name in ("tuning", "counts", "settings", "versions", "comms", "topology")})
    return joined


def measurement_lines(measurements: list) -> list[str]:
    """'8 GiB: busbw 469 GB/s, 99% of 475.6 (nvls/Simple, assumed)' per judged size."""
    from topolint.checks.busbw_plateau import size_label

    lines = []
    for m in measurements:
        if m.expected_busbw_GBps is None:
            continue
        lines.append(f"{m.collective} {size_label(m.size)}: busbw {m.busbw_GBps:g} GB/s, {100 * m.ratio:.0f}% of "
                     f"{m.expected_busbw_GBps:.1f} expected ({m.algorithm}/{m.protocol}"
                     f"{', assumed' if m.assumed else ', as the log says'})")
    return lines


def _row_progress(progress):
    """Per result row as it arrives: '  8 GiB  busbw 362.7 GB/s'."""
    if progress is None:
        return None
    from topolint.checks.busbw_plateau import size_label
    from topolint.model.facts import Location
    from topolint.parsers.nccl_log import strip_launcher_tag
    from topolint.parsers.nccl_tests import ROW_START, parse_row

    here = Location.model_construct(path="-", line=1, column=0)

    def show(line: str) -> None:
        text, _ = strip_launcher_tag(line)
        if not ROW_START.match(text):
            return
        row = parse_row(text.split(), here)
        if row is not None:
            best = max(p.busbw for p in row.placements())
            progress(f"  {size_label(row.size):>9s}  busbw {best:g} GB/s")
    return show


# ---- command line ---------------------------------------------------------------------------------
def options_from_args(args) -> LiveOptions:
    from topolint.model.numbers import positive_real

    timeout = positive_real(str(args.timeout)) if args.timeout is not None else 900.0
    if timeout is None:
        raise LiveError(f"--timeout {args.timeout!r}: expected seconds, e.g. 600")
    progress = (lambda text: print(text, file=sys.stderr, flush=True)) if sys.stderr.isatty() else None
    return LiveOptions(topology=args.topology, nccl_tests=args.nccl_tests, launcher=args.launcher,
                       collective=args.collective, sizes=args.sizes, timeout=timeout, grace=args.grace,
                       isolate=args.isolate, gpus=args.gpus, output_dir=args.output, nccl_version=args.nccl_version,
                       progress=progress)


def cli(args) -> int:
    try:
        options = options_from_args(args)
        result = run_live(options)
    except LiveError as exc:
        print(f"topolint live: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"topolint live: ran {shlex.join(result.argv)}", file=sys.stderr)
    if result.environment:
        print(f"topolint live: with {' '.join(f'{k}={v}' for k, v in result.environment.items())}", file=sys.stderr)
    for warning in result.warnings:
        print(f"topolint live: warning: {warning}", file=sys.stderr)
    for verdict in result.verdicts[:4]:
        print(f"topolint live: {verdict}", file=sys.stderr)
    if len(result.verdicts) > 4:
        print(f"topolint live: ... and {len(result.verdicts) - 4} more runs", file=sys.stderr)
    if not result.verdicts:
        print("topolint live: no expectation for this shape (give --topology with a node's NCCL topology dump)",
              file=sys.stderr)
    for line in measurement_lines(result.measurements):
        print(f"topolint live: {line}", file=sys.stderr)
    for note in result.measurement_notes:
        print(f"topolint live: expectation: {note}", file=sys.stderr)
    print(f"topolint live: raw output and report in {result.output_dir}", file=sys.stderr)
    sys.stdout.write(render(result, args.format))
    return result.check.exit_code()


def render(result: LiveResult, fmt: str) -> str:
    """The check report; in JSON with what was compared, size by size ("measurements",
    docs/json-output.schema.json)."""
    text = result.check.render(fmt)
    if fmt != "json":
        return text
    import json

    from topolint.reporters._json_text import dumps_indented

    document = json.loads(text)
    document["measurements"] = [m.as_dict() for m in result.measurements]
    return dumps_indented(document) + "\n"
