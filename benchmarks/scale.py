"""Scale benchmark: topolint on a synthetic cluster against a floor that only reads the files.

    python benchmarks/scale.py --nodes 1024

Generates N node folders, each with an NCCL topology dump and an ``nvidia-smi topo -m`` matrix
of a realistic 8-GPU / 8-NIC HGX node (two sockets, four PCIe switches, NV18 through NVSwitch),
a few nodes with faults so rules have work to do. Times, as subprocesses with a warm page cache,
the median of ``--repeat`` runs of

* topolint: ``topolint check DIR --select ALL --preview --format json -o /dev/null``
* floor: a Python process that reads the same files, parses every XML with lxml and splits
  every matrix into lines,

prints the time of each stage of topolint (parse, build, rules, report, measured in-process),
the cold ratio (``--no-cache``: every node parsed and checked) and ends with the line
``ratio R`` (topolint with a warm result cache / floor).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GPUS, NICS = 8, 8


def topo_xml(node: int) -> str:
    out = ['<system version="1">']
    for cpu in range(2):
        affinity = "ffffffff,ffffffff,00000000,00000000" if cpu else "00000000,00000000,ffffffff,ffffffff"
        out.append(f'  <cpu host_hash="0x{node:08x}" numaid="{cpu}" affinity="{affinity}" arch="x86_64" '
                   f'vendor="GenuineIntel" familyid="6" modelid="143">')
        for switch in range(2):
            top = 0x10 + cpu * 0x80 + switch * 0x40
            out.append(f'    <pci busid="0000:{top:02x}:00.0" class="0x060400" vendor="0x1000" device="0xc030" '
                       f'link_speed="32.0 GT/s PCIe" link_width="16">')
            for k in range(2):
                g = cpu * 4 + switch * 2 + k
                gbus = top + 8 + k * 2
                nvlink = "" if (node % 97 == 5 and g == 3) else (
                    '\n        <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>')
                out.append(f'      <pci busid="0000:{gbus:02x}:00.0" class="0x030200" vendor="0x10de" '
                           f'device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">')
                out.append(f'        <gpu dev="{g}" sm="90" rank="{g}" gdr="1">{nvlink}\n        </gpu>')
                out.append('      </pci>')
                nbus = gbus + 1
                out.append(f'      <pci busid="0000:{nbus:02x}:00.0" class="0x020700" vendor="0x15b3" '
                           f'device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">')
                out.append(f'        <nic>\n          <net name="mlx5_{g}" dev="{g}" speed="400000" port="1" '
                           f'latency="0.000000" guid="0x{node:04x}{g:02x}" maxconn="131072" gdr="1"/>\n        </nic>')
                out.append('      </pci>')
            out.append('    </pci>')
        out.append('  </cpu>')
    out.append('</system>')
    return "\n".join(out) + "\n"


def topo_matrix(node: int) -> str:
    labels = [f"GPU{i}" for i in range(GPUS)] + [f"NIC{i}" for i in range(NICS)]
    extra = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    lines = ["\t" + "\t".join(labels + extra)]

    def rel(a: int, b: int) -> str:
        if a == b:
            return " X "
        ga, gb = a < GPUS, b < GPUS
        ia, ib = a % GPUS, b % GPUS
        if ga and gb:
            return "SYS" if (node % 97 == 5 and 3 in (ia, ib)) else "NV18"
        if ia // 2 == ib // 2:
            return "PXB" if ia != ib else "PIX"
        return "NODE" if ia // 4 == ib // 4 else "SYS"

    for a, label in enumerate(labels):
        cells = [rel(a, b) for b in range(len(labels))]
        if a < GPUS:
            socket = a // 4
            cells += ["0-55,112-167" if socket == 0 else "56-111,168-223", str(socket), "", "N/A"]
        else:
            cells += ["", "", "", ""]
        lines.append("\t".join([label] + cells))
    legend = ["", "Legend:", "", "  X    = Self",
              "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
              "  NV#  = Connection traversing a bonded set of # NVLinks", "", "NIC Legend:", ""]
    legend += [f"  NIC{i}: mlx5_{i}" for i in range(NICS)]
    return "\n".join(lines + legend) + "\n"


def generate(root: Path, nodes: int) -> None:
    for n in range(nodes):
        folder = root / f"node{n:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "topo.xml").write_text(topo_xml(n), encoding="utf-8")
        (folder / "nvidia-smi-topo.txt").write_text(topo_matrix(n), encoding="utf-8")


FLOOR = """
import os, sys
from lxml import etree
root = sys.argv[1]
for node in sorted(os.listdir(root)):
    for name in sorted(os.listdir(os.path.join(root, node))):
        data = open(os.path.join(root, node, name), "rb").read()
        if name.endswith(".xml"):
            etree.fromstring(data)
        else:
            data.decode("utf-8").splitlines()
