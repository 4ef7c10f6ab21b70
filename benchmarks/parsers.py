"""Parser cost at the size limit: time and peak memory of each parser on a large input, and the
ratios to an input a quarter and a sixteenth of that size (linear cost: ratios near 4 and 16).

    python benchmarks/parsers.py                 # inputs of 4 MiB
    python benchmarks/parsers.py --mib 32        # at the size limit (inputs.source.MAX_INPUT_BYTES)

Inputs grow as tests/test_linear_cost.py grows them (the shapes that were super-linear in issue
7: affinity mask words, YAML list items, launcher settings, sibling XML elements) and, for every
other registered format with a fixture or corpus sample, by repeating the sample. Each run is a
fresh subprocess, so one parser's memory does not count against the next. Prints raw times.
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
import json, sys, time, tracemalloc
sys.path[:0] = [{root!r}, {tests!r}]
from test_linear_cost import GROWN, _repeated
from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.registry import parse
fmt, index, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
make = _repeated(fmt) if index < 0 else GROWN[index][1]
n = 1
while len(make(n)) < target:
    n *= 2
low, high = n // 2, n
while high - low > 1 and len(make(high)) > target:
    mid = (low + high) // 2
    low, high = (mid, high) if len(make(mid)) <= target else (low, mid)
text = make(max(low, 1))
source = SourceFile(path="input", text=text)
tracemalloc.start()
start = time.perf_counter()
try:
    parse(fmt, source)
    outcome = "parsed"
except InputError as exc:
    outcome = "TL001: " + exc.message[:60]
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({{"bytes": len(text), "seconds": seconds, "peak": peak, "outcome": outcome}}))
"""


def measure(fmt: str, index: int, size: int) -> dict:
    code = _CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", code, fmt, str(index), str(size)], capture_output=True, text=True,
                         timeout=1800, check=False)
    if out.returncode:
        return {"bytes": 0, "seconds": 0.0, "peak": 0, "outcome": "crashed: " + out.stderr.strip()[-80:]}
    return json.loads(out.stdout)


def cases() -> list[tuple[str, str, int]]:
    from fuzzing import samples
    from test_linear_cost import GROWN, OWN

    rows = [(fmt, make.__name__.strip("_"), index) for index, (fmt, make, _) in enumerate(GROWN)]
    rows += [(fmt, "repeated sample", -1) for fmt in sorted(set(samples()) - OWN)]
    return rows


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=4.0, help="size of the largest input (default 4)")
    parser.add_argument("--only", default=None, help="only this format")
    args = parser.parse_args()
    size = int(args.mib * 1024 * 1024)
    print(f"{'format':<20} {'input':<16} {'bytes':>10} {'seconds':>8} {'peak MB':>8} {'t x4':>6} {'t x16':>6} "
          f"{'mem x16':>7}  outcome")
    for fmt, shape, index in cases():
        if args.only and fmt != args.only:
            continue
        big, quarter, small = (measure(fmt, index, size // d) for d in (1, 4, 16))
        print(f"{fmt:<20} {shape:<16} {big['bytes']:>10} {big['seconds']:>8.3f} {big['peak'] / 2**20:>8.1f} "
              f"{ratio(big['seconds'], quarter['seconds']):>6.1f} {ratio(big['seconds'], small['seconds']):>6.1f} "
              f"{ratio(big['peak'], small['peak']):>7.1f}  {big['outcome']}", flush=True)


if __name__ == "__main__":
    main()
