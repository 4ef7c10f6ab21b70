"""Estimate benchmark: `topolint estimate` against `topolint check` on the same input.

    python benchmarks/estimate.py [--repeat 3] [--nodes 64]

Times, as subprocesses (median of ``--repeat`` runs, warm page cache):

* check: ``topolint check FILE --no-cache --format json -o /dev/null`` (what a user runs anyway)
* estimate, one size, one node; a 64-node estimate; a 1K..16G sweep (25 sizes); a cluster folder of
  ``--nodes`` identical node folders; a training-step sweep over 1..64 nodes,

on fixtures/estimate/hgx-h100-8gpu-8x400g.xml (8 H100, 8 NICs), and prints each raw time and its
ratio to check, ending with ``ratio R`` for the single estimate.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "estimate" / "hgx-h100-8gpu-8x400g.xml"


def timed(args: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "topolint", *args], cwd=ROOT, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={"TOPOLINT_NO_CACHE": "1",
                                                                                 "PATH": "/usr/bin:/bin"})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "cluster"
        for n in range(args.nodes):
            (cluster / f"node{n:03d}").mkdir(parents=True)
            shutil.copy(FIXTURE, cluster / f"node{n:03d}" / "topo.xml")
        floor = timed(["check", str(FIXTURE), "--no-cache", "--format", "json", "-o", "/dev/null"], args.repeat)
        runs = {
            "estimate, 1 node, 8G": ["estimate", str(FIXTURE)],
            "estimate, 64 nodes, 8G": ["estimate", str(FIXTURE), "--nodes", "64"],
            "estimate, 64 nodes, 1K..16G": ["estimate", str(FIXTURE), "--nodes", "64", "--sizes", "1K..16G"],
            f"estimate, cluster of {args.nodes} folders": ["estimate", str(cluster)],
            "estimate --model-params 7B --sweep 1..64": ["estimate", str(FIXTURE), "--model-params", "7B",
                                                         "--compute-ms", "500", "--sweep", "1..64"],
        }
        print(f"check (floor)                              {floor * 1000:8.0f} ms")
        first = None
        for name, command in runs.items():
            seconds = timed(command, args.repeat)
            first = first or seconds
            print(f"{name:<42} {seconds * 1000:8.0f} ms  x{seconds / floor:.2f}")
    print(f"ratio {first / floor:.2f}")


if __name__ == "__main__":
    main()
