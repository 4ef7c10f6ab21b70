"""Findings and the estimate's bottleneck on a diagram.

A box is marked when a finding names one of its entities (its own, or a related line's); the
path a finding is about (a related line with ``via``, engine/finding.py Related) is drawn along
the links NCCL's model routes it over (System.raw_paths: the path before PXN, the one the finding
judges) and, through a relay, leg by leg. The bottleneck marks the link it names: a PCIe link
(the device's link to its parent), a GPU's NVLinks, the CPU interconnect, or a NIC.
"""

from __future__ import annotations

from topolint.drawing.diagram import Diagram, Route
from topolint.model.node import nic_entity

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def worse(a: str | None, b: str) -> str:
    return b if a is None or SEVERITY_RANK.get(b, 9) < SEVERITY_RANK.get(a, 9) else a


def _get(finding, name: str, default=None):
    return finding.get(name, default) if isinstance(finding, dict) else getattr(finding, name, default)


def mark_findings(diagram: Diagram, findings) -> None:
    """Mark what ``findings`` (engine Findings, or estimate's finding dicts) name on ``diagram``."""
    for finding in findings:
        if _get(finding, "suppressed", False) or not _get(finding, "entity"):
            continue
        severity, code = _get(finding, "severity", "info"), _get(finding, "code", "")
        box = diagram.box_of_entity(_get(finding, "entity"))
        if box is not None:
            box.marks["finding"] = worse(box.marks.get("finding"), severity)
            if code not in box.codes:
                box.codes.append(code)
        for related in _get(finding, "related", []) or []:
            other = diagram.box_of_entity(related.entity)
            if other is not None and other is not box:
                other.marks["related"] = worse(other.marks.get("related"), severity)
            if related.via is not None and box is not None and other is not None:
                stops = [box.id] + [b.id for b in map(diagram.box_of_entity, related.via) if b is not None] + [other.id]
                legs = _legs(diagram, stops, _get(finding, "entity"), [*related.via, related.entity])
                if legs:
                    diagram.routes.append(Route(legs, severity, code, relay=bool(related.via)))


def _legs(diagram: Diagram, stops: list[str], start: str, ends: list[str]) -> list[tuple[str, str]]:
    """The drawn links from stop to stop: in a matrix each pair is one cell; in a tree each leg
    follows the model's path between the two devices."""
    if diagram.style == "matrix":
        return [(a, b) for a, b in zip(stops, stops[1:]) if a != b]
    system = diagram.system
    nodes = _graph_nodes(diagram)
    legs = []
    entities = [start, *ends]
    for a, b in zip(entities, entities[1:]):
        u, v = nodes.get(a), nodes.get(b)
        if u is None or v is None:
            return []
        path = system.raw_paths[u[1]].get(v) if u[0] == "gpu" and u[1] in system.gpus else \
            system.paths_from(u).get(v)
        if path is None:
            return []
        boxes = [diagram.box_of_graph_node(n) for n in (u, *path.via, v)]
        if any(box is None for box in boxes):
            return []
        ids = [box.id for box in boxes]
        legs += [(x, y) for x, y in zip(ids, ids[1:]) if x != y]
    return legs


def _graph_nodes(diagram: Diagram) -> dict[str, tuple]:
    """Entity -> graph node; a NIC port's entity -> its NET node (once per diagram)."""
    found = getattr(diagram, "_entity_nodes", None)
    if found is not None:
        return found
    found = diagram._entity_nodes = {}
    for box in diagram.boxes.values():
        if box.graph_node is not None:
            for entity in box.entities:
                found.setdefault(entity, box.graph_node)
    system = diagram.system
    for key, (nic, net) in system.nets.items():
        found[nic_entity(diagram.node, net.name or nic.bus_id or "nic", net.port)] = key
    return found


def mark_bottleneck(diagram: Diagram, bottleneck, algorithms: list[str]) -> bool:
    """Mark the link ``bottleneck`` (estimate/hardware.py Bottleneck) names for ``algorithms``;
    False when the drawing has no such element (a made-up switch of a matrix estimate)."""
    box = diagram.box_of_entity(bottleneck.entity)
    if box is None:
        return False
    box.marks["bottleneck"] = "bottleneck"
    box.bottlenecks += [name for name in algorithms if name not in box.bottlenecks]
    if diagram.style != "tree":
        return True
    if bottleneck.link == "PCIe" and box.parent is not None:
        link = diagram.link_between(box.parent, box.id)
        if link is not None:
            link.bottleneck += algorithms
    elif bottleneck.link == "NVLink":
        for link in diagram.links:
            if box.id in (link.a, link.b) and link.kind in ("nvswitch", "peer"):
                link.bottleneck += algorithms
    elif bottleneck.link == "CPU interconnect":
        for bus in diagram.buses:
            if box.id in bus.cpus:
                bus.bottleneck += algorithms
    return True
