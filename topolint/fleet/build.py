"""A node's inventory from its facts (docs/fleet.md): what the node shows, each value with the
input line that states it. Nothing is guessed: a value no input states stays absent (unknown).

It reads the completed node's join (model/node_join.py, docs/node-model.md): the one idea of
which lspci device, GPU model, NVLink count, HCA and RDMA port belongs to which GPU or NIC, shared
with the rules (the join and its fabric view are kept per node, so nothing is joined twice).
Where several inputs state one value, the most direct wins: for GPUs an NCCL topology dump, then
lspci, then ``nvidia-smi topo -m`` (NVLinks: ``nvidia-smi nvlink -s`` first, it names each
link's state; a matrix's NV# cells count as the join reads them: the links to the NVSwitches, or
the sum of the direct links, ``matrix_row_links``); nvidia-smi's GPU indices are joined to bus ids
as the join does (``index_bus_ids``); for RDMA ports the fabric view's join of ibstat, ibv_devinfo, ibdev2netdev,
show_gids, ethtool and ip, then an NCCL dump's ``net`` elements. GPU models are spelled one way
whatever names them (model/devices.py: ``H100 SXM5`` from a PCI id, lspci's or nvidia-smi's
name). PCIe links are what lspci's LnkSta says the link trained at (a dump states the maximum,
not the current state). A static NCCL_TOPO_FILE is a claim about what NCCL will use, not a fact
about the machine: it is not read here. The cluster stage reads only what this returns.
"""

from __future__ import annotations

import re

import topolint
from topolint.fleet.inventory import (
    GpuInventory,
    Inventory,
    NicPortInventory,
    SoftwareInventory,
    Sourced,
    interned,
    sourced,
)
from topolint.model.devices import gpu_model_by_id, gpu_model_by_name, hex_pci_id, lspci_gpu_model
from topolint.model.facts import build
from topolint.model.matrix import MatrixView, single_numa, topo_matrices
from topolint.model.node_join import active_nvlinks, matrix_row_links, node_join
from topolint.model.pcie import gts_generation
from topolint.model.software import PEERMEM_MODULES

_NCCL_NAME = re.compile(r"NCCL_[A-Z0-9_]{1,128}")


def _id_model(pci_id: str | None) -> str | None:
    """A GPU's model by its ``0xvvvv:0xdddd`` id: the table's name, else the id itself."""
    if not pci_id:
        return None
    found = gpu_model_by_id(pci_id)
    return found.name if found is not None else pci_id.lower()


def _lspci_model(device) -> str | None:
    """A GPU's model from lspci: its id's or its printed name's (model/devices.py), else its id."""
    found = lspci_gpu_model(device)
    return found.name if found is not None else _id_model(hex_pci_id(device))


class _Gpus:
    """GPUs by bus id (or ``#index`` when no input gives the bus id), attribute by attribute."""

    def __init__(self):
        self.records: dict[str, GpuInventory] = {}
        self.count: Sourced | None = None

    def get(self, key: str, index: int | None = None) -> GpuInventory:
        record = self.records.get(key)
        if record is None:
            bus = key if not key.startswith("#") else None
            record = self.records[key] = build(GpuInventory, bus_id=bus, index=index)
        elif record.index is None and index is not None:
            record.index = index
        return record

    @staticmethod
    def put(record, name: str, value: Sourced | None) -> None:
        if value is not None and getattr(record, name) is None:
            setattr(record, name, value)


