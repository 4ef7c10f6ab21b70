"""Scale benchmark: topolint on a synthetic cluster against a floor that only reads the files.

    python benchmarks/scale.py --nodes 1024

Generates N node folders, each with an NCCL topology dump and an ``nvidia-smi topo -m`` matrix
of a realistic 8-GPU / 8-NIC HGX node (two sockets, four PCIe switches, NV18 through NVSwitch),
a few nodes with faults so rules have work to do. Each folder is a node bundle (docs/bundles.md:
``topolint-bundle.json`` plus ``lspci -vvv``, ``numactl -H``, ``dmesg``, ``/proc/cmdline`` and
``systemd-detect-virt`` outputs of the same machine); ``--plain`` leaves out the host facts. Times, as subprocesses with a warm page cache,
the median of ``--repeat`` runs of

* topolint: ``topolint check DIR --select ALL --preview --format json -o /dev/null`` (``--jobs N``
  passes that on; topolint's default starts up to 2 workers for runs of 256 nodes or more, on
  Linux: ``--jobs 1`` measures one process)
* floor: a Python process that reads the same files, parses every XML with lxml and splits
  every matrix into lines,

prints the time of each stage of topolint (parse, build, rules, report, measured in-process),
the CPU seconds (user + system) of the runs too (steadier than wall-clock time on a shared machine),
the cold ratio (``--no-cache``: every node parsed and checked) and ends with the line
``ratio R`` (topolint with a warm result cache / floor).

    python benchmarks/scale.py --nodes 2000 --memory --jobs 1,2,4,default

``--memory`` instead measures one cold run (``--no-cache``) for each job count: the peak of the
summed PSS (each shared page counted once, split between the processes that share it) and of
the summed RSS over topolint and its workers, sampled every 20 ms from /proc (Linux), and each
process's own peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure this checkout's topolint, in-process and in the subprocesses
GPUS, NICS = 8, 8


def topo_xml(node: int, nvlinks=None, nic_speed=None, gpu_present=None, nic_present=None) -> str:
    """The node's NCCL dump; the optional functions of the GPU number (0-7) change it (benchmarks/fleet.py):
    ``nvlinks(g)`` its NVLink count (0: none), ``nic_speed(g)`` its NIC's Mb/s, ``gpu_present(g)`` and
    ``nic_present(g)`` whether the GPU and its NIC are there (a GPU after a missing one gets the next dev)."""
    nvlinks = nvlinks or (lambda g: 0 if node % 97 == 5 and g == 3 else 18)
    out = ['<system version="1">']
    dev = 0
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
                count = nvlinks(g)
                nvlink = f'\n        <nvlink target="fffffff:ff:ff.0" count="{count}" tclass="0x068000"/>' if count else ""
                if gpu_present is None or gpu_present(g):
                    out.append(f'      <pci busid="0000:{gbus:02x}:00.0" class="0x030200" vendor="0x10de" '
                               f'device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">')
                    out.append(f'        <gpu dev="{dev}" sm="90" rank="{dev}" gdr="1">{nvlink}\n        </gpu>')
                    out.append('      </pci>')
                    dev += 1
                if nic_present is not None and not nic_present(g):
                    continue
                nbus = gbus + 1
                speed = nic_speed(g) if nic_speed else 400000
                out.append(f'      <pci busid="0000:{nbus:02x}:00.0" class="0x020700" vendor="0x15b3" '
                           f'device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">')
                out.append(f'        <nic>\n          <net name="mlx5_{g}" dev="{g}" speed="{speed}" port="1" '
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


def _lspci_device(address: str, head: str, port: str, speed: str, width: int, extra: list[str], driver: str,
                  numa: int, sta_width: int | None = None) -> list[str]:
    """One ``lspci -vvv -D -nn`` block with the lines a real one has around the link fields."""
    sta_width = sta_width or width
    tag = "(ok)" if sta_width == width else "(downgraded)"
    return [f"{address} {head}",
            "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+",
            "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-",
            "\tLatency: 0, Cache Line Size: 64 bytes", f"\tNUMA node: {numa}", *extra,
            "\tCapabilities: [40] Power Management version 3",
            "\t\tFlags: PMEClk- DSI- D1- D2- AuxCurrent=0mA PME(D0-,D1-,D2-,D3hot-,D3cold-)",
            f"\tCapabilities: [60] Express (v2) {port}, MSI 00",
            "\t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0, Latency L0s <64ns, L1 <1us",
            "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0.000W",
            "\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+",
            f"\t\tLnkCap:\tPort #0, Speed {speed}, Width x{width}, ASPM L1, Exit Latency L1 <4us",
            "\t\t\tClockPM+ Surprise- LLActRep- BwNot- ASPMOptComp+",
            f"\t\tLnkSta:\tSpeed {speed} (ok), Width x{sta_width} {tag}",
            "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
            "\t\tDevCap2: Completion Timeout: Range AB, TimeoutDis+ NROPrPrP- LTR+",
            "\t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Via message, ExtFmt- EETLPPrefix-",
            f"\t\tLnkCap2: Supported Link Speeds: 2.5-{speed}, Crosslink- Retimer+ 2Retimers+ DRS-",
            "\tCapabilities: [100 v1] Advanced Error Reporting",
            "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
            f"\tKernel driver in use: {driver}", ""]


def lspci_vvv(node: int) -> str:
    """The switches, GPUs and NICs of topo_xml(node), as ``lspci -vvv -D -nn`` prints them."""
    out: list[str] = []
    switch_head = "PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0)"
    for cpu in range(2):
        for switch in range(2):
            top = 0x10 + cpu * 0x80 + switch * 0x40
            acs = "ReqRedir+ CmpltRedir+" if node % 89 == 7 and cpu == switch == 0 else "ReqRedir- CmpltRedir-"
            out += _lspci_device(f"0000:{top:02x}:00.0", switch_head, "Downstream Port (Slot+)", "32GT/s", 16,
                                 [f"\tBus: primary={top - 1:02x}, secondary={top + 8:02x}, subordinate={top + 15:02x}, "
                                  "sec-latency=0",
                                  "\tCapabilities: [200 v1] Access Control Services",
                                  f"\t\tACSCtl:\tSrcValid+ TransBlk- {acs} UpstreamFwd+ EgressCtrl- DirectTrans-"],
                                 "pcieport", cpu)
            for k in range(2):
                g = cpu * 4 + switch * 2 + k
                gbus = top + 8 + k * 2
                narrow = 8 if node % 53 == 3 and g == 1 else None
                out += _lspci_device(f"0000:{gbus:02x}:00.0", "3D controller [0302]: NVIDIA Corporation GH100 "
                                     "[H100 SXM5 80GB] [10de:2330] (rev a1)", "Endpoint", "32GT/s", 16, [],
                                     "nvidia", cpu, narrow)
                out += _lspci_device(f"0000:{gbus + 1:02x}:00.0", "Infiniband controller [0207]: Mellanox "
                                     "Technologies MT2910 Family [ConnectX-7] [15b3:1021]", "Endpoint", "32GT/s", 16,
                                     [], "mlx5_core", cpu)
    return "\n".join(out)


def numactl(node: int) -> str:
    cpus = [" ".join(map(str, [*range(0, 56), *range(112, 168)])), " ".join(map(str, [*range(56, 112), *range(168, 224)]))]
    lines = ["available: 2 nodes (0-1)"]
    for index, listed in enumerate(cpus):
        lines += [f"node {index} cpus: {listed}", f"node {index} size: 1031897 MB", f"node {index} free: 1000000 MB"]
    return "\n".join(lines + ["node distances:", "node   0   1", "  0:  10  21", "  1:  21  10"]) + "\n"


def dmesg(node: int) -> str:
    lines = ["[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP",
             "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/sda2 ro intel_iommu=on iommu=pt",
             "[    0.000000] DMI: Dell Inc. PowerEdge XE9680/0GCMJK, BIOS 1.6.10 09/14/2023"]
    lines += [f"[    0.{i:06d}] ACPI: SRAT: Node {i % 2} PXM {i % 2} [mem 0x{i:08x}-0x{i + 1:08x}]" for i in range(300)]
    lines += ["[    1.512345] DMAR: IOMMU enabled",
              "[    1.612345] iommu: Default domain type: " + ("Translated" if node % 71 == 9 else "Passthrough")]
    lines += [f"[    2.{i:06d}] mlx5_core 0000:{0x19 + i:02x}:00.0: firmware version: 28.39.1002" for i in range(200)]
    return "\n".join(lines) + "\n"


BUNDLE_FILES = [("nccl-topo-dump.xml", "nccl-topo-xml", ["all_reduce_perf", "-g", "8"]),
                ("nvidia-smi-topo.txt", "nvidia-smi-topo", ["nvidia-smi", "topo", "-m"]),
                ("lspci-vvv.txt", "lspci", ["lspci", "-vvv", "-D", "-nn"]),
                ("numactl-H.txt", "numactl", ["numactl", "-H"]),
                ("dmesg.txt", "dmesg", ["dmesg"]),
                ("cmdline.txt", "cmdline", ["cat", "/proc/cmdline"]),
                ("systemd-detect-virt.txt", "virt", ["systemd-detect-virt"])]


def bundle_manifest(node: int) -> str:
    import json

    rows = ",\n".join("    " + json.dumps({"file": f, "argv": argv, "status": "ok", "exit_code": 0, "seconds": 0.1,
                                             "format": fmt}) for f, fmt, argv in BUNDLE_FILES)
    return (f'{{\n  "topolint_bundle": 1,\n  "host": "node{node:04d}",\n  "collected_at": "2026-12-01T09:00:00Z",\n'
            f'  "topolint_version": "0.1.0",\n  "tools": {{}},\n  "commands": [\n{rows}\n  ]\n}}\n')


def generate(root: Path, nodes: int, plain: bool = False) -> None:
    for n in range(nodes):
        folder = root / f"node{n:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        files = {"nvidia-smi-topo.txt": topo_matrix(n)}
        if plain:
            files["topo.xml"] = topo_xml(n)
        else:
            files.update({"nccl-topo-dump.xml": topo_xml(n), "lspci-vvv.txt": lspci_vvv(n), "numactl-H.txt": numactl(n),
                          "dmesg.txt": dmesg(n), "cmdline.txt": "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/sda2 "
                          "ro intel_iommu=on iommu=pt\n", "systemd-detect-virt.txt": "none\n",
                          "topolint-bundle.json": bundle_manifest(n)})
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")


FLOOR = """
import json, os, sys
from lxml import etree
root = sys.argv[1]
for node in sorted(os.listdir(root)):
    for name in sorted(os.listdir(os.path.join(root, node))):
        data = open(os.path.join(root, node, name), "rb").read()
        if name.endswith(".xml"):
            etree.fromstring(data)
        elif name.endswith(".json"):
            json.loads(data)
        else:
            data.decode("utf-8").splitlines()
