"""A job's node order as NCCL connects it, and how often it changes leaf switch (FLEET002).

NCCL numbers nodes by their lowest rank and connects its inter-node rings in that order, the
last node back to the first (src/graph/connect.cc); its double binary trees pair node indices
by bit patterns (src/graph/trees.cc: a node's parent flips its lowest set bit's neighbour; the
second tree mirrors the first for an even node count and shifts it by one for an odd one). So
the order of the hosts decides how many ring hops and tree edges cross between leaf switches.

The rank order is the hosts' order (each host at its first appearance) under block mapping:
Open MPI's default ``--map-by slot`` and Hydra's fill a host's slots (``slots=N``, ``host:N``)
before the next; srun's block, cyclic and plane distributions place each node's first task in
the allocation's node order; ``--distribution=arbitrary`` follows the hostfile line by line. A
``--rank-by`` or a rankfile orders ranks some other way: the order is then not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from topolint.model.scheduler import HostEntry, HostOrder


@dataclass
class Mapping:
    said: str  # the mapping assumed, for the finding's evidence
    judged: bool  # False: the rank order is not the host order (not judged)


def node_order(order: HostOrder) -> list[HostEntry]:
    """Each host once, at its first appearance (its lowest rank under the mappings above)."""
    seen: set[str] = set()
    nodes = []
    for entry in order.hosts:
        if entry.name not in seen:
            seen.add(entry.name)
            nodes.append(entry)
    return nodes


def mapping(order: HostOrder, launch: list) -> Mapping:
    """The mapping of ranks to hosts the run shows: launch options of its scripts (mpirun
    --map-by/--rank-by, srun --distribution), SLURM_DISTRIBUTION of an environment dump, else
    the launchers' default block mapping."""
    for fact in launch:
        where = f"{fact.loc.path}:{fact.loc.line}"
        if fact.kind == "rank-by" and fact.value.split(":")[0].lower() not in ("slot", "core", "hwthread"):
            return Mapping(f"mpirun {fact.detail} {fact.value} ({where}) orders ranks some other way than "
                           "the hosts' order", False)
        if fact.kind == "map-by" and "rankfile" in fact.value.lower():
            return Mapping(f"mpirun {fact.detail} {fact.value} ({where}): a rankfile places each rank", False)
    for fact in launch:
        where = f"{fact.loc.path}:{fact.loc.line}"
        if fact.kind == "map-by":
            return Mapping(f"mpirun {fact.detail} {fact.value} ({where}): each node's lowest rank follows the "
                           "hosts' order", True)
        if fact.kind == "distribution":
            return Mapping(f"srun {fact.detail}={fact.value} ({where}): each node's first task follows the "
                           "node order", True)
    distribution = order.settings.get("SLURM_DISTRIBUTION")
    if distribution:
        return Mapping(f"SLURM_DISTRIBUTION={distribution}: each node's first task follows the node order", True)
    if any(entry.slots for entry in order.hosts):
        return Mapping("block mapping (Open MPI's --map-by slot and Hydra's default): ranks fill each host's "
                       "slots before the next host", True)
    if order.kind.endswith("NODELIST"):
        return Mapping(f"srun's default block distribution over {order.kind}'s order", True)
    return Mapping("block mapping (the launchers' default): each host's ranks in turn, in the file's order", True)


def ring_changes(groups: list) -> int:
    """Ring hops between different groups, the last node back to the first included."""
    count = len(groups)
    if count < 2:
        return 0
    return sum(1 for i in range(count) if groups[i] != groups[(i + 1) % count])


def fewest_changes(groups: list) -> int:
    """The fewest a ring over these nodes can have: one hop into each group, when there are two or more."""
    distinct = len(set(groups))
    return distinct if distinct > 1 else 0


def grouped(nodes: list, groups: list) -> list:
    """``nodes`` grouped by their group, groups in order of first appearance, the given order kept
    inside each group."""
    by_group: dict = {}
    for node, group in zip(nodes, groups):
        by_group.setdefault(group, []).append(node)
    return [node for members in by_group.values() for node in members]


def _btree_parent(count: int, index: int) -> int:
    """The parent of node ``index`` in NCCL's binary tree over ``count`` nodes (-1 for the root)."""
    if index == 0:
        return -1
    bit = 1
    while bit < count and not bit & index:
        bit <<= 1
    parent = (index ^ bit) | (bit << 1)
    return parent if parent < count else index ^ bit


def tree_edges(count: int) -> list[tuple[int, int]]:
    """(child, parent) node indices of both trees of NCCL's double binary tree."""
    edges = []
    for index in range(count):
        parent = _btree_parent(count, index)
        if parent >= 0:
            edges.append((index, parent))
    for index in range(count):
        if count % 2:  # shifted by one
            parent = _btree_parent(count, (index - 1) % count)
            parent = -1 if parent < 0 else (parent + 1) % count
        else:  # mirrored
            parent = _btree_parent(count, count - 1 - index)
            parent = -1 if parent < 0 else count - 1 - parent
        if parent >= 0:
            edges.append((index, parent))
    return edges


def tree_crossings(groups: list) -> tuple[int, int]:
    """(tree edges between different groups, all tree edges)."""
    edges = tree_edges(len(groups))
    return sum(1 for child, parent in edges if groups[child] != groups[parent]), len(edges)
