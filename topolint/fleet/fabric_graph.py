"""The fabric as cabled, for the cluster stage: hosts, leaf and spine switches and the links
between them, from the cluster's fabric files (``ibnetdiscover``, ``iblinkinfo``, ``lldpctl``;
facts in model/fabric_links.py), joined to the nodes of the run.

- A **host** is a node of the cluster: an InfiniBand adapter whose NodeDescription names its
  host (``gpu017 mlx5_0``, as the OS sets it), an adapter whose port GUID a node's own ibstat
  lists (the adapters still showing the default ``MT4129 ConnectX7 Mellanox Technologies``),
  or the local end of an ``lldpctl`` output found in a node's folder (by its netdev; the
  switch by its chassis).
- A **leaf** is a switch a host is cabled to; a **spine** one that only switches are cabled to.
  SHARP Aggregation Nodes are adapters inside the switches, not hosts.
- On a rail-optimised fabric every rail (the N-th adapter of each host) has its own leaf, so
  hosts that share a rack share the SET of leaves: ``leaf_group(host)`` is that set, and hosts
  with equal sets are one leaf group (a non-rail fabric gives sets of one leaf).

Connectivity and hop counts are breadth-first searches over the switch graph (linear in its
links); ``graph`` exports it as a networkx graph for whoever wants networkx's algorithms or a
drawing (the optional ``topolint[graph]`` extra, as for ``System.graph``).

API for the cluster checks (docs/fleet-topology.md): ``hosts()``, ``host_leaves(host)``,
``leaf_group(host)``, ``connected_switches()``, ``where(host_or_switch)``, ``switch(name)``,
``hops(a, b)``, ``links()``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from topolint.model.fabric_links import FabricFile, FabricLink, FabricNode, LldpFile, host_of


@dataclass(frozen=True)
class Switch:
    """One switch. ``name`` is how reports and the scheduler's files call it: the host name of a
    managed switch (``MF0;A09-P1-IBLEAF-04-04:MQM9701/U1`` is ``A09-P1-IBLEAF-04-04``), its
    NodeDescription or SysName when that is unique, else ``S-<guid>`` as ibnetdiscover names it."""

    id: str
    name: str
    description: str
    role: str  # "leaf" or "spine"
    path: str
    line: int
    guid: str | None = None

    @property
    def aliases(self) -> set[str]:
        """Every name a file may use for it (topology.conf SwitchName, a node label)."""
        names = {self.name, self.id, self.description}
        if self.guid:
            names |= {f"S-{self.guid}", f"0x{self.guid}"}
        return {n for n in names if n}


@dataclass(frozen=True)
class HostPort:
    """One cable from a host's adapter to a switch port."""

    host: str
    adapter: str  # mlx5_0, HCA-1 (InfiniBand), or the netdev (LLDP)
    switch: str  # Switch.id
    switch_port: str  # "17", "Ethernet20"
    path: str
    line: int
    guid: str | None = None  # the adapter port's GUID (InfiniBand)


@dataclass(frozen=True)
class Link:
    """A cable as a fabric file printed it, with both ends named (FLEET005 reads these)."""

    a: str  # a switch's name or "HOST ADAPTER"
    a_port: int
    b: str
    b_port: int
    fact: FabricLink
    path: str
    hosts: tuple[str, ...]  # the hosts behind it: the host at an end, else the hosts on the leaf ends

    @property
    def line(self) -> int:
        return self.fact.loc.line


