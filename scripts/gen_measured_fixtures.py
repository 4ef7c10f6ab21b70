"""Write fixtures/rules/PERF00x/*: nccl-tests tables and NCCL logs for the PERF rules, in the
layout of nccl-tests 2.19 and NCCL 2.27 (tests/standins/nccl_output.py), with made-up figures
chosen on either side of each rule's threshold. Run: python scripts/gen_measured_fixtures.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "standins"))

import nccl_output as o  # noqa: E402

OUT = ROOT / "fixtures" / "rules"
H100 = "NVIDIA H100 80GB HBM3"

# Two GPUs: GPU 0 shares a PCIe switch with mlx5_0 (PIX: GDR allowed); GPU 1 sits on the other
# socket with no NIC of its own and no NVLink for PXN (SYS to mlx5_0: GDR off at every default level).
TOPOLOGY = """<system version="1">
  <cpu host_hash="0x5a1e" numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:10:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2335" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1">
          <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:19:00.0" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic>
          <net name="mlx5_0" dev="0" speed="400000" port="1" latency="0.000000" guid="0xa000" maxconn="131072" gdr="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
  <cpu host_hash="0x5a1e" numaid="1" affinity="ffff0000" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:9a:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:9b:00.0" class="0x030200" vendor="0x10de" device="0x2335" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="90" rank="1" gdr="1"/>
      </pci>
    </pci>
  </cpu>
</system>
"""


def two_nodes(network: str, net: str, gdr: bool, socket: bool = False, device: int = 0, extra=()) -> str:
    """Ranks 0 and 1 on node-a and node-b, one GPU each (local device ``device``), over ``net``."""
    lines = []
    for host, rank, peer in (("node-a", 0, 1), ("node-b", 1, 0)):
        lines.append(o.info(host, rank, device, "NCCL version 2.27.3+cuda12.9"))
        lines += [o.info(host, rank, device, text) for text in extra]
        if socket:
            lines += [o.info(host, rank, device, "NET/IB : No device found."),
                      o.info(host, rank, device, f"NET/Socket : Using [0]eth0:10.0.0.{rank + 1}<0>")]
        else:
            lines.append(o.info(host, rank, device, f"NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.{rank + 1}<0>"))
        lines.append(o.info(host, rank, device, f"Using network {network}"))
        lines.append(o.info(host, rank, device, f"comm 0x55{rank:04x}0 rank {rank} nRanks 2 nNodes 2 localRanks 1 "
                                                f"localRank 0 MNNVL 0"))
        lines += o.net_channels(host, rank, peer, net, 0, gdr, device, device)
    return "\n".join(lines) + "\n"


def one_node(via: str, paths: str | None = "NVL", settings=(), network: str | None = None) -> str:
    host = "hgx01"
    lines = o.init_lines(host, range(0, 2), 2, 1)
    lines += [o.info(host, 0, 0, f"{name} set by environment to {value}.") for name, value in settings]
    if network:
        lines.append(o.info(host, 0, 0, f"Using network {network}"))
    if paths:
        bw = "370.8" if paths == "NVL" else "24.0"
        lines += [o.info(host, 0, 0, f"GPU/0-18000 :GPU/0-18000 (0/5000.0/LOC) GPU/0-2a000 (2/{bw}/{paths}) CPU/0-0 (1/48.0/PHB)"),
                  o.info(host, 0, 0, f"GPU/0-2a000 :GPU/0-18000 (2/{bw}/{paths}) GPU/0-2a000 (0/5000.0/LOC) CPU/0-0 (1/48.0/PHB)")]
    return "\n".join(lines + o.ring_channels(host, range(0, 2), via)) + "\n"


def non_mpi_copies(copies: int = 4) -> str:
    """What srun -N2 --ntasks-per-node=2 prints for a build without MPI: one 1-rank run per process."""
    blocks = []
    for index in range(copies):
        host = f"node{index // 2 + 1:02d}"
        lines = o.header(1, [host], H100) + o.column_header()
        lines += [f"{size:12d}  {size // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}     0.20    0.00    0.00       0"
                  f"     0.20    0.00    0.00       0" for size in o.GPU_SIZES]
        blocks.append("\n".join(lines + ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0 ", "#"]))
    return "\n".join(blocks) + "\n"


def old_out_of_bounds() -> str:
    return """# nThread 1 nGpus 2 minBytes 536870912 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 
