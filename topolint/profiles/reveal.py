"""What a node's own files reveal of its shape: the values a profile can be matched on.

The machine facts come from the node's inventory (fleet/build.py: dumps, lspci, nvidia-smi,
ibstat and kin, joined once). A node with no machine facts but a static NCCL_TOPO_FILE (what a
cloud or server vendor ships for the shape: Azure's ndv5-topo.xml, AWS's p5.48xl-topo.xml) is
read from that file: it states what the vendor says the machine is, which is what a profile is
matched on; what the file leaves out (a GPU model, NVLinks) stays unrevealed. Each value keeps
the line that states it, for the note that says why a profile was chosen.

A value that differs across the node's parts is not revealed as one: GPUs of two models reveal
no model. NVLinks are the most any GPU has (the board's design; a GPU with fewer is what PROF003
reports, not a reason for another profile).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from topolint.model.devices import gpu_model_by_id, gpu_model_by_name


@dataclass
class Revealed:
    value: object
    where: str  # "path:line: what states it"
    origin: tuple[str, int] | None = None  # (path, line) of the input that states it, where one does


@dataclass
class Shape:
    """The node's revealed values by name (profiles/model.py MATCHABLE); ``nic_names``: the names."""

    values: dict[str, Revealed] = field(default_factory=dict)
    nic_names: list[str] = field(default_factory=list)

    def get(self, name: str):
        found = self.values.get(name)
        return found.value if found is not None else None

    def put(self, name: str, value, where: str, origin=None) -> None:
        """``origin``: the inventory's Sourced that states it (its path and line are kept)."""
        if value is not None and name not in self.values:
            self.values[name] = Revealed(value, where, (origin.path, origin.line) if origin is not None else None)


def _at(sourced) -> str:
    return f"{sourced.path}:{sourced.line}"


def _one(values: list):
    distinct = {v for v in values if v is not None}
    return distinct.pop() if len(distinct) == 1 and None not in values else None


def _from_inventory(inventory, shape: Shape) -> None:
    gpus = inventory.gpus
    if inventory.gpu_count is not None:
        shape.put("gpu_count", inventory.gpu_count.value, f"{_at(inventory.gpu_count)}: {inventory.gpu_count.value} GPUs",
                  inventory.gpu_count)
    models = [g.model.value if g.model is not None else None for g in gpus]
    model = _one(models) if gpus else None
    if model is not None:
        first = next(g.model for g in gpus if g.model is not None)
        shape.put("gpu_model", str(model), f"{_at(first)}: GPU model {model}", first)
        known = gpu_model_by_name(str(model)) or gpu_model_by_id(str(model))
        if known is not None:
            shape.put("gpu_sm", known.sm, f"{_at(first)}: {model} is SM {known.sm}", first)
    links = [(g.nvlinks.value, g.nvlinks) for g in gpus if g.nvlinks is not None]
    if links:
        most, where = max(links, key=lambda item: item[0])
        if most:
            shape.put("nvlinks", most, f"{_at(where)}: {most} NVLinks (the most any GPU has)", where)
    if inventory.numa_nodes is not None:
        shape.put("numa_nodes", inventory.numa_nodes.value, f"{_at(inventory.numa_nodes)}: "
                                                            f"{inventory.numa_nodes.value} NUMA nodes",
                  inventory.numa_nodes)
    if inventory.nics and not shape.nic_names:
        shape.nic_names = [n.name.rpartition(":")[0] for n in inventory.nics]
        first = inventory.nics[0]
        stated = first.model or first.rate_gbps or first.state or inventory.nic_ports
        where = _at(stated) if stated else "the node's RDMA ports"
        shape.put("nic_count", len(inventory.nics), f"{where}: {len(inventory.nics)} RDMA ports", stated)