@dataclass
class FabricGraph:
    files: list = field(default_factory=list)  # FabricFile and LldpFile, in the run's order
    _switches: dict[str, Switch] = field(default_factory=dict)
    _by_name: dict[str, str] = field(default_factory=dict)  # any alias -> switch id
    _host_ports: dict[str, list[HostPort]] = field(default_factory=dict)  # host -> its cables, file order
    _host_at: dict[str, tuple[str, int]] = field(default_factory=dict)
    _switch_links: dict[str, dict[str, int]] = field(default_factory=dict)  # switch -> neighbour switch -> cables
    _owner: dict[str, str] = field(default_factory=dict)  # adapter node id (fabric file) -> host
    unnamed: list[FabricNode] = field(default_factory=list)  # adapters no description or node names
    _unnamed_ids: set[str] = field(default_factory=set)

    # ---- the API the cluster checks read ----------------------------------------------------------
    def hosts(self) -> list[str]:
        """Hosts cabled to the fabric, in the order the files first name them."""
        return list(self._host_ports)

    def host_ports(self, host: str) -> list[HostPort]:
        return list(self._host_ports.get(host, ()))

    def host_leaves(self, host: str) -> list[Switch]:
        """The leaf switches the host is cabled to, each once, in the order of its cables."""
        seen: dict[str, Switch] = {}
        for port in self._host_ports.get(host, ()):
            seen.setdefault(port.switch, self._switches[port.switch])
        return list(seen.values())

    def leaf_group(self, host: str) -> frozenset[str] | None:
        """The names of the leaf switches the host is cabled to (None: the fabric files do not
        show the host). Hosts with the same set share their leaves (one rail group)."""
        leaves = self.host_leaves(host)
        return frozenset(s.name for s in leaves) if leaves else None

    def switches(self) -> list[Switch]:
        return list(self._switches.values())

    def switch(self, name: str) -> Switch | None:
        """A switch by any of its names (Switch.aliases)."""
        found = self._by_name.get(name)
        return self._switches[found] if found else None

    def connected_switches(self) -> list[set[str]]:
        """The switches as connected components (names), each reachable from the others over
        switch-to-switch cables; largest first, then by name. More than one: a part of the
        fabric has no path to the rest."""
        seen: set[str] = set()
        components = []
        for start in self._switches:
            if start in seen:
                continue
            seen.add(start)
            component, queue = [], deque([start])
            while queue:
                current = queue.popleft()
                component.append(current)
                for other in self._switch_links.get(current, ()):
                    if other not in seen:
                        seen.add(other)
                        queue.append(other)
            components.append({self._switches[s].name for s in component})
        return sorted(components, key=lambda c: (-len(c), min(c)))

    def hops(self, a: str, b: str) -> int | None:
        """Cables on the shortest path between two hosts or switches (gpu01 - leaf - gpu02: 2);
        None when either is unknown or there is no path."""
        starts, goals = self._ends(a), self._ends(b)
        if not starts or not goals:
            return None
        if a == b:
            return 0
        offset = (1 if a in self._host_ports else 0) + (1 if b in self._host_ports else 0)
        if starts & goals:
            return offset
        distance = {s: 0 for s in starts}
        queue = deque(starts)
        while queue:
            current = queue.popleft()
            for other in self._switch_links.get(current, ()):
                if other not in distance:
                    distance[other] = distance[current] + 1
                    if other in goals:
                        return distance[other] + offset
                    queue.append(other)
        return None

    def where(self, name: str) -> tuple[str, int] | None:
        """(file, line) that shows a host (its first cable) or a switch (its own line)."""
        if name in self._host_at:
            return self._host_at[name]
        found = self.switch(name)
        return (found.path, found.line) if found else None

    def links(self) -> list[Link]:
        """Every InfiniBand link of the fabric files, both ends named, in file order."""
        found = []
        for fabric in self.files:
            if isinstance(fabric, FabricFile):
                found.extend(self._link(fabric, link) for link in fabric.links)
        return found

    def end_name(self, fabric: FabricFile, node_id: str) -> str:
        """A fabric file's node as reports name it: a switch's name, a host's ``HOST ADAPTER``."""
        if node_id in self._switches:
            return self._switches[node_id].name
        node = fabric.nodes.get(node_id)
        if node is None:
            return node_id
        owner = self._owner.get(node_id)
        named = host_of(node.description)
        if owner and named:
            return f"{owner} {named[1]}"
        if owner:
            return f"{owner} ({node.description or node_id})"
        return node.description or node_id

    def owner(self, adapter_id: str) -> str | None:
        """The host an adapter of a fabric file belongs to (None: it names none)."""
        return self._owner.get(adapter_id)

    def hosts_behind(self, switch_id: str) -> list[str]:
        return sorted({p.host for ports in self._host_ports.values() for p in ports if p.switch == switch_id})

    @property
    def graph(self):
        """The fabric as a networkx Graph: switches and hosts as nodes (``role``), cables as
        edges (``cables``). Needs networkx (``pip install 'topolint[graph]'``)."""
        from topolint.model import system  # networkx, optional: only this export and System.graph use it

        nx = system.networkx()
        graph = nx.Graph()
        for switch in self._switches.values():
            graph.add_node(switch.name, role=switch.role)
        for switch, others in self._switch_links.items():
            for other, cables in others.items():
                graph.add_edge(self._switches[switch].name, self._switches[other].name, cables=cables)
        for host, ports in self._host_ports.items():
            graph.add_node(host, role="host")
            for port in ports:
                name = self._switches[port.switch].name
                cables = graph.edges[host, name]["cables"] + 1 if graph.has_edge(host, name) else 1
                graph.add_edge(host, name, cables=cables)
        return graph

    # ---- building ---------------------------------------------------------------------------------
    def _ends(self, name: str) -> set[str]:
        if name in self._host_ports:
            return {p.switch for p in self._host_ports[name]}
        found = self._by_name.get(name)
        return {found} if found else set()

    def _link(self, fabric: FabricFile, link: FabricLink) -> Link:
        hosts = []
        for end in (link.a, link.b):
            owner = self._owner.get(end)
            if owner:
                hosts.append(owner)
        if not hosts:
            for end in (link.a, link.b):
                if end in self._switches and self._switches[end].role == "leaf":
                    hosts.extend(self.hosts_behind(end))
        return Link(self.end_name(fabric, link.a), link.a_port, self.end_name(fabric, link.b), link.b_port,
                    link, fabric.path, tuple(dict.fromkeys(hosts)))