#
# Using devices
#   Rank  0 Pid  41002 on     node01 device  0 [0x1a] Tesla V100-SXM2-32GB
#   Rank  1 Pid  41002 on     node01 device  1 [0x1b] Tesla V100-SXM2-32GB
#
#                                                     out-of-place                       in-place          
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
   536870912     134217728   float     sum   6810.2   78.83   78.83  2e+00   6808.7   78.85   78.85  0e+00
  1073741824     268435456   float     sum    13601   78.94   78.94  2e+00    13598   78.96   78.96  0e+00
# Out of bounds values : 3 FAILED
# Avg bus bandwidth    : 78.895 
#
"""


def without_check() -> str:
    text = o.table([355.0, 358.8, 361.2, 362.7])
    return "\n".join(line[:-6] + "   N/A" if line.startswith((" ", "1", "2", "4", "8")) and line.rstrip()[-1].isdigit()
                     and "float" in line else line for line in text.splitlines()) + "\n"


FILES = {
    "PERF001/bad.txt": o.table([86.2, 88.9, 90.3, 91.4]),
    "PERF001/good.txt": o.table([350.1, 359.6, 362.8, 364.9]),
    "PERF001/good_sweep_stops_at_64M.txt": o.table([40.1, 52.3, 60.2, 71.0], sizes=(8 << 20, 16 << 20, 32 << 20, 64 << 20)),
    "PERF001/good_multinode_unknown_nics.txt": o.table([20.5, 24.1, 26.0, 27.2], hosts=("node01", "node02")),
    "PERF001/good_one_rank.txt": o.table([0.0, 0.0, 0.0, 0.0], ranks_per_host=1),
    "PERF001/good_pcie_gpu_unknown.txt": o.table([10.2, 10.9, 11.3, 11.4], model="NVIDIA L40S"),
    "PERF002/bad.txt": o.table([231.0, 240.4, 246.9, 250.2]),
    "PERF002/bad_non_mpi_copies.txt": non_mpi_copies(),
    "PERF002/good.txt": o.table([355.0, 358.8, 361.2, 362.7]),
    "PERF002/good_below_a_third_is_perf001.txt": o.table([86.2, 88.9, 90.3, 91.4]),
    "PERF003/bad.log": two_nodes("Socket", "Socket", False, socket=True),
    "PERF003/bad_ib_disabled.log": two_nodes("Socket", "Socket", False, extra=("NCCL_IB_DISABLE set by environment to 1.",)),
    "PERF003/good.log": two_nodes("IB", "IB", True),
    "PERF003/good_one_node_socket.log": one_node("P2P/CUMEM/read", settings=(("NCCL_IB_DISABLE", "1"),), network="Socket"),
    "PERF003/good_no_rdma_expected.log": two_nodes("Socket", "Socket", False, extra=(
        "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
        "NET/Plugin: Failed to find ncclCollNetPlugin_v9 symbol.",
        "PROFILER/Plugin: Could not find: libnccl-profiler.so.")).replace(
        "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>", "NET/Socket : Using [0]eth0:10.0.0.1<0>").replace(
        "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.2<0>", "NET/Socket : Using [0]eth0:10.0.0.2<0>"),
    "PERF004/topology/two-gpus-one-nic.xml": TOPOLOGY,
    "PERF004/bad.log": two_nodes("IB", "IB", False),
    "PERF004/good.log": two_nodes("IB", "IB", True),
    "PERF004/good_gpu_across_the_socket.log": two_nodes("IB", "IB", False, device=1),
    "PERF004/good_gdr_read_off.log": two_nodes("IB", "IB", True, extra=("NCCL_NET_GDR_READ set by environment to 0.",)).replace(
        "[send] via NET/IB/0/GDRDMA", "[send] via NET/IB/0"),
    "PERF005/bad.log": one_node("SHM/direct/direct"),
    "PERF005/bad_p2p_disabled.log": one_node("SHM/direct/direct", settings=(("NCCL_P2P_DISABLE", "1"),)),
    "PERF005/good.log": one_node("P2P/CUMEM/read"),
    "PERF005/good_pcie_phb.log": one_node("SHM/direct/direct", paths="PHB"),
    "PERF006/bad.txt": o.table([355.0, 358.8, 361.2, 362.7], wrong_last=1024),
    "PERF006/bad_old_out_of_bounds.txt": old_out_of_bounds(),
    "PERF006/good.txt": o.table([355.0, 358.8, 361.2, 362.7]),
    "PERF006/good_check_off.txt": without_check(),
}


def main() -> None:
    for name, text in FILES.items():
        path = OUT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
