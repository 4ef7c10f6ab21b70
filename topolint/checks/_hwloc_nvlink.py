"""NVL001/NVL002 on a node whose only topology is an hwloc export: its NVLinkBandwidth matrix as
the nvlinks NCCL's dump would show (model/hwloc_nvlink.py), and evidence that points at the
matrix row and says the links came from hwloc."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks._nvlink import NVSWITCH_CLASS, Pattern, xml_pattern
from topolint.checks._topology import gpu_label, hwloc_context, where


def dump_topologies(context) -> Iterator[tuple[object, bool]]:
    """(topology, from_hwloc): the node's NCCL dumps, or for a node with no NCCL XML at all, the
    topologies derived from its hwloc exports that carry an NVLinkBandwidth matrix."""
    dumps = [t for t in context.node.topologies if t.kind == "dump"]
    yield from ((t, False) for t in dumps)
    derived = hwloc_context(context)
    if derived is None:
        return
    for topology in derived.node.topologies:
        hwloc = export_of(context, topology)
        if hwloc is not None and hwloc.nvlink_matrices:
            yield topology, True
        elif topology.gpus:
            context.notes.append(f"{topology.path}: NVLink not judged: the hwloc export has no NVLinkBandwidth "
                                 "matrix (written by hwloc 2.5 or later with its NVML backend)")


def nvlink_views(context) -> list:
    """For TL003: the hwloc-derived topologies whose NVLink counts are known, for a node with no
    NCCL XML (what it says of NVLink is then compared with nvidia-smi topo -m)."""
    derived = hwloc_context(context)
    if derived is None:
        return []
    return [t for t in derived.node.topologies
            if (h := export_of(context, t)) is not None and h.nvlink_matrices and counts_known(t)]


def matrix_rows(context, topology) -> set[str]:
    """Bus ids of the GPUs NVML listed in the export's matrix (see hwloc_pattern)."""
    return {o.bus_id for m in export_of(context, topology).nvlink_matrices for o in m.objects if o.kind == "OSDev"}


def index_alias(context, topology, gpu) -> str | None:
    """The entity an nvidia-smi matrix gives this GPU (NODE/gpu/INDEX: no XML names bus ids on an
    hwloc-only node), when every matrix lists as many GPUs as the export: one finding per GPU."""
    from topolint.model.matrix import MatrixView, topo_matrices
    from topolint.model.node import gpu_entity

    matrices = topo_matrices(context.node)
    if not matrices or any(len(MatrixView(m).gpus) != len(topology.gpus) for m in matrices):
        return None
    return gpu_entity(context.node.name, str(gpu.dev))


def export_of(context, topology):
    return next((h for h in context.node.hwloc if h.path == topology.path), None)


def counts_known(topology) -> bool:
    return all(link.count is not None for gpu in topology.gpus for link in gpu.nvlinks)


def hwloc_pattern(context, topology) -> Pattern:
    """The NVLink pattern of the GPUs that are rows of the matrix: NVML lists every GPU it can see
    (hwloc_nvml_discover gives each a row, zeros when its links are down); a GPU PCI device that
    is no row was hidden from NVML (a cgroup), so its NVLinks are unknown, not absent."""
    pattern = xml_pattern(topology) if counts_known(topology) else _bandwidth_pattern(topology)
    rows = matrix_rows(context, topology)
    pattern.gpus = [g for g in pattern.gpus if g in rows]
    return pattern


def _bandwidth_pattern(topology) -> Pattern:
    """The pattern of hwloc bandwidths (MB/s) where link counts are unknown: which GPUs reach which
    peers is still known, and equal bandwidths of one GPU model are equal link counts."""
    gpus = {g.bus_id for g in topology.gpus}
    pattern = Pattern(gpus=[g.bus_id for g in topology.gpus])
    for gpu in topology.gpus:
        for link in gpu.nvlinks:
            if not link.bw_mbps:
                continue
            if link.tclass.startswith("0x03") and link.target in gpus:
                pattern.pairs[frozenset((gpu.bus_id, link.target))] = link.bw_mbps
            elif link.tclass.startswith(NVSWITCH_CLASS):
                pattern.switch[gpu.bus_id] = pattern.switch.get(gpu.bus_id, 0) + link.bw_mbps
    return pattern


def unknown_count_note(topology) -> str:
    return (f"{topology.path}: NVLink counts unknown: the GPUs' NVLink generation (from the PCI device id or "
            "GPUModel) is not in topolint/model/hwloc_nvlink.py, or no per-link bandwidth of hwloc's table divides "
            "the NVLinkBandwidth values; NVL002 compares counts, an NCCL dump or nvidia-smi nvlink -s would settle it")


def row_evidence(context, topology, gpu) -> list[str]:
    """Where the GPU's row of the matrix starts and what hwloc says of its links."""
    matrices = export_of(context, topology).nvlink_matrices
    rows = [(m, i) for m in matrices for i, o in enumerate(m.objects) if o.kind == "OSDev" and o.bus_id == gpu.bus_id]
    matrix, row = rows[0] if rows else (matrices[0], None)
    loc = matrix.row_locs[row] if row is not None else matrix.loc
    linked = [link for link in gpu.nvlinks if link.bw_mbps]
    if not linked:
        said = "no bandwidth to any peer" if row is not None else "not a row of it"
    else:
        total = sum(link.bw_mbps for link in linked)
        counts = [link.count for link in linked]
        said = (f"{total} MB/s to {len(linked)} peer{'s' if len(linked) > 1 else ''}"
                + (f" ({sum(counts)} NVLinks)" if None not in counts else " (link count unknown)"))
    return [f"{where(loc)}: {gpu_label(gpu)}'s row of hwloc's NVLinkBandwidth matrix: {said}",
            "from an hwloc export (no NCCL dump on this node): its NVLinkBandwidth matrix lists the active NVLinks "
            "NVML reported when lstopo ran, summed per peer"]
