"""Rules stage benchmark: ``engine.runner.run()`` over a synthetic cluster, per rule, against the
scale benchmark's floor.

    python benchmarks/rules_stage.py --nodes 1024

Generates the node bundles of benchmarks/scale.py (or reads ``--cluster DIR``), collects them
in-process (not timed), imports the check modules (not timed: start-up is benchmarks/startup.py's),
then times ``run()`` ``--repeat`` times, each with the tables shared across nodes emptied first
(NCCL's paths, accepted loads, digests, matrix answers), so every repeat is a cold run of the rules.
The cycle collector is off as ``topolint check`` runs (cli.py); ``--gc`` leaves it on.

Prints the best repeat's wall-clock and CPU seconds, the time per node, the seconds of each rule
code (in-process, from the best repeat), the floor (a process that reads the files, parses the XML
with lxml and splits the text into lines; median of ``--repeat``) and ends with ``ratio R``: the
rules stage's CPU seconds over the floor's.
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/scale.py: the cluster, the floor
import scale  # after the path that finds it


def _forget_shared_tables() -> None:
    """Empty what nodes share (those of this checkout, or of an older one the script is copied to)."""
    import importlib

    for module, table in (("topolint.model.system", "_PATHS"), ("topolint.model.nccl_graph", "_ACCEPTED"),
                          ("topolint.model.nccl_graph", "_DIGESTS"), ("topolint.checks._memo", "_ACROSS")):
        try:
            getattr(importlib.import_module(module), table).clear()
        except (ImportError, AttributeError):
            pass


def timed_runs(root: Path, repeat: int, keep_gc: bool) -> tuple[float, float, dict[str, float], int, int]:
    """(wall, CPU, seconds per rule code, findings, nodes) of the best of ``repeat`` cold runs."""
    from topolint.engine import runner
    from topolint.engine.rule import load_rules
    from topolint.inputs.collect import collect
    from topolint.model.nccl_version import NEWEST, NcclVersion

    collection = collect([str(root)])
    rules = load_rules()
    runner.prepare(rules)  # imports the check modules
    per_rule: collections.Counter = collections.Counter()
    check = runner._hits

    def timed_hits(rule, *args):
        start = time.perf_counter()
        try:
            return check(rule, *args)
        finally:
            per_rule[rule.code] += time.perf_counter() - start

    runner._hits = timed_hits
    best = None
    try:
        for _ in range(repeat):
            _forget_shared_tables()
            per_rule.clear()
            collecting = gc.isenabled()
            if not keep_gc:
                gc.disable()
            start, start_cpu = time.perf_counter(), time.process_time()
            result = runner.run(rules, collection, runner.RunOptions(nccl_version=NcclVersion.parse(NEWEST)))
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            if collecting:
                gc.enable()
            if best is None or cpu < best[1]:
                best = (wall, cpu, dict(per_rule), len(result.findings), len(collection.nodes))
    finally:
        runner._hits = check
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cluster", type=Path, help="a cluster folder to read instead of generating one")
    parser.add_argument("--gc", action="store_true", help="leave the cycle collector on")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.cluster or Path(tmp) / "cluster"
        if args.cluster is None:
            scale.generate(root, args.nodes)
        wall, cpu, per_rule, findings, nodes = timed_runs(root, args.repeat, args.gc)
        [(floor_time, floor_cpu)] = scale.timed([[sys.executable, "-c", scale.FLOOR, str(root)]], args.repeat, root.parent)
    print(f"nodes {nodes}, findings {findings}, cycle collector {'on' if args.gc else 'off'}, best of {args.repeat}")
    print(f"rules    {wall:8.3f} s wall, {cpu:.3f} s CPU ({1000 * cpu / max(nodes, 1):.2f} ms CPU a node)")
    for code, seconds in sorted(per_rule.items(), key=lambda kv: (-kv[1], kv[0])):
        if seconds >= 0.005:
            print(f"rule {code:<8} {seconds:8.3f} s")
    print(f"floor    {floor_time:8.3f} s wall, {floor_cpu:.3f} s CPU (median of {args.repeat})")
    print(f"ratio {cpu / floor_cpu:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
