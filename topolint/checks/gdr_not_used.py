"""PERF004: inter-node channels without GPUDirect RDMA where the topology allows it.

NCCL decides GDR per connection and per direction (src/transport/net.cc: sendSetup calls
``ncclTopoCheckGdr(..., read=1, ...)``, recvSetup ``read=0``) and prints ``/GDRDMA`` after the
device when it is on. ``ncclTopoCheckGdr`` (src/graph/paths.cc) needs GDR support on the GPU
and the NIC and a GPU-NIC distance within NCCL_NET_GDR_LEVEL (PXN: the proxy GPU's distance);
sends (GDR reads) are further off when NCCL_NET_GDR_READ=0, and by default for a GPU without an
NVLink peer that is not alone: before Ampere since 2.19.1, on every GPU before that
(NcclVersion.gdr_read_needs_nvlink_peer). The model's decision (model/system.py ``gdr_enabled``,
NCCL's ``ncclTopoCheckGdr`` as model/nccl_graph.py ports it) is taken per direction; a channel without /GDRDMA whose direction the model allows is reported,
once per GPU, NIC and direction. Without a topology the rule cannot say GDR was possible and
stays silent (--verbose says so).
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._measured import gpu_for_rank, setting, topologies, version_in_force, where
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity

NEEDS = ("nccl-log",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for measured in context.node.measured:
        without = [c for c in measured.log.channels if c.transport == "NET" and c.direction and not c.gdr
                   and (c.net or "").lower() != "socket"]
        if not without:
            continue
        nodes = topologies(context)
        if not nodes:
            context.notes.append(f"{where(without[0].loc)}: {len(without)} NET channels without GDRDMA; no topology "
                                 "to say GPUDirect RDMA was possible: no PERF004 (give --topology)")
            continue
        yield from _judge(context, measured, nodes[0].topologies[0], without)


def _judge(context, measured, topology, channels) -> Iterator[Hit]:
    from topolint.model.system import System

    log = measured.log
    version, said = version_in_force(log, context.version, context)
    system = System(topology, version)
    level_setting = setting(log, "NCCL_NET_GDR_LEVEL")
    level = level_setting.value if level_setting is not None else context.options.gdr_level
    read_setting = setting(log, "NCCL_NET_GDR_READ")
    gdr_read = read_setting.value if read_setting is not None else None
    nets = {fact.dev: net for net, (_, fact) in system.nets.items() if fact.dev is not None}
    seen = set()
    for channel in channels:
        local, printed = (channel.src, channel.src_device) if channel.direction == "send" else (channel.dst, channel.dst_device)
        gpu = gpu_for_rank(log, topology, local, printed)
        net = nets.get(channel.net_device)
        key = (channel.host, gpu.bus_id if gpu else None, channel.net_device, channel.direction)
        if gpu is None or net is None or key in seen:
            continue
        seen.add(key)
        read = channel.direction == "send"  # a send reads GPU memory (net.cc sendSetup: read=1)
        try:
            allowed = system.gdr_enabled(gpu, net, level, read=read, gdr_read=gdr_read if read else None)
        except ValueError:  # a level name this version does not know: NCCL_NET_GDR_LEVEL is ENV003's
            continue
        if not allowed:
            continue
        yield _hit(context.node.name, topology, system, gpu, net, channel, said, level_setting)


def _hit(node, topology, system, gpu, net, channel, said, level_setting) -> Hit:
    _, fact = system.nets[net]
    path = system.gpu_net_paths[gpu.bus_id][net]
    level = level_setting.value if level_setting is not None else system.version.default_gdr_level
    what = "GDR read (send)" if channel.direction == "send" else "GDR write (receive)"
    evidence = [
        f"{where(channel.loc)}: {channel.detail} ({channel.direction}, no /GDRDMA)",
        f"{where(gpu.loc)}: GPU {gpu.dev} ({gpu.bus_id}) gdr={'1' if gpu.gdr else gpu.gdr}; "
        f"{where(fact.loc)}: {fact.name} gdr={'1' if fact.gdr else fact.gdr}",
        f"{topology.path}: GPU {gpu.dev} reaches {fact.name} over {path.type}"
        + (f" via proxy GPU {path.proxy_gpu}" if path.proxy_gpu else "")
        + f", within NCCL_NET_GDR_LEVEL {level}{' (set at ' + where(level_setting.loc) + ')' if level_setting else ' (default)'}",
        f"{said}: ncclTopoCheckGdr would enable {what} for this GPU and NIC",
    ]
    fields = {"gpu": f"GPU {gpu.dev}" if gpu.dev is not None else gpu.bus_id, "gpu_bus": gpu.bus_id,
              "nic": fact.name or f"NET {channel.net_device}", "direction": channel.direction, "what": what,
              "path": path.type, "level": level, "host": channel.host or "?"}
    # One finding per GPU and direction: the direction is the variant (it keeps fingerprints apart).
    return Hit(entity=gpu_entity(channel.host or node, gpu.bus_id), location=channel.loc, fields=fields, evidence=evidence,
               variant=channel.direction)
