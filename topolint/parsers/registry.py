"""Format name to parser. Each parser takes a SourceFile and returns facts or raises InputError.

Parsers are named as "module:function" so a run imports only the parsers its inputs need.
"""

from __future__ import annotations

import importlib

from topolint.inputs.sniff import NCCL_GRAPH_XML, NCCL_TOPO_XML

PARSERS = {
    NCCL_TOPO_XML: "topolint.parsers.nccl_topo_xml:parse_topology",
    NCCL_GRAPH_XML: "topolint.parsers.nccl_graph_xml:parse_graph",
}


def parse(fmt: str, source):
    module, function = PARSERS[fmt].split(":")
    return getattr(importlib.import_module(module), function)(source)
