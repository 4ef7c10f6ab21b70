"""NUMA001: a GPU's nearest fabric NIC is reachable only across the CPU interconnect."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import describes_the_file_as_written
from topolint.checks._matrix import cell_where, gpu_text, matrix_contexts
from topolint.checks._topology import (
    fabric_nearest,
    gpu_label,
    gpu_nic_hit,
    gpu_sort_key,
    net_related,
    xml_then_matrix,
)
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity

NEEDS = ("topology or matrix",)


class Parameters(CheckParameters):
    pass


@describes_the_file_as_written
def check(context, params: Parameters) -> Iterator[Hit]:
    return xml_then_matrix(context, _xml_hits, _matrix_hits)


def _matrix_hits(context) -> Iterator[Hit]:
    version = context.version
    for mc in matrix_contexts(context.node, shared=context.shared):
        view = mc.view
        if not view.nics:
            continue  # a node without NICs is not NUMA001
        for row in mc.matrix.rows:
            if row.kind != "gpu":
                continue
            path, nics = mc.nearest_nics(row.label, version)
            if path != "SYS":
                continue
            nic = nics[0]
            cell = view.rel(row.label, nic)
            fields = {
                "gpu": gpu_text(row.label),
                "gpu_bus": mc.gpu_bus(row.label),
                "gpu_numa": mc.numa_text(row.label),
                "nic": mc.nic_text(nic),
                "nic_numa": "?",
                "path": path,
                "cell": cell,
            }
            loc = view.rel_loc(row.label, nic)
            evidence = [f"{cell_where(loc)}: {row.label} to {nic} is {cell}; every NIC of the matrix is "
                        f"{cell} from {row.label}"]
            hit = Hit(entity=mc.gpu_entity(row.label), location=loc, fields=fields, evidence=evidence,
                      related=[mc.nic_related(nic, f"nearest NIC {fields['nic']}", via=())], variant="matrix")
            if view.grace:
                hit.variant, hit.severity = "grace", "info"
                hit.evidence.append(f"{row.label} has GPU NUMA ID {row.gpu_numa_id}: a Grace (C2C) system, "
                                    f"where nvidia-smi shows SYS for NICs that NCCL reaches at P2C")
                yield hit
                continue
            proxy, proxy_nic, known = mc.pxn_proxy(row.label, version)
            if proxy is not None:
                hit.variant, hit.severity = "matrix_pxn", "warning"
                hit.fields["proxy"] = gpu_text(proxy)
                hit.fields["proxy_nic"] = mc.nic_text(proxy_nic)
                hit.evidence.append(f"PXN: {proxy}, NCCL's relay for {hit.fields['proxy_nic']} (its local GPU, "
                                    f"ncclTopoGetLocalGpu), is a direct NVLink peer ({view.rel(row.label, proxy)}) "
                                    f"and reaches it at {view.rel(proxy, proxy_nic)}")
                hit.evidence.append("the matrix shows no bandwidths: the relay is chosen as NCCL would with "
                                    "equal link bandwidths")
                hit.related.append(mc.nic_related(proxy_nic, f"PXN route to {hit.fields['proxy_nic']} through "
                                                             f"{hit.fields['proxy']}", via=(mc.gpu_entity(proxy),)))
            elif not known:
                continue  # a peer's row was cut: a PXN route cannot be ruled out
            else:
                hit.evidence.append(f"no NIC's relay GPU (its local GPU, ncclTopoGetLocalGpu) is a direct NVLink "
                                    f"peer of {row.label} reaching it at PXB or closer (no PXN route)")
            yield hit


def _xml_hits(context) -> Iterator[Hit]:
    for topology in context.node.topologies:
        system = context.system(topology)
        fabric, nearest_of = fabric_nearest(context, system)
        if not fabric:
            continue  # a node without fabric NICs is not NUMA001
        for gpu in sorted(topology.gpus, key=gpu_sort_key):
            nearest = nearest_of[gpu.bus_id]
            if nearest is None or system.raw_paths[gpu.bus_id][nearest].type != "SYS":
                continue
            # NCCL spreads GPUs over equally good NICs (dev modulo count); name the one this GPU gets.
            chosen = [(n, p) for n, p in system.nearest_nets(gpu) if n in fabric and p.type == "PXN"]
            proxy_net, proxy_path = chosen[(gpu.dev or 0) % len(chosen)] if chosen else (None, None)
            hit = gpu_nic_hit(context.node.name, topology, system, gpu, nearest, "")
            hit.evidence.append(f"no fabric NIC reachable from {gpu_label(gpu)} without crossing the CPU interconnect")
            if proxy_path is not None:
                proxy = system.gpus[proxy_path.proxy_gpu]
                hit.variant, hit.severity = "pxn", "warning"
                hit.fields["proxy"] = gpu_label(proxy)
                hit.fields["proxy_nic"] = system.net_label(proxy_net)
                hit.evidence.append(f"PXN: {gpu_label(proxy)} ({proxy.bus_id}) is an NVLink peer that "
                                    f"reaches {hit.fields['proxy_nic']} at PXB or closer")
                hit.related.append(net_related(context.node.name, system, proxy_net,
                                               f"PXN route to {hit.fields['proxy_nic']} through {gpu_label(proxy)}",
                                               via=(gpu_entity(context.node.name, proxy.bus_id),)))
            yield hit