def _from_dumps(node, gpus: _Gpus) -> None:
    join = node_join(node)
    for topology in node.topologies:
        if topology.kind != "dump":
            continue
        pci = topology.pci_by_bus()
        joined = join.gpus(topology)  # lspci at its address, nvidia-smi nvlink -s by its index, hwloc
        for gpu in topology.gpus:
            record = gpus.get(gpu.bus_id, gpu.dev)
            facts = joined.get(gpu.bus_id)
            if facts is not None and facts.active_nvlinks is not None:  # each link's state: the most direct
                gpus.put(record, "nvlinks", sourced(facts.active_nvlinks.value, facts.active_nvlinks.loc))
            if facts is not None and facts.model is not None:
                gpus.put(record, "model", sourced(facts.model.value.name, facts.model.loc))
            device = pci.get(gpu.bus_id)
            if device is not None and device.vendor and device.device:
                gpus.put(record, "model", sourced(_id_model(f"{device.vendor}:{device.device}"), device.loc))
            links = [link for link in gpu.nvlinks if link.target != gpu.bus_id]
            gpus.put(record, "nvlinks", sourced(sum(link.count or 0 for link in links), gpu.loc))
            if gpu.cpu_index < len(topology.cpus):
                numa = topology.cpus[gpu.cpu_index].numa_id
                gpus.put(record, "numa_node", sourced(numa if numa is not None and numa >= 0 else None, gpu.loc))
        if gpus.count is None:
            gpus.count = sourced(len(topology.gpus), topology.system_loc)


def _from_lspci(node, gpus: _Gpus, lspci_gpus: list) -> None:
    for lspci, device in lspci_gpus:
        record = gpus.get(device.address)
        gpus.put(record, "model", sourced(_lspci_model(device), device.loc))
        _put_link(gpus, record, device)
    if gpus.count is None and lspci_gpus:
        gpus.count = sourced(len(lspci_gpus), lspci_gpus[0][1].loc)


def _put_link(gpus, record, device) -> None:
    state = device.lnk_sta
    if state is not None:
        gpus.put(record, "pcie_gen", sourced(gts_generation(state.speed_gts), state.loc))
        gpus.put(record, "pcie_width", sourced(state.width, state.loc))
    if device.numa_node is not None and device.numa_node >= 0:
        gpus.put(record, "numa_node", sourced(device.numa_node, device.numa_loc))


def _from_nvlink_status(node, gpus: _Gpus) -> None:
    """Active NVLinks per GPU from ``nvidia-smi nvlink -s``: the most direct count (it wins)."""
    join = node_join(node)
    status = join.status_by_index()
    keys = join.index_bus_ids(len(status))
    for gpu in status.values():
        record = gpus.get(keys.get(gpu.index, f"#{gpu.index}"), gpu.index)
        record.nvlinks = sourced(active_nvlinks(gpu), gpu.loc)
        model = gpu_model_by_name(gpu.name)
        gpus.put(record, "model", sourced(model.name if model is not None else None, gpu.loc))


def _from_gpu_query(node, gpus: _Gpus) -> tuple[Sourced | None, bool]:
    """``nvidia-smi -q`` / ``--query-gpu``: each GPU's model and Fabric fields, by the bus id the
    join gives it; and the node's NVLink domain (the first GPU's that states one), with whether any
    GPU printed a Fabric section at all (one that states no domain: not applicable)."""
    domain, fabric_seen = None, False
    for joined in node_join(node).queried:
        gpu = joined.gpu
        record = gpus.get(joined.key, gpu.index if gpu.index_stated else None)
        model = gpu_model_by_name(gpu.name.value) if gpu.name is not None else None
        gpus.put(record, "model", sourced(model.name if model is not None else None, gpu.name and gpu.name.loc))
        fabric = gpu.fabric
        if fabric is None:
            continue
        fabric_seen = True
        for name, stated in (("fabric_state", fabric.state), ("fabric_status", fabric.status),
                             ("fabric_health", fabric.health_summary)):
            if stated is not None:
                gpus.put(record, name, sourced(stated.text, stated.loc))
        if domain is None and fabric.domain is not None:
            domain = sourced(fabric.domain, fabric.cluster_uuid.loc)
    return domain, fabric_seen


