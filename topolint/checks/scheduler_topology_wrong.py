"""FLEET004: the Slurm topology in force (topology.yaml when it exists, else topology.conf; every
topology of a topology.yaml on its own) disagrees with the fabric or with itself
(docs/fleet-topology.md):

- tree: a node under a switch it is not cabled to (the switch's other nodes share a leaf the
  fabric files show, this one does not); a node the fabric or the run has that the file places
  under no switch; a switch with no path to the others (Slurm places no job across them);
- block: a block whose nodes are not one NVLink domain (their clique labels, or ClusterUUID and
  CliqueId where the run states them, differ); a block with fewer nodes than the base block
  size (the first of BlockSizes; slurmctld refuses to start) or a count that is not a multiple
  of it (the rest form no base block); BlockSizes that are not the base size times a power of
  two; a node of the run that no block holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit, Related
from topolint.fleet.scheduler import base_block_size, block_members, leaf_members
from topolint.model.facts import location
from topolint.model.hostlist import compress

NEEDS = ("cluster", "scheduler-topology")
FIELDS = ("subject", "topology", "detail")


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    cluster = context.cluster
    view = cluster.scheduler
    for ignored in view.ignored():
        context.notes.append(f"{ignored.path}: not judged, topology.yaml is read instead (Slurm ignores "
                             "topology.conf when topology.yaml exists)")
    fabric = getattr(cluster, "fabric", None)
    for file, topology in view.in_force():
        if topology.kind == "tree":
            yield from _cabling(file, topology, fabric)
            yield from _missing(file, topology, set(leaf_members(file, topology)), fabric, cluster, "under no switch")
            yield from _disconnected(file, topology, fabric)
        elif topology.kind == "block":
            yield from _domains(file, topology, cluster)
            yield from _sizes(file, topology)
            yield from _missing(file, topology, set(block_members(file, topology)), None, cluster, "in no block")


def _hit(subject: str, entity: str, loc, topology, detail: str, evidence: list[str], related=()) -> Hit:
    """``entity`` NAME/slurm#attribute, made per topology (a topology.yaml's are judged apart)."""
    name, _, attribute = entity.partition("#")
    return Hit(entity=f"{name}:{topology.name}#{attribute}", location=loc, evidence=evidence, related=list(related),
               fields={"subject": subject, "topology": topology.name, "detail": detail})


def _cabling(file, topology, fabric) -> Iterator[Hit]:
    if fabric is None:
        return
    for switch in topology.switches:
        known = [(host, frozenset(fabric.leaf_group(host))) for host in switch.nodes if fabric.leaf_group(host)]
        if len(known) < 2:
            continue
        counts = Counter(group for _, group in known)
        group, count = counts.most_common(1)[0]
        if count * 2 <= len(known):
            continue  # no leaf most of the switch's nodes share: nothing says which node is misplaced
        shared = "+".join(sorted(group))
        for host, own in known:
            if own == group:
                continue
            path, line = (fabric.where(host) or ("the fabric files", 1))
            evidence = [f"{file.path}:{switch.loc.line}: {host} under switch {switch.name}",
                        f"{path}:{line}: {host} is cabled to {'+'.join(sorted(own))}",
                        f"{count} of the {len(known)} nodes of {switch.name} the fabric shows are cabled to {shared}"]
            yield _hit(f"{host} under switch {switch.name}", f"{host}/slurm#switch", switch.loc, topology,
                       f"is cabled to {'+'.join(sorted(own))}, not to {shared} where {count} of its {len(known)} "
                       "nodes are", evidence, [Related(location(path, line), f"{host}/fabric#leaf",
                                                       f"{host} cabled to {'+'.join(sorted(own))}")])


def _missing(file, topology, placed: set[str], fabric, cluster, where_not: str) -> Iterator[Hit]:
    """Nodes of the fabric, and of the run when the file names any of the run's nodes, it does not place."""
    wanted: dict[str, tuple[str, int, str]] = {}
    if fabric is not None:
        for host in fabric.hosts():
            if host not in placed:
                path, line = (fabric.where(host) or ("the fabric files", 1))
                wanted.setdefault(host, (path, line, "the fabric files show it"))
    run_nodes = list(cluster.inventories)
    if any(node in placed for node in run_nodes):
        for node in run_nodes:
            if node not in placed:
                wanted.setdefault(node, ("", 0, "the run checks it"))
    for host, (path, line, why) in wanted.items():
        evidence = [f"{file.path}: topology {topology.name} places {len(placed)} nodes, {host} {where_not}",
                    f"{path}:{line}: {why}" if path else f"{host}: {why}"]
        yield _hit(f"{host}", f"{host}/slurm#placed", topology.loc, topology,
                   f"is {where_not} ({why}): Slurm never gives it a job that spans nodes", evidence)


def _parts(topology) -> list[list[str]]:
    """The switches of a tree in parts joined by Switches= lines, largest first."""
    neighbours: dict[str, set[str]] = {switch.name: set() for switch in topology.switches}
    for switch in topology.switches:
        for child in switch.switches:
            neighbours[switch.name].add(child)
            neighbours.setdefault(child, set()).add(switch.name)
    parts, seen = [], set()
    for start in neighbours:
        if start in seen:
            continue
        part, stack = [], [start]
        seen.add(start)
        while stack:
            name = stack.pop()
            part.append(name)
            for other in sorted(neighbours[name] - seen):
                seen.add(other)
                stack.append(other)
        parts.append(part)
    parts.sort(key=len, reverse=True)
    return parts


