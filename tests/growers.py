"""Input growers for the linear-cost tests (tests/test_linear_cost.py) and the size-limit benchmark
(benchmarks/parsers.py): for every format in ``topolint.parsers.registry.PARSERS``, functions
``make(n) -> str`` that write ONE valid input holding ``n`` distinct units (devices, ports,
interfaces, result rows, settings, XML objects), so the parser does its full work at every size.

Concatenating a sample is no grower: ibstat and ibv_devinfo refuse a device listed twice, two
JSON documents are not one, and a repeated sample measures a parser's duplicate handling rather
than its work. Shapes that made the landed version super-linear (affinity mask words, YAML list
items, launcher settings, sibling XML elements, one long quoted value) have growers of their own.
Every generated value is synthetic; nothing here comes from the corpus.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import NamedTuple


class Grower(NamedTuple):
    fmt: str
    make: Callable[[int], str]
    base: int  # units at 1x: enough that fixed costs do not hide the per-unit cost
    # False where the units are one value's parts or lines a parser may skip (a mask's words, blank
    # lines before one word, one quoted value, dmesg lines past the kept IOMMU lines), not facts.
    distinct: bool = True

    @property
    def name(self) -> str:
        return self.make.__name__.strip("_")


def _joined(unit: Callable[[int], str], head: str = "", tail: str = "") -> Callable[[int], str]:
    return lambda n: head + "".join(unit(i) for i in range(n)) + tail


def _ipv4(i: int, first: int = 10) -> str:
    """A distinct, valid address for unit ``i`` (up to 2**24 units)."""
    return f"{first}.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"


# --- NCCL XML, nvidia-smi ---------------------------------------------------------------------

def _topology(n: int) -> str:
    cpus = "".join(
        f'  <cpu numaid="{i}" affinity="{",".join(["ffffffff"] * 8)}" arch="x86_64">\n'
        f'    <pci busid="{i % 256:04x}:{i // 256 % 256:02x}:00.0" class="0x030200" '
        f'link_speed="32.0 GT/s PCIe" link_width="16">\n'
        f'      <gpu dev="{i}" sm="90" rank="{i}" gdr="1"/>\n    </pci>\n  </cpu>\n'
        for i in range(n))
    return f'<system version="1">\n{cpus}</system>\n'


def _mask(n: int) -> str:
    words = ",".join(["0000ffff"] * n)
    return f'<system version="1">\n  <cpu numaid="0" affinity="{words}" arch="x86_64"/>\n</system>\n'


def _siblings(n: int) -> str:
    return '<system version="1">\n' + '  <cpu numaid="0" arch="x86_64"/>\n' * n + "</system>\n"


def _graph(n: int) -> str:
    channels = "".join(f'    <channel>\n      <net dev="{i % 8}"/>\n      <gpu dev="{i % 8}"/>\n'
                       f'      <gpu dev="{(i + 1) % 8}"/>\n      <net dev="{i % 8}"/>\n    </channel>\n'
                       for i in range(n))
    return (f'<graphs version="1">\n  <graph id="0" pattern="4" crossnic="0" nchannels="{n}" speedintra="20" '
            f'speedinter="20" latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="0">\n{channels}'
            "  </graph>\n</graphs>\n")


def _matrix(n: int) -> str:
    labels = [f"GPU{i}" for i in range(n)]
    head = "\t" + "\t".join(labels) + "\tCPU Affinity\tNUMA Affinity\n"
    rows = "".join(label + "\t" + "\t".join("X" if i == j else "NV12" for j in range(n)) + "\t0-47\t0\n"
                   for i, label in enumerate(labels))
    return head + rows


def _nvlink(n: int) -> str:
    return "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08x}-0000-0000-0000-000000000000)\n"
                   + "".join(f"\t Link {link}: 26.562 GB/s\n" for link in range(18)) for i in range(n))


# --- host facts (issue 9) ---------------------------------------------------------------------

def smi_q_gpu(i: int) -> str:
    """One GPU block of nvidia-smi -q with its Fabric section (a bus id of its own)."""
    bus = f"{i >> 8:08X}:{i & 255:02X}:00.0"
    return (f"GPU {bus}\n    Product Name                          : NVIDIA GB200\n"
            f"    GPU UUID                              : GPU-00000000-0000-4000-8000-{i:012x}\n"
            f"    PCI\n        Bus Id                            : {bus}\n    Fabric\n"
            f"        State                             : Completed\n        Status                            : Success\n"
            f"        CliqueId                          : {i % 32767}\n"
            f"        ClusterUUID                       : 7f3e9a21-4c5b-4d6e-9f80-{i:012x}\n"
            f"        Health\n            Summary                       : Healthy\n")


def smi_query_row(i: int) -> str:
    return f"{i}, NVIDIA GB200, {i >> 8:08X}:{i & 255:02X}:00.0, Completed, Success, {i % 32767}\n"


def _lspci(n: int) -> str:
    """lspci -vvv: n bridges, each with a GPU below it (parents come from the bus ranges)."""
    return "".join(
        f"0000:{i % 200:02x}:{i // 200 % 32:02x}.0 PCI bridge [0604]: Broadcom / LSI PEX890xx [1000:c030]\n"
        f"\tBus: primary=00, secondary={(i % 200) + 1:02x}, subordinate={(i % 200) + 1:02x}, sec-latency=0\n"
        "\tCapabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00\n"
        "\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM L1\n\t\tLnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
        f"0000:{(i % 200) + 1:02x}:00.0 3D controller [0302]: NVIDIA Corporation GH100 [10de:2330] (rev a1)\n"
        "\tNUMA node: 0\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16\n\t\tLnkSta:\tSpeed 2.5GT/s (downgraded)\n"
        for i in range(n))


def _lspci_excerpt(n: int) -> str:
    return "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n" * n


def _lspci_tree(n: int) -> str:
    return "-[0000:00]-+-00.0  Host bridge\n" + "".join(
        f"           +-{i % 32:02x}.{i % 8}-[{i % 256:02x}]--+-00.0  NVIDIA Corporation Device 2330\n"
        "           |            \\-00.1  NVIDIA Corporation Device 22a3\n" for i in range(n))


def _dmesg(n: int) -> str:
    return "".join(f"[{i // 1000:5d}.{i % 1000:06d}] pci 0000:{i % 256:02x}:00.0: [10de:2330] type 00 class 0x030200\n"
                   f"[{i // 1000:5d}.{i % 1000:06d}] DMAR: dmar0: Using Queued invalidation\n" for i in range(n))


def _cmdline(n: int) -> str:
    """/proc/cmdline is one line: n parameters on it."""
    return ("BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt "
            + " ".join(f"opt{i}=v{i}" for i in range(n)) + "\n")


def _virt(n: int) -> str:
    """One word; a file this large can only be blank lines in front of it."""
    return " \n" * n + "kvm\n"


def _dmi_product(n: int) -> str:
    return " \n" * n + "Standard_ND96isr_H100_v5\n"


def _numactl(n: int) -> str:
    return f"available: {n} nodes (0-{n - 1})\n" + "".join(
        f"node {k} cpus: {' '.join(map(str, range(8 * k, 8 * k + 8)))}\nnode {k} size: 64000 MB\n" for k in range(n))


def _hwloc(n: int) -> str:
    devices = "".join(
        f'      <object type="PCIDev" pci_busid="0000:{i % 256:02x}:{i // 256 % 32:02x}.0" pci_type="0207 [15b3:1021] '
        f'[15b3:0041] 00"><object type="OSDev" name="mlx5_{i}" osdev_type="48"/></object>\n' for i in range(n))
    return ('<?xml version="1.0"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n<topology version="3.0">\n'
            '  <object type="Package" os_index="0" cpuset="0x000000ff" nodeset="0x00000001">\n'
            '    <object type="NUMANode" os_index="0" cpuset="0x000000ff" nodeset="0x00000001"/>\n'
            f'    <object type="Bridge" bridge_type="0-1" depth="0">\n{devices}    </object>\n  </object>\n</topology>\n')


def _hwloc_wide_nodeset(n: int) -> str:
    """n PCI devices under a Package whose nodeset names 65,536 NUMA nodes (each device's locality
    used to be that nodeset expanded: a 47 KB file took 71 s and 1.3 GB)."""
    nodeset = ",".join(["0xffffffff"] * 2048)
    devices = "".join(f'    <object type="PCIDev" pci_busid="0000:{i % 256:02x}:{i // 256 % 32:02x}.{i // 8192 % 8}" '
                      f'pci_type="0302 [10de:2330] [10de:16c1] a1"/>\n' for i in range(n))
    return (f'<?xml version="1.0"?>\n<topology version="3.0">\n  <object type="Package" os_index="0" cpuset="0xff" '
            f'nodeset="{nodeset}">\n   <object type="Bridge" bridge_type="0-1" depth="0">\n{devices}   </object>\n'
            "  </object>\n</topology>\n")


def _hwloc_nvlink_matrices(n: int) -> str:
    """n NVLinkBandwidth matrices (hwloc's importer takes each), every one of four GPUs of its own
    linked all-to-all, ten values per ``u64values`` element as hwloc writes them. One matrix of n
    objects would grow as n*n; tests/test_hwloc_nvlink.py holds that one's work per value."""
    gpus, matrices = [], []
    for k in range(n):
        gp = [10 + 4 * k + i for i in range(4)]
        gpus.extend(f'    <object type="PCIDev" gp_index="{g + 1000000}" pci_busid="0000:{g % 256:02x}:{g // 256 % 32:02x}.'
                    f'{g // 8192 % 8}" pci_type="0302 [10de:2330] [10de:16c1] a1"><object type="OSDev" gp_index="{g}" '
                    f'name="nvml{g}" subtype="NVML" osdev_type="12"/></object>\n' for g in gp)
        values = [str(1000000 if i == j else 25000 * (1 + (k + i + j) % 18)) for i in range(4) for j in range(4)]
        words = [" ".join(map(str, gp)), " ".join(values[:10]), " ".join(values[10:])]
        matrices.append('  <distances2 type="OSDev" nbobjs="4" kind="9" name="NVLinkBandwidth" indexing="gp">\n'
                        + "".join(f'    <{tag} length="{len(w) + 1}">{w} </{tag}>\n'
                                  for tag, w in zip(("indexes", "u64values", "u64values"), words))
                        + "  </distances2>\n")
    return ('<?xml version="1.0"?>\n<topology version="3.0">\n  <object type="Package" os_index="0" cpuset="0xff" '
            f'nodeset="0x1" gp_index="1">\n   <object type="Bridge" bridge_type="0-1" depth="0" gp_index="2">\n'
            f'{"".join(gpus)}   </object>\n  </object>\n{"".join(matrices)}</topology>\n')


# --- fabric outputs: one unit per device, port or interface, each named apart -----------------

def ibstat_ca(i: int) -> str:
    return (f"CA 'mlx5_{i}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.2048\n"
            f"\tSystem image GUID: 0x{i:016x}\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            "\t\tRate: 400\n\t\tBase lid: 12\n\t\tLink layer: InfiniBand\n")


def ibstatus_port(i: int) -> str:
    return (f"Infiniband device 'mlx5_{i}' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:0000:0000:{i >> 16 & 0xffff:04x}:"
            f"{i & 0xffff:04x}\n\tbase lid:\t 0x{i & 0xffff:x}\n\tsm lid:\t\t 0x1\n\tstate:\t\t 4: ACTIVE\n"
            "\tphys state:\t 5: LinkUp\n\trate:\t\t 400 Gb/sec (4X NDR)\n\tlink_layer:\t InfiniBand\n\n")


def ibv_devinfo_hca(i: int) -> str:
    return (f"hca_id:\tmlx5_{i}\n\ttransport:\t\t\tInfiniBand (0)\n\tvendor_part_id:\t\t\t4129\n\t\tport:\t1\n"
            "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t4096 (5)\n"
            "\t\t\tlink_layer:\t\tEthernet\n")


def ibdev2netdev_line(i: int) -> str:
    return f"mlx5_{i} port 1 ==> ens{i}f0np0 (Up)\n"


def show_gids_row(i: int) -> str:
    return (f"mlx5_{i}\t1\t3\t0000:0000:0000:0000:0000:ffff:{i >> 16 & 255:02x}{i >> 8 & 255:02x}:{i & 255:04x}\t"
            f"{_ipv4(i)}  \tv2\tens{i}\n")


def mlnx_qos_block(i: int) -> str:
    return (f"$ mlnx_qos -i ens{i}\nPriority trust state: dscp\nPFC configuration:\n"
            "\tpriority 0 1 2 3 4 5 6 7\n\tenabled  0 0 0 1 0 0 0 0\n")


def sysfs_line(i: int) -> str:
    return f"/sys/class/net/ens{i}/ecn/roce_np/enable/3:1\n"


def ethtool_block(i: int) -> str:
    return f"Settings for ens{i}:\n\tSpeed: 400000Mb/s\n\tLanes: 8\n\tDuplex: Full\n\tLink detected: yes\n"


def ip_addr_link(i: int) -> str:
    return (f"{i + 1}: ens{i}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP\n"
            f"    inet {_ipv4(i)}/24 scope global ens{i}\n")


def ip_route_line(i: int) -> str:
    return f"{_ipv4(i)}/32 dev ens{i} proto kernel scope link src 10.0.0.4\n"


def _ip_addr_json(n: int) -> str:
    """``ip -j addr``: one line holding the list of n interfaces, as ip prints it (issue 20: a
    31 MB one peaked at 599 MB)."""
    return json.dumps([{"ifindex": i + 1, "ifname": f"ens{i}", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
                        "mtu": 9000, "qdisc": "mq", "operstate": "UP", "group": "default", "txqlen": 1000,
                        "link_type": "ether", "address": f"02:00:00:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}",
                        "broadcast": "ff:ff:ff:ff:ff:ff",
                        "addr_info": [{"family": "inet", "local": _ipv4(i), "prefixlen": 24, "scope": "global",
                                       "label": f"ens{i}", "valid_life_time": 4294967295,
                                       "preferred_life_time": 4294967295}]} for i in range(n)],
                      separators=(",", ":")) + "\n"


def mount_line(i: int) -> str:
    return f"{_ipv4(i)}:/d{i} /mnt/d{i} nfs4 rw,vers=4.1,clientaddr=10.0.0.4,addr={_ipv4(i)} 0 0\n"


# --- measured output: nccl-tests text and -J JSON, NCCL logs ----------------------------------

_TESTS_HEAD = (
    "# nccl-tests version 2.17.1 nccl-headers=22105 nccl-library=22105\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n"
    + "".join(f"#  Rank {r:2d} Group  0 Pid   9001 on      gpu7 device {r:2d} [0000:{0x18 + r:02x}:00] NVIDIA H100\n"
              for r in range(8))
    + "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n")
_TESTS_TAIL = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 229.54\n#\n"


def tests_row(i: int) -> str:
    """One result row per message size: sizes differ, as nccl-tests steps them."""
    size = 8 * (i + 1)
    return f"{size:12d}  {size // 4:12d}     float     sum      -1   2341.2  229.31  229.31      0   2339.8  229.45  229.45      0\n"


def _nccl_tests_json(n: int) -> str:
    """One -J document (JSON_FILE_VERSION 3) with n results, the way nccl-tests writes it."""
    devices = [{"rank": r, "group": 0, "pid": 5100, "hostname": "hgx03", "device": r, "device_hex": f"0000:{0x18 + r:02x}:00",
                "device_info": "NVIDIA H100 80GB HBM3"} for r in range(8)]
    half = {"time": 5120.0, "alg_bw": 209.7152, "bus_bw": 367.0016, "nwrong": 0.0}
    results = [{"size": 8 * (i + 1), "count": 2 * (i + 1), "type": "float", "redop": "sum", "root": "    -1",
                "out_of_place": half, "in_place": half, "actual_iterations": 20, "experiment_name": "all_reduce_perf"}
               for i in range(n)]
    document = {"version": 3, "nccl_version": 22703,
                "config": {"nthreads": 1, "ngpus": 8, "minimum_bytes": 8, "maximum_bytes": 8 * n, "iterations": 20,
                           "devices": devices},
                "results": results, "out_of_bounds": {"count": 0, "okay": True},
                "average_bus_bandwidth": {"bandwidth": 365.1, "okay": "unchecked"}}
    return json.dumps(document, indent=1) + "\n"


def nccl_log_rank(i: int) -> str:
    """The lines one rank prints at init: version, transport, comm, two channels."""
    where = f"node-{i}:{4242 + i}:{4342 + i} [0] NCCL INFO"
    return (f"{where} NCCL version 2.27.3+cuda12.9\n{where} NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:{_ipv4(i)}<0>\n"
            f"{where} Using network IB\n{where} comm 0x{0x5500000 + i:x} rank {i} nRanks 4096 nNodes 4096 localRanks 1 "
            f"localRank 0 MNNVL 0\n{where} Channel 00/0 : {i}[0] -> {i + 1}[0] [send] via NET/IB/0\n"
            f"{where} Channel 00/0 : {i + 1}[0] -> {i}[0] [receive] via NET/IB/0\n")


# --- config files (issue 12's parsers are measured here too) ----------------------------------

def shell_block(i: int) -> str:
    return f"export NCCL_DEBUG=INFO\nif [ -n \"$X\" ]; then\n  NCCL_IB_HCA=mlx5_{i} srun train.py\nfi\n"


def heredoc_block(i: int) -> str:
    return f"cat > notes{i}.txt <<'EOF'\nline $x\nEOF\n: \"${{NCCL_DEBUG:=WARN}}\"\n"


def quoted_value(n: int) -> str:
    """One double-quoted shell value over n lines (a 1 MB quoted string took 27 s, issue 7)."""
    return 'export NCCL_DEBUG="' + "aaaaaaaaa\n" * n + '"\n'


def env_line(i: int) -> str:
    return f'NCCL_DEBUG="WARN" # comment {i}\n'


def dockerfile_env(n: int) -> str:
    """One ENV instruction continued over n lines."""
    return "FROM base\nENV " + "".join(f"NCCL_P{i}=1 \\\n" for i in range(n)) + "    NCCL_DEBUG=WARN\n"


def setting_line(i: int) -> str:
    return f"NCCL_X{i}=v{i}\n"


def _pod(n: int) -> str:
    head = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n"
            "    image: x\n    env:\n")
    return head + "".join(f"    - name: NCCL_X{i}\n      value: v{i}\n" for i in range(n))


def _launcher(n: int) -> str:
    return "import os\n" + "".join(f'os.environ["NCCL_X{i}"] = "v{i}"\n' for i in range(n))


def _inventory(n: int) -> str:
    """A node inventory (docs/fleet.md) of n RDMA ports, each with its values and lines."""
    ports = ",\n".join(
        f'    {{"name": "mlx5_{i}:1", "rate_gbps": {{"value": 400, "path": "n/ibstat.txt", "line": {i * 9 + 5}}}, '
        f'"firmware": {{"value": "28.39.{i}", "path": "n/ibstat.txt", "line": {i * 9 + 3}}}}}'
        for i in range(n))
    return ('{\n  "topolint_inventory": 1,\n  "node": "n",\n'
            f'  "nic_ports": {{"value": {n}, "path": "n/ibstat.txt", "line": 1}},\n  "nics": [\n{ports}\n  ]\n}}\n')


def _driver_version(n: int) -> str:
    """A paste: n shell lines echoed before /proc/driver/nvidia/version's first line."""
    return "".join(f"$ echo {i}\n" for i in range(n)) + \
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"


def _smi_version(n: int) -> str:
    return "NVIDIA-SMI version  : 550.54.15\n" + "".join(f"NVML version        : 550.{i}\n" for i in range(n)) + \
        "DRIVER version      : 550.54.15\nCUDA Version        : 12.4\n"


def _ofed_info(n: int) -> str:
    """Full ``ofed_info``: the release line, then its package list."""
    return "MLNX_OFED_LINUX-23.10-1.1.9.0 (OFED-23.10-1.1.9):\n" + "".join(f"pkg{i}-1.{i}\n" for i in range(n))


def _kernel_version(n: int) -> str:
    return "Linux version 5.15.0-105-generic (buildd@x) (gcc 11.4.0) #115-Ubuntu SMP\n" + "".join(
        f"$ uname -{i}\n" for i in range(n))


def _proc_modules(n: int) -> str:
    return "".join(f"mod_{i} {16384 + i} {i % 3} - Live 0x0000000000000000 (OE)\n" for i in range(n))


def _lsmod(n: int) -> str:
    return "Module                  Size  Used by\n" + "".join(f"mod_{i}  {16384 + i}  {i % 3}\n" for i in range(n))


def _module_versions(n: int) -> str:
    return "".join(f"/sys/module/mod_{i}/version:1.{i}.0\n" for i in range(n))


def _workflow(n: int) -> str:
    """A GitHub Actions job of n steps, each with env, a run script and a $GITHUB_ENV line."""
    head = "on: [push]\nenv:\n  NCCL_DEBUG: WARN\njobs:\n  test:\n    runs-on: gpu\n    steps:\n"
    return head + "".join(f"      - name: s{i}\n        env:\n          NCCL_X{i}: v{i}\n        run: |\n"
                          f"          export NCCL_Y{i}=w{i}\n          echo NCCL_Z{i}=u{i} >> $GITHUB_ENV\n"
                          for i in range(n))


# --- the scheduler's inputs (docs/fleet-topology.md) ---------------------------------------

def _topology_conf(n: int) -> str:
    """topology/tree: n leaves of 4 nodes each (ranges) under one spine."""
    leaves = "".join(f"SwitchName=leaf{i} Nodes=gpu{i}-[01-04] LinkSpeed=400\n" for i in range(n))
    return leaves + f"SwitchName=spine Switches=leaf[0-{n - 1}]\n"


def _topology_blocks(n: int) -> str:
    return "".join(f"BlockName=rack{i} Nodes=gb{i}-[01-18]\n" for i in range(n)) + "BlockSizes=18\n"


def _topology_yaml(n: int) -> str:
    switches = "".join(f"      - switch: leaf{i}\n        nodes: gpu{i}-[01-04]\n" for i in range(n))
    return ("- topology: tree\n  cluster_default: true\n  tree:\n    switches:\n"
            f"      - switch: spine\n        children: leaf[0-{n - 1}]\n" + switches)


def _hostfile(n: int) -> str:
    return "".join(f"node{i:05d} slots=8\n" for i in range(n))


def _slurm_env(n: int) -> str:
    """One SLURM_JOB_NODELIST of n hosts written out (no ranges), beside other SLURM_ values."""
    hosts = ",".join(f"gpu{i:05d}" for i in range(n))
    return f"SLURM_JOB_ID=42\nSLURM_JOB_NODELIST={hosts}\nSLURM_TASKS_PER_NODE=8(x{n})\n"


def _k8s_nodes(n: int) -> str:
    items = "".join(f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: gpu{i}\n    labels:\n"
                    f"      kubernetes.io/hostname: gpu{i}\n      nvidia.com/gpu.clique: c{i % 7}.0\n"
                    f"      cloud.google.com/gce-topology-subblock: sb{i % 5}\n" for i in range(n))
    return "apiVersion: v1\nkind: List\nitems:\n" + items


def _show_labels(n: int) -> str:
    head = "NAME   STATUS   ROLES    AGE   VERSION   LABELS\n"
    return head + "".join(f"gpu{i}  Ready  <none>  1d  v1.30.0  kubernetes.io/hostname=gpu{i},"
                          f"topology.k8s.aws/network-node-layer-3=nn-{i:08x}\n" for i in range(n))


def _named(make: Callable[[int], str], name: str) -> Callable[[int], str]:
    make.__name__ = name
    return make


# --- fabric files of the cluster (ibnetdiscover, iblinkinfo, lldpctl) ----------------------------------

def _ibnetdiscover(n: int) -> str:
    """A subnet of n leaf switches, each with two hosts and an uplink to one spine."""
    spine = "0200000000000001"
    blocks = [f'switchguid=0x{spine}({spine})\nSwitch\t{n + 1} "S-{spine}"\t\t# "MF0;spine-1:MQM9700/U1" '
              f'enhanced port 0 lid 1 lmc 0\n' +
              "".join(f'[{i + 1}]\t"S-0b{i:014x}"[3]\t\t# "MF0;leaf-{i}:MQM9700/U1" lid {i + 2} 4xNDR\n'
                      for i in range(n)) + "\n"]
    for i in range(n):
        blocks.append(
            f'switchguid=0x0b{i:014x}(0b{i:014x})\nSwitch\t40 "S-0b{i:014x}"\t\t# "MF0;leaf-{i}:MQM9700/U1" '
            f'enhanced port 0 lid {i + 2} lmc 0\n'
            + "".join(f'[{p}]\t"H-0{p + 2}{i:014x}"[1](0{p + 2}{i:014x}) \t\t# "node{i}-{p} mlx5_0" lid {n * p + i + 9} 4xNDR\n'
                      for p in (1, 2))
            + f'[3]\t"S-{spine}"[{i + 1}]\t\t# "MF0;spine-1:MQM9700/U1" lid 1 4xNDR\n\n')
    return "#\n# Topology file: generated on Mon Jan  5 10:00:00 2026\n#\n" + "".join(blocks)


def _ibnetdiscover_ports(n: int) -> str:
    return "".join(f"CA  {i + 10}  1 0x0a{i:014x} 4x NDR - SW  2 {i % 60 + 1} 0x0b{i // 60:014x} "
                   f"( 'node{i} mlx5_0' - 'leaf-{i // 60}' )\n" for i in range(n))


def _iblinkinfo(n: int) -> str:
    lines = [f"Switch: 0x0b00000000000001 leaf-1:\n"]
    lines += [f"           1 {i + 1:4d}[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  {i + 10:6d}    1[  ] "
              f'"node{i} HCA-1" ( )\n' for i in range(n)]
    lines += [f"CA: node{i} HCA-1:\n      0x0a{i:014x} {i + 10:6d}    1[  ] ==( 4X        53.125 Gbps Active/  "
              f'LinkUp)==>       1 {i + 1:4d}[  ] "leaf-1" ( )\n' for i in range(n)]
    return "".join(lines)


def _lldp_text(n: int) -> str:
    return "".join(f"-------\nInterface:    eth{i}, via: LLDP, RID: {i + 1}, Time: 0 day, 00:01:00\n  Chassis:\n"
                   f"    ChassisID:    mac 02:00:00:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}\n"
                   f"    SysName:      leaf-{i}\n    SysDescr:     EOS\n      continued\n    Capability:   Bridge, on\n"
                   f"  Port:\n    PortID:       ifname Ethernet{i}\n    TTL:          120\n" for i in range(n))


def _lldp_keyvalue(n: int) -> str:
    return "".join(f"lldp.eth{i}.via=LLDP\nlldp.eth{i}.chassis.mac=02:00:00:00:00:{i & 255:02x}\n"
                   f"lldp.eth{i}.chassis.name=leaf-{i}\nlldp.eth{i}.chassis.descr=NOS\ncontinued\n"
                   f"lldp.eth{i}.chassis.Bridge.enabled=on\nlldp.eth{i}.port.ifname=swp{i}\n" for i in range(n))


def _lldp_json0(n: int) -> str:
    interfaces = [{"name": f"eth{i}", "via": "LLDP", "chassis": [{"id": [{"type": "mac", "value": f"02:00:00:00:00:{i & 255:02x}"}],
                                                                   "name": [{"value": f"leaf-{i}"}],
                                                                   "capability": [{"type": "Bridge", "enabled": True}]}],
                   "port": [{"id": [{"type": "ifname", "value": f"swp{i}"}]}]} for i in range(n)]
    return json.dumps({"lldp": [{"interface": interfaces}]}, indent=2)


def _lldp_json(n: int) -> str:
    interfaces = [{f"eth{i}": {"via": "LLDP", "chassis": {f"leaf-{i}": {"id": {"type": "mac", "value": f"02:00:{i:08x}"}}},
                               "port": {"id": {"type": "ifname", "value": f"swp{i}"}}}} for i in range(n)]
    return json.dumps({"lldp": {"interface": interfaces}}, indent=2)


GROWERS: tuple[Grower, ...] = (
    Grower("nccl-topo-xml", _topology, 40),
    Grower("nccl-topo-xml", _mask, 500, distinct=False),
    Grower("nccl-topo-xml", _siblings, 400),
    Grower("nccl-graph-xml", _graph, 100),
    Grower("nvidia-smi-topo", _matrix, 8),  # cells grow with the square of n, and so does the text
    Grower("nvidia-smi-nvlink", _nvlink, 8),
    Grower("nvidia-smi-q", _named(_joined(smi_q_gpu, "==============NVSMI LOG==============\n\n"), "smi_q_gpus"), 40),
    Grower("nvidia-smi-query-csv", _named(_joined(smi_query_row, "index, name, pci.bus_id, fabric.state, "
                                                                 "fabric.status, fabric.cliqueId\n"), "smi_query_rows"), 60),
    Grower("lspci", _lspci, 50),
    Grower("lspci", _lspci_excerpt, 200),
    Grower("lspci", _lspci_tree, 60),
    Grower("dmesg", _dmesg, 300, distinct=False),
    Grower("cmdline", _cmdline, 400, distinct=False),  # one line kept, its parameters made when read
    Grower("virt", _virt, 2000, distinct=False),
    Grower("dmi-product-name", _dmi_product, 2000, distinct=False),
    Grower("numactl", _numactl, 60),
    Grower("hwloc", _hwloc, 100),
    Grower("hwloc", _hwloc_wide_nodeset, 200),
    Grower("hwloc", _hwloc_nvlink_matrices, 40),
    Grower("ibstat", _named(_joined(ibstat_ca), "ibstat_cas"), 40),
    Grower("ibstatus", _named(_joined(ibstatus_port), "ibstatus_ports"), 40),
    Grower("ibv_devinfo", _named(_joined(ibv_devinfo_hca), "ibv_devinfo_hcas"), 40),
    Grower("ibdev2netdev", _named(_joined(ibdev2netdev_line), "ibdev2netdev_lines"), 200),
    Grower("show_gids", _named(_joined(show_gids_row, "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"),
                               "show_gids_rows"), 150),
    Grower("mlnx_qos", _named(_joined(mlnx_qos_block), "mlnx_qos_blocks"), 80),
    Grower("sysfs-dump", _named(_joined(sysfs_line), "sysfs_lines"), 200),
    Grower("ethtool", _named(_joined(ethtool_block), "ethtool_blocks"), 100),
    Grower("ip-addr", _named(_joined(ip_addr_link), "ip_addr_links"), 100),
    Grower("ip-route", _named(_joined(ip_route_line), "ip_route_lines"), 200),
    Grower("mounts", _named(_joined(mount_line), "mount_lines"), 100),
    Grower("nccl-tests", _named(_joined(tests_row, _TESTS_HEAD, _TESTS_TAIL), "nccl_tests_rows"), 100),
    Grower("nccl-tests", _nccl_tests_json, 60),
    Grower("nccl-log", _named(_joined(nccl_log_rank), "nccl_log_ranks"), 60),
    Grower("shell", _named(_joined(shell_block), "shell_blocks"), 100),
    Grower("shell", _named(_joined(heredoc_block), "shell_heredocs"), 100),
    Grower("shell", quoted_value, 400, distinct=False),
    Grower("dockerfile", dockerfile_env, 300),
    Grower("envfile", _named(_joined(env_line), "env_lines"), 200),
    Grower("nccl-conf", _named(_joined(setting_line), "nccl_conf_lines"), 200),
    Grower("deepspeed-env", _named(_joined(setting_line), "deepspeed_env_lines"), 200),
    Grower("config-yaml", _pod, 150),
    Grower("python", _launcher, 150),
    Grower("topolint-inventory", _inventory, 40),
    Grower("nvidia-driver-version", _driver_version, 200, distinct=False),  # lines before the one read
    Grower("nvidia-smi-version", _smi_version, 200, distinct=False),
    Grower("ofed-info", _ofed_info, 200, distinct=False),
    Grower("kernel-version", _kernel_version, 200, distinct=False),
    Grower("kernel-modules", _proc_modules, 200, distinct=False),  # counted; only the modules read are facts
    Grower("kernel-modules", _lsmod, 200, distinct=False),  # counted; only the modules read are facts
    Grower("module-versions", _module_versions, 200),
    Grower("github-actions", _workflow, 40),
    Grower("ip-addr", _ip_addr_json, 100),
    Grower("slurm-topology-conf", _topology_conf, 100),
    Grower("slurm-topology-conf", _topology_blocks, 40),
    Grower("slurm-topology-yaml", _topology_yaml, 60),
    Grower("mpi-hostfile", _hostfile, 300),
    Grower("slurm-env", _slurm_env, 300),
    Grower("k8s-nodes", _k8s_nodes, 40),
    Grower("k8s-nodes", _show_labels, 100),
    Grower("ibnetdiscover", _ibnetdiscover, 40),
    Grower("ibnetdiscover", _ibnetdiscover_ports, 200),
    Grower("iblinkinfo", _iblinkinfo, 100),
    Grower("lldpctl", _lldp_text, 60),
    Grower("lldpctl", _lldp_keyvalue, 100),
    Grower("lldpctl", _lldp_json0, 60),
    Grower("lldpctl", _lldp_json, 60),
)


def grown_formats() -> set[str]:
    return {grower.fmt for grower in GROWERS}


def sized(make: Callable[[int], str], target: int, within: float = 0.97) -> str:
    """An input from ``make`` of at most ``target`` bytes and at least ``within`` of that (or one
    unit). Sizes grow as a power of n (the matrix with its square), so n is found by Newton steps
    on log(size) from two probes: a few texts are written, not a bisection's two dozen."""
    points = [(n, len(make(n))) for n in (16, 64)]
    best = make(1)
    for _ in range(12):
        (n1, s1), (n2, s2) = points[-2], points[-1]
        power = max(math.log(s2 / s1) / math.log(n2 / n1), 0.5) if s2 > s1 and n2 != n1 else 1.0
        n = max(1, int(n2 * (target * (1 + within) / 2 / s2) ** (1 / power)))
        if n in (n1, n2):
            n = n2 - 1 if s2 > target else n2 + 1
        text = make(n)
        if len(text) <= target:
            best = max(best, text, key=len)
            if len(text) >= within * target:
                return text
        points.append((n, len(text)))
    return best


# --- rule-heavy shapes: whole runs (parse, model and rules) of one file, tests/test_linear_cost.py
# Each repeats what made a rule or shared view compare every pair (issue 20): names set again and
# again, many scopes, CPUs that share one affinity, many attributes, deep nesting.

def _env_repeated(n: int) -> str:
    """A .env of one setting n times: nothing conflicts, so nothing may cost a pair."""
    return 'NCCL_DEBUG="WARN"\n' * n


def _env_contradictions(n: int) -> str:
    """n of each side of ENV007's contradiction pairs, each side together: every P2P_DISABLE met
    every P2P_LEVEL (scanned past the other P2P_DISABLE lines first), every MIN every MAX."""
    return ("NCCL_P2P_DISABLE=1\n" * n + "NCCL_P2P_LEVEL=NVL\n" * n
            + "NCCL_MIN_CTAS=8\n" * n + "NCCL_MAX_CTAS=4\n" * n)


def _rdma_off_with_rdma_settings(n: int) -> str:
    """n settings turning RDMA off beside n RDMA settings in one scope: NET007 cited every RDMA
    setting in each finding's evidence, one line per pair (5.9M counted calls at n=800)."""
    return "NCCL_IB_DISABLE=1\n" * n + "".join(f"NCCL_IB_HCA=mlx5_{i}\n" for i in range(n))


def _dockerfile_repeated(n: int) -> str:
    """ENV lines repeating one known and one unknown name (the close-match search per name)."""
    return "FROM base\n" + "ENV NCCL_DEBUG=WARN\nENV NCCL_IB_HCA_LIST=mlx5_0\n" * n


def _shell_repeated(n: int) -> str:
    return "#!/bin/bash\n" + "export NCCL_DEBUG=INFO\nexport NCCL_P2P_DISABLE=1\nNCCL_P2P_LEVEL=NVL srun x\n" * n


def _conf_repeated(n: int) -> str:
    return "NCCL_DEBUG=INFO\nNCCL_SOCKET_IFNAMES=eth0\n" * n


def _launcher_repeated(n: int) -> str:
    return "import os\n" + 'os.environ["NCCL_DEBUG"] = "INFO"\nos.environ["NCCL_MIN_CTAS"] = "32"\n' * n


def _pods(n: int) -> str:
    """n Kubernetes documents in one file, one container scope each."""
    return "".join(f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\nspec:\n  containers:\n  - name: c\n"
                   f"    image: x\n    env:\n    - name: NCCL_IB_HCA\n      value: mlx5_{i}\n"
                   "    - name: NCCL_DEBUG\n      value: INFO\n" for i in range(n))


def _shared_affinities(n: int) -> str:
    """n cpu elements claiming one affinity: every pair overlaps (kept under NCCL's 256 nodes)."""
    return '<system version="1">\n' + "".join(
        f'  <cpu numaid="{i}" affinity="ffffffff,ffffffff" arch="x86_64"/>\n' for i in range(n)) + "</system>\n"


def _past_nccl_limits(n: int) -> str:
    """n GPUs under one CPU, past NCCL's node limit (TOPO004) from n = 127 on: the material of
    all-pairs paths, which no other rule of the node may walk on a file NCCL would not load."""
    return ('<system version="1">\n  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" '
            'familyid="6" modelid="143">\n'
            + "".join(f'    <pci busid="0000:{i // 32 + 1:02x}:{i % 32:02x}.0" class="0x030200" '
                      f'link_speed="16.0 GT/s PCIe" link_width="16">\n'
                      f'      <gpu dev="{i}" sm="90" rank="{i}" gdr="1"/>\n    </pci>\n' for i in range(n))
            + "  </cpu>\n</system>\n")


def _many_attributes(n: int) -> str:
    """One element with n attributes: lxml reads each value by a search from the first."""
    return '<system version="1">\n  <cpu numaid="0" ' + " ".join(f'a{i}="1"' for i in range(n)) + "/>\n</system>\n"


def _nested_ifs(n: int) -> str:
    return "#!/bin/bash\n" + "".join(f'if [ -n "$X{i}" ]; then\n' for i in range(n)) + \
        "export NCCL_DEBUG=INFO\n" + "fi\n" * n


def _sysfs_ecn(n: int) -> str:
    """A sysfs dump of n RoCE interfaces with ECN on: each interface's ECN lines were found by a
    scan of every interface's (model/fabric_view.py), in comprehensions no count of calls sees."""
    return "".join(f"/sys/class/net/ens{i}/ecn/roce_np/enable/3:1\n/sys/class/net/ens{i}/ecn/roce_rp/enable/3:1\n"
                   for i in range(n))


def _roce_ports(n: int) -> str:
    """n healthy RoCE ports in one mlnx_qos report (trust dscp) with their sysfs ECN and
    traffic-class lines: each port's traffic class was the last of a scan of every HCA's."""
    return "".join(f"=== show configuration for device ens{i} / mlx5_{i} ===\nPriority trust state: dscp\n"
                   "PFC configuration:\n\tpriority 0 1 2 3 4 5 6 7\n\tenabled  0 0 0 1 0 0 0 0\n"
                   f"/sys/class/net/ens{i}/ecn/roce_np/enable/3:1\n/sys/class/net/ens{i}/ecn/roce_rp/enable/3:1\n"
                   f"/sys/class/infiniband/mlx5_{i}/tc/1/traffic_class:Global tclass=106\n" for i in range(n))


def _prefixed_commands(n: int) -> str:
    """n job-level P2P_LEVEL exports beside n commands prefixed with P2P_DISABLE, each prefixed
    command its own scope: every scope's related settings were the job's n (ScopeIndex.related)."""
    return "#!/bin/bash\n" + "export NCCL_P2P_LEVEL=NVL\n" * n + "".join(
        f"NCCL_P2P_DISABLE=1 srun x{i}\n" for i in range(n))


class RunShape(NamedTuple):
    """A whole run of one file named ``file`` (its name says its format)."""

    file: str
    make: Callable[[int], str]
    base: int
    c_heavy: bool = False  # the work is in C (lxml, re, difflib): CPU time is compared too

    @property
    def name(self) -> str:
        return self.make.__name__.strip("_")


RUN_SHAPES: tuple[RunShape, ...] = (
    RunShape(".env", _env_repeated, 100),
    RunShape(".env", _env_contradictions, 25),
    RunShape(".env", _rdma_off_with_rdma_settings, 25),
    RunShape("Dockerfile", _dockerfile_repeated, 50, c_heavy=True),
    RunShape("job.sh", _shell_repeated, 40),
    RunShape("nccl.conf", _conf_repeated, 60, c_heavy=True),
    RunShape(".deepspeed_env", _conf_repeated, 60),
    RunShape("launch.py", _launcher_repeated, 50),
    RunShape("pods.yaml", _pods, 20),
    RunShape("topo.xml", _shared_affinities, 12),
    RunShape("topo.xml", _past_nccl_limits, 130),
    RunShape("topo.xml", _many_attributes, 1000, c_heavy=True),
    RunShape("job.sh", _nested_ifs, 8),
    RunShape("job.sh", _prefixed_commands, 60),
    RunShape("sysfs.txt", _sysfs_ecn, 300, c_heavy=True),
    RunShape("qos.txt", _roce_ports, 150, c_heavy=True),
)
