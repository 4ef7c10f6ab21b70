"""Parser cost at the size limit: CPU time and peak memory of each parser on a large input, and the
ratios to an input a quarter and a sixteenth of that size (linear cost: ratios near 4 and 16).

    python benchmarks/parsers.py                 # inputs of 4 MiB
    python benchmarks/parsers.py --mib 32        # at the size limit (inputs.source.MAX_INPUT_BYTES)

Inputs come from tests/growers.py, the growers tests/test_linear_cost.py uses: for every parser
in the registry, one valid input of n distinct units (and the shapes that were super-linear in
issue 7: affinity mask words, YAML list items, launcher settings, sibling XML elements). Each run
is a fresh subprocess, so one parser's memory does not count against the next. Prints raw CPU
times, the tracemalloc peak, the peak RSS of the child, and memory per input byte.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

_CHILD = r"""
import json, resource, sys, time, tracemalloc
sys.path[:0] = [{root!r}, {tests!r}]
from growers import GROWERS, sized
from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.registry import parse
grower, target, traced = GROWERS[int(sys.argv[1])], int(sys.argv[2]), sys.argv[3] == "1"
text = sized(grower.make, target)
try:
    parse(grower.fmt, SourceFile(path="warm", text=grower.make(1)))  # imports and lazy tables are not the parser's cost
except InputError:
    pass
def once():
    try:
        parse(grower.fmt, SourceFile(path="input", text=text))
        return "parsed"
    except InputError as exc:
        return "TL001: " + exc.message[:60]
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.process_time()  # CPU time: the machine may be shared
outcome = once()
seconds = time.process_time() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
peak = float("nan")
if traced:  # a second run for memory: tracemalloc slows allocation-heavy code many times
    tracemalloc.start()
    once()
    peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({{"bytes": len(text), "seconds": seconds, "peak": peak, "rss_growth": max(0, rss - rss_before),
                  "outcome": outcome}}))
"""


def measure(index: int, size: int, traced: bool = True) -> dict:
    code = _CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", code, str(index), str(size), "1" if traced else "0"],
                         capture_output=True, text=True,
                         timeout=1800, check=False)
    if out.returncode:
        return {"bytes": 0, "seconds": 0.0, "peak": 0, "rss_growth": 0, "outcome": "crashed: " + out.stderr.strip()[-80:]}
    return json.loads(out.stdout)


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main() -> None:
    from growers import GROWERS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=4.0, help="size of the largest input (default 4)")
    parser.add_argument("--only", default="", help="only these formats (comma-separated)")
    parser.add_argument("--skip", default="", help="not these formats (comma-separated)")
    parser.add_argument("--no-ratios", action="store_true", help="measure the largest input only")
    parser.add_argument("--rss-only", action="store_true", help="no tracemalloc run (RSS growth only; faster)")
    args = parser.parse_args()
    size = int(args.mib * 1024 * 1024)
    print(f"{'format':<18} {'input':<20} {'bytes':>10} {'seconds':>8} {'peak MB':>8} {'RSS+ MB':>8} {'peak/B':>6} "
          f"{'t x4':>5} {'t x16':>5} {'m x16':>5}  outcome")
    for index, grower in enumerate(GROWERS):
        names = {grower.fmt, grower.name}
        if (args.only and not names & set(args.only.split(","))) or names & set(args.skip.split(",")):
            continue
        big = measure(index, size, not args.rss_only)
        quarter, small = ({"seconds": float("nan"), "peak": float("nan")},) * 2 if args.no_ratios else (
            measure(index, size // d, not args.rss_only) for d in (4, 16))
        print(f"{grower.fmt:<18} {grower.name:<20} {big['bytes']:>10} {big['seconds']:>8.3f} {big['peak'] / 2**20:>8.1f} "
              f"{big['rss_growth'] / 2**20:>8.1f} {ratio(big['rss_growth'] if args.rss_only else big['peak'], big['bytes']):>6.1f} "
              f"{ratio(big['seconds'], quarter['seconds']):>5.1f} {ratio(big['seconds'], small['seconds']):>5.1f} "
              f"{ratio(big['peak'], small['peak']):>5.1f}  {big['outcome']}", flush=True)


if __name__ == "__main__":
    main()
