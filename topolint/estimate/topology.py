"""The topologies an estimate reads: NCCL XMLs, else a matrix, each completed from the node's
facts and the options (model/completion.py), then refined by what the node says is true now."""

from __future__ import annotations

from topolint.estimate.refine import refine
from topolint.estimate.results import EstimateError, Options
from topolint.model.nccl_version import NcclVersion


def overrides(options: Options):
    """The options that state what a file leaves out, as the completion takes them."""
    from topolint.model.completion import Overrides

    return Overrides(nvlinks=options.nvlinks, nic_gbps=options.nic_gbps, gpu_sm=options.gpu_sm,
                     pcie_gen=options.pcie_gen, gpu_sm_source=options.gpu_sm_source)


def has_topology(node) -> bool:
    """The node has what an estimate reads: an NCCL XML with GPUs (or PCI devices its completion
    may find GPUs among), or a topo -m matrix with rows."""
    return any(t.gpus or t.pci for t in node.topologies) or any(m.kind == "topo" and m.rows for m in node.matrices)


def _topologies(node, options: Options, notes: list[str]) -> list[tuple]:
    """(topology, aliases) for the node's NCCL topologies; failing those, one built from its
    nvidia-smi topo -m matrix, whose made-up bus ids have aliases for entities."""
    if any(t.gpus or t.pci for t in node.topologies):
        return [(t, {}) for t in node.topologies]
    from topolint.estimate.from_matrix import topology_from_matrix

    for matrix in (m for m in node.matrices if m.kind == "topo"):
        built = topology_from_matrix(matrix, notes, None, options.pcie_gen)
        if built is not None:
            return [built]
    return []


def completed(node, topology, options: Options, notes: list[str]):
    """``topology`` as NCCL completes it at run time (model/completion.py), with its assumptions
    in ``notes``; then the node facts that lower a link (refine.py)."""
    from topolint.model.completion import complete

    done = complete(node, topology, overrides(options))
    notes.extend(done.notes())
    return refine(node, done.topology, notes)


def systems(models, version: NcclVersion, options: Options, notes: list[str]) -> list[tuple[str, object]]:
    from topolint.model.system import System

    nodes = models if isinstance(models, (list, tuple)) else [models]
    found, without = [], []
    for node in nodes:
        for topology, aliases in _topologies(node, options, notes):
            said: list[str] = []
            done = completed(node, topology, options, said)
            if done.gpus:
                notes.extend(said)
                found.append((node.name, System(done, version), aliases))
                break
            if topology.pci:
                without.append(topology.path)
    if not found:
        why = "no NCCL topology XML or nvidia-smi topo -m matrix with GPUs among the inputs"
        if without:
            why += (f" ({', '.join(without)}: no GPU among its <pci> elements; a <pci> with no class is one NCCL reads "
                    "from sysfs at run time: give the node's lspci -nn beside the file)")
        raise EstimateError(why)
    return found
