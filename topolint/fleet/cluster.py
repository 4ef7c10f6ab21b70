"""The cluster as the cross-node rules see it: every node's inventory, and what joins the nodes.

The cluster stage (engine/runner.py ``run_cluster_checks``) runs after the per-node rules, in
the parent process, on a ClusterModel built from inventories only: nodes checked in worker
processes send back their inventory, nodes the result cache answers give the inventory it
kept, inventory files are read as they are. A check of this stage declares ``NEEDS`` starting
with ``"cluster"`` and reads ``context.cluster``.

Finding convention (docs/fleet.md): a cluster-level finding is about one node, so its entity
starts with that node's name, then the part of the node it is about and, after ``#``, the
attribute (``gpu017/nic/mlx5_3:1#rate_gbps``, ``gpu017/system#gpu_count``,
``gpu017/env/NCCL_IB_HCA``); it points at the line that holds the node's value, which
``Sourced.where`` gives: the raw input's line, or the inventory file's when the run read
inventories; the evidence names the raw input (``Sourced.origin``) and the values of the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from typing import TYPE_CHECKING

from topolint.fleet.inventory import Inventory

if TYPE_CHECKING:
    from topolint.fleet.fabric_graph import FabricGraph


@dataclass
class ClusterModel:
    """Nodes by name, in the run's node order (deterministic: the collection's order)."""

    inventories: dict[str, Inventory] = field(default_factory=dict)
    # What several cross-node checks derive alike (checks/_fleet.py's attribute table), computed once.
    shared: dict = field(default_factory=dict, repr=False, compare=False)
    # Later fields, each filled by the runner's cluster_model() from the run's inputs:
    # the fabric graph, scheduler topology, hostfiles and node labels (fleet part 2), the NVLink
    # domain and profiles (fleet part 3). A field left empty makes nothing available.
    # The scheduler's files as parsed (inputs/collect.py Collection.cluster_files): (facts, the node
    # folder it was found in or None). The scheduler's are read through ``scheduler``.
    inputs: list = field(default_factory=list)
    # The fabric as cabled (fleet/fabric_graph.py), from the cluster's ibnetdiscover, iblinkinfo
    # and lldpctl files; None: the run has none.
    fabric: FabricGraph | None = None

    def available(self) -> set[str]:
        """Kinds of cluster facts, as a cluster check's NEEDS names them."""
        kinds = {"cluster"}
        if len(self.inventories) >= 2:
            kinds.add("inventories")  # something to compare: two nodes at least
        kinds |= self.scheduler.available()
        if self.fabric is not None:
            kinds.add("fabric")
        return kinds

    @cached_property
    def scheduler(self):
        """The scheduler's view of the cluster (fleet/scheduler.py): topology files, host orders, labels."""
        from topolint.fleet.scheduler import SchedulerView

        return SchedulerView.of(self.inputs)

    @property
    def nodes(self) -> list[str]:
        return list(self.inventories)

    @cached_property
    def groups(self):
        """Nodes grouped by hardware signature (fleet/groups.py), computed once for every check."""
        from topolint.fleet.groups import hardware_groups

        return hardware_groups(self.inventories)


def system_entity(node: str, attribute: str) -> str:
    """A node-wide attribute: ``gpu017/system#gpu_count``."""
    return f"{node}/system#{attribute}"


def attribute_entity(entity: str, attribute: str) -> str:
    """An attribute of one part of a node: ``gpu017/nic/mlx5_3:1#rate_gbps``."""
    return f"{entity}#{attribute}"


def node_of_entity(entity: str) -> str:
    """The node a cluster finding is about: its entity's first part."""
    return entity.split("/", 1)[0]