def _from_matrices(node, gpus: _Gpus) -> None:
    """``nvidia-smi topo -m``: each GPU's NVLinks as the join counts a row's NV# cells (to the
    NVSwitches, or the sum of its direct links) and its NUMA node."""
    join = node_join(node)
    for matrix in topo_matrices(node):
        if matrix.restricted is not None or matrix.gpu_rows_missing:
            continue  # a cgroup view or a cut paste: not the node's GPUs
        view = MatrixView(matrix)
        keys = join.index_bus_ids(len(view.gpus))
        for row in matrix.rows:
            if row.kind != "gpu":
                continue
            record = gpus.get(keys.get(row.index, f"#{row.index}"), row.index)
            links = sum(link.count for link in matrix_row_links(view, row.label))
            gpus.put(record, "nvlinks", sourced(links, row.loc))
            gpus.put(record, "numa_node", sourced(single_numa(row.numa_affinity), row.loc))
        if gpus.count is None:
            gpus.count = sourced(len(view.gpus), matrix.header_loc)
        break


def _nics(node) -> tuple[list[NicPortInventory], Sourced | None]:
    join = node_join(node)
    view = join.fabric  # the rules' own view of the node's fabric
    ports = view.ports
    records = []
    addresses = join.hca_addresses
    for key in sorted(ports):
        port = ports[key]
        record = build(NicPortInventory, name=f"{port.hca}:{port.port}")
        for name, field in (("model", "model"), ("firmware", "firmware"), ("state", "state"),
                            ("link_layer", "link_layer"), ("mtu", "active_mtu"), ("port_guid", "port_guid")):
            value = port.value(field)
            if value is not None:
                setattr(record, name, sourced(value, port.report_with(field).at(
                    "rate" if field == "rate_gbps" else field)))
        rate, _ = port.rate
        if rate is not None:
            report = port.report_with("rate_gbps")
            loc = report.at("rate") if report.rate_gbps is not None else port.link.at("speed")
            record.rate_gbps = sourced(rate, loc)
        record.netdev = sourced(port.netdev, port.netdev_source)
        interface = view.interfaces.get(port.netdev) if port.netdev else None
        if interface is not None:
            record.netdev_mtu = sourced(interface.mtu, interface.loc)
        if port.link_layer == "ethernet":
            v2 = sorted((g for g in port.gids if g.version == "v2" and g.ipv4), key=lambda g: g.index)
            record.gid_index = sourced(v2[0].index, v2[0].loc) if v2 else None
        address = addresses.get(port.hca)
        device = join.lspci_at.get(address, (None, None))[1] if address else None
        if device is not None:
            if device.lnk_sta is not None:
                record.pcie_gen = sourced(gts_generation(device.lnk_sta.speed_gts), device.lnk_sta.loc)
                record.pcie_width = sourced(device.lnk_sta.width, device.lnk_sta.loc)
            if device.numa_node is not None and device.numa_node >= 0:
                record.numa_node = sourced(device.numa_node, device.numa_loc)
        records.append(record)
    if records:
        first = ports[sorted(ports)[0]].reports[0].loc
        return records, sourced(len(records), first)
    return _dump_nets(node)


def _dump_nets(node) -> tuple[list[NicPortInventory], Sourced | None]:
    """Without port reports: the ``net`` elements of an NCCL dump (NCCL read their speed from the verbs)."""
    for topology in node.topologies:
        if topology.kind != "dump":
            continue
        records = {}
        for nic in topology.nics:
            for net in nic.nets:
                if not net.name:
                    continue
                name = f"{net.name}:{net.port if net.port is not None else 1}"
                rate = net.speed_mbps / 1000 if net.speed_mbps else None
                records.setdefault(name, build(NicPortInventory, name=name, rate_gbps=sourced(rate, net.loc)))
        if records:
            return [records[k] for k in sorted(records)], sourced(len(records), topology.system_loc)
    return [], None


def _numa_nodes(node) -> Sourced | None:
    for table in node.numa_tables:
        with_cpus = [n for n in table.nodes if n.cpus]
        if with_cpus and not table.partial:
            return sourced(len(with_cpus), table.loc)
    for topology in node.topologies:
        if topology.kind == "dump" and topology.cpus:
            return sourced(len({c.numa_id for c in topology.cpus}), topology.cpus[0].loc)
    return None