"""


# As installed by pip, a package's modules are byte-compiled; a sandbox that sets
# PYTHONDONTWRITEBYTECODE would otherwise charge topolint a compile of every module per run.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TOPOLINT_NO_CACHE")}


def timed(command: list[str], repeat: int, cwd: Path) -> float:
    subprocess.run(command, check=False, capture_output=True, cwd=cwd, env=ENV)  # warm page cache, imports
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=cwd, env=ENV)
        times.append(time.perf_counter() - start)
        if result.returncode not in (0, 1):
            sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return statistics.median(times)


def stages(root: Path) -> dict[str, float]:
    """The same run in-process, timed per stage (import time is excluded)."""
    from topolint.engine import selection
    from topolint.engine.rule import load_rules
    from topolint.engine.runner import RunOptions, run
    from topolint.inputs.collect import collect
    from topolint.model.nccl_version import NEWEST, NcclVersion
    from topolint.reporters import Report, render

    out: dict[str, float] = {}
    start = time.perf_counter()
    collection = collect([str(root)])
    out["parse"] = time.perf_counter() - start
    rules = load_rules()
    chosen = selection.Selection(select=["ALL"], extend_select=[], ignore=[], preview=True).enabled(rules)
    start = time.perf_counter()
    for node in collection.nodes:
        node.available()
        for matrix in node.matrices:
            from topolint.model.matrix import MatrixView, bus_ids

            MatrixView(matrix).socket_groups
            bus_ids(node, matrix)
    out["build"] = time.perf_counter() - start
    start = time.perf_counter()
    result = run(rules, collection, RunOptions(nccl_version=NcclVersion.parse(NEWEST)))
    out["rules"] = time.perf_counter() - start
    start = time.perf_counter()
    findings = selection.apply(result.findings, chosen)
    sources = {p: s for node in collection.nodes for p, s in node.sources.items()}
    render("json", Report(findings=findings, rules=[r for r in rules if r.code in chosen], sources=sources,
                          project_root=Path.cwd(), nccl_version=NEWEST, unreadable=False))
    out["report"] = time.perf_counter() - start
    out["findings"] = len(findings)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "cluster"
        generate(root, args.nodes)
        lint = [sys.executable, "-m", "topolint", "check", str(root), "--select", "ALL", "--preview",
                "--format", "json", "-o", "/dev/null"]
        floor = [sys.executable, "-c", FLOOR, str(root)]
        work = root.parent  # the result cache (.topolint_cache) goes beside the cluster
        cold_time = timed(lint + ["--no-cache"], args.repeat, work)
        lint_time = timed(lint, args.repeat, work)  # warm: the first run filled the result cache
        floor_time = timed(floor, args.repeat, work)
        parts = stages(root)
    print(f"nodes {args.nodes} ({args.nodes * 2} files), findings {parts.pop('findings')}")
    for name, seconds in parts.items():
        print(f"stage {name:<7} {seconds:8.3f} s")
    print(f"topolint {cold_time:8.3f} s (median of {args.repeat}, --no-cache: every node parsed and checked)")
    print(f"topolint {lint_time:8.3f} s (median of {args.repeat}, warm result cache)")
    print(f"floor    {floor_time:8.3f} s (median of {args.repeat})")
    print(f"cold ratio {cold_time / floor_time:.2f}")
    print(f"ratio {lint_time / floor_time:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
