"""NVLink patterns shared by NVL001 and NVL002, from a matrix (NV# per GPU pair) or an NCCL dump
(nvlink counts per GPU pair, NVSwitch counts summed per GPU)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from topolint.checks._memo import across_nodes, per_node
from topolint.model.facts import NVSWITCH_CLASS
from topolint.model.matrix import nv_count

# SXM/HGX GPUs always have NVLink (NVL001 from the model when a dump shows none).
NVLINK_MODELS = {
    "0x10de:0x2330": "H100 SXM5", "0x10de:0x2335": "H200 SXM5", "0x10de:0x2901": "B200",
    "0x10de:0x20b0": "A100 SXM4 40GB", "0x10de:0x20b2": "A100 SXM4 80GB",
}


@dataclass
class Pattern:
    """GPUs (ids), pairwise NVLink counts, and per-GPU NVSwitch sums, with locations."""

    gpus: list[str]
    pairs: dict[frozenset, int] = field(default_factory=dict)
    switch: dict[str, int] = field(default_factory=dict)  # GPU -> links to NVSwitches (summed)

    def count(self, a: str, b: str) -> int:
        if a == b:
            return self.pairs.get(frozenset((a,)), 0)
        return self.links().get(a, {}).get(b, 0)

    def peers(self, gpu: str) -> list[str]:
        linked = self.links().get(gpu, {})
        return [g for g in self.gpus if g != gpu and linked.get(g, 0) > 0]

    def links(self) -> dict[str, dict[str, int]]:
        """GPU -> peer -> count, from ``pairs`` (built once the pattern is filled in: rebuilt if
        pairs were added since)."""
        built = self.__dict__.get("_links")
        if built is None or built[0] != len(self.pairs):
            table: dict[str, dict[str, int]] = {}
            for key, value in self.pairs.items():
                if len(key) == 2:
                    a, b = key
                    table.setdefault(a, {})[b] = value
                    table.setdefault(b, {})[a] = value
            built = self.__dict__["_links"] = (len(self.pairs), table)
        return built[1]


@dataclass
class AllToAll:
    kind: str  # "pairs" or "switch"
    members: list[str]  # GPUs taking part
    links: int  # the common NV# (pairs) or NVSwitch link count (switch)
    lacking: dict[str, list[str]]  # GPU -> peers it has no NVLink to (pairs) / [] (no switch link)
    low: dict[str, int]  # GPU -> its count below ``links``


def all_to_all(p: Pattern) -> AllToAll | None:
    """The node's all-to-all pattern and who breaks it; None for cube-mesh, bridged pairs, PCIe.

    Switch: at least two GPUs reach an NVSwitch. Pairs: at least three GPUs with NVLink and at
    least half of them linked to every other such GPU (a hybrid cube mesh links 4 of 7, a bridge
    1 of 1 in a pair of pairs)."""
    peers = {g: p.peers(g) for g in p.gpus}  # asked of every GPU several times below
    if sum(1 for g in p.gpus if p.switch.get(g)) >= 2:
        linked = [g for g in p.gpus if p.switch.get(g)]
        mode = Counter(p.switch[g] for g in linked).most_common(1)[0][0]
        lacking = {g: [] for g in p.gpus if not p.switch.get(g) and not peers[g]}
        low = {g: p.switch[g] for g in linked if p.switch[g] < mode}
        return AllToAll("switch", linked, mode, lacking, low)
    members = [g for g in p.gpus if peers[g]]
    if len(members) < 3:
        return None
    full = [g for g in members if len(peers[g]) == len(members) - 1]
    if 2 * len(full) < len(members):
        return None
    links = p.links()
    count = {g: links.get(g, {}) for g in members}  # count[a].get(b, 0) is p.count(a, b) for a != b
    counts = Counter(c for i, a in enumerate(members) for b in members[i + 1:] if (c := count[a].get(b, 0)))
    mode = counts.most_common(1)[0][0]
    lacking: dict[str, list[str]] = {}
    outside = [g for g in p.gpus if g not in members]
    if outside and len(full) == len(members):
        for g in outside:
            lacking[g] = [m for m in members]
    for g in members:
        missing = [m for m in members if m != g and not count[g].get(m, 0)]
        if missing:
            lacking[g] = missing
    low = {}
    for g in members:
        below = [c for m in members if m != g and 0 < (c := count[g].get(m, 0)) < mode]
        if below:
            low[g] = min(below)
    return AllToAll("pairs", members, mode, lacking, low)


def matrix_pattern(view) -> Pattern:
    pattern = Pattern(gpus=list(view.gpus))
    for i, a in enumerate(view.gpus):
        for b in view.gpus[i + 1:]:
            count = nv_count(view.rel(a, b))
            if count:
                pattern.pairs[frozenset((a, b))] = count
    return pattern


def xml_pattern(topology) -> Pattern:
    """GPU bus ids; a GPU's links to NVSwitches are summed (one nvlink per switch in older dumps)."""
    gpus = {g.bus_id for g in topology.gpus}
    pattern = Pattern(gpus=[g.bus_id for g in topology.gpus])
    for gpu in topology.gpus:
        for link in gpu.nvlinks:
            count = link.count or 0
            if count <= 0 or link.target == gpu.bus_id:
                continue  # a link to itself is not a peer link
            tclass = (link.tclass or NVSWITCH_CLASS).lower()
            if tclass.startswith("0x03"):
                if link.target in gpus:
                    key = frozenset((gpu.bus_id, link.target))
                    pattern.pairs[key] = max(pattern.pairs.get(key, 0), count)
            elif tclass.startswith(NVSWITCH_CLASS):
                pattern.switch[gpu.bus_id] = pattern.switch.get(gpu.bus_id, 0) + count
    return pattern


# ---- asked once (NVL001, NVL002 and TL003 ask the same questions; checks/_memo.py) --------------
def shared_xml_pattern(shared: dict, topology) -> Pattern:
    return per_node(shared, "xml_pattern", topology, lambda: xml_pattern(topology))


def matrix_all_to_all(mc) -> AllToAll | None:
    """all_to_all of a MatrixContext's matrix (labels only), shared by the nodes with its content."""
    if mc.content is None:
        return all_to_all(matrix_pattern(mc.view))
    return across_nodes("matrix all_to_all", mc.content, lambda: all_to_all(matrix_pattern(mc.view)))


def shared_all_to_all(shared: dict, pattern: Pattern) -> AllToAll | None:
    return per_node(shared, "all_to_all", pattern, lambda: all_to_all(pattern))
