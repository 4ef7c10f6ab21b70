#!/usr/bin/env python3
"""Start-up cost of a config-only check: `topolint check` on one small env file, against
`python -c pass`, both as subprocesses, median of 11 runs each. The last line printed is the
ratio (goal: under 8). Run from the repository root: python benchmarks/startup.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 11
# As installed by pip, modules are byte-compiled; a sandbox's PYTHONDONTWRITEBYTECODE would
# otherwise charge topolint a compile of every module on every run.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# The checks run in a temporary folder: import this checkout's topolint, not an installed one.
ROOT = Path(__file__).resolve().parent.parent
ENV["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def median_seconds(command: list[str], cwd: Path) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=ENV)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "nccl.env").write_text("NCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME=ens5\nNCCL_IB_HCA=mlx5\n", encoding="utf-8")
        baseline = median_seconds([sys.executable, "-c", "pass"], cwd)
        command = [sys.executable, "-m", "topolint", "check", "nccl.env"]
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=ENV)
        if done.returncode not in (0, 1) or "Traceback" in done.stderr:
            print(done.stderr, file=sys.stderr)
            raise SystemExit(f"topolint check failed (exit {done.returncode}): nothing to measure")
        check = median_seconds(command, cwd)
    print(f"python -c pass: {baseline * 1000:.1f} ms (median of {RUNS})")
    print(f"topolint check nccl.env: {check * 1000:.1f} ms (median of {RUNS})")
    print(f"{check / baseline:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