"""


# As installed by pip, a package's modules are byte-compiled; a sandbox that sets
# PYTHONDONTWRITEBYTECODE would otherwise charge topolint a compile of every module per run.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TOPOLINT_NO_CACHE")}
ENV["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([ENV["PYTHONPATH"]] if ENV.get("PYTHONPATH") else []))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _once(command: list[str], cwd: Path) -> tuple[float, float]:
    start, start_cpu = time.perf_counter(), _children_cpu()
    result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=cwd, env=ENV)
    if result.returncode not in (0, 1) or "Traceback" in result.stderr or "No module named" in result.stderr:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return time.perf_counter() - start, _children_cpu() - start_cpu


def timed(commands: list[list[str]], repeat: int, cwd: Path) -> list[tuple[float, float]]:
    """Median wall-clock and median CPU (user + system) seconds of ``repeat`` runs of each command.
    The commands take turns, one run each per round, so a machine that slows down or speeds up
    meanwhile moves every median alike and the ratios stay comparable."""
    for command in commands:
        subprocess.run(command, check=False, capture_output=True, cwd=cwd, env=ENV)  # page cache, imports
    runs: list[list[tuple[float, float]]] = [[] for _ in commands]
    for _ in range(repeat):
        for index, command in enumerate(commands):
            runs[index].append(_once(command, cwd))
    return [(statistics.median(t for t, _ in r), statistics.median(c for _, c in r)) for r in runs]


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


def _tree(root_pid: int) -> list[int]:
    """root_pid and its descendants, from /proc/*/stat."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [root_pid], [root_pid]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found.extend(frontier)
    return found


def _rollup(pid: int) -> tuple[int, int]:
    """(PSS, RSS) bytes of one process, or (0, 0) once it is gone."""
    values = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                name, _, rest = line.partition(":")
                if name in ("Pss", "Rss"):
                    values[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError):
        return 0, 0
    return values.get("Pss", 0), values.get("Rss", 0)


def memory_run(command: list[str], cwd: Path) -> dict:
    """Peak summed PSS and RSS over the process tree of ``command``, and its peak process count."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak_pss = peak_rss = processes = 0
    own: dict[int, int] = {}
    while process.poll() is None:
        pids = _tree(process.pid)
        figures = [(pid, *_rollup(pid)) for pid in pids]
        peak_pss = max(peak_pss, sum(pss for _, pss, _ in figures))
        peak_rss = max(peak_rss, sum(rss for _, _, rss in figures))
        processes = max(processes, sum(1 for _, _, rss in figures if rss))
        for pid, _, rss in figures:
            own[pid] = max(own.get(pid, 0), rss)
        time.sleep(0.02)
    return {"pss": peak_pss, "rss": peak_rss, "processes": processes, "exit": process.returncode,
            "largest": max(own.values(), default=0)}


def memory_main(args) -> int:
    counts = (args.jobs or "default").split(",")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "cluster"
        generate(root, args.nodes, args.plain)
        print(f"nodes {args.nodes}{' (plain)' if args.plain else ' (node bundles)'}: peak over topolint and its workers "
              f"(check --no-cache, sampled every 20 ms)")
        for jobs in counts:
            lint = [sys.executable, "-m", "topolint", "check", str(root), "--select", "ALL", "--preview", "--no-cache",
                    "--format", "json", "-o", "/dev/null"] + ([] if jobs == "default" else ["--jobs", jobs])
            start = time.perf_counter()
            row = memory_run(lint, root.parent)
            print(f"--jobs {jobs:<8} processes {row['processes']:>2}  summed PSS {row['pss'] / 2**20:8.1f} MB  "
                  f"summed RSS {row['rss'] / 2**20:8.1f} MB  largest process RSS {row['largest'] / 2**20:7.1f} MB  "
                  f"exit {row['exit']}  {time.perf_counter() - start:6.1f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    parser.add_argument("--plain", action="store_true", help="a dump and a matrix per node, no node bundles")
    parser.add_argument("--jobs", default=None,
                        help="pass --jobs N to topolint (default: its own default); with --memory a list: 1,2,default")
    parser.add_argument("--memory", action="store_true", help="peak memory over the workers instead of times")
    args = parser.parse_args(argv)
    if args.memory:
        return memory_main(args)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "cluster"
        generate(root, args.nodes, args.plain)
        lint = [sys.executable, "-m", "topolint", "check", str(root), "--select", "ALL", "--preview",
                "--format", "json", "-o", "/dev/null"] + ([] if args.jobs is None else ["--jobs", str(args.jobs)])
        floor = [sys.executable, "-c", FLOOR, str(root)]
        work = root.parent  # the result cache (.topolint_cache) goes beside the cluster
        # warm: the first, untimed run of ``lint`` fills the result cache; cold runs neither read nor write it
        (cold_time, cold_cpu), (lint_time, lint_cpu), (floor_time, floor_cpu) = timed(
            [lint + ["--no-cache"], lint, floor], args.repeat, work)
        parts = stages(root)
    files = sum(1 for _ in root.glob("*/*")) if args.keep else (2 if args.plain else len(BUNDLE_FILES) + 1) * args.nodes
    jobs = "default" if args.jobs is None else args.jobs
    print(f"nodes {args.nodes} ({files} files{', plain' if args.plain else ', node bundles'}), "
          f"findings {parts.pop('findings')}, topolint --jobs {jobs} (stages: in-process, one job)")
    for name, seconds in parts.items():
        print(f"stage {name:<7} {seconds:8.3f} s")
    print(f"topolint {cold_time:8.3f} s (median of {args.repeat}, --no-cache: every node parsed and checked)")
    print(f"topolint {lint_time:8.3f} s (median of {args.repeat}, warm result cache)")
    print(f"floor    {floor_time:8.3f} s (median of {args.repeat})")
    # On a shared machine, CPU seconds vary less with the load than wall-clock ones.
    print(f"cpu      cold {cold_cpu:.3f} s, warm {lint_cpu:.3f} s, floor {floor_cpu:.3f} s: "
          f"cold ratio {cold_cpu / floor_cpu:.2f}, ratio {lint_cpu / floor_cpu:.2f}")
    print(f"cold ratio {cold_time / floor_time:.2f}")
    print(f"ratio {lint_time / floor_time:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
