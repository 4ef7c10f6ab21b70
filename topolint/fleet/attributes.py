"""What the cross-node rules compare: each inventory flattened into attributes with a key that
is the same on every node (``("nic", "mlx5_3:1", "rate_gbps")``), the entity of the node's part,
how to name the part and the value in a message, and whether it is hardware (FLEET001) or
configuration (FLEET003).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from topolint.fleet.cluster import attribute_entity, system_entity
from topolint.fleet.inventory import Inventory, Sourced
from topolint.model.node import gpu_entity, nic_entity
from topolint.model.numbers import decimal

HARDWARE, CONFIG = "hardware", "config"


@dataclass(frozen=True)
class Attribute:
    """How one attribute is named: ``what`` and ``unit`` word its value, ``verb`` says what the
    majority does ("run 400 Gb/s", "have 8 GPUs")."""

    name: str
    kind: str  # HARDWARE or CONFIG
    verb: str
    unit: str = ""  # "{} Gb/s": the value inside it
    info: bool = False  # differences are worth knowing, not a warning (a GPU's idle PCIe speed)

    def say(self, value) -> str:
        shown = _number(value)
        return self.unit.format(shown) if self.unit else shown


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"  # 400.0 Gb/s is "400"
    return str(value)


SYSTEM = {
    "gpu_count": Attribute("gpu_count", HARDWARE, "have", "{} GPUs"),
    "nic_ports": Attribute("nic_ports", HARDWARE, "have", "{} RDMA ports"),
    "numa_nodes": Attribute("numa_nodes", HARDWARE, "have", "{} NUMA nodes"),
}
GPU = {
    "model": Attribute("model", HARDWARE, "have"),
    "nvlinks": Attribute("nvlinks", HARDWARE, "have", "{} NVLinks"),
    "pcie_gen": Attribute("pcie_gen", HARDWARE, "run", "PCIe Gen{}", info=True),
    "pcie_width": Attribute("pcie_width", HARDWARE, "run", "PCIe x{}"),
    "numa_node": Attribute("numa_node", HARDWARE, "have it on", "NUMA node {}"),
}
NIC = {
    "model": Attribute("model", HARDWARE, "have"),
    "rate_gbps": Attribute("rate_gbps", HARDWARE, "run", "{} Gb/s"),
    "link_layer": Attribute("link_layer", HARDWARE, "run", "link layer {}"),
    "netdev": Attribute("netdev", HARDWARE, "name it", "netdev {}"),
    "mtu": Attribute("mtu", HARDWARE, "run", "active MTU {}"),
    "netdev_mtu": Attribute("netdev_mtu", HARDWARE, "run", "netdev MTU {}"),
    "pcie_gen": Attribute("pcie_gen", HARDWARE, "run", "PCIe Gen{}"),
    "pcie_width": Attribute("pcie_width", HARDWARE, "run", "PCIe x{}"),
    "numa_node": Attribute("numa_node", HARDWARE, "have it on", "NUMA node {}"),
    "firmware": Attribute("firmware", CONFIG, "run", "firmware {}"),
    "gid_index": Attribute("gid_index", CONFIG, "use", "GID index {}"),
}
SOFTWARE = {
    "driver": Attribute("driver", CONFIG, "run", "driver {}"),
    "cuda": Attribute("cuda", CONFIG, "run", "CUDA {}"),
    "ofed": Attribute("ofed", CONFIG, "run", "OFED {}"),
    "kernel": Attribute("kernel", CONFIG, "run", "kernel {}"),
    "nvidia_peermem": Attribute("nvidia_peermem", CONFIG, "have", "nvidia_peermem {}"),
}
MODULE = Attribute("module", CONFIG, "run", "version {}")
ENV = Attribute("env", CONFIG, "set", "{}")
# Modules that carry the version of a package the inventory has already.
_SAME_VERSION_AS = {"nvidia": "driver", "nvidia_peermem": "driver", "nv_peer_mem": "driver",
                    "mlx5_core": "ofed", "mlx5_ib": "ofed", "ib_core": "ofed"}
UNSET = "unset"  # an NCCL variable a node with NCCL settings does not set


_TABLES = {"system": SYSTEM, "gpu": GPU, "nic": NIC, "software": SOFTWARE}
_KEYS: dict[tuple, tuple] = {}  # one key tuple per attribute of a part, shared by every node


def _key(*parts: str) -> tuple:
    found = _KEYS.get(parts)
    if found is None:
        if len(_KEYS) > 262144:  # bounded: a fleet has a few hundred kinds of part and attribute
            _KEYS.clear()
        found = _KEYS[parts] = parts
    return found


class Value(NamedTuple):
    """One node's value of one attribute: three fields (a fleet has hundreds of thousands); what
    names it in a finding is derived from the key when a finding needs it."""

    key: tuple  # the same on every node: ("nic", "mlx5_3:1", "rate_gbps")
    value: object
    source: Sourced  # for an NCCL variable the node does not set: its first NCCL setting's line

    @property
    def attribute(self) -> Attribute:
        kind = self.key[0]
        if kind == "module":
            return MODULE
        if kind == "env":
            return ENV
        return _TABLES[kind][self.key[-1]]

    @property
    def part(self) -> str:
        """How the message names the node's part: "mlx5_3", "GPU 0000:18:00.0", "" (the node)."""
        kind = self.key[0]
        if kind == "gpu":
            return f"GPU {self.key[1]}"
        if kind == "nic":
            return port_label(self.key[1])
        if kind == "module":
            return f"module {self.key[1]}"
        return self.key[1] if kind == "env" else ""

    def entity(self, node: str) -> str:
        kind, name = self.key[0], self.key[1]
        if kind == "gpu":
            return attribute_entity(gpu_entity(node, name), self.key[2])
        if kind == "nic":
            hca, _, port = name.rpartition(":")
            return attribute_entity(nic_entity(node, hca, decimal(port)), self.key[2])
        if kind == "module":
            return system_entity(node, f"module/{name}")
        if kind == "env":
            return f"{node}/env/{name}"
        return system_entity(node, name)


