"""Fabric parsers: linear in their input. For each format, times the parser (in-process, median of
``--repeat`` runs) on a synthetic file of N units and of 10*N units, and on a file of the same size
made of one pathological line (a run of blanks, the shape that makes a backtracking regex
quadratic), and prints the raw times and the ratios. A linear parser shows a growth ratio near
10 and a pathological/normal ratio near 1.

    python benchmarks/fabric_parsers.py --units 2000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import growers  # noqa: E402  (the units tests/test_linear_cost.py grows inputs from)

from topolint.inputs.source import InputError, SourceFile  # noqa: E402
from topolint.parsers.registry import parse  # noqa: E402

UNITS = {  # format: (one unit, the start of a file that is one pathological line)
    "ibstat": (growers.ibstat_ca, "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState"),
    "ibv_devinfo": (growers.ibv_devinfo_hca, "hca_id:\tmlx5_0\n\ttransport:\tInfiniBand (0)\n\tx"),
    "ibdev2netdev": (growers.ibdev2netdev_line, "mlx5_0 port 1 ==>"),
    "show_gids": (growers.show_gids_row, "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a04"),
    "mlnx_qos": (growers.mlnx_qos_block, "Priority trust state: dscp\ntc"),
    "sysfs-dump": (growers.sysfs_line, "/sys/class/net/x/ecn/y:1\nz"),
    "ethtool": (growers.ethtool_block, "Settings for eth0:\n\tSpeed"),
    "ip-addr": (growers.ip_addr_link, "1: lo: <UP> mtu 1 state UP\n x"),
    "ip-route": (growers.ip_route_line, "default via 10.0.0.1 dev eth0\nx"),
    "mounts": (growers.mount_line, "a:/x /x nfs4 rw 0 0\nb"),
}


def timed(fmt: str, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            parse(fmt, SourceFile("bench.txt", text))
        except InputError:
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'format':14} {'N units':>10} {'10N units':>10} {'growth':>7} {'blank run':>10} {'patho/N':>8}")
    worst = 0.0
    for fmt, (unit, head) in UNITS.items():
        small = "".join(unit(i) for i in range(args.units))
        large = "".join(unit(i) for i in range(args.units * 10))
        patho = head + " " * (len(small) - len(head) - 2) + "b\n"
        t_small, t_large, t_patho = (timed(fmt, t, args.repeat) for t in (small, large, patho))
        growth, patho_ratio = t_large / t_small, t_patho / t_small
        worst = max(worst, growth / 10, patho_ratio)
        print(f"{fmt:14} {t_small * 1000:9.1f}ms {t_large * 1000:9.1f}ms {growth:7.1f} {t_patho * 1000:9.2f}ms "
              f"{patho_ratio:8.2f}")
    print(f"ratio {worst:.2f}  (worst of growth/10 and pathological/normal; ~1 or below is linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
