"""NVL002: a GPU has fewer active NVLinks than its peers in an all-to-all pattern (NV12 where the
others show NV18; in an NCCL dump, links to the NVSwitches are summed per GPU)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._matrix import gpu_text, matrix_contexts
from topolint.checks._nvlink import all_to_all, matrix_pattern, xml_pattern
from topolint.checks._topology import gpu_label
from topolint.engine.finding import Hit
from topolint.model.matrix import nv_count
from topolint.model.node import gpu_entity

NEEDS = ("complete topology or matrix",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    seen = set()
    for topology in context.node.topologies:
        if topology.kind != "dump":
            continue
        found = all_to_all(xml_pattern(topology))
        if found is None:
            continue
        by_bus = {g.bus_id: g for g in topology.gpus}
        for bus, count in found.low.items():
            gpu = by_bus[bus]
            target = "the NVSwitches" if found.kind == "switch" else "a peer GPU"
            fields = {"gpu": gpu_label(gpu), "count": count, "links": found.links, "target": target,
                      "members": len(found.members)}
            seen.add(gpu_entity(node, bus))
            yield Hit(entity=gpu_entity(node, bus), location=gpu.loc, fields=fields,
                      evidence=[f"{gpu.loc.path}:{gpu.loc.line}: {gpu_label(gpu)} has {count} NVLinks to {target}"
                                + (" (summed over its nvlink elements)" if found.kind == "switch" else ""),
                                f"{len(found.members)} GPUs: most have {found.links}"])
    for mc in matrix_contexts(context.node, complete_only=True):
        found = all_to_all(matrix_pattern(mc.view))
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
