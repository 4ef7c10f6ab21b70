"""An hwloc export as the topology NCCL would build from the same machine (one ``cpu`` per NUMA
node, the PCI tree, GPUs and NICs), so that the placement rules (NUMA001, NUMA002) can judge a
node that has no NCCL dump. It never joins ``NodeModel.topologies``: the TOPO rules judge files
NCCL reads, and an hwloc export is not one.

NVLinks come from hwloc's NVLinkBandwidth matrix where the export has one
(model/hwloc_nvlink.py). What hwloc does not say stays unknown: link speeds (NCCL would read them
from sysfs), NVLinks of an export without that matrix, GDR support, NIC rates.
"""

from __future__ import annotations

from topolint.model.facts import Cpu, Gpu, Net, Nic, PciDevice, TopologyFile, build
from topolint.model.host import HwlocObject, HwlocTopology

_GPU_OSDEVS = {"CUDA", "NVML"}
_NET_CLASSES = {"openfabrics", "network"}


def _openfabrics(osdev: HwlocObject) -> bool:
    """False (sorts first) for an RDMA device such as mlx5_0."""
    return not (osdev.subtype == "OpenFabrics" or osdev.osdev_class == "openfabrics")


def _ids(obj: HwlocObject) -> tuple[str | None, str | None, str | None]:
    """(class, vendor, device) from hwloc's ``pci_type="0302 [10de:1db5] [10de:1212] a1"``."""
    parts = (obj.pci_type or "").split()
    if len(parts) < 2 or len(parts[0]) != 4 or not parts[1].startswith("["):
        return None, None, None
    vendor, _, device = parts[1].strip("[]").partition(":")
    return f"0x{parts[0][:2]}{parts[0][2:]}".lower(), f"0x{vendor}".lower(), f"0x{device}".lower()


def _kind(obj: HwlocObject, pci_class: str | None, gpus: set[str], nics: set[str]) -> str:
    if obj.kind == "Bridge":
        return "bridge"
    if obj.bus_id in gpus:
        return "gpu"
    if obj.bus_id in nics or (pci_class or "").startswith("0x02"):
        return "nic"
    return "other"


def derived_topology(hwloc: HwlocTopology) -> TopologyFile | None:
    numa_ids = sorted({n.index for n in hwloc.numa_nodes if n.index is not None})
    if not numa_ids:
        return None
    cpu_of = {numa: index for index, numa in enumerate(numa_ids)}
    first = hwloc.numa_nodes[0].loc
    cpus = [build(Cpu, index=i, numa_id=numa, loc=next(n.loc for n in hwloc.numa_nodes if n.index == numa))
            for numa, i in cpu_of.items()]
    gpu_buses = {o.bus_id for o in hwloc.os_devices if o.subtype in _GPU_OSDEVS and o.bus_id}
    fabric = {}
    for osdev in hwloc.os_devices:
        if osdev.bus_id and osdev.name and (osdev.subtype == "OpenFabrics" or osdev.osdev_class in _NET_CLASSES):
            fabric.setdefault(osdev.bus_id, []).append(osdev)
    pci, gpus, nics, seen, gpu_ids = [], [], [], set(), {}
    for obj in hwloc.pci:
        if obj.bus_id in seen:
            continue  # a bus id twice (hand-edited exports): NCCL would keep the first
        seen.add(obj.bus_id)
        pci_class, vendor, device = _ids(obj)
        if obj.bus_id not in gpu_buses and (pci_class or "").startswith("0x03") and vendor == "0x10de":
            gpu_buses.add(obj.bus_id)
        cpu_index = cpu_of.get(obj.numa_nodes[0], 0) if obj.numa_nodes else 0
        kind = _kind(obj, pci_class, gpu_buses, set(fabric))
        pci.append(build(PciDevice, bus_id=obj.bus_id, kind=kind, pci_class=pci_class, vendor=vendor, device=device,
                         parent_bus_id=obj.parent_bus_id, cpu_index=cpu_index, loc=obj.loc))
        if kind == "gpu":
            gpus.append(build(Gpu, bus_id=obj.bus_id, cpu_index=cpu_index, loc=obj.loc))
            gpu_ids[obj.bus_id] = f"{vendor}:{device}" if vendor and device else None
        elif kind == "nic" and obj.bus_id in fabric:
            # OpenFabrics devices (mlx5_0) are what NCCL's IB transport uses; names such as ib0/eth0
            # are interfaces (NCCL's socket transport), kept so the placement rules can tell them apart.
            ordered = sorted(fabric[obj.bus_id], key=lambda o: (_openfabrics(o), o.name or ""))
            nets = [build(Net, name=o.name, port=1, loc=o.loc) for o in ordered if o.name]
            nics.append(build(Nic, bus_id=obj.bus_id, cpu_index=cpu_index, nets=nets[:1], loc=obj.loc))
    for dev, gpu in enumerate(sorted(gpus, key=lambda g: g.bus_id)):
        gpu.dev = gpu.rank = dev
    if hwloc.nvlink_matrices:
        from topolint.model.hwloc_nvlink import gpu_nvlinks

        by_bus = {g.bus_id: g for g in gpus}
        for bus, links in gpu_nvlinks(hwloc, gpu_ids).items():
            by_bus[bus].nvlinks = links
    return build(TopologyFile, path=hwloc.path, kind="dump", version=None, system_loc=first, cpus=cpus, pci=pci,
                 gpus=gpus, nics=nics)
