"""The topologies an estimate reads: NCCL XMLs, else a matrix, completed by options and node facts."""

from __future__ import annotations

from topolint.estimate.refine import refine
from topolint.estimate.results import EstimateError, Options
from topolint.model.nccl_version import NcclVersion


def _with_nvlinks(topology, count: int, notes: list[str]):
    """The topology with ``count`` NVSwitch links on every GPU that states none. NCCL completes a
    static NCCL_TOPO_FILE from the driver at run time (ncclTopoFillGpu adds NVLinks from NVML);
    topolint cannot, so the user says what the hardware has."""
    from topolint.model.facts import NVSWITCH_CLASS, NvLink, build

    if not any(not g.nvlinks for g in topology.gpus):
        return topology
    gpus = [g if g.nvlinks else g.model_copy(update={"nvlinks": [
        build(NvLink, target=None, count=count, tclass=NVSWITCH_CLASS, attrs={}, loc=g.loc)]}) for g in topology.gpus]
    notes.append(f"{topology.path}: {count} NVLinks to NVSwitches assumed on each GPU the file gives none (--nvlinks)")
    return topology.model_copy(update={"gpus": gpus})


def _topologies(node, options: Options, notes: list[str]) -> list[tuple]:
    """(topology, aliases) for the node's NCCL topologies; failing those, one built from its
    nvidia-smi topo -m matrix, whose made-up bus ids have aliases for entities."""
    if any(t.gpus for t in node.topologies):
        return [(t, {}) for t in node.topologies]
    from topolint.estimate.from_matrix import topology_from_matrix

    for matrix in (m for m in node.matrices if m.kind == "topo"):
        built = topology_from_matrix(matrix, notes, options.gpu_sm, options.pcie_gen)
        if built is not None:
            return [built]
    return []


def _with_nic_speed(topology, gbps: float, notes: list[str]):
    """Fill a speed where the file states none (static files: NCCL reads it from the device)."""
    if not any(not n.speed_mbps for nic in topology.nics for n in nic.nets):
        return topology
    nics = [nic.model_copy(update={"nets": [n if n.speed_mbps else n.model_copy(update={"speed_mbps": int(gbps * 1000)})
                                            for n in nic.nets]}) for nic in topology.nics]
    notes.append(f"{topology.path}: network devices without a speed taken at {gbps:g} Gb/s (--nic-gbps)")
    return topology.model_copy(update={"nics": nics})


def _with_sm(topology, sm: int, notes: list[str]):
    if all(g.sm for g in topology.gpus):
        return topology
    notes.append(f"{topology.path}: GPUs without an SM taken as SM{sm} (--gpu-sm)")
    return topology.model_copy(update={"gpus": [g if g.sm else g.model_copy(update={"sm": sm}) for g in topology.gpus]})


def systems(models, version: NcclVersion, options: Options, notes: list[str]) -> list[tuple[str, object]]:
    from topolint.model.system import System

    nodes = models if isinstance(models, (list, tuple)) else [models]
    found = []
    for node in nodes:
        for topology, aliases in _topologies(node, options, notes):
            if topology.gpus:
                if options.nvlinks:
                    topology = _with_nvlinks(topology, options.nvlinks, notes)
                elif topology.kind != "dump" and all(not g.nvlinks for g in topology.gpus):
                    notes.append(f"{topology.path}: a static topology file with no NVLinks; NCCL adds the GPUs' "
                                 "NVLinks from the driver at run time, so an NVLink system needs --nvlinks N")
                if options.nic_gbps:
                    topology = _with_nic_speed(topology, options.nic_gbps, notes)
                if options.gpu_sm:
                    topology = _with_sm(topology, options.gpu_sm, notes)
                topology = refine(node, topology, notes)
                found.append((node.name, System(topology, version), aliases))
                break
    if not found:
        raise EstimateError("no NCCL topology XML or nvidia-smi topo -m matrix with GPUs among the inputs")
    return found