def _from_topologies(node, shape: Shape) -> None:
    """NCCL's view of the node's network devices (dumps first), and a static file's shape."""
    for kind in ("dump", "static"):
        for topology in (t for t in node.topologies if t.kind == kind):
            where = f"{topology.path}:{topology.system_loc.line}"
            nets = [net for nic in topology.nics for net in nic.nets]
            if nets and not shape.nic_names:
                shape.nic_names = [net.name or "" for net in nets]
                shape.put("nic_count", len(nets), f"{where}: {len(nets)} <net> elements")
            if kind != "static":
                continue
            _static_shape(topology, where, shape, bare_nics=not nets)


def _static_shape(topology, where: str, shape: Shape, bare_nics: bool) -> None:
    pci = topology.pci_by_bus()
    gpu_leaves = [p for p in topology.pci if p.kind == "gpu"]
    count = len(topology.gpus) or len(gpu_leaves)
    if count:
        what = "<gpu> elements" if topology.gpus else "PCI devices of a display class (0x03...)"
        shape.put("gpu_count", count, f"{where}: {count} {what}")
    sms = [g.sm for g in topology.gpus]
    if topology.gpus and _one(sms) is not None:
        shape.put("gpu_sm", sms[0], f"{topology.path}:{topology.gpus[0].loc.line}: <gpu sm=\"{sms[0]}\">")
    models = []
    for gpu in topology.gpus:
        device = pci.get(gpu.bus_id)
        found = gpu_model_by_id(f"{device.vendor}:{device.device}") if device and device.vendor and device.device else None
        models.append(found.name if found is not None else None)
    if models and _one(models) is not None:
        shape.put("gpu_model", models[0], f"{topology.path}:{topology.gpus[0].loc.line}: GPU PCI id is {models[0]}")
    links = [sum(link.count or 0 for link in gpu.nvlinks if link.target != gpu.bus_id) for gpu in topology.gpus]
    if links and max(links):
        shape.put("nvlinks", max(links), f"{where}: {max(links)} NVLinks on a GPU (the most any has)")
    if bare_nics:
        nics = [p for p in topology.pci if p.kind == "nic" and not any(q.parent_bus_id == p.bus_id for q in topology.pci)]
        if nics:
            shape.put("nic_count", len(nics), f"{where}: {len(nics)} network PCI devices (class 0x02...)")
    numa = {c.numa_id for c in topology.cpus if c.numa_id is not None and c.numa_id >= 0}
    if numa:
        shape.put("numa_nodes", len(numa), f"{where}: {len(numa)} <cpu> NUMA nodes")


def node_shape(node) -> Shape:
    """What ``node`` reveals (an empty Shape for a node of config files)."""
    from topolint.fleet.build import node_inventory

    shape = Shape()
    _from_topologies(node, shape)  # NCCL's <net> list names the fabric devices NCCL uses
    inventory = node_inventory(node, [])
    if inventory is not None:
        _from_inventory(inventory, shape)
    return shape


def inventory_shape(inventory) -> Shape:
    shape = Shape()
    _from_inventory(inventory, shape)
    return shape


# ---- agreement ------------------------------------------------------------------------------

def model_agrees(wanted: str, found: str) -> bool:
    """``A100 SXM4`` and ``A100 SXM4 80GB`` name one model: either is the other's leading words."""
    a, b = wanted.strip().lower().split(), found.strip().lower().split()
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return bool(shorter) and longer[:len(shorter)] == shorter


def agrees(name: str, wanted, shape: Shape, profile) -> bool:
    """Whether the node's revealed ``name`` agrees with the profile's ``wanted``."""
    found = shape.get(name)
    if name == "gpu_model":
        return model_agrees(str(wanted), str(found))
    if name == "nic_count":
        return found >= wanted
    if name == "nic_names":
        matching = sum(1 for n in shape.nic_names if fnmatch.fnmatchcase(n, str(wanted)))
        return matching >= max(1, profile.value("nic_count") or 1)
    return found == wanted


def revealed(name: str, shape: Shape) -> bool:
    return (bool(shape.nic_names) if name == "nic_names" else shape.get(name) is not None)
