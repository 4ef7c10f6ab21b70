"""What one node offers a collective: per-GPU NVLink, PCIe paths, NICs, read from the model.

Everything comes from ``topolint.model.system.System`` (the graph NCCL builds, its path types,
PXN and GDR decisions); nothing here re-parses an input. Bandwidths are NCCL's link values in
GB/s (NVLink count x per-link constant by SM, PCIe width x speed / 80, NIC speed / 8000), so the
channel search and the tuning model see what NCCL's search sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.model.facts import Gpu, Location
from topolint.model.node import gpu_entity, nic_entity, pci_entity
from topolint.model.system import System, gpu_id, nvlink_bw


@dataclass(frozen=True)
class Bottleneck:
    """The link that bounds an estimate: what it is, where the input states it, how fast it is."""

    link: str  # NVLink, NVSwitch multicast, PCIe, CPU interconnect, NIC, fabric, host memory
    entity: str
    bandwidth_GBps: float
    detail: str
    path: str | None = None
    line: int | None = None

    @classmethod
    def at(cls, link: str, entity: str, bandwidth: float, detail: str, loc: Location | None) -> "Bottleneck":
        return cls(link, entity, round(bandwidth, 3), detail, loc.path if loc else None, loc.line if loc else None)

    def as_dict(self) -> dict:
        return {"link": self.link, "entity": self.entity, "bandwidth_GBps": self.bandwidth_GBps,
                "detail": self.detail, "path": self.path, "line": self.line}


@dataclass
class NetPort:
    """One network device NCCL can use (an HCA port, an EFA device), seen from its nearest GPU."""

    key: tuple  # the System's net node id
    name: str
    bw: float  # GB/s as NCCL reads speed (Mb/s / 8000)
    local_gpu: str | None  # bus id of the GPU NCCL pairs with it
    gdr: bool  # GPUDirect RDMA between that GPU and this NIC
    path_type: str
    entity: str
    loc: Location
    speed_stated: bool  # False: NCCL's 10 Gb/s default for a missing speed


@dataclass
class NodeHardware:
    """The hardware of one node as the estimate uses it."""

    node: str
    system: System
    gpus: list[Gpu]
    nets: list[NetPort]
    sm: int
    cpu_vendor: str  # intel, amd, other
    cpu_arch: str  # x86, power, arm, other
    nvswitch: bool
    notes: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # made-up bus id -> the name an entity uses

    @property
    def bus_ids(self) -> list[str]:
        return [g.bus_id for g in self.gpus]

    def gpu_entity(self, bus: str) -> str:
        return gpu_entity(self.node, self.aliases.get(bus, bus))

    def gpu(self, bus: str) -> Gpu:
        return self.system.gpus[bus]

    def nvlink_total(self, bus: str) -> float:
        """NVLink bandwidth out of one GPU (to NVSwitches, peers and NVLink CPUs), GB/s."""
        return sum(link["bw"] for link in self.system.links.get(gpu_id(bus), {}).values() if link["type"] == "NVL")

    def nvlink_count(self, bus: str) -> int:
        return sum(link.count or 0 for link in self.gpu(bus).nvlinks if link.target != bus)

    def nvlink_bottleneck(self, bus: str, bandwidth: float, what: str) -> Bottleneck:
        gpu = self.gpu(bus)
        count = self.nvlink_count(bus)
        detail = (f"{what}: GPU {gpu.dev if gpu.dev is not None else bus} has {count} NVLinks x "
                  f"{nvlink_bw(gpu.sm):g} GB/s (NCCL's per-link value for SM{gpu.sm}, src/graph/topo.h)")
        loc = gpu.nvlinks[0].loc if gpu.nvlinks else gpu.loc
        return Bottleneck.at("NVLink", self.gpu_entity(bus), bandwidth, detail, loc)

    def link_bottleneck(self, u: tuple, v: tuple, bandwidth: float, what: str) -> Bottleneck:
        """A bottleneck on the graph link u -> v, pointing at the element that states it."""
        link = self.system.links[u][v]
        kind = link["type"]
        if kind == "NVL":
            bus = u[1] if u[0] == "gpu" else v[1]
            return self.nvlink_bottleneck(bus, bandwidth, what)
        if kind == "SYS":
            cpu = self.system.topology.cpu(u[1])
            return Bottleneck.at("CPU interconnect", f"{self.node}/cpu/{cpu.numa_id}", bandwidth,
                                 f"{what}: NCCL's CPU-to-CPU bandwidth for this CPU model, src/graph/topo.h", cpu.loc)
        if kind == "NET":
            net = self.system.nets[v if v[0] == "net" else u][1]
            port = self._port(v if v[0] == "net" else u)
            return Bottleneck.at("NIC", port.entity, bandwidth, f"{what}: {port.name} at {net.speed_mbps or 10000} Mb/s",
                                 net.loc)
        pci_end = v if v[0] in ("pci", "gpu", "nic") and v[1] in self.system.pci_by_bus else u
        pci = self.system.pci_by_bus.get(pci_end[1]) if len(pci_end) > 1 else None
        if pci is None:
            return Bottleneck(kind, f"{self.node}/{u[0]}/{u[1]}", round(bandwidth, 3), what)
        detail = f"{what}: PCIe x{pci.link_width or '16?'} at {pci.link_speed or 'unstated speed (NCCL reads Gen3)'}"
        return Bottleneck.at("PCIe", pci_entity(self.node, self.aliases.get(pci.bus_id, pci.bus_id)), bandwidth, detail,
                             pci.loc)

    def _port(self, key: tuple) -> NetPort:
        return next(p for p in self.nets if p.key == key)

    def port_bottleneck(self, port: NetPort, bandwidth: float, what: str) -> Bottleneck:
        _, net = self.system.nets[port.key]
        stated = f"{net.speed_mbps} Mb/s" if port.speed_stated else "no speed stated (NCCL assumes 10 Gb/s)"
        return Bottleneck.at("NIC", port.entity, bandwidth, f"{what}: {port.name}, {stated}", net.loc)


def _cpu_kind(system: System) -> tuple[str, str]:
    """comm->cpuVendor / cpuArch as ncclTopoCpuType reports them (first CPU; NCCL assumes one kind)."""
    cpus = system.topology.cpus
    if not cpus:
        return "other", "other"
    cpu = cpus[0]
    arch = (cpu.arch or "").lower()
    kind = "x86" if arch.startswith("x86") else "power" if arch.startswith("ppc") else "arm" if arch.startswith(
        "arm") else "other"
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(cpu.vendor or "", "other")
    return vendor, kind


def _ports(system: System, node: str, gpus: list[Gpu]) -> list[NetPort]:
    ports = []
    allowed = {g.bus_id for g in gpus}
    # NCCL uses sockets only when no RDMA device exists (src/init.cc: the IB plugin first, then Socket).
    fabric = [key for key in system.nets if system.is_fabric(key)]
    for key, (nic, net) in system.nets.items():
        if fabric and key not in fabric:
            continue
        paths = {bus: p for bus, p in system.gpu_net_paths.items() if bus in allowed}
        local = system.local_gpu(key, paths) if paths else None
        gdr = bool(local) and system.gdr_enabled(system.gpus[local], key)
        path_type = paths[local][key].type if local and key in paths.get(local, {}) else "DIS"
        name = net.name or system.net_label(key)
        ports.append(NetPort(key, name, (net.speed_mbps if net.speed_mbps and net.speed_mbps > 0 else 10000) / 8000.0,
                             local, gdr, path_type, nic_entity(node, name, net.port), net.loc or nic.loc,
                             bool(net.speed_mbps and net.speed_mbps > 0)))
    return ports


def node_hardware(system: System, node: str, gpus_per_node: int | None = None,
                  aliases: dict[str, str] | None = None) -> NodeHardware:
    """The node's GPUs (the first ``gpus_per_node`` by device index when fewer are used)."""
    gpus = sorted(system.topology.gpus, key=lambda g: (g.dev if g.dev is not None else 1 << 20, g.bus_id))
    notes = []
    if gpus_per_node is not None and gpus_per_node > len(gpus):
        from topolint.estimate.results import EstimateError

        raise EstimateError(f"{node} has {len(gpus)} GPUs in its topology, fewer than --gpus-per-node {gpus_per_node}")
    if gpus_per_node is not None and gpus_per_node < len(gpus):
        notes.append(f"{node}: {gpus_per_node} of its {len(gpus)} GPUs take part (the first by device index)")
        gpus = gpus[:gpus_per_node]
    sms = [g.sm for g in gpus if g.sm]
    vendor, arch = _cpu_kind(system)
    nvswitch = any(("nvs", 0) in system.links.get(gpu_id(g.bus_id), {}) for g in gpus)
    return NodeHardware(node, system, gpus, _ports(system, node, gpus), min(sms) if sms else 0, vendor, arch,
                        nvswitch, notes, dict(aliases or {}))


def distinct(hws: list[NodeHardware]) -> list[NodeHardware]:
    seen, kept = set(), []
    for hw in hws:
        key = (hw.system.signature, tuple(hw.bus_ids))
        if key not in seen:
            seen.add(key)
            kept.append(hw)
    return kept
