"""NUMA002: a GPU's nearest fabric NIC is on its socket but only through the host bridge, so
GPUDirect RDMA is off at the effective NCCL_NET_GDR_LEVEL."""

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
    is_hypervisor_bridge,
    xml_then_matrix,
)
from topolint.engine.finding import Hit

NEEDS = ("topology or matrix",)


class Parameters(CheckParameters):
    pass


def vm_signs(topology, system, fabric: list) -> list[str]:
    """Why the topology looks like a VM's flattened view, if it does."""
    signs = []
    bridges = [p for p in topology.pci if is_hypervisor_bridge(p)]
    if bridges:
        signs.append(f"{len(bridges)} hypervisor PCI bridge{'s' if len(bridges) > 1 else ''} "
                     f"0x104c:0x8232, e.g. {bridges[0].bus_id}")
    if any(c.numa_id == -1 for c in topology.cpus):
        signs.append("a cpu with numaid=-1")
    if len(system.gpus) >= 2:
        types = {system.raw_paths[bus][n].type for bus in system.gpus for n in fabric if n in system.raw_paths[bus]}
        if types == {"PHB"}:
            signs.append("every GPU-NIC path is PHB")
    return signs


@describes_the_file_as_written
def check(context, params: Parameters) -> Iterator[Hit]:
    return xml_then_matrix(context, _xml_hits, _matrix_hits)


def _matrix_hits(context) -> Iterator[Hit]:
    version = context.version
    configured = context.options.gdr_level
    # NCCL's default level (src/graph/paths.cc ncclTopoCheckGdr): P2C from 2.29.2, PXB before;
    # either way below PHB, which is all a matrix can tell.
    level = configured or version.default_gdr_level
    source = "configured" if configured else f"the default for NCCL {version}"
    if version.at_most("PHB", level):
        return
    for mc in matrix_contexts(context.node, shared=context.shared):
        view = mc.view
        if not view.nics or view.grace:
            continue  # Grace: P2C paths show as SYS/NODE here; NUMA001 asks for a dump instead
        gpu_rows = [r for r in mc.matrix.rows if r.kind == "gpu"]
        cells = {view.rel(g, n) for g in view.gpus for n in view.nics} - {None}
        vm = view.complete and len(view.gpus) >= 2 and cells == {"PHB"}
        for row in gpu_rows:
            path, nics = mc.nearest_nics(row.label, version)
            if path not in ("PHB", "NODE"):
                continue  # PIX/PXB have GDR; SYS is NUMA001
            proxy, _, known = mc.pxn_proxy(row.label, version)
            if proxy is not None or not known:
                continue  # NCCL proxies through an NVLink peer that has GDR (or a cut row hides one)
            nic = nics[0]
            cell = view.rel(row.label, nic)
            loc = view.rel_loc(row.label, nic)
            fields = {
                "gpu": gpu_text(row.label),
                "gpu_bus": mc.gpu_bus(row.label),
                "gpu_numa": mc.numa_text(row.label),
                "nic": mc.nic_text(nic),
                "nic_numa": mc.numa_text(row.label),
                "path": path,
                "cell": cell,
                "gdr_level": level,
                "gdr_level_source": source,
                "nccl_version": str(version),
            }
            meaning = ("across PCIe host bridges of one NUMA node" if cell == "NODE"
                       else "through the CPU's host bridge")
            evidence = [
                f"{cell_where(loc)}: {row.label} to {nic} is {cell} ({meaning}; NCCL counts it as PHB), "
                f"and no NIC is closer",
                f"no NVLink peer of {row.label} reaches a NIC at PXB or closer (no PXN route)",
                f"NCCL_NET_GDR_LEVEL {level} ({source}): GPUDirect RDMA needs the path at {level} or closer",
            ]
            hit = Hit(entity=mc.gpu_entity(row.label), location=loc, fields=fields, evidence=evidence,
                      related=[mc.nic_related(nic, f"nearest NIC {fields['nic']}", via=())], variant="matrix")
            if vm:
                hit.variant = "matrix_vm"
                hit.fields["vm_signs"] = "every GPU-NIC cell of the matrix is PHB"
                hit.evidence.append("looks like a VM: every GPU-NIC cell of the matrix is PHB")
            yield hit


def _xml_hits(context) -> Iterator[Hit]:
    version = context.version
    configured = context.options.gdr_level
    level = configured or version.default_gdr_level
    source = "configured" if configured else f"the default for NCCL {version}"
    for topology in context.node.topologies:
        system = context.system(topology)
        fabric, nearest_of = fabric_nearest(context, system)
        if not fabric:
            continue
        signs = None
        for gpu in sorted(topology.gpus, key=gpu_sort_key):
            nearest = nearest_of[gpu.bus_id]
            if nearest is None or system.raw_paths[gpu.bus_id][nearest].type != "PHB":
                continue  # PIX/PXB have GDR; SYS is NUMA001
            final = system.gpu_net_paths[gpu.bus_id]
            if any(final.get(n) is not None and final[n].type == "PXN" for n in fabric):
                continue  # NCCL proxies through an NVLink peer that has GDR
            if not system.gdr_enabled(gpu, nearest, "PHB") or system.gdr_enabled(gpu, nearest, level):
                continue  # GDR is off for another reason (gdr=0), or the level allows it
            nic, _ = system.nets[nearest]
            cpu_path = system.gpu_cpu_path(gpu)
            c2c = cpu_path is not None and cpu_path.type == "C2C" and nic.cpu_index == gpu.cpu_index
            # Unset, NCCL's level is P2C from 2.29.2 (PXB before, with P2C read as C2C on 2.27-2.28):
            # src/graph/paths.cc ncclTopoCheckGdr.
            shown = configured or version.default_gdr_level
            hit = gpu_nic_hit(context.node.name, topology, system, gpu, nearest,
                              ", reached at PHB (through the CPU's host bridge, no common PCIe switch)")
            hit.fields.update(gdr_level=shown, gdr_level_source=source, nccl_version=str(version))
            hit.evidence += [
                f"no NVLink peer of {gpu_label(gpu)} reaches a NIC at PXB or closer (no PXN route)",
                f"NCCL_NET_GDR_LEVEL {shown} ({source}): GPUDirect RDMA needs the path at {shown} or closer",
            ]
            if c2c:
                hit.variant = "c2c"
                hit.evidence.append(f"{gpu_label(gpu)} reaches its CPU over C2C and {hit.fields['nic']} hangs off "
                                    f"the same CPU (P2C from NCCL 2.27)")
            else:
                if signs is None:
                    signs = vm_signs(topology, system, fabric)
                if signs:
                    hit.variant = "vm"
                    hit.fields["vm_signs"] = "; ".join(signs)
                    hit.evidence.append(f"looks like a VM: {'; '.join(signs)}")
            yield hit
