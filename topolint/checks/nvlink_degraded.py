"""NVL002: a GPU has fewer active NVLinks than its peers in an all-to-all pattern (NV12 where the
others show NV18; in an NCCL dump, links to the NVSwitches are summed per GPU), or
``nvidia-smi nvlink -s`` shows some of its links inactive. One finding per GPU: the link states
of nvidia-smi nvlink -s come first, then the dump, then the matrix."""

from __future__ import annotations

import re
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import describes_the_file_as_written
from topolint.checks._hwloc_nvlink import (
    counts_known,
    dump_topologies,
    hwloc_pattern,
    index_alias,
    row_evidence,
    unknown_count_note,
)
from topolint.checks._matrix import gpu_text, matrix_contexts
from topolint.checks._nvlink import matrix_all_to_all, shared_all_to_all, shared_xml_pattern
from topolint.checks._topology import gpu_label
from topolint.engine.finding import Hit
from topolint.model.matrix import gpu_bus_ids, nv_count
from topolint.model.node import gpu_entity

NEEDS = ("complete topology or matrix, or nvlink-status",)

# GPUs that always have NVLink (SXM/HGX boards): every link inactive is a fault, not a PCIe card.
NVLINK_NAMES = re.compile(r"SXM|HBM3|\b(?:GB|GH|B)\d00\b|\bH200\b(?! NVL)")


class Parameters(CheckParameters):
    pass


def status_hits(context) -> Iterator[Hit]:
    """GPUs of ``nvidia-smi nvlink -s`` with inactive links. A GPU whose links are all down counts
    only where NVLink is expected: another GPU of the output has active links, or an SXM model."""
    node = context.node.name
    for status in context.node.nvlink_status:
        bus = gpu_bus_ids(context.node, len(status.gpus))
        others_linked = any(g.active for g in status.gpus)
        for gpu in status.gpus:
            down, up = gpu.inactive, gpu.active
            if not (down or gpu.all_inactive):
                continue
            if not up and not others_linked and not NVLINK_NAMES.search(gpu.name):
                continue  # a PCIe GPU without a bridge
            label = f"GPU {gpu.index} ({gpu.name})"
            if gpu.all_inactive:
                fields = {"gpu": label, "inactive": "all of its", "which": " (NVML: all links are inActive)",
                          "active": "none"}
                loc, evidence = gpu.loc, [f"{gpu.loc.path}:{gpu.loc.line}: {label}: all links are inactive"]
            else:
                which = ", ".join(str(link.index) for link in down)
                fields = {"gpu": label, "inactive": f"{len(down)} of its {len(gpu.links)}",
                          "which": f" (link{'s' if len(down) > 1 else ''} {which})", "active": str(len(up))}
                loc = down[0].loc
                evidence = [f"{link.loc.path}:{link.loc.line}: Link {link.index}: <{link.state}>" for link in down]
                evidence.append(f"{len(up)} of {len(gpu.links)} links active")
            yield Hit(entity=gpu_entity(node, bus.get(gpu.index, str(gpu.index))), location=loc, fields=fields,
                      variant="inactive", evidence=evidence)


@describes_the_file_as_written
def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    seen = set()
    for hit in status_hits(context):
        seen.add(hit.entity)
        yield hit
    for topology, from_hwloc in dump_topologies(context):
        if from_hwloc and not counts_known(topology):
            context.notes.append(unknown_count_note(topology))
            continue
        found = shared_all_to_all(context.shared, hwloc_pattern(context, topology) if from_hwloc
                                  else shared_xml_pattern(context.shared, topology))
        if found is None:
            continue
        by_bus = {g.bus_id: g for g in topology.gpus}
        for bus, count in found.low.items():
            gpu = by_bus[bus]
            alias = index_alias(context, topology, gpu) if from_hwloc else None
            if gpu_entity(node, bus) in seen or (alias is not None and alias in seen):
                continue
            target = "the NVSwitches" if found.kind == "switch" else "a peer GPU"
            fields = {"gpu": gpu_label(gpu), "count": count, "links": found.links, "target": target,
                      "members": len(found.members)}
            seen.update(e for e in (gpu_entity(node, bus), alias) if e is not None)
            yield Hit(entity=gpu_entity(node, bus), location=gpu.loc, fields=fields,
                      evidence=[f"{gpu.loc.path}:{gpu.loc.line}: {gpu_label(gpu)} has {count} NVLinks to {target}"
                                + (" (summed over its nvlink elements)" if found.kind == "switch" and not from_hwloc else ""),
                                f"{len(found.members)} GPUs: most have {found.links}"]
                      + (row_evidence(context, topology, gpu) if from_hwloc else []))
    for mc in matrix_contexts(context.node, complete_only=True, shared=context.shared):
        found = matrix_all_to_all(mc)
        if found is None:
            continue
        for gpu, count in found.low.items():
            entity = mc.gpu_entity(gpu)
            if entity in seen:
                continue
            low_peers = [p for p in found.members if p != gpu and 0 < nv_count(mc.view.rel(gpu, p)) < found.links]
            loc = mc.view.rel_loc(gpu, low_peers[0])
            fields = {"gpu": gpu_text(gpu), "count": count, "links": found.links,
                      "target": ", ".join(gpu_text(p) for p in low_peers), "members": len(found.members)}
            yield Hit(entity=entity, location=loc, fields=fields, variant="matrix",
                      evidence=[f"{loc.path}:{loc.line}: {gpu} to {low_peers[0]} is {mc.view.rel(gpu, low_peers[0])}",
                                f"{len(found.members)} GPUs: most pairs are NV{found.links}"])
