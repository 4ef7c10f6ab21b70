"""A job's host order read twice: what reading a lazy ``Hosts`` (model/hostlist.py) again costs.

    python benchmarks/hostlists.py              # SLURM_JOB_NODELIST of 1 MiB
    python benchmarks/hostlists.py --mib 4

A parsed SLURM_JOB_NODELIST keeps its hosts as the expression (memory bounded by the input), and
every reader expands it again: the parse counts it, FLEET002's node order walks it, its mapping
walks it once more. Per shape (the hosts written out, as the tests/growers.py grower; ranges of
8), prints CPU seconds of the parse, of the parse with ``node_order``, and of a whole run, how
many times the expression was walked by iter_hosts (by the parse with the node order, by the run: the parse's count is another), and the ratios (parse + node order over parse; whole run
over parse). Best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _ranges(n: int) -> str:
    """n hosts as ranges of 8 (``gpu[00000-00007],gpu[00008-00015]`` ...): 1 MiB names 466k hosts."""
    names = ",".join(f"gpu[{i:05d}-{min(i + 7, n - 1):05d}]" for i in range(0, n, 8))
    return f"SLURM_JOB_ID=42\nSLURM_JOB_NODELIST={names}\nSLURM_TASKS_PER_NODE=8(x{n})\n"


def _ranges_sized(target: int) -> str:
    """``_ranges`` of at most ``target`` bytes (tests/growers.py sized's power fit does not fit
    its first sizes, where the other variables weigh most)."""
    n = target // 2
    while len(_ranges(n)) > target:
        n = n * 19 // 20
    return _ranges(n)


def _best(repeat: int, work) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    from growers import _slurm_env, sized

    import topolint
    from topolint.fleet.rank_order import node_order
    from topolint.inputs.source import SourceFile
    from topolint.model import hostlist
    from topolint.parsers.registry import parse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=1.0, help="size of the environment dump (default 1)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    expansions = 0
    walk = hostlist.iter_hosts

    def counted(expression, budget=None):
        nonlocal expansions
        expansions += len(expression) > 1024  # the nodelist's, not the short ones
        return walk(expression, budget)

    hostlist.iter_hosts = counted
    folder = Path(tempfile.mkdtemp())
    print(f"{'shape':<10} {'bytes':>9} {'hosts':>8} {'parse s':>8} {'+order s':>8} {'run s':>7} {'passes':>6} {'run passes':>10} "
          f"{'order/parse':>11} {'run/parse':>9}")
    for name, make in (("written", _slurm_env), ("ranges", _ranges)):
        text = sized(make, int(args.mib * 2**20)) if make is _slurm_env else _ranges_sized(int(args.mib * 2**20))
        source = SourceFile(path="slurm_env.txt", text=text)
        parse("slurm-env", SourceFile(path="warm", text=make(2)))
        path = folder / f"{name}.slurm_env.txt"
        path.write_text(text)
        topolint.check([str(path)], isolated=True)  # warm: imports and lazy tables
        parsed = _best(args.repeat, lambda: parse("slurm-env", source))
        ordered = _best(args.repeat, lambda: node_order(parse("slurm-env", source)))
        expansions = 0
        hosts = len(node_order(parse("slurm-env", source)))
        ordered_passes, expansions = expansions, 0
        run = _best(1, lambda: topolint.check([str(path)], isolated=True))
        print(f"{name:<10} {len(text):>9} {hosts:>8} {parsed:>8.3f} {ordered:>8.3f} {run:>7.3f} {ordered_passes:>6} {expansions:>10} "
              f"{ordered / parsed:>11.2f} {run / parsed:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
