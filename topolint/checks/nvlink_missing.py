"""NVL001: the node's NVLink pattern is all-to-all and a GPU or pair lacks it, or a GPU model
that always has NVLink shows none in an NCCL dump. Hybrid cube-mesh and bridged pairs never fire."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import describes_the_file_as_written
from topolint.checks._hwloc_nvlink import counts_known, dump_topologies, hwloc_pattern, index_alias, row_evidence
from topolint.checks._matrix import gpu_text, matrix_contexts
from topolint.checks._nvlink import (
    NVLINK_MODELS,
    matrix_all_to_all,
    shared_all_to_all,
    shared_xml_pattern,
)
from topolint.checks._topology import gpu_label, pci_id
from topolint.engine.finding import Hit, Related
from topolint.model.node import gpu_entity

NEEDS = ("complete topology or matrix",)


class Parameters(CheckParameters):
    # Fire for an NVLink GPU model (SXM A100/H100/H200/B200) whose NCCL dump shows no nvlink (the
    # catalog's second condition). Static files never count: what they leave out is not absent.
    model_check: bool = True


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@describes_the_file_as_written
def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    seen = set()
    # A static file's missing nvlink elements are not evidence of absence: dumps (or hwloc) only.
    for topology, from_hwloc in dump_topologies(context):
        by_count = not from_hwloc or counts_known(topology)
        pattern = hwloc_pattern(context, topology) if from_hwloc else shared_xml_pattern(context.shared, topology)
        found = shared_all_to_all(context.shared, pattern)
        by_bus = {g.bus_id: g for g in topology.gpus}
        pci = topology.pci_by_bus()
        for bus, gpu in by_bus.items():
            if found is not None and bus in found.lacking:
                peers = found.lacking[bus]
                what = ("NVSwitch" if found.kind == "switch" else _join([gpu_label(by_bus[p]) for p in peers]))
                links = f"NV{found.links}" if by_count else f"{found.links} MB/s of NVLink"
                fields = {"gpu": gpu_label(gpu), "peers": what, "links": found.links,
                          "pattern": f"{len(found.members)} GPUs with {links} "
                                     + ("to the NVSwitches" if found.kind == "switch" else "to each other")}
                hit = Hit(entity=gpu_entity(node, bus), location=gpu.loc, fields=fields,
                          evidence=[f"{gpu.loc.path}:{gpu.loc.line}: {gpu_label(gpu)} has no nvlink to {what}",
                                    f"the other GPUs: {fields['pattern']}"])
            elif params.model_check and not from_hwloc and not pattern.peers(bus) and not pattern.switch.get(bus) \
                    and pci.get(bus) is not None \
                    and pci_id(pci[bus]) in NVLINK_MODELS:
                model = NVLINK_MODELS[pci_id(pci[bus])]
                fields = {"gpu": gpu_label(gpu), "model": model, "peers": "any GPU or NVSwitch", "links": 0,
                          "pattern": f"{model} always has NVLink"}
                hit = Hit(entity=gpu_entity(node, bus), location=gpu.loc, fields=fields, variant="model",
                          evidence=[f"{gpu.loc.path}:{gpu.loc.line}: {gpu_label(gpu)} is a {model} "
                                    f"({pci_id(pci[bus])}) with no nvlink element in an NCCL dump"])
            else:
                continue
            if from_hwloc:
                hit.evidence.extend(row_evidence(context, topology, gpu))
                seen.add(index_alias(context, topology, gpu) or hit.entity)  # the matrix's name for this GPU
            seen.add(hit.entity)
            yield hit
    for mc in matrix_contexts(context.node, complete_only=True, shared=context.shared):
        found = matrix_all_to_all(mc)
        if found is None:
            continue  # cube mesh, bridged pairs, all PCIe: nothing to compare against
        for gpu, peers in found.lacking.items():
            entity = mc.gpu_entity(gpu)
            if entity in seen:
                continue
            row = mc.view.rows[gpu]
            cells = [f"{p}: {mc.view.rel(gpu, p)}" for p in peers]
            fields = {"gpu": gpu_text(gpu), "peers": _join([gpu_text(p) for p in peers]), "links": found.links,
                      "pattern": f"{len(found.members)} GPUs with NV{found.links} to each other"}
            loc = mc.view.rel_loc(gpu, peers[0])
            yield Hit(entity=entity, location=loc, fields=fields, variant="matrix",
                      evidence=[f"{loc.path}:{loc.line}: {gpu} row: {', '.join(cells[:8])}",
                                f"the other GPUs: {fields['pattern']}"],
                      related=[Related(location=row.loc, entity=entity, message=f"{gpu} row")])
