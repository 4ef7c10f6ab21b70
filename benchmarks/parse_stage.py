"""Parse-stage benchmark: ``collect()`` on a cluster of node bundles, per parser, against a floor.

    python benchmarks/parse_stage.py --nodes 1024
    python benchmarks/parse_stage.py --folder DIR       # an existing cluster folder

Generates the cluster benchmarks/scale.py generates (or reads ``--folder``), then, in ``--repeat``
fresh processes (imports excluded, the cyclic GC as the interpreter sets it), times

* collect: ``topolint.inputs.collect.collect([DIR])``, the whole parse stage (reading, sniffing,
  bundle manifests, every parser, node assembly), and each parser's part of it in the same run
  (``registry.parse`` timed per format: these include the GC pauses its allocations trigger);
* floor: the same files read, every XML parsed with lxml, the manifests with json, the rest split
  into lines (scale.py's floor, in-process).

Prints the medians, wall-clock and CPU seconds (CPU varies less on a shared machine), and ends with
``parse ratio R`` (collect / floor, wall-clock).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

_CHILD = r"""
import collections, json, sys, time
sys.path.insert(0, {root!r})
from lxml import etree  # imported before timing, as collect() imports it on its first XML
import topolint.inputs.collect as collect_module
from topolint.parsers import registry

folder = sys.argv[1]
parse, per_format = registry.parse, collections.defaultdict(lambda: [0.0, 0.0])
def timed_parse(fmt, source):
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        return parse(fmt, source)
    finally:
        per_format[fmt][0] += time.perf_counter() - wall
        per_format[fmt][1] += time.process_time() - cpu
collect_module.parse = timed_parse
wall, cpu = time.perf_counter(), time.process_time()
collection = collect_module.collect([folder])
out = {{"collect": [time.perf_counter() - wall, time.process_time() - cpu], "nodes": len(collection.nodes)}}
del collection
floor = compile({floor!r}, "floor", "exec")
sys.argv = ["floor", folder]
wall, cpu = time.perf_counter(), time.process_time()
exec(floor, {{"__name__": "floor"}})
out["floor"] = [time.perf_counter() - wall, time.process_time() - cpu]
out["parsers"] = dict(per_format)
print(json.dumps(out))
"""


def run_child(folder: Path) -> dict:
    from scale import FLOOR

    code = _CHILD.format(root=str(ROOT), floor=FLOOR)
    result = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"benchmark child failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def medians(pairs: list[list[float]]) -> tuple[float, float]:
    """Median wall-clock and median CPU seconds of (wall, cpu) pairs."""
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--folder", type=Path, help="an existing cluster folder (no generation)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            from scale import generate

            folder = Path(tmp) / "cluster"
            generate(folder, args.nodes)
        runs = [run_child(folder) for _ in range(args.repeat)]
    parsers = {fmt: medians([run["parsers"].get(fmt, [0.0, 0.0]) for run in runs])
               for fmt in {fmt for run in runs for fmt in run["parsers"]}}
    print(f"nodes {runs[0]['nodes']}, medians of {args.repeat} runs (wall s, cpu s)")
    for fmt, (wall, cpu) in sorted(parsers.items(), key=lambda item: (-item[1][0], item[0])):
        print(f"parser {fmt:<16} {wall:8.3f} {cpu:8.3f}")
    collect_wall, collect_cpu = medians([run["collect"] for run in runs])
    floor_wall, floor_cpu = medians([run["floor"] for run in runs])
    print(f"collect {collect_wall:24.3f} {collect_cpu:8.3f}")
    print(f"floor   {floor_wall:24.3f} {floor_cpu:8.3f}")
    print(f"cpu parse ratio {collect_cpu / floor_cpu:.2f}")
    print(f"parse ratio {collect_wall / floor_wall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
