"""Facts of the scheduler's inputs (docs/fleet-topology.md): Slurm's topology files, the host
order of a job (MPI hostfiles, node lists, SLURM_JOB_NODELIST dumps) and Kubernetes node labels.

They describe the cluster, not one node: a cluster folder holds them at its top, and the
cluster stage reads them (fleet/scheduler.py, fleet/rank_order.py). Every value keeps the file
and line it was read from.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Literal, Optional

from topolint.model.facts import Fact, Location, build, location, packed_loc
from topolint.model.schema import Field

TopologyKind = Literal["tree", "block", "flat"]
TOPOLOGY_CONF, TOPOLOGY_YAML = "slurm-topology-conf", "slurm-topology-yaml"
MPI_HOSTFILE, SLURM_ENV, K8S_NODES = "mpi-hostfile", "slurm-env", "k8s-nodes"
SCHEDULER_FORMATS = frozenset({TOPOLOGY_CONF, TOPOLOGY_YAML, MPI_HOSTFILE, SLURM_ENV, K8S_NODES})


class SwitchLine(Fact):
    """One switch of topology/tree: ``SwitchName=s1 Switches=... Nodes=... LinkSpeed=...``."""

    # Slots, not a dict, and loc packed (facts.packed_loc): a switch or block per line of a few
    # dozen bytes (issue 20).
    __slots__ = ("name", "nodes", "switches", "link_speed", "_path", "_at")
    _state_names = (*__slots__[:-2], "loc")
    _field_specs = {"nodes": Field(default_factory=list), "switches": Field(default_factory=list),
                    "link_speed": Field(default=None), "loc": Field()}
    name: str
    nodes: list[str]  # expanded, in order
    switches: list[str]
    link_speed: Optional[str]
    loc: Location = packed_loc()


class BlockLine(Fact):
    """One block of topology/block: ``BlockName=b1 Nodes=...``."""

    __slots__ = ("name", "nodes", "_path", "_at")
    _state_names = ("name", "nodes", "loc")
    _field_specs = {"nodes": Field(default_factory=list), "loc": Field()}
    name: str
    nodes: list[str]
    loc: Location = packed_loc()


class Topology(Fact):
    """One topology: the whole of a topology.conf, or one entry of a topology.yaml."""

    name: str  # topology.yaml's ``topology:``; "topology.conf" for the .conf
    kind: TopologyKind
    cluster_default: bool = False
    switches: list[SwitchLine] = Field(default_factory=list)
    blocks: list[BlockLine] = Field(default_factory=list)
    block_sizes: list[int] = Field(default_factory=list)
    block_sizes_loc: Optional[Location] = None
    loc: Location


class TopologyFile(Fact):
    """A Slurm topology.conf (or ``scontrol show topology``'s lines) or topology.yaml."""

    path: str
    format: str  # TOPOLOGY_CONF or TOPOLOGY_YAML
    topologies: list[Topology] = Field(default_factory=list)

    def verbose_notes(self) -> list[str]:
        said = []
        for topology in self.topologies:
            parts = f"{len(topology.switches)} switches" if topology.kind == "tree" else f"{len(topology.blocks)} blocks"
            default = ", cluster default" if topology.cluster_default else ""
            said.append(f"Slurm topology {topology.name} ({topology.kind}{default}): {parts}")
        return said


class HostEntry(Fact):
    """One host of a job's host order, as the input names it (``slots`` when it says so)."""

    name: str
    slots: Optional[int] = None
    loc: Location


class HostEntries(Sequence):
    """HostOrder.hosts as columns, each HostEntry made as a consumer walks them: a job's host
    order is a few bytes a host in its file (``gpu[00001-04096]``, ``n1 slots=8``), an object
    and a Location per host ten times that (issue 20: memory bounded by the input). ``names``
    is a list or a model/hostlist.py Hosts; the entries' Locations are ``loc`` for all, or
    ``path`` with a line and column each. Compares equal to the list of entries."""

    __slots__ = ("names", "slots", "loc", "path", "lines", "columns", "count")

    def __init__(self, names: Sequence[str], slots: Optional[list] = None, loc: Optional[Location] = None,
                 path: str = "", count: Optional[int] = None):
        self.names, self.slots, self.loc, self.path = names, slots, loc, path
        self.lines, self.columns = array("l"), array("l")
        self.count = count  # len(names) when known: a Hosts counts by walking its expression

    def add(self, name: str, slots: Optional[int], line: int, column: int) -> None:
        """One more host, at its own line and column of ``path`` (a hostfile's lines)."""
        self.names.append(name)
        if slots is not None and self.slots is None:
            self.slots = [None] * (len(self.names) - 1)
        if self.slots is not None:
            self.slots.append(slots)
        self.lines.append(line)
        self.columns.append(column)

    def __len__(self) -> int:
        return len(self.names) if self.count is None else self.count

    def __iter__(self) -> Iterator["HostEntry"]:
        slots, loc = self.slots, self.loc
        for index, name in enumerate(self.names):
            yield build(HostEntry, name=name, slots=slots[index] if slots is not None else None,
                        loc=loc if loc is not None else location(self.path, self.lines[index], self.columns[index]))

    def __getitem__(self, index):
        return list(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (HostEntries, list, tuple)):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return repr(list(self))


class HostOrder(Fact):
    """A job's hosts in the order the input gives them: an MPI hostfile (``host slots=N``,
    ``host:N``, one host a line), a node list, or a ``SLURM_JOB_NODELIST`` in an environment dump."""

    path: str
    kind: str  # "hostfile", "node list", "SLURM_JOB_NODELIST" (the variable's name)
    hosts: list[HostEntry] = Field(default_factory=list)
    settings: dict[str, str] = Field(default_factory=dict)  # SLURM_* values of an environment dump
    setting_locs: dict[str, Location] = Field(default_factory=dict)

    def verbose_notes(self) -> list[str]:
        return [f"{self.kind}: {len(self.hosts)} host entries"]


class NodeLabels(Fact):
    """The labels of one Kubernetes node (``kubectl get node -o yaml|json``, ``describe node``,
    ``get nodes --show-labels``, or a pasted labels block)."""

    node: Optional[str] = None  # None: a labels block that does not name its node
    labels: dict[str, str] = Field(default_factory=dict)
    label_locs: dict[str, Location] = Field(default_factory=dict)
    loc: Location


class NodeLabelsFile(Fact):
    path: str
    host: Optional[str] = None  # the node whose folder held it: the node a labels block names none for
    nodes: list[NodeLabels] = Field(default_factory=list)

    def verbose_notes(self) -> list[str]:
        return [f"Kubernetes node labels of {len(self.nodes)} node(s)"]
