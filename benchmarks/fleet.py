"""Fleet benchmark: the cross-node stage on fleets of node bundles and of inventories (docs/fleet.md).

    python benchmarks/fleet.py --nodes 1024 4096

Generates N node bundles of a healthy HGX H100 node (8 GPUs on NVSwitch, 8 ConnectX-7 400 Gb/s
InfiniBand ports, two sockets: an NCCL topology dump, ``lspci -vvv``, ``numactl -H``, ``ibstat``,
``nvidia-smi nvlink -s``, the version outputs and an ``nccl.conf``, as ``topolint collect`` writes
them), with differences planted on a few nodes (``FAULTS``: a port at 200 Gb/s, a GPU missing, an
NVLink down, a NIC in a x8 slot, an older driver, another OFED, older firmware, nvidia_peermem not
loaded, another NCCL_IB_HCA, a port missing). Then for each size:

* bundles: ``topolint check FLEET --no-cache --format json -o /dev/null`` (topolint's default job
  count; ``--jobs N`` passes one on): wall-clock and CPU seconds, and the peak memory of the run's
  processes summed (PSS, sampled from /proc every 20 ms);
* inventories: the same on the folder ``topolint check FLEET --inventory INV/`` wrote;
* counted work, as tests/test_linear_cost.py counts it (Python calls, under a profiler hook), of
  the whole run and of the fleet's share of it (building the inventories, the cluster stage,
  grouping the findings across nodes), in-process with one job.

It prints the figures of each size and, for two sizes, the ratios (work must grow within 4.4x
from 1,024 to 4,096 nodes). ``generate()`` also makes the fleets of tests/test_fleet.py.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure this checkout's topolint, in-process and in the subprocesses
sys.path.insert(0, str(ROOT / "benchmarks"))  # scale.py: its lspci block writer
GPUS = 8
DRIVER, CUDA, OFED, FIRMWARE, KERNEL = "550.54.15", "12.4", "MLNX_OFED_LINUX-23.10-1.1.9.0", "28.39.1002", \
    "5.15.0-105-generic"

# Planted differences: name -> (what changes, the findings it must give: (code, entity below the node)).
FAULTS = {
    "slow_port": ("mlx5_3 runs at 200 Gb/s", [("FLEET001", "nic/mlx5_3:1#rate_gbps")]),
    "gpu_missing": ("GPU 0000:5a:00.0 fell off the bus", [("FLEET001", "system#gpu_count")]),
    "nvlink_down": ("GPU 0000:1a:00.0 has 6 of its 18 NVLinks inactive",
                    [("FLEET001", "gpu/0000:1a:00.0#nvlinks"), ("NVL002", "gpu/0000:1a:00.0")]),
    "narrow_nic": ("mlx5_5 trained at x8", [("FLEET001", "nic/mlx5_5:1#pcie_width"), ("PCIE001", "pci/0000:9b:00.0")]),
    "old_driver": ("driver 535.104.05", [("FLEET003", "system#driver")]),
    "other_ofed": ("OFED 5.8", [("FLEET003", "system#ofed")]),
    "old_firmware": ("mlx5_1 firmware 28.36.1010", [("FLEET003", "nic/mlx5_1:1#firmware")]),
    "no_peermem": ("nvidia_peermem not loaded", [("FLEET003", "system#nvidia_peermem")]),
    "other_hca_list": ("NCCL_IB_HCA=mlx5_0,mlx5_1", [("FLEET003", "env/NCCL_IB_HCA")]),
    "port_missing": ("mlx5_7 absent", [("FLEET001", "system#nic_ports")]),
}


def fault_nodes(nodes: int) -> dict[int, str]:
    """Node index -> the fault planted on it: spread over the fleet, one fault a node."""
    names = list(FAULTS)
    if nodes < 3 * len(names):
        raise ValueError(f"a fleet with every fault needs at least {3 * len(names)} nodes")
    return {(index * 2 + 1) * nodes // (2 * len(names)): name for index, name in enumerate(names)}


def _gpu_bus(g: int) -> int:
    cpu, switch, k = g // 4, g // 2 % 2, g % 2
    return 0x10 + cpu * 0x80 + switch * 0x40 + 8 + k * 2


def topo_dump(node: int, fault: str | None) -> str:
    import scale  # its HGX dump, with this fleet's faults

    return scale.topo_xml(node, nvlinks=lambda g: 12 if fault == "nvlink_down" and g == 1 else 18,
                          nic_speed=lambda g: 200000 if fault == "slow_port" and g == 3 else 400000,
                          gpu_present=lambda g: not (fault == "gpu_missing" and g == 3),
                          nic_present=lambda g: not (fault == "port_missing" and g == 7))


def lspci(node: int, fault: str | None) -> str:
    import scale  # the lspci block writer of the scale benchmark

    out: list[str] = []
    switch_head = "PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0)"
    for cpu in range(2):
        for switch in range(2):
            top = 0x10 + cpu * 0x80 + switch * 0x40
            out += scale._lspci_device(f"0000:{top:02x}:00.0", switch_head, "Downstream Port (Slot+)", "32GT/s", 16,
                                       [f"\tBus: primary={top - 1:02x}, secondary={top + 8:02x}, "
                                        f"subordinate={top + 15:02x}, sec-latency=0",
                                        "\tCapabilities: [200 v1] Access Control Services",
                                        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd+ "
                                        "EgressCtrl- DirectTrans-"], "pcieport", cpu)
            for k in range(2):
                g = cpu * 4 + switch * 2 + k
                gbus = _gpu_bus(g)
                if not (fault == "gpu_missing" and g == 3):
                    out += scale._lspci_device(f"0000:{gbus:02x}:00.0", "3D controller [0302]: NVIDIA Corporation "
                                               "GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)", "Endpoint", "32GT/s",
                                               16, [], "nvidia", cpu)
                if not (fault == "port_missing" and g == 7):
                    narrow = 8 if fault == "narrow_nic" and g == 5 else None
                    out += scale._lspci_device(f"0000:{gbus + 1:02x}:00.0", "Infiniband controller [0207]: Mellanox "
                                               "Technologies MT2910 Family [ConnectX-7] [15b3:1021]", "Endpoint",
                                               "32GT/s", 16, [], "mlx5_core", cpu, narrow)
    return "\n".join(out)


def numactl() -> str:
    lines = ["available: 2 nodes (0-1)"]
    for index in range(2):
        cpus = " ".join(str(c) for c in range(index * 64, index * 64 + 64))
        lines += [f"node {index} cpus: {cpus}", f"node {index} size: 1031897 MB", f"node {index} free: 1000000 MB"]
    return "\n".join(lines + ["node distances:", "node   0   1", "  0:  10  21", "  1:  21  10"]) + "\n"


def ibstat(node: int, fault: str | None) -> str:
    out = []
    for g in range(GPUS):
        if fault == "port_missing" and g == 7:
            continue
        firmware = "28.36.1010" if fault == "old_firmware" and g == 1 else FIRMWARE
        rate = 200 if fault == "slow_port" and g == 3 else 400
        guid = f"0x{0xa088c20300000000 + node * 16 + g:016x}"
        out += [f"CA 'mlx5_{g}'", "\tCA type: MT4129", "\tNumber of ports: 1", f"\tFirmware version: {firmware}",
                "\tHardware version: 0", f"\tNode GUID: {guid}", f"\tSystem image GUID: {guid}", "\tPort 1:",
                "\t\tState: Active", "\t\tPhysical state: LinkUp", f"\t\tRate: {rate}", f"\t\tBase lid: {node * 8 + g + 1}",
                "\t\tLMC: 0", "\t\tSM lid: 1", "\t\tCapability mask: 0xa651e848", f"\t\tPort GUID: {guid}",
                "\t\tLink layer: InfiniBand"]
    return "\n".join(out) + "\n"


def nvlink_status(node: int, fault: str | None) -> str:
    out = []
    index = 0
    for g in range(GPUS):
        if fault == "gpu_missing" and g == 3:
            continue
        out.append(f"GPU {index}: NVIDIA H100 80GB HBM3 (UUID: GPU-{node:08x}-0000-0000-0000-{g:012x})")
        for link in range(18):
            down = fault == "nvlink_down" and g == 1 and link >= 12
            out.append(f"\t Link {link}: " + ("<inactive>" if down else "26.562 GB/s"))
        index += 1
    return "\n".join(out) + "\n"


def versions(fault: str | None) -> dict[str, str]:
    driver = "535.104.05" if fault == "old_driver" else DRIVER
    ofed = "MLNX_OFED_LINUX-5.8-4.1.5.0" if fault == "other_ofed" else OFED
    mlx = "5.8-4.1.5" if fault == "other_ofed" else "23.10-1.1.9"
    modules = ["nvidia_uvm 4653056 4 - Live 0x0000000000000000 (POE)",
               "nvidia_drm 122880 0 - Live 0x0000000000000000 (POE)",
               "nvidia 54362112 12 nvidia_uvm,nvidia_peermem, Live 0x0000000000000000 (POE)",
               "mlx5_ib 475136 0 - Live 0x0000000000000000 (OE)",
               "ib_uverbs 163840 2 nvidia_peermem,mlx5_ib, Live 0x0000000000000000 (OE)",
               "mlx5_core 2400256 1 mlx5_ib, Live 0x0000000000000000 (OE)",
               "ib_core 438272 8 mlx5_ib,ib_uverbs, Live 0x0000000000000000 (OE)"]
    module_versions = [f"/sys/module/nvidia/version:{driver}", f"/sys/module/mlx5_core/version:{mlx}",
                       f"/sys/module/ib_core/version:{mlx}"]
    if fault != "no_peermem":
        modules.insert(3, "nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)")
        module_versions.insert(1, f"/sys/module/nvidia_peermem/version:{driver}")
    hca = "mlx5_0,mlx5_1" if fault == "other_hca_list" else "mlx5"
    return {
        "nvidia-driver-version.txt": f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Tue Mar  5 "
                                     "22:23:56 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n",
        "nvidia-smi-version.txt": f"NVIDIA-SMI version  : {driver}\nNVML version        : {driver.rsplit('.', 1)[0]}\n"
                                  f"DRIVER version      : {driver}\nCUDA Version        : {CUDA}\n",
        "ofed-info.txt": f"{ofed}:\n",
        "proc-version.txt": f"Linux version {KERNEL} (buildd@lcy02-amd64-007) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
                            f"11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024\n",
        "modules.txt": "\n".join(modules) + "\n",
        "module-versions.txt": "\n".join(module_versions) + "\n",
        "nccl.conf": f"NCCL_IB_HCA={hca}\nNCCL_IB_TIMEOUT=22\n",
    }


FORMATS = {"nccl-topo-dump.xml": ("nccl-topo-xml", ["all_reduce_perf", "-b", "8", "-e", "8", "-g", "8"]),
           "lspci-vvv.txt": ("lspci", ["lspci", "-vvv", "-D", "-nn"]), "numactl-H.txt": ("numactl", ["numactl", "-H"]),
           "ibstat.txt": ("ibstat", ["ibstat"]), "nvidia-smi-nvlink.txt": ("nvidia-smi-nvlink", ["nvidia-smi", "nvlink", "-s"]),
           "nvidia-driver-version.txt": ("nvidia-driver-version", ["cat", "/proc/driver/nvidia/version"]),
           "nvidia-smi-version.txt": ("nvidia-smi-version", ["nvidia-smi", "--version"]),
           "ofed-info.txt": ("ofed-info", ["ofed_info", "-s"]), "proc-version.txt": ("kernel-version", ["cat", "/proc/version"]),
           "modules.txt": ("kernel-modules", ["cat", "/proc/modules"]),
           "module-versions.txt": ("module-versions", ["grep", "-H", ".", "/sys/module/nvidia/version"]),
           "nccl.conf": ("nccl-conf", ["cat", "/etc/nccl.conf"])}


def manifest(host: str) -> str:
    rows = ",\n".join("    " + json.dumps({"file": name, "argv": argv, "status": "ok", "exit_code": 0, "seconds": 0.1,
                                            "format": fmt}) for name, (fmt, argv) in FORMATS.items())
    return (f'{{\n  "topolint_bundle": 1,\n  "host": "{host}",\n  "collected_at": "2026-12-01T09:00:00Z",\n'
            f'  "topolint_version": "0.1.0",\n  "tools": {{}},\n  "commands": [\n{rows}\n  ]\n}}\n')


def node_name(index: int) -> str:
    return f"gpu{index + 1:04d}"


def generate(root: Path, nodes: int, faults: bool = True) -> dict[str, str]:
    """Write ``nodes`` bundles into ``root``; the planted fault of each faulty node, by node name."""
    planted = fault_nodes(nodes) if faults else {}
    for index in range(nodes):
        fault = planted.get(index)
        folder = root / node_name(index)
        folder.mkdir(parents=True, exist_ok=True)
        files = {"nccl-topo-dump.xml": topo_dump(index, fault), "lspci-vvv.txt": lspci(index, fault),
                 "numactl-H.txt": numactl(), "ibstat.txt": ibstat(index, fault),
                 "nvidia-smi-nvlink.txt": nvlink_status(index, fault), **versions(fault),
                 "topolint-bundle.json": manifest(node_name(index))}
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
    return {node_name(index): fault for index, fault in planted.items()}


def expected_findings(planted: dict[str, str]) -> set[tuple[str, str]]:
    """(code, entity) of every finding the planted faults must give, and nothing else."""
    return {(code, f"{node}/{below}") for node, fault in planted.items() for code, below in FAULTS[fault][1]}


# ---- measuring ------------------------------------------------------------------------------------
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TOPOLINT_NO_CACHE")}
ENV["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([ENV["PYTHONPATH"]] if ENV.get("PYTHONPATH") else []))


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def timed_run(command: list[str], cwd: Path) -> dict:
    """Wall-clock and CPU seconds of a run, and the peak of its processes' summed PSS (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]

    def sample() -> None:
        while process.poll() is None:
            peak[0] = max(peak[0], sum(_pss_kib(pid) for pid in _tree(process.pid)))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = process.communicate()
    sampler.join()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode not in (0, 1) or b"Traceback" in stderr:
        sys.exit(f"{' '.join(command)} failed ({process.returncode}):\n{stderr.decode()[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall": wall, "cpu": cpu, "peak_mib": peak[0] / 1024}


