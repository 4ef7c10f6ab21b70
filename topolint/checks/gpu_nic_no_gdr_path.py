"""NUMA002: a GPU's nearest fabric NIC is on its socket but only through the host bridge, so
GPUDirect RDMA is off at the effective NCCL_NET_GDR_LEVEL."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from topolint.checks._topology import (
    gpu_fields,
    gpu_label,
    gpu_sort_key,
    is_hypervisor_bridge,
    net_related,
    numa_of,
    where,
)
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity

NEEDS = ("topology",)


class Parameters(BaseModel):
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


def check(context, params: Parameters) -> Iterator[Hit]:
    version = context.version
    configured = context.options.gdr_level
    level = configured or version.default_gdr_level
    source = "configured" if configured else f"the default for NCCL {version}"
    for topology in context.node.topologies:
        system = context.system(topology)
        fabric = [net for net in system.nets if system.is_fabric(net)]
        if not fabric:
            continue
        signs = None
        for gpu in sorted(topology.gpus, key=gpu_sort_key):
            raw = system.raw_paths[gpu.bus_id]
            reachable = [(version.rank(raw[n].type), -raw[n].bw, n) for n in fabric if n in raw]
            if not reachable:
                continue
            nearest = min(reachable)[2]
            if raw[nearest].type != "PHB":
                continue  # PIX/PXB have GDR; SYS is NUMA001
            final = system.gpu_net_paths[gpu.bus_id]
            if any(final.get(n) is not None and final[n].type == "PXN" for n in fabric):
                continue  # NCCL proxies through an NVLink peer that has GDR
            if not system.gdr_enabled(gpu, nearest, "PHB") or system.gdr_enabled(gpu, nearest, level):
                continue  # GDR is off for another reason (gdr=0), or the level allows it
            nic, net = system.nets[nearest]
            cpu_path = system.gpu_cpu_path(gpu)
            c2c = cpu_path is not None and cpu_path.type == "C2C" and nic.cpu_index == gpu.cpu_index
            # Unset, NCCL's level is P2C from 2.27 (NCCL_NET_GDR_C2C=1), which only differs from
            # PXB for C2C-attached GPUs: name the level that matters for this GPU.
            shown = configured or ("P2C" if c2c and version.has_p2c else "PXB")
            fields = {
                **gpu_fields(topology, gpu),
                "nic": system.net_label(nearest),
                "nic_numa": numa_of(topology, nic.cpu_index),
                "path": raw[nearest].type,
                "gdr_level": shown,
                "gdr_level_source": source,
                "nccl_version": str(version),
            }
            evidence = [
                f"{where(gpu.loc)}: {gpu_label(gpu)} ({gpu.bus_id}) is under cpu numaid={fields['gpu_numa']}",
                f"{where(net.loc)}: {fields['nic']} is under cpu numaid={fields['nic_numa']}, reached at "
                f"{fields['path']} (through the CPU's host bridge, no common PCIe switch)",
                f"no NVLink peer of {gpu_label(gpu)} reaches a NIC at PXB or closer (no PXN route)",
                f"NCCL_NET_GDR_LEVEL {shown} ({source}): GPUDirect RDMA needs the path at {shown} or closer",
            ]
            hit = Hit(
                entity=gpu_entity(context.node.name, gpu.bus_id),
                location=gpu.loc,
                fields=fields,
                evidence=evidence,
                related=[net_related(context.node.name, system, nearest, f"nearest NIC {fields['nic']}")],
            )
            if c2c:
                hit.variant = "c2c"
                hit.evidence.append(f"{gpu_label(gpu)} reaches its CPU over C2C and {fields['nic']} hangs off "
                                    f"the same CPU (P2C from NCCL 2.27)")
            else:
                if signs is None:
                    signs = vm_signs(topology, system, fabric)
                if signs:
                    hit.variant = "vm"
                    hit.fields["vm_signs"] = "; ".join(signs)
                    hit.evidence.append(f"looks like a VM: {'; '.join(signs)}")
            yield hit
