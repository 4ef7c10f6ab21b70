#!/usr/bin/env python3
"""Parser cost of nccl-tests output and NCCL logs: a synthetic NCCL_DEBUG=INFO log of 8 ranks per
host (channels, settings, paths print, other programs' lines) parsed at N and 2N lines, against a
floor that only splits the same text into lines. Prints raw times, then two ratios: parse/floor
(constant per line) and time(2N)/time(N) (2.0 for a linear parser; goal under 2.3).
Run from the repository root: python benchmarks/measured.py [--lines 200000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "standins"))

import nccl_output as o  # noqa: E402

from topolint.inputs.source import SourceFile  # noqa: E402
from topolint.parsers.nccl_log import parse_nccl_log  # noqa: E402
from topolint.parsers.nccl_tests import parse_nccl_tests  # noqa: E402


def synthetic_log(lines: int) -> str:
    block = o.init_lines("hgx01", range(8), 16, 2) + o.ring_channels("hgx01", range(8), "P2P/CUMEM/read")
    block += o.net_channels("hgx01", 0, 8, "IB", 0, True) + [
        o.info("hgx01", 0, 0, "NCCL_IB_GID_INDEX set by environment to 3."),
        o.info("hgx01", 0, 0, "GPU/0-18000 :GPU/0-18000 (0/5000.0/LOC) GPU/0-2a000 (2/370.8/NVL) CPU/0-0 (1/48.0/PHB)"),
        "[rank0]: step 120 loss 2.3141 lr 3.0e-4 (another program's line)",
    ]
    return "\n".join((block * (lines // len(block) + 1))[:lines]) + "\n"


def synthetic_table(rows: int) -> str:
    table = o.table([362.7] * 4).splitlines()
    head, body, foot = table[:18], table[18:22], table[22:]
    return "\n".join(head + (body * (rows // 4 + 1))[:rows] + foot) + "\n"


def best(function, text: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=200_000)
    lines = parser.parse_args().lines
    floor = lambda text: text.splitlines()  # noqa: E731
    log = lambda text: parse_nccl_log(SourceFile("log", text))  # noqa: E731
    tests = lambda text: parse_nccl_tests(SourceFile("tests", text))  # noqa: E731
    for name, make, parse in (("nccl-log", synthetic_log, log), ("nccl-tests", synthetic_table, tests)):
        small, large = make(lines), make(2 * lines)
        t_floor, t_small, t_large = best(floor, small), best(parse, small), best(parse, large)
        print(f"{name}: {lines} lines: floor {t_floor * 1e3:.1f} ms, parse {t_small * 1e3:.1f} ms; "
              f"{2 * lines} lines: parse {t_large * 1e3:.1f} ms")
        print(f"{name}: parse/floor {t_small / t_floor:.1f}  time(2N)/time(N) {t_large / t_small:.2f}")


if __name__ == "__main__":
    main()
