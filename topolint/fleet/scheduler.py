"""The scheduler's view of a cluster (docs/fleet-topology.md): the Slurm topology in force, the
job host orders, the nodes' Kubernetes labels, and from them which leaf switch or block each
node sits under.

Slurm reads topology.yaml when it exists and then ignores topology.conf; a topology.yaml holds
several topologies, each judged on its own, and the first with ``cluster_default: true`` serves
the partitions that name none. Leaf membership (fleet/rank_order.py) comes from the fabric
files when the run has them (FabricGraph.leaf_group), else from the tree topology in force,
else from node labels; ``LeafMap.source`` says which.
"""

from __future__ import annotations

from topolint.model.numbers import decimal

import re
from dataclasses import dataclass, field

from topolint.model.scheduler import HostOrder, NodeLabels, NodeLabelsFile, Topology, TopologyFile, TOPOLOGY_YAML

# Labels that name the switch group a node hangs from, nearest first within each provider: the
# lowest layer a node states wins (AWS numbers its network nodes from the top layer down).
LEAF_LABELS = (
    "network.topology.nvidia.com/leaf",  # NVIDIA topograph
    "cloud.google.com/gce-topology-subblock",  # GKE: hosts of a sub-block share a switch
    "oci.oraclecloud.com/rdma.local_block_id",  # OKE
)
_AWS_LAYER = re.compile(r"topology\.k8s\.aws/network-node-layer-(\d+)$")
# Labels that name a node's NVLink domain (a GB200/GB300 rack): the clique of its GPUs.
CLIQUE_LABELS = ("nvidia.com/gpu.clique", "network.topology.nvidia.com/accelerator")


@dataclass
class Member:
    """Which group a host belongs to, and where an input says so."""

    group: frozenset[str]
    path: str
    line: int
    said: str  # "under switch s1" / "label topology.k8s.aws/network-node-layer-3=nn-..."


@dataclass
class LeafMap:
    """Hosts to the set of leaf switches (or label values) they hang from."""

    source: str  # "the fabric", "Slurm topology T (path)", "node labels"
    members: dict[str, Member] = field(default_factory=dict)

    def group(self, host: str) -> frozenset[str] | None:
        member = self.members.get(host)
        return member.group if member is not None else None


@dataclass
class SchedulerView:
    files: list[TopologyFile] = field(default_factory=list)
    orders: list[HostOrder] = field(default_factory=list)
    labels: dict[str, NodeLabels] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, inputs: list) -> "SchedulerView":
        view = cls()
        for facts, found_in in inputs:
            if isinstance(facts, TopologyFile):
                view.files.append(facts)
            elif isinstance(facts, HostOrder):
                view.orders.append(facts)
            elif isinstance(facts, NodeLabelsFile):
                for labels in facts.nodes:
                    name = labels.node or found_in
                    if name is None:
                        view.notes.append(f"{facts.path}: node labels that name no node (not in a node's "
                                          "folder): not joined to a node")
                    elif name not in view.labels:
                        view.labels[name] = labels
        return view

    def available(self) -> set[str]:
        kinds = set()
        if self.files:
            kinds.add("scheduler-topology")
        if self.orders:
            kinds.add("host-order")
        if self.labels:
            kinds.add("node-labels")
        return kinds

    def in_force(self) -> list[tuple[TopologyFile, Topology]]:
        """The topologies Slurm uses: topology.yaml's when one exists (topology.conf is then ignored)."""
        yaml_files = [f for f in self.files if f.format == TOPOLOGY_YAML]
        chosen = yaml_files or self.files
        return [(f, t) for f in chosen for t in f.topologies]

    def ignored(self) -> list[TopologyFile]:
        yaml_files = [f for f in self.files if f.format == TOPOLOGY_YAML]
        return [f for f in self.files if f.format != TOPOLOGY_YAML] if yaml_files else []

    def preferred(self, kind: str, hosts: list[str]) -> tuple[TopologyFile, Topology] | None:
        """The topology of ``kind`` in force that places every one of ``hosts``: the cluster default
        when it does, else the first that does."""
        candidates = [(f, t) for f, t in self.in_force() if t.kind == kind]
        candidates.sort(key=lambda pair: not pair[1].cluster_default)
        for pair in candidates:
            placed = set(leaf_members(*pair)) if kind == "tree" else set(block_members(*pair))
            if hosts and all(host in placed for host in hosts):
                return pair
        return None

    def label_leaves(self, hosts: list[str]) -> LeafMap | None:
        """Leaf groups from node labels, when every host states the same kind of label."""
        members = {}
        for host in hosts:
            labels = self.labels.get(host)
            found = leaf_label(labels) if labels is not None else None
            if found is None:
                return None
            key, value = found
            loc = labels.label_locs.get(key, labels.loc)
            members[host] = Member(frozenset({f"{key}={value}"}), loc.path, loc.line, f"label {key}={value}")
        keys = {next(iter(m.group)).split("=", 1)[0] for m in members.values()}
        return LeafMap("node labels", members) if members and len(keys) == 1 else None

    def clique(self, host: str) -> tuple[str, str, int] | None:
        """The NVLink domain a node's labels name: (value, path, line)."""
        labels = self.labels.get(host)
        for key in CLIQUE_LABELS if labels is not None else ():
            if key in labels.labels:
                loc = labels.label_locs.get(key, labels.loc)
                return labels.labels[key], loc.path, loc.line
        return None


def leaf_label(labels: NodeLabels) -> tuple[str, str] | None:
    """The label naming the switch group nearest the node, (key, value)."""
    for key in LEAF_LABELS:
        if labels.labels.get(key):
            return key, labels.labels[key]
    layers = [(decimal(m.group(1)), key) for key in labels.labels if (m := _AWS_LAYER.match(key))]
    if layers:
        key = max(layers)[1]
        return key, labels.labels[key]
    return None


def leaf_members(file: TopologyFile, topology: Topology) -> dict[str, Member]:
    """Hosts of a tree topology to the switches whose ``Nodes=`` name them."""
    members: dict[str, Member] = {}
    for switch in topology.switches:
        for host in switch.nodes:
            found = members.get(host)
            if found is None:
                members[host] = Member(frozenset({switch.name}), switch.loc.path, switch.loc.line,
                                       f"under switch {switch.name}")
            elif switch.name not in found.group:
                found.group = found.group | {switch.name}
    return members


def block_members(file: TopologyFile, topology: Topology) -> dict[str, Member]:
    members: dict[str, Member] = {}
    for block in topology.blocks:
        for host in block.nodes:
            members.setdefault(host, Member(frozenset({block.name}), block.loc.path, block.loc.line,
                                            f"in block {block.name}"))
    return members


def base_block_size(topology: Topology) -> int | None:
    """Slurm's base block size: the first of BlockSizes, else the first block's node count
    (block_record.c reads it so)."""
    if topology.block_sizes:
        return topology.block_sizes[0]
    return len(topology.blocks[0].nodes) if topology.blocks else None
