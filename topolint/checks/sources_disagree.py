"""TL003: an NCCL topology XML and an ``nvidia-smi topo -m`` matrix of one node contradict each
other about the hardware: GPU count, a GPU's NUMA node, its NVLink count. GPUs are joined by
index (``gpu@dev``), else by sorted bus id. A static NCCL_TOPO_FILE that differs is info: NCCL
uses the file, and the file leaves out what it does not state (no nvlink is not a contradiction).
With host facts it also joins lspci and numactl -H with the XML and the matrix (_host_joins.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._hwloc_nvlink import matrix_rows, nvlink_views, row_evidence
from topolint.checks._matrix import matrix_contexts
from topolint.checks._nvlink import shared_xml_pattern
from topolint.checks._topology import gpu_label
from topolint.engine.finding import Hit, Related
from topolint.model.matrix import join_gpus, single_numa
from topolint.model.node import file_entity, gpu_entity

NEEDS = ("two sources",)


class Parameters(CheckParameters):
    pass


def _hit(static: bool, variant: str, **kwargs) -> Hit:
    hit = Hit(variant=("static_" if static else "") + variant, **kwargs)
    if static:
        hit.severity = "info"
    return hit


def check(context, params: Parameters) -> Iterator[Hit]:
    yield from _xml_and_matrix(context)
    from topolint.checks._host_joins import host_hits

    yield from host_hits(context.node)


def _xml_and_matrix(context) -> Iterator[Hit]:
    node = context.node.name
    hwloc = nvlink_views(context)  # an hwloc export stands in for the XML on NVLink only
    for mc in matrix_contexts(context.node, shared=context.shared):
        matrix, view = mc.matrix, mc.view
        for topology in context.node.topologies + hwloc:
            static = topology.kind == "static"
            from_hwloc = any(topology is t for t in hwloc)
            rows = matrix_rows(context, topology) if from_hwloc else None
            base = {"xml": topology.path, "matrix": matrix.path}
            if len(topology.gpus) != len(view.gpus):
                if matrix.restricted is None and not from_hwloc:
                    yield _hit(static, "gpu_count", entity=file_entity(node, matrix.path),
                               location=matrix.header_loc,
                               fields={**base, "xml_gpus": len(topology.gpus), "matrix_gpus": len(view.gpus)},
                               evidence=[f"{topology.path}: {len(topology.gpus)} gpu elements",
                                         f"{matrix.path}:{matrix.header_loc.line}: {len(view.gpus)} GPU columns"],
                               related=[Related(location=topology.system_loc, entity=file_entity(node, topology.path),
                                                message="the topology XML")])
                continue
            pattern = shared_xml_pattern(context.shared, topology)
            for index, gpu in sorted(join_gpus(topology, matrix).items()):
                label = f"GPU{index}"
                row = view.rows.get(label)
                if row is None:
                    continue
                xml_numa = topology.cpus[gpu.cpu_index].numa_id if gpu.cpu_index < len(topology.cpus) else None
                numa = single_numa(row.numa_affinity)
                numa_differs = xml_numa is not None and xml_numa >= 0 and numa is not None and numa != xml_numa \
                    and not from_hwloc
                matrix_links = mc.best_nvlink(label)
                switch = pattern.switch.get(gpu.bus_id, 0)
                xml_links = switch or _best_peer_links(pattern, topology, gpu)
                # a static file that states no nvlink (or a GPU NVML did not list) says nothing
                nvlink_differs = not ((xml_links == 0 and static) or (from_hwloc and gpu.bus_id not in rows)) \
                    and xml_links != matrix_links
                if not (numa_differs or nvlink_differs):
                    continue
                entity = gpu_entity(node, gpu.bus_id)
                fields = {**base, "gpu": gpu_label(gpu), "gpu_bus": gpu.bus_id}
                related = [Related(location=gpu.loc, entity=entity, message=f"{gpu_label(gpu)} in {topology.path}")]
                if numa_differs:
                    yield _hit(static, "numa", entity=entity, location=row.loc,
                               fields={**fields, "xml_value": xml_numa, "matrix_value": numa, "what": "NUMA node"},
                               evidence=[f"{gpu.loc.path}:{gpu.loc.line}: {gpu.bus_id} is under cpu numaid={xml_numa}",
                                         f"{row.loc.path}:{row.loc.line}: {label} NUMA Affinity {row.numa_affinity}"],
                               related=related)
                if nvlink_differs:
                    how = "to the NVSwitches (summed)" if switch else "to its best-linked peer"
                    if from_hwloc:
                        how += " in hwloc's NVLinkBandwidth matrix"
                    yield _hit(static, "hwloc_nvlink" if from_hwloc else "nvlink", entity=entity, location=row.loc,
                               fields={**fields, "xml_value": xml_links, "matrix_value": matrix_links,
                                       "what": "NVLink count"},
                               evidence=[f"{gpu.loc.path}:{gpu.loc.line}: {gpu_label(gpu)} has {xml_links} NVLinks {how}",
                                         f"{row.loc.path}:{row.loc.line}: {label} shows "
                                         f"{'NV%d' % matrix_links if matrix_links else 'no NV#'} to its peers"]
                               + (row_evidence(context, topology, gpu) if from_hwloc else []),
                               related=related)


def _best_peer_links(pattern, topology, gpu) -> int:
    """The GPU's NVLink count to its best-linked peer GPU of the file (0 for none)."""
    linked = pattern.links().get(gpu.bus_id, {})  # = pattern.count for another bus id
    return max((linked.get(g.bus_id, 0) if g.bus_id != gpu.bus_id else pattern.count(gpu.bus_id, g.bus_id)
                for g in topology.gpus if g is not gpu), default=0)
