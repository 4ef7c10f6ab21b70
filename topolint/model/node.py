"""A node (one host) and a cluster (many), as facts gathered from the inputs about each."""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.inputs.source import SourceFile
from topolint.model.facts import GraphFile, NvlinkStatus, TopologyFile, TopoMatrix
from topolint.model.gpu_query import GpuQueryFile
from topolint.model.measured import MeasuredFile
from topolint.model.software import SoftwareFile
from topolint.model.host import (
    BundleManifest, HwlocTopology, KernelCmdline, KernelLog, LspciFile, NumaTable, VirtEvidence,
)

# Host facts (model/host.py): the NodeModel list each kind of fact goes to, and the input kind
# it makes available to rules.
HOST_FACTS = {
    LspciFile: ("lspci", "lspci"),
    KernelLog: ("kernel_logs", "dmesg"),
    KernelCmdline: ("cmdlines", "cmdline"),
    VirtEvidence: ("virt", "virt"),
    NumaTable: ("numa_tables", "numactl"),
    HwlocTopology: ("hwloc", "hwloc"),
    SoftwareFile: ("software", "versions"),  # model/software.py: driver, CUDA, OFED, kernel, modules
}


@dataclass
class NodeModel:
    name: str
    topologies: list[TopologyFile] = field(default_factory=list)
    graphs: list[GraphFile] = field(default_factory=list)
    matrices: list[TopoMatrix] = field(default_factory=list)  # nvidia-smi topo -m / -p2p
    nvlink_status: list[NvlinkStatus] = field(default_factory=list)  # nvidia-smi nvlink -s
    gpu_queries: list[GpuQueryFile] = field(default_factory=list)  # nvidia-smi -q, --query-gpu CSV
    lspci: list[LspciFile] = field(default_factory=list)
    kernel_logs: list[KernelLog] = field(default_factory=list)  # dmesg
    cmdlines: list[KernelCmdline] = field(default_factory=list)  # /proc/cmdline
    virt: list[VirtEvidence] = field(default_factory=list)  # systemd-detect-virt, DMI product name
    numa_tables: list[NumaTable] = field(default_factory=list)  # numactl -H
    hwloc: list[HwlocTopology] = field(default_factory=list)  # lstopo XML
    software: list[SoftwareFile] = field(default_factory=list)  # versions of the driver, OFED, kernel, modules
    bundle: BundleManifest | None = None  # the node bundle it was read from (inputs/bundle.py)
    fabric: list = field(default_factory=list)  # FabricFile: ibstat, show_gids, ethtool, mounts... (model/fabric.py)
    measured: list[MeasuredFile] = field(default_factory=list)  # model/measured.py: nccl-tests output, NCCL logs
    inventory: object = None  # fleet.inventory.Inventory: a node read from an inventory file (docs/fleet.md)
    sources: dict[str, SourceFile] = field(default_factory=dict)
    # Machine outputs read but not parsed yet: (format, source, named explicitly). Parsing waits
    # until the result cache has said whether this node needs checking at all.
    pending: list = field(default_factory=list)
    cache_key: str | None = None
    cached: dict | None = None  # the cache entry of an unchanged node: its rules need not run
    notes: list[str] = field(default_factory=list)  # what reading this node's files said (--verbose)

    def add(self, facts) -> None:
        """File parsed facts under their kind (one list per kind of input)."""
        if isinstance(facts, TopologyFile):
            self.topologies.append(facts)
        elif isinstance(facts, GraphFile):
            self.graphs.append(facts)
        elif isinstance(facts, TopoMatrix):
            self.matrices.append(facts)
        elif isinstance(facts, NvlinkStatus):
            self.nvlink_status.append(facts)
        elif isinstance(facts, GpuQueryFile):
            self.gpu_queries.append(facts)
        elif type(facts) in HOST_FACTS:
            getattr(self, HOST_FACTS[type(facts)][0]).append(facts)
        elif hasattr(type(facts), "KIND") and hasattr(facts, "kinds"):  # a FabricFile; model.fabric loads lazily
            self.fabric.append(facts)
        elif isinstance(facts, MeasuredFile):
            self.measured.append(facts)
        else:
            raise TypeError(f"no place for {type(facts).__name__} in a node")

    def available(self) -> set[str]:
        """Which kinds of facts this node has; rules whose inputs are missing do not run."""
        kinds = set()
        if self.topologies:
            kinds.add("topology")
        if any(t.kind == "dump" for t in self.topologies):
            kinds.add("topology-dump")
        topo = [m for m in self.matrices if m.kind == "topo"]
        if topo:
            kinds.add("matrix")
        if self.topologies or topo or self.hwloc:
            kinds.add("topology or matrix")  # a GPU/NIC layout: an NCCL XML, a topo -m matrix or an hwloc export
        if self.topologies or any(not m.gpu_rows_missing and m.restricted is None for m in topo) \
                or self.hwloc:  # NVL001/NVL002 judge its NVLink matrix (a row per NVML GPU) or say it has none
            kinds.add("complete topology or matrix")  # ... with every GPU (not cut, not a cgroup view)
        if self.nvlink_status:
            kinds.add("nvlink-status")  # nvidia-smi nvlink -s: per-link states
        if self.gpu_queries:
            kinds.add("nvidia-smi-q")  # nvidia-smi -q / --query-gpu: GPU identity, Fabric state (NVL004)
        if "complete topology or matrix" in kinds or self.nvlink_status:
            kinds.add("complete topology or matrix, or nvlink-status")
        for attribute, kind in HOST_FACTS.values():
            if getattr(self, attribute):
                kinds.add(kind)
        if self.bundle is not None:
            kinds.add("bundle")
        if self.inventory is not None:
            kinds.add("inventory")  # the cluster stage's input, no node rule's
        if kinds & {"matrix", "bundle", "lspci", "numactl"}:
            kinds.add("input that can be partial")  # TL005: cut matrices, failed bundle commands, non-root lspci
        if len(kinds & {"topology", "matrix", "lspci", "numactl"}) >= 2 \
                or ("matrix" in kinds and any(h.nvlink_matrices for h in self.hwloc)):
            kinds.add("two sources")  # something to compare (TL003; an hwloc export's NVLinks with a matrix)
        if "dmesg" in kinds or "cmdline" in kinds:
            kinds.add("dmesg or cmdline")
        if "topology-dump" in kinds or "lspci" in kinds:
            kinds.add("topology-dump or lspci")
        kinds.update(k for f in self.fabric for k in f.kinds())  # ports, gids, qos, ethtool, interfaces, routes, mounts
        if kinds & {"topology-dump", "ethtool", "ports"}:
            kinds.add("link speeds")  # NET005: a dump's net speeds, ethtool speeds or port rates
        if any(m.runs for m in self.measured):
            kinds.add("nccl-tests")  # nccl-tests tables (rules PERF001, PERF002, PERF006)
        if any(m.log.line_count for m in self.measured):
            kinds.add("nccl-log")  # NCCL_DEBUG=INFO lines, alone or inside nccl-tests output
        return kinds


# Entity ids: one grammar for messages, JSON, SARIF and baselines (rule-catalog.md).
def gpu_entity(node: str, bus_id: str) -> str:
    return f"{node}/gpu/{bus_id}"


def nic_entity(node: str, hca: str, port: int | None) -> str:
    return f"{node}/nic/{hca}:{port if port is not None else 1}"


def pci_entity(node: str, bus_id: str) -> str:
    return f"{node}/pci/{bus_id}"


def cpu_entity(node: str, numa_id: int | None, index: int) -> str:
    return f"{node}/cpu/{numa_id if numa_id is not None else f'#{index}'}"


def file_entity(node: str, path: str) -> str:
    return f"{node}/file/{path}"
