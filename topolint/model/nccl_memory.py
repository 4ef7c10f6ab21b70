"""NCCL's node and link arrays as memory, for the passes that read past a node's last link.

``ncclTopoFlattenBcmSwitches`` (src/graph/topo.cc) removes links with ``memmove`` and nodes with
``ncclTopoRemoveNode``. Neither clears what it leaves: the slot after a shortened link array
keeps a copy of its old last link, and the slot after a shortened node array a copy of its old
last node. ``ncclTopoConnectNodes`` (via ``ncclTopoConnectCpus``) and ``ncclTopoSort`` (via
``ncclTopoSortSystem``) find the end of a link array by the first NULL ``remNode``, not by
``nlinks``, so they read those stale slots: the sort can shift a node's link up the tree out of
its ``nlinks`` and pull a stale copy in. NCCL then refuses the file ("Failed to find reverse
path"), computes other PIX/PXB paths, or recurses without end (a crash).

A link points at a node as NCCL's ``remNode`` does, by its place in a node array: here a
(type, slot) pair. ``ncclTopoRemoveNode`` moves the links within ``nlinks`` along with the
nodes, never the stale ones. Nothing is removed before the flattening, so until then a node's
slots are exactly its links (``NcclSystem.connect``); this module takes over from the
flattening to the sort and hands back ordinary ``Link`` lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from topolint.model.numbers import float32

NODE_TYPES = ("GPU", "PCI", "NVS", "CPU", "NIC", "NET")


class MemoryFault(Exception):
    """NCCL's code would fail here: ``crash`` for undefined behaviour (endless recursion, a read
    past the array), else NCCL's WARN text ("" when NCCL fails without one; ``detail`` says why)."""

    def __init__(self, message: str, crash: bool = False, detail: str = ""):
        super().__init__(message or detail)
        self.message, self.crash, self.detail = message, crash, detail or message


@dataclass
class Slot:
    """One ncclTopoLink: its type, the (type, slot) it points at and its bandwidth."""
    type: str
    rem: tuple
    bw: float


@dataclass(eq=False)
class Struct:
    """One ncclTopoNode's memory: the Python node it holds and its link slots. Slots past
    ``len(slots)`` were never written (NULL); those from ``nlinks`` on are stale."""
    node: object
    slots: list = field(default_factory=list)
    nlinks: int = 0


class NodeMemory:
    """The node arrays of one system, from the flattening to the sort."""

    def __init__(self, nodes: dict, link_type, max_links: int, checks_links: bool):
        self.nodes = nodes  # NcclSystem.nodes: kept in step with the arrays' counts
        self.link_type = link_type  # the Link class to hand back
        self.max_links, self.checks_links = max_links, checks_links
        self.arrays: dict[str, list[Struct]] = {}
        self.count: dict[str, int] = {}
        where = {id(n): (t, i) for t in NODE_TYPES for i, n in enumerate(nodes[t])}
        for t in NODE_TYPES:
            self.arrays[t] = [Struct(n, [Slot(ln.type, where[id(ln.rem)], ln.bw) for ln in n.links], len(n.links))
                              for n in nodes[t]]
            self.count[t] = len(nodes[t])

    def at(self, pointer: tuple) -> Struct:
        kind, index = pointer
        array = self.arrays[kind]
        if index >= len(array):  # beyond every node ever created there: zeroed memory
            raise MemoryFault("a link points past NCCL's node array", crash=True)
        return array[index]

    # ---- the primitives, as NCCL writes them ----------------------------------------------------
    @staticmethod
    def drop_link(struct: Struct, at: int) -> None:
        """memmove(links+l, links+l+1, ...); nlinks--: the old last link stays behind as a copy."""
        for i in range(at, struct.nlinks - 1):
            struct.slots[i] = replace(struct.slots[i + 1])
        struct.nlinks -= 1

    def append_link(self, struct: Struct, slot: Slot) -> None:
        """memcpy(links+nlinks, ...); nlinks++ (a stale slot there is overwritten)."""
        if struct.nlinks == self.max_links:
            if self.checks_links:
                raise MemoryFault(f"Error : too many Topo links (max {self.max_links})")
            raise MemoryFault("links written past NCCL_TOPO_MAX_LINKS", crash=True)
        if struct.nlinks < len(struct.slots):
            struct.slots[struct.nlinks] = replace(slot)
        else:
            struct.slots.append(replace(slot))
        struct.nlinks += 1

    def remove_node(self, kind: str, index: int) -> None:
        """ncclTopoRemoveNode: drop links to the node, move later pointers down, shift the array."""
        gone = (kind, index)
        for t in NODE_TYPES:
            for n in range(self.count[t]):
                if (t, n) == gone:
                    continue
                struct = self.arrays[t][n]
                l = 0
                while l < struct.nlinks:
                    while l < struct.nlinks and struct.slots[l].rem == gone:
                        self.drop_link(struct, l)
                    if l < struct.nlinks:
                        rem = struct.slots[l].rem
                        if rem[0] == kind and rem[1] >= index:
                            struct.slots[l].rem = (kind, rem[1] - 1)
                    l += 1
        array, count = self.arrays[kind], self.count[kind]
        last = array[count - 1]
        ghost = Struct(_copy_node(last.node), [replace(s) for s in last.slots], last.nlinks)
        self.nodes[kind].remove(array[index].node)
        array[index:count] = array[index + 1:count] + [ghost]
        self.count[kind] = count - 1

    def connect(self, pointer: tuple, rem: tuple, link_type: str, bw: float) -> None:
        """ncclTopoConnectNodes: walk to the matching link or the first NULL slot, add, sort by bw."""
        struct = self.at(pointer)
        l = 0
        while l < len(struct.slots) and l < self.max_links:
            if struct.slots[l].rem == rem and struct.slots[l].type == link_type:
                break
            l += 1
        if l == self.max_links:
            raise MemoryFault(f"Error : too many Topo links (max {self.max_links})", crash=not self.checks_links)
        if l == len(struct.slots):
            struct.nlinks += 1
            struct.slots.append(Slot(link_type, rem, 0.0))
        slot = struct.slots[l]
        slot.type, slot.rem, slot.bw = link_type, rem, float32(slot.bw + bw)
        while l > 0 and struct.slots[l - 1].bw < slot.bw:
            struct.slots[l] = struct.slots[l - 1]
            l -= 1
        struct.slots[l] = slot

    def sort(self, pointer: tuple, up: tuple | None, depth: int = 0) -> None:
        """ncclTopoSort: move the link up the tree after the last non-NULL slot; recurse down."""
        if depth > sum(self.count.values()) + 1:  # deeper than the tree: it recurses forever
            raise MemoryFault("ncclTopoSort recurses without end (NCCL crashes)", crash=True)
        struct = self.at(pointer)
        if up is not None:
            l = 0
            while l < len(struct.slots) and struct.slots[l].rem != up:
                l += 1
            if l == len(struct.slots):  # reads on past the NULL slots
                raise MemoryFault("ncclTopoSort finds no link up the tree (NCCL reads past the links)", crash=True)
            saved = struct.slots[l]
            while l + 1 < len(struct.slots):
                struct.slots[l] = replace(struct.slots[l + 1])
                l += 1
            struct.slots[l] = saved
        l = 0
        while l < struct.nlinks:
            slot = struct.slots[l]
            if slot.type == "PCI" and slot.rem != up:
                self.sort(slot.rem, pointer, depth + 1)
            l += 1

    def hand_back(self) -> None:
        """Give every node its links within nlinks, and so every stale node copy a link reaches."""
        todo = [s for t in NODE_TYPES for s in self.arrays[t][:self.count[t]]]
        seen = {id(s) for s in todo}
        while todo:
            struct = todo.pop()
            links = []
            for slot in struct.slots[:struct.nlinks]:
                rem = self.at(slot.rem)
                if id(rem) not in seen:  # a stale copy past the array's count
                    seen.add(id(rem))
                    todo.append(rem)
                links.append(self.link_type(slot.type, rem.node, slot.bw))
            struct.node.links = links


