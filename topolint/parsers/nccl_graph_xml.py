"""NCCL graph XML (``NCCL_GRAPH_DUMP_FILE``): recognised and summarised, never linted as topology."""

from __future__ import annotations

from topolint.inputs.source import SourceFile
from topolint.model.facts import GraphChannel, GraphFile, Location, NcclGraph, build
from topolint.model.numbers import strtof, strtol_prefix
from topolint.parsers.xmlsafe import parse_xml

_GRAPH_KINDS = {"0": "ring", "1": "tree", "2": "collnet-chain", "3": "nvls", "4": "collnet-direct"}


def _float(value: str | None) -> float | None:
    """NCCL reads graph speeds with ``strtof`` (src/graph/xml.h xmlGetAttrFloat)."""
    return None if value is None else strtof(value)[0]


def _devs(channel) -> list[int]:
    """GPU devs of a channel as ``strtol(dev, NULL, 0)`` reads them; devs with no digit are left out."""
    devs = (strtol_prefix(g.get("dev")) for g in channel.iter("gpu"))
    return [d for d in devs if d is not None]


def parse_graph(source: SourceFile) -> GraphFile:
    root = parse_xml(source.path, source.text)
    graphs = []
    for graph_el in root.iter("graph"):
        channels = [
            build(GraphChannel,
                gpus=_devs(ch),
                nets=[n.get("dev", "") for n in ch.iter("net")],
            )
            for ch in graph_el.iter("channel")
        ]
        graphs.append(
            build(NcclGraph,
                graph_id=graph_el.get("id"),
                pattern=graph_el.get("pattern"),
                nchannels=len(channels),
                type_intra=graph_el.get("typeintra"),
                type_inter=graph_el.get("typeinter"),
                speed_intra=_float(graph_el.get("speedintra")),
                speed_inter=_float(graph_el.get("speedinter")),
                channels=channels,
                loc=build(Location, path=source.path, line=graph_el.sourceline or 1, column=0),
            )
        )
    return build(GraphFile,
        path=source.path,
        version=root.get("version"),
        graphs=graphs,
        loc=build(Location, path=source.path, line=root.sourceline or 1, column=0),
    )


def summarise(graph_file: GraphFile) -> str:
    parts = []
    for g in graph_file.graphs:
        kind = _GRAPH_KINDS.get(g.graph_id or "", f"graph {g.graph_id}")
        parts.append(f"{kind}: {g.nchannels} channels, intra {g.type_intra} inter {g.type_inter}")
    return "; ".join(parts) or "no graphs"
