"""NCCL graph XML (``NCCL_GRAPH_DUMP_FILE``): recognised and summarised, never linted as topology."""

from __future__ import annotations

from topolint.inputs.source import SourceFile
from topolint.model.facts import GraphChannel, GraphFile, Location, NcclGraph, build
from topolint.model.numbers import strtof, strtol_prefix
from topolint.parsers.xmlsafe import iter_elements

_GRAPH_KINDS = {"0": "ring", "1": "tree", "2": "collnet-chain", "3": "nvls", "4": "collnet-direct"}


def _float(value: str | None) -> float | None:
    """NCCL reads graph speeds with ``strtof`` (src/graph/xml.h xmlGetAttrFloat)."""
    return None if value is None else strtof(value)[0]


def parse_graph(source: SourceFile) -> GraphFile:
    """Streamed (xmlsafe.iter_elements): a ``<graph>`` anywhere has the ``<channel>`` elements
    inside it, a channel the ``<gpu>`` and ``<net>`` elements inside it, at any depth."""
    graphs: list[NcclGraph] = []
    version, root_loc = None, None
    # The open elements, innermost last: (index, the NcclGraph or GraphChannel it is, else None).
    enclosing: list[tuple[int, object]] = []
    for index, (element, parent, _) in enumerate(iter_elements(source.path, source.text)):
        while enclosing and enclosing[-1][0] != parent:
            enclosing.pop()
        tag = element.tag
        made = None
        if index == 0:
            version, root_loc = element.get("version"), _line_of(source, element)
        if tag == "graph":
            made = build(NcclGraph,
                graph_id=element.get("id"),
                pattern=element.get("pattern"),
                type_intra=element.get("typeintra"),
                type_inter=element.get("typeinter"),
                speed_intra=_float(element.get("speedintra")),
                speed_inter=_float(element.get("speedinter")),
                channels=[],
                loc=_line_of(source, element),
            )
            graphs.append(made)
        elif tag == "channel":
            made = build(GraphChannel, gpus=[], nets=[])
            for _, graph in enclosing:
                if type(graph) is NcclGraph:
                    graph.channels.append(made)
        elif tag == "gpu" or tag == "net":
            dev = element.get("dev")
            gpu = strtol_prefix(dev) if tag == "gpu" else None  # as strtol(dev, NULL, 0) reads it
            for _, channel in enclosing:
                if type(channel) is GraphChannel:
                    if tag == "net":
                        channel.nets.append(dev or "")
                    elif gpu is not None:  # a dev with no digit is no GPU
                        channel.gpus.append(gpu)
        enclosing.append((index, made))
    for graph in graphs:
        graph.nchannels = len(graph.channels)
    return build(GraphFile, path=source.path, version=version, graphs=graphs, loc=root_loc)


def _line_of(source: SourceFile, element) -> Location:
    return build(Location, path=source.path, line=element.sourceline or 1, column=0)


def summarise(graph_file: GraphFile) -> str:
    parts = []
    for g in graph_file.graphs:
        kind = _GRAPH_KINDS.get(g.graph_id or "", f"graph {g.graph_id}")
        parts.append(f"{kind}: {g.nchannels} channels, intra {g.type_intra} inter {g.type_inter}")
    return "; ".join(parts) or "no graphs"