def flatten_bcm_switches(memory: NodeMemory, bcm_gen, gen5: bool, restart_at: int) -> int:
    """ncclTopoFlattenBcmSwitches: merge each Broadcom switch's second level into the first.

    ``bcm_gen(device, level)`` is getBcmGen; before Gen5 support (2.20) a sub-switch matches by
    the switch's own device id and the switch's device becomes 0x1000c01010000000, after that its
    low 16 bits are set. ``pciSwitch`` stays a pointer to its slot while nodes move (as in NCCL).
    After a merge the scan restarts at ``restart_at`` (1 before 2.27: ``s = 0`` then ``s++``).
    Returns the number of sub-switches merged."""
    merged, s = 0, 0
    while s < memory.count["PCI"]:
        switch_at = ("PCI", s)
        switch = memory.at(switch_at)
        device = switch.node.attrs["device"]
        gen = bcm_gen(device, 0)
        if not gen:
            s += 1
            continue
        sub_ids, l = [], 0
        while l < switch.nlinks:
            sub = memory.at(switch.slots[l].rem).node
            if sub.type != "PCI" or (bcm_gen(sub.attrs["device"], 1) != gen if gen5 else sub.attrs["device"] != device):
                l += 1
                continue
            sub_ids.append(sub.id)
            memory.drop_link(switch, l)
        for sub_id in sub_ids:
            index = next((i for i in range(memory.count["PCI"]) if memory.arrays["PCI"][i].node.id == sub_id), None)
            if index is None:  # ncclTopoIdToIndex fails (no WARN): a sub-switch linked twice (a <pcilink> too)
                raise MemoryFault("", detail="ncclTopoFlattenBcmSwitches: ncclTopoIdToIndex finds no sub-switch "
                                             "(it was linked twice) and fails without a WARN")
            sub = memory.arrays["PCI"][index]
            for slot in sub.slots[:sub.nlinks]:
                if slot.rem == switch_at:
                    continue
                memory.append_link(memory.at(switch_at), slot)
                rem = memory.at(slot.rem)
                for back in rem.slots[:rem.nlinks]:
                    if back.rem == ("PCI", index):
                        back.rem = switch_at
                        break
            memory.remove_node("PCI", index)
            merged += 1
        node = memory.at(switch_at).node
        node.attrs["device"] = node.attrs["device"] | 0xFFFF if gen5 else 0x1000C01010000000
        s = restart_at
    return merged


def _copy_node(node):
    """The bytes a removed node's last array slot keeps: a node of its own from then on."""
    return replace(node, links=list(node.links), paths={}, attrs=dict(node.attrs))
