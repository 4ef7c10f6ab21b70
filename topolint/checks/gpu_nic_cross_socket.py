"""NUMA001: a GPU's nearest fabric NIC is reachable only across the CPU interconnect."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from topolint.checks._topology import gpu_fields, gpu_label, gpu_sort_key, net_related, numa_of, where
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity

NEEDS = ("topology",)


class Parameters(BaseModel):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for topology in context.node.topologies:
        system = context.system(topology)
        fabric = [net for net in system.nets if system.is_fabric(net)]
        if not fabric:
            continue  # a node without fabric NICs is not NUMA001
        version = context.version
        for gpu in sorted(topology.gpus, key=gpu_sort_key):
            raw = system.raw_paths[gpu.bus_id]
            reachable = [(version.rank(raw[n].type), -raw[n].bw, n) for n in fabric if n in raw]
            if not reachable:
                continue
            _, _, nearest = min(reachable)
            path = raw[nearest]
            if path.type != "SYS":
                continue
            nic, net = system.nets[nearest]
            # NCCL spreads GPUs over equally good NICs (dev modulo count); name the one this GPU gets.
            chosen = [(n, p) for n, p in system.nearest_nets(gpu) if n in fabric and p.type == "PXN"]
            proxy_net, proxy_path = chosen[(gpu.dev or 0) % len(chosen)] if chosen else (None, None)
            fields = {
                **gpu_fields(topology, gpu),
                "nic": system.net_label(nearest),
                "nic_numa": numa_of(topology, nic.cpu_index),
                "path": path.type,
            }
            evidence = [
                f"{where(gpu.loc)}: {gpu_label(gpu)} ({gpu.bus_id}) is under cpu numaid={fields['gpu_numa']}",
                f"{where(net.loc)}: {fields['nic']} is under cpu numaid={fields['nic_numa']}",
                f"no fabric NIC reachable from {gpu_label(gpu)} without crossing the CPU interconnect",
            ]
            hit = Hit(
                entity=gpu_entity(context.node.name, gpu.bus_id),
                location=gpu.loc,
                fields=fields,
                evidence=evidence,
                related=[net_related(context.node.name, system, nearest, f"nearest NIC {fields['nic']}")],
            )
            if proxy_path is not None:
                proxy = system.gpus[proxy_path.proxy_gpu]
                hit.variant, hit.severity = "pxn", "warning"
                hit.fields["proxy"] = gpu_label(proxy)
                hit.fields["proxy_nic"] = system.net_label(proxy_net)
                hit.evidence.append(f"PXN: {gpu_label(proxy)} ({proxy.bus_id}) is an NVLink peer that "
                                    f"reaches {hit.fields['proxy_nic']} at PXB or closer")
            yield hit
