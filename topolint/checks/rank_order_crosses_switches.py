"""FLEET002: a job's host order changes leaf switch more often than its nodes require
(docs/fleet-topology.md).

For each host order of the run (an MPI hostfile, a node list, a SLURM_JOB_NODELIST dump), the
nodes in NCCL's order (fleet/rank_order.py) are given their leaf group: from the fabric files
when the run has them, else from the Slurm tree topology in force, else from node labels. A
ring that enters a leaf group more than once crosses the spine more often than needed: the hit
says how often, the fewest possible, the tree edges that cross, and an order grouped by leaf
(the given order kept inside each leaf). For a Slurm block topology, a job whose nodes lie in
more blocks than their count needs is reported too.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit, Related
from topolint.fleet import rank_order
from topolint.fleet.scheduler import LeafMap, Member, block_members, leaf_members
from topolint.model.facts import location
from topolint.model.hostlist import compress

NEEDS = ("cluster", "host-order")
FIELDS = ("node", "order", "changes", "fewest", "groups", "source", "blocks", "needed", "hosts")
_LAUNCH = ("map-by", "rank-by", "distribution")


class Parameters(CheckParameters):
    pass


def leaf_map(cluster, hosts: list[str]) -> LeafMap | None:
    """Leaf groups of ``hosts``: the fabric's, else the tree topology's, else the labels'."""
    fabric = getattr(cluster, "fabric", None)
    if fabric is not None:
        members = {}
        for host in hosts:
            group = fabric.leaf_group(host)
            if not group:
                break
            path, line = (fabric.where(host) or ("the fabric files", 1))
            members[host] = Member(frozenset(group), path, line, f"cabled to {', '.join(sorted(group))}")
        else:
            return LeafMap("the fabric files", members)
    tree = cluster.scheduler.preferred("tree", hosts)
    if tree is not None:
        found = leaf_members(*tree)
        return LeafMap(topology_said(*tree), {h: found[h] for h in hosts})
    return cluster.scheduler.label_leaves(hosts)


def topology_said(file, topology) -> str:
    """``Slurm topology.conf (path)``, or ``Slurm topology T of topology.yaml (path)``."""
    if topology.name.startswith("topology.conf"):
        return f"Slurm {file.path}"
    return f"Slurm topology {topology.name} of {file.path}"


def _launch(context) -> list:
    return [fact for config in context.configs or () for fact in config.launch if fact.kind in _LAUNCH]


def check(context, params: Parameters) -> Iterator[Hit]:
    cluster = context.cluster
    launch = _launch(context)
    for order in cluster.scheduler.orders:
        nodes = rank_order.node_order(order)
        if len(nodes) < 2:
            continue
        chosen = rank_order.mapping(order, launch)
        if not chosen.judged:
            context.notes.append(f"not judged for {order.path}: {chosen.said}")
            continue
        hosts = [entry.name for entry in nodes]
        leaves = leaf_map(cluster, hosts)
        if leaves is None:
            context.notes.append(f"not judged for {order.path}: no fabric file, Slurm tree topology or node "
                                 f"labels places every one of its {len(hosts)} hosts under a leaf")
        else:
            yield from _ring(order, nodes, leaves, chosen)
        yield from _blocks(cluster, order, nodes, hosts)


def _group_name(group: frozenset[str]) -> str:
    return "+".join(sorted(group))


def _ring(order, nodes, leaves: LeafMap, chosen) -> Iterator[Hit]:
    hosts = [entry.name for entry in nodes]
    groups = [leaves.group(host) for host in hosts]
    changes, fewest = rank_order.ring_changes(groups), rank_order.fewest_changes(groups)
    if changes <= fewest:
        return
    suggested = rank_order.grouped(hosts, groups)
    crossing, edges = rank_order.tree_crossings(groups)
    better, _ = rank_order.tree_crossings([leaves.members[h].group for h in suggested])
    back = _first_return(nodes, groups)
    distinct = len(set(groups))
    evidence = [
        f"mapping assumed: {chosen.said}",
        f"leaf groups from {leaves.source}: " + "; ".join(
            f"{_group_name(g)}: {compress([h for h, hg in zip(hosts, groups) if hg == g], 6)}"
            for g in dict.fromkeys(groups)),
        f"NCCL's rings visit the {len(hosts)} nodes in this order and close back to the first: {changes} hops "
        f"change leaf group, {fewest} would do (one into each of the {distinct} groups)",
        f"NCCL's double binary trees: {crossing} of {edges} edges cross leaf groups ({better} in the grouped order)",
        f"grouped by leaf, the given order kept inside each: {compress(suggested, 16)}",
        f"{back.name} ({back.loc.path}:{back.loc.line}) returns to {_group_name(leaves.group(back.name))}, "
        f"{leaves.members[back.name].said} ({leaves.members[back.name].path}:{leaves.members[back.name].line})",
    ]
    related = [Related(location=location(leaves.members[back.name].path, leaves.members[back.name].line),
                       entity=f"{back.name}/job#leaf", message=f"{back.name} {leaves.members[back.name].said}")]
    yield Hit(entity=f"{back.name}/job#rank_order", location=back.loc, evidence=evidence, related=related,
              fields={"node": back.name, "order": order.kind, "changes": changes, "fewest": fewest,
                      "groups": distinct, "source": leaves.source, "hosts": len(hosts)})


def _first_return(nodes, groups):
    """The first node whose group the order left before: where the grouping breaks."""
    seen = set()
    for index, (entry, group) in enumerate(zip(nodes, groups)):
        if group in seen and groups[index - 1] != group:
            return entry
        seen.add(group)
    return nodes[0]


def _blocks(cluster, order, nodes, hosts: list[str]) -> Iterator[Hit]:
    found = cluster.scheduler.preferred("block", hosts)
    if found is None:
        return
    file, topology = found
    members = block_members(file, topology)
    used = list(dict.fromkeys(next(iter(members[h].group)) for h in hosts))
    sizes = sorted((len(b.nodes) for b in topology.blocks), reverse=True)
    needed, held = 0, 0
    while held < len(hosts) and needed < len(sizes):
        held += sizes[needed]
        needed += 1
    if len(used) <= needed:
        return
    first = next(e for e in nodes if next(iter(members[e.name].group)) == used[needed])
    per_block = "; ".join(f"{name}: {sum(1 for h in hosts if name in members[h].group)}" for name in used)
    evidence = [f"{topology_said(file, topology)}: the job's {len(hosts)} nodes lie in {len(used)} "
                f"blocks ({per_block}); the largest {needed} blocks hold {held} nodes",
                f"{first.name} ({first.loc.path}:{first.loc.line}) is in block {used[needed]}, "
                f"{members[first.name].path}:{members[first.name].line}"]
    yield Hit(entity=f"{first.name}/job#blocks", location=first.loc, variant="blocks", evidence=evidence,
              fields={"node": first.name, "order": order.kind, "blocks": len(used), "needed": needed,
                      "hosts": len(hosts), "source": topology_said(file, topology)})