def _nccl_env(node, configs: list) -> dict[str, Sourced]:
    """NCCL_* settings in the node's own config files (a bundle's nccl.conf, env files): the last
    literal value a file sets, files in path order. ``configs``: the node's own."""
    found: dict[str, Sourced] = {}
    for config in sorted((c for c in configs if c.path in node.sources), key=lambda c: c.path):
        for setting in config.settings:
            if setting.value is not None and not setting.passthrough and _NCCL_NAME.fullmatch(setting.name):
                found[setting.name] = sourced(setting.value, setting.loc)
    return dict(sorted(found.items()))


# Where each version is read, most direct first: the kernel module's own version for the driver.
_VERSION_SOURCES = {
    "driver": ("nvidia-driver-version", "nvidia-smi-version"),
    "cuda": ("nvidia-smi-version",),
    "ofed": ("ofed-info",),
    "kernel": ("kernel-version",),
}
_PEERMEM = PEERMEM_MODULES


def _software(node) -> SoftwareInventory:
    record = build(SoftwareInventory, modules={})
    files = sorted(getattr(node, "software", []), key=lambda f: f.path)
    for component, tools in _VERSION_SOURCES.items():
        for tool in tools:
            found = next((v for f in files if f.tool == tool for v in f.versions if v.component == component), None)
            if found is not None:
                setattr(record, component, sourced(found.version, found.loc))
                break
    for listing in (f for f in files if f.tool == "kernel-modules"):
        loaded = {m.name: m for m in listing.modules}
        name = next((n for n in _PEERMEM if n in loaded), None)
        state = "not loaded" if name is None else "loaded" if name == "nvidia_peermem" else f"loaded as {name}"
        record.nvidia_peermem = sourced(state, loaded[name].loc if name else listing.modules[0].loc)
        break
    for versions in (f for f in files if f.tool == "module-versions"):
        for module in versions.modules:
            record.modules.setdefault(module.name, sourced(module.version, module.loc))
    record.modules = dict(sorted(record.modules.items()))
    return record


# Why a value of an inventory is unknown: the inputs that state it (``topolint collect`` gathers each).
_STATED_BY = {
    "gpu_count": "an NCCL topology dump, lspci or nvidia-smi (topo -m, nvlink -s) lists the GPUs",
    "numa_nodes": "numactl -H (or an NCCL dump's CPUs) lists the NUMA nodes",
    "nic_ports": "ibstat, ibstatus or ibv_devinfo (or an NCCL dump's nets) lists the RDMA ports",
    "gpus.model": "lspci -nn, nvidia-smi nvlink -s or hwloc names the GPU model",
    "gpus.nvlinks": "nvidia-smi nvlink -s, an NCCL dump or nvidia-smi topo -m states the NVLinks",
    "gpus.pcie_gen": "lspci -vvv states the link (LnkSta)",
    "gpus.pcie_width": "lspci -vvv states the link (LnkSta)",
    "gpus.numa_node": "lspci -vvv, an NCCL dump or nvidia-smi topo -m states the GPU's NUMA node",
    "gpus.fabric_state": "nvidia-smi -q states each GPU's Fabric State, Status and Health",
    "nvlink_domain": "nvidia-smi -q states the GPUs' Fabric ClusterUUID and CliqueId",
    "nics.model": "ibstat (CA type) or ibv_devinfo names the HCA model",
    "nics.rate_gbps": "ibstat, ibstatus, ibv_devinfo or ethtool states the rate",
    "nics.firmware": "ibstat or ibv_devinfo states the firmware",
    "nics.mtu": "ibv_devinfo states the active MTU",
    "nics.netdev": "ibdev2netdev names the port's network interface",
    "nics.netdev_mtu": "ip link (of the port's netdev, which ibdev2netdev names) states the MTU",
    "nics.gid_index": "show_gids lists a RoCE port's GIDs",
    "nics.pcie_gen": "lspci -vvv at the HCA's address (ibdev2netdev -v or hwloc names it) states the link",
    "nics.pcie_width": "lspci -vvv at the HCA's address (ibdev2netdev -v or hwloc names it) states the link",
    "nics.numa_node": "lspci -vvv at the HCA's address (ibdev2netdev -v or hwloc names it) states its NUMA node",
    "software.driver": "/proc/driver/nvidia/version or nvidia-smi --version states the driver",
    "software.cuda": "nvidia-smi --version states the CUDA version",
    "software.ofed": "ofed_info -s states the OFED release",
    "software.kernel": "/proc/version states the kernel",
    "software.nvidia_peermem": "/proc/modules or lsmod lists the loaded modules",
}
_NOT_ROCE = "an InfiniBand port has no RoCE GID index"
_NO_DOMAIN = ("the GPUs' Fabric sections name no ClusterUUID (N/A, or all zeros: an HGX board's own "
              "NVSwitches): no multi-node NVLink domain")


