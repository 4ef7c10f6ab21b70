"""Memory per format: the peak above the idle process, per input byte, for every registered parser.

    python benchmarks/memory.py                  # inputs of 4 MiB, read and parsed
    python benchmarks/memory.py --mib 31         # near the 32 MiB size limit
    python benchmarks/memory.py --check          # a whole ``topolint check FILE`` instead of the parse
    python benchmarks/memory.py --only ip-addr,nccl-log

Issue 20 bounds memory by the input: at most 10 bytes above the idle process per input byte, for
every format. Inputs come from tests/growers.py (every grower of every format in
topolint/parsers/registry.py). Each measurement is a fresh subprocess: it imports topolint and
parses (or checks) a one-unit input of the same grower first, so imports, lazy tables and
caches are part of the idle process; then it reads the input from disk the way a run does
(``read_source``: the bytes, then the text) and parses or checks it. Printed, raw: the input's
bytes, the tracemalloc peak of the read and parse (a second run, since tracing slows
allocation), the peak RSS above idle (VmHWM, reset once idle through /proc/self/clear_refs, minus the RSS
then; ``ru_maxrss`` would keep the forking parent's size across exec), and each over
the input's bytes. The format's factor is the largest of its growers'.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

LIMIT = 10.0  # bytes above idle per input byte (issue 20, item 3)

_CHILD = r"""
import io, json, sys, tracemalloc
from contextlib import redirect_stderr, redirect_stdout
sys.path[:0] = [{root!r}, {tests!r}]
from growers import GROWERS
from topolint.inputs.source import InputError, SourceFile, read_source
from topolint.parsers.registry import parse
grower, path, mode, traced = GROWERS[int(sys.argv[1])], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(field + ":"))

def reset_peak():  # VmHWM from here on (ru_maxrss would keep the forking parent's size across exec)
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")

def once(file):
    if mode == "check":
        from topolint.cli import main
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = main(["check", file, "--no-cache", "--format", "concise", "--jobs", "1"])
        return f"exit {{code}}"
    try:
        parse(grower.fmt, read_source(file, file))
        return "parsed"
    except InputError as exc:
        return "TL001: " + exc.message[:60]

warm = path + ".warm"
with open(warm, "w", encoding="utf-8") as handle:
    handle.write(grower.make(1))
once(warm)
reset_peak()
idle = status("VmRSS")
outcome = once(path)
peak_rss = status("VmHWM")
traced_peak = None
if traced:
    tracemalloc.start()
    once(path)
    traced_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({{"idle": idle, "rss_above_idle": max(0, peak_rss - idle), "traced": traced_peak, "outcome": outcome}}))
"""


def measure(index: int, text: str, mode: str = "parse", traced: bool = True) -> dict:
    """One fresh process's figures for ``text`` as GROWERS[index]'s input."""
    code = _CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"))
    with tempfile.TemporaryDirectory(prefix="topolint-memory-") as folder:
        path = os.path.join(folder, "input")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        size = os.path.getsize(path)
        out = subprocess.run([sys.executable, "-c", code, str(index), path, mode, "1" if traced else "0"],
                             capture_output=True, text=True, timeout=1800, check=False, cwd=folder)
    if out.returncode:
        return {"bytes": size, "idle": 0, "rss_above_idle": 0, "traced": None,
                "outcome": "crashed: " + out.stderr.strip()[-100:]}
    return {"bytes": size, **json.loads(out.stdout)}


def factor(value, size: int) -> float:
    return value / size if value is not None and size else float("nan")


def main() -> int:
    from growers import GROWERS, sized

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=4.0, help="input size in MiB (default 4)")
    parser.add_argument("--check", action="store_true", help="measure a whole topolint check, not the parse")
    parser.add_argument("--rss-only", action="store_true", help="no tracemalloc run (faster)")
    parser.add_argument("--only", default="", help="only these formats or growers (comma-separated)")
    parser.add_argument("--skip", default="", help="not these formats or growers (comma-separated)")
    args = parser.parse_args()
    target = int(args.mib * 1024 * 1024)
    mode = "check" if args.check else "parse"
    print(f"mode {mode}, inputs of at most {target:,} bytes; limit {LIMIT:g} bytes above idle per input byte")
    print(f"{'format':<22} {'grower':<24} {'input bytes':>12} {'idle MB':>8} {'RSS+ MB':>8} {'RSS+/B':>7} "
          f"{'traced MB':>9} {'traced/B':>8}  outcome")
    worst: dict[str, tuple[float, int, str]] = {}
    for index, grower in enumerate(GROWERS):
        names = {grower.fmt, grower.name}
        if (args.only and not names & set(args.only.split(","))) or names & set(args.skip.split(",")):
            continue
        row = measure(index, sized(grower.make, target), mode, traced=not args.rss_only)
        rss_ratio, traced_ratio = factor(row["rss_above_idle"], row["bytes"]), factor(row["traced"], row["bytes"])
        traced_mb = f"{row['traced'] / 2**20:9.1f}" if row["traced"] is not None else f"{'-':>9}"
        print(f"{grower.fmt:<22} {grower.name:<24} {row['bytes']:>12,} {row['idle'] / 2**20:>8.1f} "
              f"{row['rss_above_idle'] / 2**20:>8.1f} {rss_ratio:>7.1f} {traced_mb} {traced_ratio:>8.1f}  "
              f"{row['outcome']}", flush=True)
        ratio = max(r for r in (rss_ratio, traced_ratio) if r == r) if row["bytes"] else float("nan")
        if grower.fmt not in worst or ratio > worst[grower.fmt][0]:
            worst[grower.fmt] = (ratio, row["bytes"], grower.name)
    print(f"\n{'format':<22} {'factor':>7} {'input bytes':>12}  grower (largest of RSS+/B and traced/B)")
    over = 0
    for fmt, (ratio, size, name) in sorted(worst.items()):
        over += ratio > LIMIT
        print(f"{fmt:<22} {ratio:>7.1f} {size:>12,}  {name}{'  OVER' if ratio > LIMIT else ''}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
