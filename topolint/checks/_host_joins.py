"""TL003 comparisons with the host facts: lspci against the NCCL XML (by PCI address) and against
``nvidia-smi topo -m`` (by GPU index: nvidia-smi numbers GPUs in PCI bus order), and numactl's
CPU lists against a topology file's affinity masks and a matrix's CPU Affinity. The joins
themselves are the node's (model/node_join.py, the one join of node facts to devices).

Only facts that do not vary with time are compared (NUMA placement, CPU sets), never a link's
current speed. A static NCCL_TOPO_FILE that differs is info: NCCL uses the file, so its ranks
are pinned to the file's CPUs, whatever the machine says.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks._topology import gpu_label, where
from topolint.engine.finding import Hit, Related
from topolint.model.matrix import MatrixView, single_numa, topo_matrices
from topolint.model.node import cpu_entity, gpu_entity, pci_entity
from topolint.model.node_join import NodeJoin, node_join
from topolint.model.numbers import cpulist, cpumask


def _hit(static: bool, variant: str, **kwargs) -> Hit:
    hit = Hit(variant=("static_" if static else "") + variant, **kwargs)
    if static:
        hit.severity = "info"
    return hit


def lspci_vs_xml(node) -> Iterator[Hit]:
    """A GPU's or NIC's NUMA node in lspci against the cpu it sits under in the XML."""
    for topology in node.topologies:
        static = topology.kind == "static"
        pci = topology.pci_by_bus()
        gpus = {g.bus_id: g for g in topology.gpus}
        for lspci, device in node_join(node).lspci_devices_with_numa():
            fact = pci.get(device.address)
            if fact is None or fact.kind not in ("gpu", "nic") or fact.cpu_index >= len(topology.cpus):
                continue
            xml_numa = topology.cpus[fact.cpu_index].numa_id
            if xml_numa is None or xml_numa < 0 or xml_numa == device.numa_node:
                continue
            label = gpu_label(gpus[device.address]) if device.address in gpus else f"NIC {device.address}"
            entity = gpu_entity(node.name, device.address) if fact.kind == "gpu" else pci_entity(node.name, device.address)
            yield _hit(static, "lspci_numa", entity=entity, location=device.numa_loc,
                       fields={"xml": topology.path, "matrix": lspci.path, "gpu": label, "gpu_bus": device.address,
                               "xml_value": xml_numa, "matrix_value": device.numa_node, "what": "NUMA node",
                               "source": lspci.path},
                       evidence=[f"{where(fact.loc)}: {device.address} is under cpu numaid={xml_numa}",
                                 f"{where(device.numa_loc)}: lspci: NUMA node: {device.numa_node}"],
                       related=[Related(location=fact.loc, entity=entity, message=f"{label} in {topology.path}")])


def lspci_vs_matrix(node) -> Iterator[Hit]:
    """NVIDIA GPUs of lspci in bus order are nvidia-smi's GPU0, GPU1, ...: their NUMA nodes must agree."""
    for lspci in node.lspci:
        gpus = NodeJoin.nvidia_gpus(lspci)
        for matrix in topo_matrices(node):
            view = MatrixView(matrix)
            if matrix.restricted is not None or len(view.gpus) != len(gpus):
                continue  # not the same set of GPUs: no index join
            for index, device in enumerate(gpus):
                row = view.rows.get(f"GPU{index}")
                numa = single_numa(row.numa_affinity) if row is not None else None
                if numa is None or device.numa_node is None or device.numa_node < 0 or numa == device.numa_node:
                    continue
                yield Hit(variant="lspci_matrix_numa", entity=gpu_entity(node.name, device.address), location=device.numa_loc,
                          fields={"xml": lspci.path, "matrix": matrix.path, "gpu": f"GPU {index}",
                                  "gpu_bus": device.address, "xml_value": device.numa_node, "matrix_value": numa,
                                  "what": "NUMA node", "source": lspci.path},
                          evidence=[f"{where(device.numa_loc)}: lspci: {device.address} NUMA node: {device.numa_node}",
                                    f"{where(row.loc)}: GPU{index} NUMA Affinity {row.numa_affinity} (GPU{index} is "
                                    f"the {index + 1}. NVIDIA GPU in bus order)"])


def numactl_vs_xml(node, numa_cpus: dict) -> Iterator[Hit]:
    """Each XML cpu's affinity mask against numactl's CPU list of the same NUMA node."""
    for topology in node.topologies:
        static = topology.kind == "static"
        hosts = {c.host_hash for c in topology.cpus}
        if len(hosts) > 1:
            continue  # several hosts in one file: numactl describes one
        for cpu in topology.cpus:
            known = numa_cpus.get(cpu.numa_id) if cpu.numa_id is not None else None
            mask = cpumask(cpu.affinity)
            if known is None or not mask:
                continue
            cpus, numa, table = known
            if mask == cpus:
                continue
            yield _hit(static, "numactl_affinity", entity=cpu_entity(node.name, cpu.numa_id, cpu.index),
                       location=cpu.loc,
                       fields={"xml": topology.path, "matrix": table.path, "numa": cpu.numa_id,
                               "xml_value": mask.text(), "matrix_value": cpus.text(), "what": "CPU list",
                               "gpu": f"NUMA node {cpu.numa_id}", "gpu_bus": "-"},
                       evidence=[f"{where(cpu.loc)}: cpu numaid={cpu.numa_id} affinity={cpu.affinity} "
                                 f"(CPUs {mask.text()})",
                                 f"{where(numa.loc)}: numactl: node {numa.node_id} cpus: {cpus.text()}"],
                       related=[Related(location=numa.loc, entity=cpu_entity(node.name, cpu.numa_id, cpu.index),
                                        message=f"numactl -H node {numa.node_id}")])


def numactl_vs_matrix(node, numa_cpus: dict) -> Iterator[Hit]:
    """A GPU row's CPU Affinity must lie within numactl's CPUs of its NUMA Affinity node (a job's
    cpuset may show fewer CPUs; that is TL005's business, not a contradiction)."""
    for matrix in topo_matrices(node):
        for row in MatrixView(matrix).rows.values():
            numa = single_numa(row.numa_affinity) if row.kind == "gpu" else None
            affinity = cpulist(row.cpu_affinity) if numa is not None else None
            if not affinity or numa not in numa_cpus:
                continue
            cpus, numa_node, table = numa_cpus[numa]
            if affinity.issubset(cpus):
                continue
            yield Hit(variant="numactl_matrix", entity=cpu_entity(node.name, numa, 0), location=row.loc,
                      fields={"xml": table.path, "matrix": matrix.path, "gpu": row.label, "gpu_bus": "-",
                              "numa": numa, "xml_value": cpus.text(), "matrix_value": affinity.text(),
                              "what": "CPU list"},
                      evidence=[f"{where(row.loc)}: {row.label} CPU Affinity {row.cpu_affinity}, NUMA Affinity {numa}",
                                f"{where(numa_node.loc)}: numactl: node {numa} cpus: {cpus.text()}"])


def host_hits(node) -> Iterator[Hit]:
    yield from lspci_vs_xml(node)
    yield from lspci_vs_matrix(node)
    if node.numa_tables:
        numa_cpus = node_join(node).numactl_cpus
        yield from numactl_vs_xml(node, numa_cpus)
        yield from numactl_vs_matrix(node, numa_cpus)
