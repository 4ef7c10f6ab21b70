"""Format name to parser. Each parser takes a SourceFile and returns facts or raises InputError."""

from __future__ import annotations

from topolint.inputs.sniff import NCCL_GRAPH_XML, NCCL_TOPO_XML


def parse(fmt: str, source):
    if fmt == NCCL_TOPO_XML:
        from topolint.parsers.nccl_topo_xml import parse_topology

        return parse_topology(source)
    if fmt == NCCL_GRAPH_XML:
        from topolint.parsers.nccl_graph_xml import parse_graph

        return parse_graph(source)
    raise KeyError(fmt)
