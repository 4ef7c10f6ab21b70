"""The cluster graph: every node's NCCL graph side by side, node ids prefixed with the host."""

from __future__ import annotations

from topolint.model.nccl_version import NcclVersion
from topolint.model.node import NodeModel


def cluster_graph(nodes: list[NodeModel], version: NcclVersion):
    """A networkx DiGraph of all nodes' topologies; each graph node id starts with the host name.

    Hosts are not linked to each other: what joins them (the fabric) is not in any input yet.
    """
    from topolint.model.system import System, networkx

    nx = networkx()
    cluster = nx.DiGraph()
    for node in nodes:
        for topology in node.topologies:
            graph = System(topology, version).graph
            cluster.update(nx.relabel_nodes(graph, {n: (node.name, *n) for n in graph.nodes}, copy=True))
            for n in graph.nodes:
                cluster.nodes[(node.name, *n)]["host"] = node.name
    return cluster
