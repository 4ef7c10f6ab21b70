"""``numactl -H`` (``--hardware``): nodes, their CPU lists (empty for CPU-less HBM, CXL or GPU
memory nodes), sizes and the distance matrix. A paste cut before the last node is partial."""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build, location
from topolint.model.host import NumaNode, NumaTable
from topolint.model.numbers import cpu_ids, decimal
from topolint.parsers._lines import lines_of

_AVAILABLE = re.compile(r"available: (\d+) nodes? \(([^)]*)\)")
_NODE = re.compile(r"node (\d+) (cpus|size|free):[ \t]*(.*)")
_MB = re.compile(r"(\d+) MB")
_DISTANCE_ROW = re.compile(r"\s*(\d+):((?:\s+\d+)+)\s*")
MAX_NODES = 1024


def _cpus(source: SourceFile, number: int, text: str) -> str:
    cpus = cpu_ids(text)  # numactl prints ids separated by spaces
    if cpus is None:
        raise InputError(source.path, number, f"malformed numactl -H: CPU list {text.strip()[:40]!r}", 1)
    return cpus.text()


def parse_numactl(source: SourceFile) -> NumaTable:
    nodes: dict[int, NumaNode] = {}
    distances: dict[int, list[int]] = {}
    available, head = None, None
    in_distances = False
    for number, line in enumerate(lines_of(source.text), 1):
        text = line.strip()
        if not text:
            continue
        if head is None:
            match = _AVAILABLE.fullmatch(text)
            if not match:
                raise InputError(source.path, number, "malformed numactl -H: expected 'available: N nodes (...)'", 1)
            available, head = decimal(match.group(1)), build(Location, path=source.path, line=number, column=1)
            continue
        match = _NODE.fullmatch(text)
        if match and not in_distances:
            node_id = decimal(match.group(1))
            if node_id is None or (node_id not in nodes and len(nodes) >= MAX_NODES):
                raise InputError(source.path, number, "malformed numactl -H: node id", 1)
            node = nodes.get(node_id)
            if node is None:
                node = nodes[node_id] = build(NumaNode, node_id=node_id, loc=location(source.path, number, 1))
            if match.group(2) == "cpus":
                node.cpus = _cpus(source, number, match.group(3))
            else:
                mb = _MB.fullmatch(match.group(3).strip())
                setattr(node, f"{match.group(2)}_mb", decimal(mb.group(1)) if mb else None)
            continue
        if text == "node distances:":
            in_distances = True
            continue
        row = _DISTANCE_ROW.fullmatch(line) if in_distances else None
        if row:
            distances[decimal(row.group(1))] = [decimal(v) for v in row.group(2).split()]
        elif not (in_distances and text.startswith("node ")):
            raise InputError(source.path, number, "malformed numactl -H: unexpected line", 1)
    if head is None:
        raise InputError(source.path, 1, "malformed numactl -H: empty")
    ordered = [nodes[k] for k in sorted(nodes)]
    return build(NumaTable, path=source.path, available=available, nodes=ordered, distances=distances,
                 partial=available is not None and len(ordered) < available, loc=head)