def _unknown(inventory: Inventory, fabric_seen: bool = False) -> dict[str, str]:
    """Each field of the inventory no input stated, with the parts it is missing on and why
    (``fabric_seen``: a GPU printed a Fabric section, so a missing NVLink domain is none)."""
    found = {}
    for name in ("gpu_count", "numa_nodes", "nic_ports"):
        if getattr(inventory, name) is None:
            found[name] = f"not stated: {_STATED_BY[name]}"
    if inventory.nvlink_domain is None:
        found["nvlink_domain"] = f"not applicable: {_NO_DOMAIN}" if fabric_seen else \
            f"not stated: {_STATED_BY['nvlink_domain']}"
    for part, records, noun in (("gpus", inventory.gpus, "GPUs"), ("nics", inventory.nics, "ports")):
        for field in (key.split(".", 1)[1] for key in _STATED_BY if key.startswith(f"{part}.")):
            missing = [r for r in records if getattr(r, field) is None]
            if field == "gid_index":
                missing = [r for r in missing if r.link_layer is None or r.link_layer.value != "infiniband"]
                if not missing and any(r.gid_index is None for r in records):
                    found[f"{part}.{field}"] = f"not applicable: {_NOT_ROCE}"
                    continue
            if missing:
                whom = "every one" if len(missing) == len(records) else ", ".join(
                    (r.key if part == "gpus" else r.name) for r in missing[:4]) + (" ..." if len(missing) > 4 else "")
                found[f"{part}.{field}"] = f"not stated for {len(missing)} of {len(records)} {noun} ({whom}): " \
                                           f"{_STATED_BY[f'{part}.{field}']}"
    for field in ("driver", "cuda", "ofed", "kernel", "nvidia_peermem"):
        if getattr(inventory.software, field) is None:
            found[f"software.{field}"] = f"not stated: {_STATED_BY[f'software.{field}']}"
    if not inventory.nccl_env:
        found["nccl_env"] = "none: the node's files (a bundle's nccl.conf, env files) set no NCCL_* variable"
    return found


def node_inventory(node, configs: list = ()) -> Inventory | None:
    """The inventory of ``node``, or None when it has no machine facts: config files alone (an infra
    repository's folders) are settings for jobs, not machines to compare."""
    if getattr(node, "inventory", None) is not None:
        return node.inventory  # read from an inventory file
    gpus = _Gpus()
    lspci_gpus = node_join(node).lspci_gpus
    _from_dumps(node, gpus)
    _from_lspci(node, gpus, lspci_gpus)
    _from_nvlink_status(node, gpus)
    domain, fabric_seen = _from_gpu_query(node, gpus)
    _from_matrices(node, gpus)
    nics, nic_count = _nics(node)
    env = _nccl_env(node, list(configs))
    numa = _numa_nodes(node)
    software = _software(node)
    if not (gpus.records or nics or numa or node.bundle is not None or getattr(node, "software", [])):
        return None  # no machine: a folder of config files (a repository) is not a node to compare
    ordered = sorted(gpus.records.values(), key=lambda g: (g.bus_id is None, g.bus_id or "", g.index or 0))
    inventory = build(Inventory, topolint_inventory=1, node=node.name, topolint_version=topolint.__version__,
                      gpu_count=gpus.count, numa_nodes=numa, nic_ports=nic_count, nvlink_domain=domain, gpus=ordered,
                      nics=nics, software=software, nccl_env=env)
    inventory.unknown = {key: interned(text) for key, text in _unknown(inventory, fabric_seen).items()}  # shared by like nodes
    return inventory

