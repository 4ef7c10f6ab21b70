"""PERF005: intra-node channels via SHM (or NET) between GPUs that NVLink connects.

NCCL uses P2P between two GPUs of one host when ``ncclTopoCheckP2p`` (src/graph/paths.cc) passes:
the path type is within NCCL_P2P_LEVEL (default PXB; NVLink paths are NVL/NVB) and NVML reports
P2P read and write. A pair NVLink connects passes unless a setting forbids it (NCCL_P2P_DISABLE=1,
NCCL_P2P_LEVEL=LOC), or NVML refuses P2P on it, which NCCL reports as the fatal WARN "P2P is
disabled between NVLINK connected GPUs". For PCIe-only pairs NVML's answer is not in the log,
so SHM there is legitimate as far as topolint can tell: no finding. NVLink is known from the
log's own paths print (NCCL_DEBUG_SUBSYS=GRAPH) or from the node's topology (--topology).
NET between ranks of one host is judged the same way when the log shows both ranks on that host.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._measured import bus_from_nccl, gpu_for_rank, setting, topologies, where
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity

NEEDS = ("nccl-log",)
DISABLING = (("NCCL_P2P_DISABLE", "1"), ("NCCL_P2P_LEVEL", "LOC"), ("NCCL_P2P_LEVEL", "0"))


class Parameters(CheckParameters):
    pass


def _printed_paths(log) -> dict[tuple[str, str], str]:
    """(busId, busId) -> path type from the log's paths print ('GPU/0-9e000 : GPU/0-a0000 (1/370.8/NVL)')."""
    found = {}
    for line in log.topology:
        if line.kind == "path" and line.node_type == "GPU" and line.path_from:
            found[(line.path_from.split("-")[-1], line.node_id.split("-")[-1])] = line.path_type
    return found


def _local_pairs(log) -> list:
    """Channels between two ranks of one host that do not use P2P."""
    hosts = log.host_of_rank()
    pairs = []
    for channel in log.channels:
        if channel.transport == "SHM":
            pairs.append(channel)
        elif channel.transport == "NET" and hosts.get(channel.src) and hosts.get(channel.src) == hosts.get(channel.dst):
            pairs.append(channel)
    return pairs


def _nvlink(context, log, channel) -> str | None:
    """Evidence that NVLink connects the channel's two GPUs, or None."""
    busids = {i.rank: i.bus_id for i in log.inits}
    a, b = busids.get(channel.src), busids.get(channel.dst)
    printed = _printed_paths(log)
    if a and b and printed.get((a, b)) in ("NVL", "NVB"):
        return f"the log's paths print gives GPU/{a} to GPU/{b} as {printed[(a, b)]}"
    from topolint.model.system import System, gpu_id

    for node in topologies(context):
        topology = node.topologies[0]
        first = gpu_for_rank(log, topology, channel.src, channel.src_device)
        second = gpu_for_rank(log, topology, channel.dst, channel.dst_device)
        if first is None or second is None or first.bus_id == second.bus_id:
            continue
        path = System(topology, context.version).raw_paths[first.bus_id].get(gpu_id(second.bus_id))
        if path is not None and path.type in ("NVL", "NVB"):
            return f"{topology.path}: {first.bus_id} reaches {second.bus_id} over {path.type}"
    return None


def check(context, params: Parameters) -> Iterator[Hit]:
    for measured in context.node.measured:
        log = measured.log
        pairs = _local_pairs(log)
        if not pairs:
            continue
        refused = next((w for w in log.warnings if "P2P is disabled between NVLINK connected GPUs" in w.message), None)
        if refused is not None:
            context.notes.append(f"{where(refused.loc)}: NVML refuses P2P on NVLink: SHM is what NCCL can do; no PERF005")
            continue
        hit = _first_nvlink_pair(context, log, pairs)
        if hit is None:
            context.notes.append(f"{where(pairs[0].loc)}: {len(pairs)} intra-node channels via "
                                 f"{pairs[0].detail.split('/')[0]}, but nothing shows NVLink between those GPUs "
                                 "(PCIe P2P depends on NVML, which the log does not show): no PERF005")
            continue
        yield hit


def _first_nvlink_pair(context, log, pairs) -> Hit | None:
    for channel in pairs:
        why = _nvlink(context, log, channel)
        if why is None:
            continue
        disabled = [s for s in log.settings for name, value in DISABLING if s.name == name and s.value.strip() == value]
        same = [c for c in pairs if c.transport == channel.transport]
        evidence = [f"{where(channel.loc)}: {channel.detail} between ranks {channel.src} and {channel.dst}",
                    f"{len(same)} channel lines via {channel.transport} on this node", why]
        evidence += [f"{where(s.loc)}: {s.name} set by environment to {s.value}" for s in disabled[:2]]
        level = setting(log, "NCCL_P2P_LEVEL")
        fields = {"transport": channel.transport, "src": channel.src, "dst": channel.dst, "channels": len(same),
                  "setting": f"{disabled[0].name}={disabled[0].value}" if disabled else "",
                  "level": level.value if level else "PXB (default)"}
        bus = bus_from_nccl(next((i.bus_id for i in log.inits if i.rank == channel.src), "")) or f"rank{channel.src}"
        return Hit(entity=gpu_entity(context.node.name, bus), location=channel.loc, fields=fields,
                   evidence=evidence, variant="disabled" if disabled else "default")
    return None