def _switch_name(description: str) -> str | None:
    """The host name of a managed switch, ``MF0;NAME:MODEL/U1`` -> NAME (None: not that form)."""
    if description.startswith("MF0;"):
        name = description[4:].split(":", 1)[0].strip()
        return name or None
    return None


def _is_default(description: str) -> bool:
    """A NodeDescription the switch was shipped with, not a name: unmanaged switches share it."""
    return not description or "Mellanox Technologies" in description or description.startswith("SwitchIB")


def fabric_graph(files: list, nodes: dict | None = None) -> FabricGraph:
    """The graph of the fabric files (FabricFile, LldpFile), joined to the run's nodes: ``nodes``
    maps a node name to its inventory (fleet/inventory.py), whose ports' GUIDs name the adapters
    whose description names no host, and whose names replace a fabric's spelling of a host
    (``GPU017.cluster`` is node ``gpu017``)."""
    graph = FabricGraph(files=list(files))
    nodes = nodes or {}
    by_short = {}
    for name in nodes:
        by_short.setdefault(name.lower().split(".", 1)[0], name)
    guid_owner = _guid_owners(nodes)

    def node_name(host: str) -> str:
        if host in nodes:
            return host
        return by_short.get(host.lower().split(".", 1)[0], host)

    fabrics = [f for f in files if isinstance(f, FabricFile)]
    _add_switches(graph, fabrics)
    for fabric in fabrics:
        _add_cables(graph, fabric, node_name, guid_owner)
    for lldp in files:
        if isinstance(lldp, LldpFile):
            _add_lldp(graph, lldp, node_name)
    return graph


def _guid_owners(nodes: dict) -> dict[str, str]:
    owners = {}
    for name, inventory in nodes.items():
        for nic in getattr(inventory, "nics", ()):
            guid = getattr(nic, "port_guid", None)
            if guid is not None:
                owners[str(guid.value).lower().removeprefix("0x").rjust(16, "0")] = name
    return owners


