"""Helpers the topology checks share: labels and locations of GPUs and NICs."""

from __future__ import annotations

from topolint.engine.finding import Related
from topolint.model.facts import Gpu, TopologyFile
from topolint.model.node import gpu_entity, nic_entity


def numa_of(topology: TopologyFile, cpu_index: int) -> str:
    numa = topology.cpus[cpu_index].numa_id
    return str(numa) if numa is not None else "?"


def gpu_label(gpu: Gpu) -> str:
    return f"GPU {gpu.dev}" if gpu.dev is not None else f"GPU {gpu.bus_id}"


def gpu_sort_key(gpu: Gpu) -> tuple:
    return (gpu.dev if gpu.dev is not None else 1 << 30, gpu.bus_id)


def gpu_fields(topology: TopologyFile, gpu: Gpu) -> dict:
    return {
        "gpu": gpu_label(gpu),
        "gpu_bus": gpu.bus_id,
        "gpu_numa": numa_of(topology, gpu.cpu_index),
    }


def net_entity(node: str, system, net: tuple) -> str:
    nic, fact = system.nets[net]
    return nic_entity(node, fact.name or nic.bus_id or "nic", fact.port)


def net_related(node: str, system, net: tuple, message: str) -> Related:
    _, fact = system.nets[net]
    return Related(location=fact.loc, entity=net_entity(node, system, net), message=message)


def where(loc) -> str:
    return f"{loc.path}:{loc.line}"
