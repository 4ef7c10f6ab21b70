"""FLEET005: an InfiniBand link of the fabric files runs below the fabric's majority width or
speed, or a cabled port is down.

Each ``iblinkinfo`` or ``ibnetdiscover`` file is one subnet (fleet/fabric_graph.py). Its links
that pass traffic are counted by width (4x) and by lane speed (NDR); a value held by more than
half of them, on 3 links or more, is the fabric's. A link narrower or slower than that is
reported with both of its ends and the hosts behind it (the host at an end, else the hosts of
the leaf at an end: what an inter-switch link slows); iblinkinfo's own ``Could be`` hint is
evidence that the hardware at both ends supports more. A port whose cable trained
(``LinkUp``) while the port is not Active (``Init``, ``Armed``), or a link iblinkinfo prints in
that state, is a cabled port that is down. Ports with nothing cabled (``Down/ Polling``, a
``-p`` line without a peer) are not faults. The same cable in two files is reported once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit, Related
from topolint.model.fabric_links import FabricFile, describe_link, speed_order
from topolint.model.facts import location
from topolint.model.schema import Field

NEEDS = ("cluster", "fabric")
FIELDS = ("a", "a_port", "b", "b_port", "link", "majority", "count", "total", "state", "hosts")
MAX_LISTED = 8


class Parameters(CheckParameters):
    min_links: int = Field(default=3, ge=2, description="links a fabric file needs before it has a majority")


def _majority(values: list, minimum: int):
    if len(values) < minimum:
        return None, 0
    value, count = Counter(values).most_common(1)[0]
    return (value, count) if count * 2 > len(values) else (None, 0)


def _listed(hosts: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(hosts[:MAX_LISTED])
    return shown + (f" and {len(hosts) - MAX_LISTED} more" if len(hosts) > MAX_LISTED else "")


def _entity(graph, fabric: FabricFile, node_id: str, port: int) -> str:
    """The end a finding is about: a host's adapter port (``gpu01/nic/mlx5_0:1``), else the
    switch port (``leaf-1/port/17``)."""
    owner = graph.owner(node_id)
    if owner:
        name = graph.end_name(fabric, node_id)
        adapter = name.split(" ", 1)[1] if name.startswith(owner + " ") else node_id
        return f"{owner}/nic/{adapter}:{port}"
    return f"{graph.end_name(fabric, node_id)}/port/{port}"


def check(context, params: Parameters) -> Iterator[Hit]:
    graph = context.cluster.fabric
    reported: set[frozenset] = set()
    links_by_file: dict[str, list] = {}
    for link in graph.links():
        links_by_file.setdefault(link.path, []).append(link)
    for fabric in graph.files:
        if not isinstance(fabric, FabricFile):
            continue
        links = links_by_file.get(fabric.path, [])
        passing = [link for link in links if link.fact.state in (None, "active")]
        width, width_count = _majority([l.fact.width for l in passing if l.fact.width], params.min_links)
        speed, speed_count = _majority([l.fact.speed for l in passing if l.fact.speed], params.min_links)
        stated = len([l for l in passing if l.fact.width and l.fact.speed])
        for link in links:
            key = frozenset(((link.a, link.a_port), (link.b, link.b_port)))
            fact = link.fact
            if fact.state not in (None, "active"):
                if key not in reported:
                    reported.add(key)
                    yield _down(graph, fabric, link)
                continue
            slow_width = width is not None and fact.width is not None and fact.width < width
            slow_speed = speed is not None and fact.speed is not None and speed_order(fact.speed) < speed_order(speed)
            if (slow_width or slow_speed) and key not in reported:
                reported.add(key)
                count = min(c for c, slow in ((width_count, slow_width), (speed_count, slow_speed)) if slow)
                yield _slow(graph, fabric, link, width if slow_width else fact.width,
                            speed if slow_speed else fact.speed, count, stated or len(passing))
        for port in fabric.ports:
            if port.cabled:
                yield _port_down(graph, fabric, port)


def _slow(graph, fabric: FabricFile, link, width, speed, count: int, total: int) -> Hit:
    fact = link.fact
    majority = describe_link(width, speed)
    fields = {"a": link.a, "a_port": link.a_port, "b": link.b, "b_port": link.b_port,
              "link": describe_link(fact.width, fact.speed), "majority": majority, "count": count, "total": total,
              "state": fact.state or "", "hosts": _listed(link.hosts) or "none named"}
    evidence = [f"{fabric.path}:{link.line}: {link.a} port {link.a_port} to {link.b} port {link.b_port} "
                f"runs {fields['link']}",
                f"{count} of {total} links of this fabric ({fabric.tool}) run {majority}"]
    if fact.could_be:
        evidence.append(f"iblinkinfo's own hint on this link: {fact.could_be!r} (both ends support more)")
    evidence.append(_hosts_line(link))
    return Hit(entity=_entity(graph, fabric, fact.a, fact.a_port) + "#fabric_link", location=fact.loc,
               fields=fields, evidence=evidence, related=_other_end(graph, fabric, link))


def _down(graph, fabric: FabricFile, link) -> Hit:
    fact = link.fact
    fields = {"a": link.a, "a_port": link.a_port, "b": link.b, "b_port": link.b_port,
              "link": describe_link(fact.width, fact.speed), "majority": "", "count": 0, "total": 0,
              "state": f"{fact.state}/{fact.phys_state}", "hosts": _listed(link.hosts) or "none named"}
    evidence = [f"{fabric.path}:{link.line}: {link.a} port {link.a_port} to {link.b} port {link.b_port} is "
                f"{fact.state} with the physical link {fact.phys_state}: cabled, not passing traffic",
                _hosts_line(link)]
    return Hit(entity=_entity(graph, fabric, fact.a, fact.a_port) + "#fabric_link", location=fact.loc,
               fields=fields, variant="down", evidence=evidence, related=_other_end(graph, fabric, link))


def _port_down(graph, fabric: FabricFile, port) -> Hit:
    name = graph.end_name(fabric, port.node)
    hosts = tuple(graph.hosts_behind(port.node)) or ((graph.owner(port.node),) if graph.owner(port.node) else ())
    fields = {"a": name, "a_port": port.port, "b": "its peer (not discovered)", "b_port": "?", "link": "",
              "majority": "", "count": 0, "total": 0, "state": f"{port.state}/{port.phys_state}",
              "hosts": _listed(hosts) or "none named"}
    evidence = [f"{fabric.path}:{port.loc.line}: {name} port {port.port} is {port.state} with the physical link "
                f"{port.phys_state}: a cable is there, the port passes no traffic",
                f"hosts behind it: {fields['hosts']}"]
    return Hit(entity=_entity(graph, fabric, port.node, port.port) + "#fabric_link", location=port.loc,
               fields=fields, variant="down", evidence=evidence)


def _hosts_line(link) -> str:
    return f"hosts behind it: {_listed(link.hosts)}" if link.hosts else "hosts behind it: none the fabric file names"


def _other_end(graph, fabric: FabricFile, link) -> list[Related]:
    node = fabric.nodes.get(link.fact.b)
    if node is None:
        return []
    return [Related(location=location(node.loc.path, node.loc.line, node.loc.column),
                    entity=_entity(graph, fabric, link.fact.b, link.b_port), message=f"the other end: {link.b}")]
