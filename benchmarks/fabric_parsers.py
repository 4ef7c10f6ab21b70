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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topolint.inputs.source import InputError, SourceFile  # noqa: E402
from topolint.parsers.registry import parse  # noqa: E402


def _ibstat(i: int) -> str:
    return (f"CA 'mlx5_{i}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.2048\n"
            f"\tSystem image GUID: 0x{i:016x}\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            "\t\tRate: 400\n\t\tBase lid: 12\n\t\tLink layer: InfiniBand\n")


def _ibv_devinfo(i: int) -> str:
    return (f"hca_id:\tmlx5_{i}\n\ttransport:\t\t\tInfiniBand (0)\n\tvendor_part_id:\t\t\t4129\n\t\tport:\t1\n"
            "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t4096 (5)\n"
            "\t\t\tlink_layer:\t\tEthernet\n")


UNITS = {
    "ibstat": (_ibstat, "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState"),
    "ibv_devinfo": (_ibv_devinfo, "hca_id:\tmlx5_0\n\ttransport:\tInfiniBand (0)\n\tx"),
    "ibdev2netdev": (lambda i: f"mlx5_{i} port 1 ==> ens{i}f0np0 (Up)\n", "mlx5_0 port 1 ==>"),
    "show_gids": (lambda i: f"mlx5_{i}\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a04\t192.168.10.4  \tv2\tens{i}\n",
                  "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a04"),
    "mlnx_qos": (lambda i: f"$ mlnx_qos -i ens{i}\nPriority trust state: dscp\nPFC configuration:\n"
                           "\tpriority 0 1 2 3 4 5 6 7\n\tenabled  0 0 0 1 0 0 0 0\n", "Priority trust state: dscp\ntc"),
    "sysfs-dump": (lambda i: f"/sys/class/net/ens{i}/ecn/roce_np/enable/3:1\n", "/sys/class/net/x/ecn/y:1\nz"),
    "ethtool": (lambda i: f"Settings for ens{i}:\n\tSpeed: 400000Mb/s\n\tLanes: 8\n\tDuplex: Full\n\tLink detected: yes\n",
                "Settings for eth0:\n\tSpeed"),
    "ip-addr": (lambda i: f"{i + 1}: ens{i}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP\n"
                          f"    inet 10.{i // 250}.{i % 250}.4/24 scope global ens{i}\n", "1: lo: <UP> mtu 1 state UP\n x"),
    "ip-route": (lambda i: f"10.{i // 250}.{i % 250}.0/24 dev ens{i} proto kernel scope link src 10.0.0.4\n",
                 "default via 10.0.0.1 dev eth0\nx"),
    "mounts": (lambda i: f"10.0.{i // 250}.{i % 250}:/d{i} /mnt/d{i} nfs4 rw,vers=4.1,clientaddr=10.0.0.4,"
                         f"addr=10.0.{i // 250}.{i % 250} 0 0\n", "a:/x /x nfs4 rw 0 0\nb"),
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