def _add_switches(graph: FabricGraph, fabrics: list[FabricFile]) -> None:
    """Every switch once (by GUID across files), named, with its role from what is cabled to it."""
    found: dict[str, FabricNode] = {}
    for fabric in fabrics:
        for node in fabric.nodes.values():
            if node.kind == "switch":
                found.setdefault(node.id, node)
    has_hosts = set()
    for fabric in fabrics:
        for link in fabric.links:
            for here, there in ((link.a, link.b), (link.b, link.a)):
                peer = fabric.nodes.get(there)
                if here in found and peer is not None and peer.kind == "ca" and "Aggregation Node" not in peer.description:
                    has_hosts.add(here)
    descriptions: dict[str, int] = {}
    for node in found.values():
        descriptions[node.description] = descriptions.get(node.description, 0) + 1
    for node in found.values():
        name = _switch_name(node.description)
        if name is None:
            unique = descriptions[node.description] == 1 and not _is_default(node.description)
            name = node.description if unique else (f"S-{node.guid}" if node.guid else node.id)
        switch = Switch(node.id, name, node.description, "leaf" if node.id in has_hosts else "spine",
                        node.loc.path, node.loc.line, node.guid)
        graph._switches[node.id] = switch
        for alias in sorted(switch.aliases):
            graph._by_name.setdefault(alias, node.id)


def _add_cables(graph: FabricGraph, fabric: FabricFile, node_name, guid_owner: dict) -> None:
    for link in fabric.links:
        a, b = fabric.nodes.get(link.a), fabric.nodes.get(link.b)
        if a is None or b is None:
            continue
        if a.kind == "switch" and b.kind == "switch":
            for here, there in ((a.id, b.id), (b.id, a.id)):
                others = graph._switch_links.setdefault(here, {})
                others[there] = others.get(there, 0) + 1
            continue
        for adapter, switch, switch_port in ((a, b, link.b_port), (b, a, link.a_port)):
            if adapter.kind != "ca" or switch.kind != "switch":
                continue
            named = host_of(adapter.description)
            owner = guid_owner.get(adapter.guid or "") or (node_name(named[0]) if named else None)
            if owner is None:
                if "Aggregation Node" not in adapter.description and adapter.id not in graph._unnamed_ids:
                    graph._unnamed_ids.add(adapter.id)
                    graph.unnamed.append(adapter)
                continue
            graph._owner[adapter.id] = owner
            port = HostPort(owner, named[1] if named else adapter.description, switch.id, str(switch_port),
                            link.loc.path, link.loc.line, adapter.guid)
            graph._host_ports.setdefault(owner, []).append(port)
            graph._host_at.setdefault(owner, (link.loc.path, link.loc.line))


def _add_lldp(graph: FabricGraph, lldp: LldpFile, node_name) -> None:
    """An lldpctl output of a node: each interface's neighbour that is a switch is a leaf of that
    node (by chassis: two ports hearing one chassis are on one switch)."""
    if lldp.host is None:
        return
    host = node_name(lldp.host)
    for neighbour in lldp.neighbours:
        if neighbour.protocol != "LLDP" or neighbour.bridge is False:
            continue  # CDP from a pod's veth, or a host cabled back to back
        switch_id = f"chassis:{neighbour.chassis_id or neighbour.chassis_name}"
        if switch_id not in graph._switches:
            name = neighbour.chassis_name or neighbour.chassis_id or switch_id
            switch = Switch(switch_id, name, neighbour.chassis_descr or "", "leaf", neighbour.loc.path,
                            neighbour.loc.line)
            graph._switches[switch_id] = switch
            for alias in sorted(switch.aliases):
                graph._by_name.setdefault(alias, switch_id)
        port = HostPort(host, neighbour.interface, switch_id, neighbour.port, neighbour.loc.path, neighbour.loc.line)
        graph._host_ports.setdefault(host, []).append(port)
        graph._host_at.setdefault(host, (neighbour.loc.path, neighbour.loc.line))