def _disconnected(file, topology, fabric) -> Iterator[Hit]:
    """A part of the tree with no path to the largest part, where the fabric cables them together.
    Without the fabric, separate trees are a site's choice (slurm-gcp writes one per nodeset
    family; slurmctld only warns): not judged."""
    parts = _parts(topology)
    if len(parts) < 2 or fabric is None:
        return
    names = {switch.name: switch for switch in topology.switches}
    component = {name: index for index, names_ in enumerate(fabric.connected_switches()) for name in names_}

    def hosts_of(part):
        return [h for n in part if n in names for h in names[n].nodes]

    def components(hosts):
        return {component[leaf] for h in hosts for leaf in (fabric.leaf_group(h) or ()) if leaf in component}

    largest = components(hosts_of(parts[0]))
    for part in parts[1:]:
        hosts = hosts_of(part)
        shared = components(hosts) & largest
        if not shared:
            continue  # the fabric does not join them either: FLEET005 and the cabling's business
        defined = [names[n] for n in part if n in names]
        first = min(defined, key=lambda s: s.loc.line)
        joined = next(h for h in hosts if components([h]) & shared)
        path, line = (fabric.where(joined) or ("the fabric files", 1))
        evidence = [f"{file.path}: {len(parts)} parts of the tree with no switch in common; the largest holds "
                    f"{len(parts[0])} switches",
                    f"this part: {compress(sorted(part), 8)} ({len(hosts)} nodes: {compress(hosts, 6)})",
                    f"{path}:{line}: the fabric cables {joined} to the switches of the largest part's nodes"]
        yield _hit(f"switch {first.name}", f"{first.name}/slurm#path", first.loc, topology,
                   f"has no path to the other switches ({len(part)} switches, {len(hosts)} nodes apart) though the "
                   "fabric connects them: Slurm places no job across them", evidence)


def _clique(cluster, host: str):
    """A node's NVLink domain: its inventory's (when the run states it), else its labels'."""
    inventory = cluster.inventories.get(host)
    domain = getattr(inventory, "nvlink_domain", None) if inventory is not None else None
    value = getattr(domain, "value", domain)
    if value:
        where = getattr(domain, "where", None)
        return str(value), getattr(where, "path", host), getattr(where, "line", 0)
    return cluster.scheduler.clique(host)


def _domains(file, topology, cluster) -> Iterator[Hit]:
    for block in topology.blocks:
        stated = [(host, found) for host in block.nodes if (found := _clique(cluster, host)) is not None]
        counts = Counter(found[0] for _, found in stated)
        if len(counts) < 2:
            continue
        majority, count = counts.most_common(1)[0]
        has_majority = count * 2 > len(stated)
        for host, (value, path, line) in stated:
            if has_majority and value == majority:
                continue
            evidence = [f"{file.path}:{block.loc.line}: {host} in block {block.name}",
                        f"{path}:{line}: {host}'s NVLink domain is {value}",
                        "the block's nodes state " + "; ".join(f"{n} in {v}" for v, n in counts.most_common())]
            detail = (f"is in NVLink domain {value}, not {majority} like {count} of the block's {len(stated)} nodes"
                      if has_majority else f"is in NVLink domain {value}: the block's nodes are in {len(counts)} "
                      "domains, one block is one domain")
            yield _hit(f"{host} in block {block.name}", f"{host}/slurm#block", block.loc, topology, detail,
                       evidence, [Related(location(path, max(line, 1)), f"{host}/system#nvlink_domain",
                                          f"{host}: NVLink domain {value}")] if path and line else [])


def _sizes(file, topology) -> Iterator[Hit]:
    base = base_block_size(topology)
    if not base:
        return
    said = (f"BlockSizes={','.join(map(str, topology.block_sizes))} ({file.path}:{topology.block_sizes_loc.line})"
            if topology.block_sizes else f"no BlockSizes: the first block's {base} nodes")
    for size in topology.block_sizes[1:]:
        ratio = size // base
        if size % base or ratio & (ratio - 1):
            yield _hit(f"BlockSizes {size}", f"{size}/slurm#block_sizes", topology.block_sizes_loc, topology,
                       f"is not the base block size {base} times a power of two: slurmctld refuses it",
                       [f"base block size {base} ({said}); Slurm aggregates base blocks in powers of two"])
    for block in topology.blocks:
        count = len(block.nodes)
        if count < base:
            detail = (f"has {count} nodes, fewer than the base block size {base}: slurmctld refuses to start "
                      "(children count lower than the base block)")
        elif count % base:
            detail = (f"has {count} nodes, not a multiple of the base block size {base}: {count % base} of them "
                      "form no base block")
        else:
            continue
        yield _hit(f"block {block.name}", f"{block.name}/slurm#block_size", block.loc, topology, detail,
                   [f"{file.path}:{block.loc.line}: block {block.name}: {count} nodes ({compress(block.nodes, 6)})",
                    f"base block size {base} ({said})"])
