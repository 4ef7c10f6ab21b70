"""Groups of like nodes and each group's majority (docs/fleet.md).

Nodes are grouped by hardware signature: GPU model and count, and the models of their RDMA
ports. A node whose signature is rare (held by at most a tenth as many nodes as a group's, or by
one node beside a group of three or more) and differs from that group's in one part only (7 GPUs among 8-GPU nodes, a ConnectX-6 among ConnectX-7s) is an odd
node out of that group, not a group of its own: it joins the group, so its difference is found.
Two signatures that are both common are two kinds of node, compared separately. A part no
input states (no lspci, no ibstat) matches any.

Within a group, each attribute's majority is the value more than half the nodes that state it
have, in a group of three nodes or more; otherwise there is no majority and the rules say so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from topolint.fleet.inventory import Inventory

STRAY_SHARE = 10  # a signature held by at most 1/STRAY_SHARE of a group's nodes may join it
MIN_MAJORITY_NODES = 3  # a majority needs this many nodes; one odd node joins a group this large


@dataclass
class Group:
    name: str
    signature: tuple  # (GPU model, GPU count, RDMA port models); None: not stated
    nodes: list[str] = field(default_factory=list)  # members, in the run's node order
    joined: dict[str, tuple] = field(default_factory=dict)  # odd nodes out -> their own signature


def signature(inventory: Inventory) -> tuple:
    models = Counter(g.model.value for g in inventory.gpus if g.model is not None)
    gpu_model = "+".join(sorted(str(m) for m in models)) if models else None
    count = inventory.gpu_count.value if inventory.gpu_count is not None else None
    nic_models = sorted({str(n.model.value) for n in inventory.nics if n.model is not None})
    return (gpu_model, count, tuple(nic_models) if nic_models else None)


def group_name(sig: tuple) -> str:
    """``8xH100-SXM5+MT4129``: short, one word, the same for the same signature."""
    gpu_model, count, nic_models = sig
    if count == 0:
        gpus = ["no-GPU"]
    elif count is None and gpu_model is None:
        gpus = []  # no input states the GPUs
    else:
        gpus = [f"{count}x{gpu_model or 'GPU'}" if count is not None else gpu_model]
    words = gpus + list(nic_models or ())
    return "+".join(w.replace(" ", "-") for w in words) or "unknown-hardware"


def _differences(a: tuple, b: tuple) -> int | None:
    """How many stated parts differ; None when a part stated on one side only differs in kind."""
    return sum(1 for x, y in zip(a, b) if x is not None and y is not None and x != y)


def hardware_groups(inventories: dict[str, Inventory]) -> list[Group]:
    """Every node in exactly one group; groups largest first, then by name."""
    by_signature: dict[tuple, list[str]] = {}
    for name, inventory in inventories.items():
        by_signature.setdefault(signature(inventory), []).append(name)
    ordered = sorted(by_signature, key=lambda s: (-len(by_signature[s]), group_name(s)))
    groups: dict[tuple, Group] = {}
    for sig in ordered:
        members = by_signature[sig]
        home = _home(sig, len(members), groups)
        if home is None:
            groups[sig] = Group(group_name(sig), sig, list(members))
        else:
            home.nodes.extend(members)
            home.joined.update((member, sig) for member in members)
    order = {name: index for index, name in enumerate(inventories)}
    for group in groups.values():
        group.nodes.sort(key=order.__getitem__)
    return list(groups.values())


def _home(sig: tuple, size: int, groups: dict[tuple, Group]) -> Group | None:
    """The largest group (already formed, so larger or as large) this rare signature belongs to."""
    for group in groups.values():  # largest first
        base = len(group.nodes) - len(group.joined)
        rare = size * STRAY_SHARE <= base or (size == 1 and base >= MIN_MAJORITY_NODES)
        if rare and _differences(sig, group.signature) <= 1:
            return group
    return None


@dataclass
class Tally:
    """How many nodes of a group hold each value of one attribute."""

    counts: list[tuple[object, int]]  # (value, nodes), most first, then by value
    total: int  # nodes that state the attribute

    @classmethod
    def of(cls, values: list) -> Tally:
        counter = Counter(values)
        counts = sorted(counter.items(), key=lambda item: (-item[1], str(item[0])))
        return cls(counts, len(values))

    @property
    def majority(self) -> tuple[object, int] | None:
        """(value, nodes) held by more than half, in a group of three nodes or more; else None."""
        if self.total < MIN_MAJORITY_NODES or not self.counts:
            return None
        value, count = self.counts[0]
        return (value, count) if count * 2 > self.total else None

    @property
    def uniform(self) -> bool:
        return len(self.counts) <= 1
