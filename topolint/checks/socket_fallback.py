"""PERF003: NCCL actually moved inter-node traffic over TCP sockets where RDMA was expected.

Sockets are in use when channels go ``via NET/Socket/N`` (transport/net.cc prints the network's
name, ``comm->ncclNet->name``), or when NCCL chose the network ``Socket`` (init.cc: INFO "Using
network %s") for a run that spans several nodes. A one-node run that chose Socket sends nothing
over it: no finding. RDMA was expected when the log shows it tried and failed or was turned off
(``NET/IB : No device found``, an RDMA plugin that failed to initialise, ``NCCL_IB_DISABLE`` set
to 1), or when the node's topology has RDMA NICs. The messages of optional plugins that are not
installed (``Failed to find ncclCollNetPlugin_v9 symbol``, a missing profiler or tuner library)
are healthy noise, never evidence.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._measured import topologies, where
from topolint.engine.finding import Hit
from topolint.model.node import file_entity

NEEDS = ("nccl-log",)


class Parameters(CheckParameters):
    pass


def _multi_node(measured) -> str | None:
    """Evidence that the run spans nodes, or None."""
    log = measured.log
    spread = next((c for c in log.comms if (c.nnodes or 0) > 1), None)
    if spread is not None:
        return f"{where(spread.loc)}: nRanks {spread.nranks} nNodes {spread.nnodes}"
    for run in measured.runs:
        if len(run.hosts) > 1:
            return f"{where(run.devices[0].loc)}: ranks on {len(run.hosts)} hosts ({', '.join(run.hosts)})"
    return None


def _topology_rdma(context) -> str | None:
    from topolint.model.system import System

    for node in topologies(context):
        for topology in node.topologies:
            system = System(topology, context.version)
            for net in system.nets:
                _, fact = system.nets[net]
                if system.is_fabric(net) and fact.name:
                    return f"{where(fact.loc)}: {topology.path} has RDMA NIC {fact.name}"
    return None


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    for measured in context.node.measured:
        hit = _fallback(context, node, measured)
        if hit is not None:
            yield hit


def _fallback(context, node: str, measured) -> Hit | None:
    log = measured.log
    channels = [c for c in log.channels if c.transport == "NET" and (c.net or "").lower() == "socket"]
    chosen = [n for n in log.networks if n.message == "Socket"]
    if not channels and not chosen:
        return None
    spread = _multi_node(measured)
    if not channels and spread is None:
        context.notes.append(f"{where(chosen[0].loc)}: NCCL chose the Socket network, but no channel goes over it and "
                             "nothing shows the run spans nodes: no PERF003 (a multi-node run would use sockets)")
        return None
    expected = [f"{where(a.loc)}: {a.message}" for a in log.rdma_attempts[:3]]
    from_topology = _topology_rdma(context)
    if from_topology:
        expected.append(from_topology)
    first = channels[0] if channels else chosen[0]
    if not expected:
        context.notes.append(f"{where(first.loc)}: NCCL uses sockets between nodes, but nothing says RDMA NICs exist "
                             "or were tried: no PERF003 (give --topology with a node's NCCL topology dump)")
        return None
    sockets = [d for d in log.net_devices if d.net == "Socket"]
    evidence = ([f"{where(chosen[0].loc)}: Using network Socket"] if chosen else [])
    if channels:
        evidence.append(f"{where(channels[0].loc)}: {len(channels)} channel lines via NET/Socket, "
                        f"e.g. '{channels[0].detail}'")
    if sockets:
        evidence.append(f"{where(sockets[0].loc)}: NET/Socket : Using {sockets[0].name}")
    if spread:
        evidence.append(spread)
    evidence += expected
    entity = f"{node}/netdev/{sockets[0].name}" if sockets else file_entity(node, measured.path)
    fields = {"interface": sockets[0].name if sockets else "a TCP interface",
              "channels": len(channels), "why": expected[0].split(": ", 1)[1]}
    return Hit(entity=entity, location=first.loc, fields=fields, evidence=evidence)