def port_label(name: str) -> str:
    """``mlx5_3`` for port 1 (the way people name an HCA), ``mlx5_0 port 2`` otherwise."""
    hca, _, port = name.rpartition(":")
    return hca if port == "1" else f"{hca} port {port}"


def values(inventory: Inventory, env_names: frozenset[str] = frozenset()) -> Iterator[Value]:
    """The node's known values; ``env_names``: the NCCL variables some node of the cluster sets
    (a node with NCCL settings that lacks one is "unset" for it)."""
    for name in SYSTEM:
        found = getattr(inventory, name)
        if found is not None:
            yield Value(_key("system", name), found.value, found)
    for gpu in inventory.gpus:
        for name in GPU:
            found = getattr(gpu, name)
            if found is not None:
                yield Value(_key("gpu", gpu.key, name), found.value, found)
    for nic in inventory.nics:
        inactive = nic.state is not None and nic.state.value != "active"  # a stale rate, NET003's business
        for name in NIC:
            found = getattr(nic, name)
            if found is not None and not (inactive and name in ("rate_gbps", "mtu")):
                yield Value(_key("nic", nic.name, name), found.value, found)
    for name in SOFTWARE:
        found = getattr(inventory.software, name)
        if found is not None:
            yield Value(_key("software", name), found.value, found)
    for name, found in inventory.software.modules.items():
        if getattr(inventory.software, _SAME_VERSION_AS.get(name, ""), None) is not None:
            continue  # the driver's or OFED's own version says it: one finding, not three
        yield Value(_key("module", name), found.value, found)
    if inventory.nccl_env:
        first = next(iter(inventory.nccl_env.values()))
        for name in sorted(env_names | set(inventory.nccl_env)):
            found = inventory.nccl_env.get(name)
            yield Value(_key("env", name), found.value if found is not None else UNSET, found or first)