def counted_work(paths: list[str]) -> tuple[int, int]:
    """Python calls of one in-process run (one job, no cache), counted as tests/test_linear_cost.py
    counts them: (the whole run, the fleet's share of it: building inventories, the cluster stage,
    grouping findings across nodes)."""
    from topolint.commands.check import CheckOptions, run_check
    from topolint.engine import node_groups, runner

    calls = [0, 0]
    depth = [0]

    def count(frame, event, arg):
        if event in ("call", "c_call"):
            calls[0] += 1
            if depth[0]:
                calls[1] += 1

    def inside(function):
        def wrapped(*args, **kwargs):
            depth[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapped

    saved = (runner._add_inventory, runner.run_cluster_checks, node_groups.group_across_nodes)
    runner._add_inventory, runner.run_cluster_checks = inside(saved[0]), inside(saved[1])
    node_groups.group_across_nodes = inside(saved[2])
    sys.setprofile(count)
    try:
        run_check(CheckOptions(paths=paths, cache=False, jobs=1, isolated=True))
    finally:
        sys.setprofile(None)
        runner._add_inventory, runner.run_cluster_checks, node_groups.group_across_nodes = saved
    return calls[0], calls[1]


def measure(root: Path, nodes: int, jobs: int | None, count: bool) -> dict:
    fleet, inventories = root / f"fleet{nodes}", root / f"inventories{nodes}"
    generate(fleet, nodes)
    base = [sys.executable, "-m", "topolint", "check", "--no-cache", "--isolated", "--format", "json", "-o", os.devnull]
    base += [] if jobs is None else ["--jobs", str(jobs)]
    subprocess.run(base + [str(fleet), "--inventory", str(inventories) + "/"], cwd=root, env=ENV, check=False,
                   capture_output=True)
    figures = {"bundles": timed_run(base + [str(fleet)], root),
               "inventories": timed_run(base + [str(inventories)], root)}
    if count:
        import gc

        gc.disable()  # as the command line runs
        figures["bundles"]["work"], figures["bundles"]["fleet_work"] = counted_work([str(fleet)])
        figures["inventories"]["work"], figures["inventories"]["fleet_work"] = counted_work([str(inventories)])
        gc.enable()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--jobs", type=int, default=None, help="pass --jobs N to topolint (default: its own default)")
    parser.add_argument("--no-count", action="store_true", help="skip the counted work (a profiled run is slow)")
    parser.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        results = {}
        for nodes in args.nodes:
            results[nodes] = measure(root, nodes, args.jobs, not args.no_count)
            for kind, figures in results[nodes].items():
                work = f", work {figures['work']:,} calls ({figures['fleet_work']:,} in the fleet's share)" \
                    if "work" in figures else ""
                print(f"nodes {nodes} {kind:<11} wall {figures['wall']:8.2f} s  cpu {figures['cpu']:8.2f} s  "
                      f"peak {figures['peak_mib']:7.0f} MiB (summed over processes){work}", flush=True)
        if len(args.nodes) == 2:
            small, large = args.nodes
            scale = large / small
            for kind in ("bundles", "inventories"):
                a, b = results[small][kind], results[large][kind]
                line = f"ratio {kind:<11} x{scale:g} nodes: wall {b['wall'] / a['wall']:.2f}, cpu {b['cpu'] / a['cpu']:.2f}, " \
                       f"peak {b['peak_mib'] / a['peak_mib']:.2f}"
                if "work" in a:
                    line += f", work {b['work'] / a['work']:.2f} (fleet's share {b['fleet_work'] / a['fleet_work']:.2f})"
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
