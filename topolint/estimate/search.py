"""Channels and per-channel bandwidths: an approximation of NCCL's graph search.

NCCL's search (src/graph/search.cc, ncclTopoCompute) tries per-channel speeds from a table,
fastest first, and packs as many rings (trees, NVLS heads) as the links' remaining bandwidth
allows, subtracting the speed from every link a channel's path crosses (ncclTopoFollowPath).
This module does the same packing on the model's graph, with three simplifications stated in
every estimate: it keeps the speed that gives the most bandwidth (NCCL stops at its first
solution, then tries to raise it), its ring search is bounded depth-first rather than NCCL's
scored order with timeouts, and the NVLS graph takes its intra-node speed from NVLink alone and
its network speed from all the NICs near each head GPU (NCCL picks one NIC per channel; NCCL's
runtime NVLS channels then spread over them). Results are min-combined over nodes as NCCL does
after its AllGather of graph info (src/init.cc, "graphs[a]->bwIntra = std::min(...)").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from topolint.estimate import nccl_tables as T
from topolint.estimate.hardware import Bottleneck, NetPort, NodeHardware
from topolint.model.system import gpu_id

_EPS = 1e-6
_DFS_BUDGET = 20000  # node expansions per channel, like NCCL's per-search timeouts


@dataclass(frozen=True)
class ChannelOrder:
    """One channel as topolint's search packed it: the GPUs in the order it visits them (entity
    ids; an NVLS or CollNet channel names its head GPU alone) and the network devices it enters
    and leaves the node through (entity ids; None within one node). An approximation of the
    graph NCCL's search would find (the module docstring says where it differs)."""

    gpus: tuple[str, ...]
    net_in: str | None = None
    net_out: str | None = None

    def as_dict(self) -> dict:
        return {"gpus": list(self.gpus), "net_in": self.net_in, "net_out": self.net_out}


@dataclass(frozen=True)
class Graph:
    """What ncclTopoCompute hands the tuning model for one pattern."""

    pattern: str  # ring, tree, nvls, collnet_direct, collnet_chain
    channels: int
    bw_intra: float
    bw_inter: float
    type_intra: str
    type_inter: str
    bottleneck: Bottleneck
    inter_bottleneck: Bottleneck | None = None  # what bounds bwInter, where it differs
    orders: tuple[ChannelOrder, ...] = ()  # each channel's order, as packed (empty: not a searched graph)


class _Residual:
    """Remaining bandwidth on each directed link while channels are packed."""

    def __init__(self, hw: NodeHardware):
        self.hw = hw
        self.left = {(u, v): link["bw"] for u, remotes in hw.system.links.items() for v, link in remotes.items()}
        self.intel = hw.cpu_vendor == "intel" and hw.cpu_arch == "x86"

    def take(self, links: list[tuple], amount: float) -> bool:
        """Subtract ``amount`` from every link, or change nothing and answer False."""
        done = []
        for link in links:
            if self.left.get(link, 0.0) + _EPS < amount:
                self.give(done, amount)
                return False
            self.left[link] = round(self.left[link] - amount, 3)
            done.append(link)
        return True

    def give(self, links: list[tuple], amount: float) -> None:
        for link in links:
            self.left[link] = round(self.left[link] + amount, 3)

    def room(self, a: str, b: str) -> float:
        """Bandwidth left on the narrowest link from GPU a to GPU b (0 when there is no path)."""
        path = self.hw.system.raw_paths[a].get(gpu_id(b)) if a != b else None
        if path is None:
            return 0.0
        nodes = [gpu_id(a), *path.via, gpu_id(b)]
        return min(self.left.get(link, 0.0) for link in zip(nodes, nodes[1:]))

    def gpu_cost(self, a: str, b: str, speed: float) -> tuple[list[tuple], float]:
        """Links from GPU a to GPU b and what one channel costs on them (Intel P2P through a CPU x 6/5)."""
        path = self.hw.system.raw_paths[a].get(gpu_id(b))
        if path is None:
            return [], -1.0
        nodes = [gpu_id(a), *path.via, gpu_id(b)]
        cost = speed * 6 / 5 if self.intel and any(n[0] == "cpu" for n in path.via) else speed
        return list(zip(nodes, nodes[1:])), cost


def net_links(hw: NodeHardware, bus: str, port: NetPort) -> list[tuple]:
    """Directed links from a GPU to a NIC port, through the PXN proxy when NCCL routes so."""
    system = hw.system
    path = system.gpu_net_paths[bus][port.key]
    if path.proxy_gpu:
        first = system.raw_paths[bus][gpu_id(path.proxy_gpu)]
        second = system.raw_paths[path.proxy_gpu][port.key]
        nodes = [gpu_id(bus), *first.via, gpu_id(path.proxy_gpu), *second.via, port.key]
    else:
        raw = system.raw_paths[bus][port.key]
        nodes = [gpu_id(bus), *raw.via, port.key]
    return list(zip(nodes, nodes[1:]))


def _reverse(links: list[tuple]) -> list[tuple]:
    return [(v, u) for u, v in reversed(links)]


def _chain(res: _Residual, gpus: list[str], start: str, end: str | None, speed: float,
           hint: list[str] | None) -> list[str] | None:
    """A Hamiltonian order from ``start`` (to ``end``, or back to ``start`` when None) whose links all
    have ``speed`` left; consumes them. Tries the previous channel's order first (NCCL replays it)."""
    if hint and hint[0] == start and (end is None or hint[-1] == end) and _take_order(res, hint, end is None, speed):
        return hint
    budget = [_DFS_BUDGET]
    order = [start]
    taken: list[tuple[list[tuple], float]] = []

    def step() -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if len(order) == len(gpus):
            if end is None and len(gpus) > 1:
                links, cost = res.gpu_cost(order[-1], start, speed)
                if cost < 0 or not res.take(links, cost):
                    return False
                taken.append((links, cost))
            return True
        # Widest remaining path first, as NCCL scores next GPUs by path bandwidth
        # (ncclTopoSearchNextGpuSort): it keeps channels from exhausting one link early.
        for nxt in sorted(gpus, key=lambda g: -res.room(order[-1], g)):
            if nxt in order or (end is not None and nxt == end and len(order) < len(gpus) - 1):
                continue
            links, cost = res.gpu_cost(order[-1], nxt, speed)
            if cost < 0 or not res.take(links, cost):
                continue
            order.append(nxt)
            taken.append((links, cost))
            if step():
                return True
            order.pop()
            res.give(*taken.pop())
        return False

    if step():
        return list(order)
    for links, cost in taken:
        res.give(links, cost)
    return None


def _take_order(res: _Residual, order: list[str], cycle: bool, speed: float) -> bool:
    pairs = list(zip(order, order[1:])) + ([(order[-1], order[0])] if cycle and len(order) > 1 else [])
    done = []
    for a, b in pairs:
        links, cost = res.gpu_cost(a, b, speed)
        if cost < 0 or not res.take(links, cost):
            for links_done, cost_done in done:
                res.give(links_done, cost_done)
            return False
        done.append((links, cost))
    return True


def _pack_intra(hw: NodeHardware, speed: float, limit: int) -> tuple[int, _Residual, list[ChannelOrder]]:
    res = _Residual(hw)
    gpus = hw.bus_ids
    channels, hint, orders = 0, None, []
    while channels < limit:
        order = _chain(res, gpus, gpus[0], None, speed, hint)
        if order is None:
            break
        channels, hint = channels + 1, order
        orders.append(ChannelOrder(tuple(hw.gpu_entity(b) for b in order)))
    return channels, res, orders


def _exit_gpu(hw: NodeHardware, port: NetPort, first: str) -> str:
    """The GPU a ring leaves the node from: the one nearest the same NIC, other than the first."""
    system = hw.system
    candidates = [(system.version.rank(system.gpu_net_paths[b][port.key].type), -system.gpu_net_paths[b][port.key].bw, b)
                  for b in hw.bus_ids if b != first and port.key in system.gpu_net_paths[b]]
    return min(candidates)[2] if candidates else first


def _pack_inter(hw: NodeHardware, speed: float, limit: int) -> tuple[int, _Residual, list[ChannelOrder]]:
    """Rings that enter each node from a NIC at its local GPU and leave through the nearest other GPU."""
    res = _Residual(hw)
    ports = [p for p in hw.nets if p.local_gpu]
    channels, hints, failed, orders = 0, {}, 0, []
    while channels < limit and ports and failed < len(ports):
        port = ports[channels % len(ports)] if failed == 0 else ports[(channels + failed) % len(ports)]
        first = port.local_gpu
        last = _exit_gpu(hw, port, first)
        enter = _reverse(net_links(hw, first, port))
        leave = net_links(hw, last, port)
        if not res.take(enter, speed):
            failed += 1
            continue
        if not res.take(leave, speed):
            res.give(enter, speed)
            failed += 1
            continue
        order = [first]
        if len(hw.bus_ids) > 1:
            order = _chain(res, hw.bus_ids, first, last, speed, hints.get(port.key))
            if order is None:
                res.give(enter, speed)
                res.give(leave, speed)
                failed += 1
                continue
            hints[port.key] = order
        channels, failed = channels + 1, 0
        orders.append(ChannelOrder(tuple(hw.gpu_entity(b) for b in order), port.entity, port.entity))
    return channels, res, orders


def _tightest(hw: NodeHardware, res: _Residual, speed: float, what: str) -> Bottleneck:
    """The link with the least bandwidth left after packing: the one that stopped another channel."""
    used = [(left / hw.system.links[u][v]["bw"], left, u, v) for (u, v), left in res.left.items()
            if hw.system.links[u][v]["bw"] < 4999 and left < hw.system.links[u][v]["bw"] - _EPS]
    if not used:
        bus = hw.bus_ids[0]
        return hw.nvlink_bottleneck(bus, hw.nvlink_total(bus), what)
    # A saturated link (too little left for one more channel), the narrowest first: one slow rail
    # or one narrow PCIe link is what stops the packing (cf. NVIDIA/nccl#307).
    _, _, u, v = min(used, key=lambda x: (x[1] + _EPS >= speed, hw.system.links[x[2]][x[3]]["bw"], x[0]))
    return hw.link_bottleneck(u, v, hw.system.links[u][v]["bw"], what)


def _best(hw: NodeHardware, inter: bool, limit: int, max_bw: float, min_channels: int = 1):
    best = (0, 0.0, None, [])
    for speed in T.speeds(hw.sm, inter, hw.system.version):
        if speed > max_bw + _EPS:
            continue
        channels, res, orders = _pack_inter(hw, speed, limit) if inter else _pack_intra(hw, speed, limit)
        if channels >= min_channels and channels * speed > best[0] * best[1] + _EPS:
            best = (channels, speed, res, orders)
    return best


def _path_types(hw: NodeHardware) -> tuple[str, str]:
    system, version = hw.system, hw.system.version
    intra = [system.raw_paths[a][gpu_id(b)].type for a in hw.bus_ids for b in hw.bus_ids
             if a != b and gpu_id(b) in system.raw_paths[a]]
    inter = [system.gpu_net_paths[p.local_gpu][p.key].type for p in hw.nets if p.local_gpu]
    worst = lambda types, default: max(types, key=version.rank) if types else default  # noqa: E731
    return worst(intra, "LOC"), worst(inter, "DIS")


def ring_graph(hw: NodeHardware, nodes: int) -> Graph | None:
    """The ring graph (pattern 4): pass one at the best speed, then ncclTopoDupChannels."""
    inter = nodes > 1
    if len(hw.bus_ids) == 1 and not inter:
        return None
    type_intra, type_inter = _path_types(hw)
    if inter:
        if not any(p.local_gpu for p in hw.nets):
            return None
        max_bw = max(hw.system.gpu_net_paths[p.local_gpu][p.key].bw for p in hw.nets if p.local_gpu)
    else:
        max_bw = max((hw.system.raw_paths[a][gpu_id(b)].bw for a in hw.bus_ids for b in hw.bus_ids
                      if a != b and gpu_id(b) in hw.system.raw_paths[a]), default=0.0)
    channels, speed, res, orders = _best(hw, inter, T.MAX_RING_CHANNELS, max_bw)
    if not channels:
        return None
    what = ("ring channel" if channels == 1 else "ring channels") + (
        " entering and leaving through the NICs" if inter else "")
    bottleneck = _tightest(hw, res, speed, f"{channels} {what} at {speed:g} GB/s each")
    graph = Graph("ring", channels, speed, speed, type_intra, type_inter, bottleneck, orders=tuple(orders))
    return _dup(graph, hw.sm, T.MAX_RING_CHANNELS)


def _dup(graph: Graph, sm: int, max_channels: int) -> Graph:
    """ncclTopoDupChannels (src/graph/search.cc): twice the channels at half the speed each, the
    added channels copies of the first ones in order (its memcpy of intra and inter, v2.30.7-1)."""
    if graph.bw_intra < T.DUP_MIN_BW:
        return graph
    if sm > 80 and graph.bw_intra < T.DUP_SM90_BW and graph.channels > T.DUP_SM90_MAX_CHANNELS:
        return graph
    doubled = min(graph.channels * 2, max_channels)
    factor = -(-doubled // graph.channels)
    orders = graph.orders + graph.orders[:doubled - graph.channels]
    return replace(graph, channels=doubled, bw_intra=graph.bw_intra / factor, bw_inter=graph.bw_inter / factor,
                   orders=orders)


def tree_graph(hw: NodeHardware, nodes: int, ring: Graph) -> Graph:
    """Trees get the ring's channel count (src/init.cc, treeGraph min/maxChannels); on two nodes
    NCCL's pass two raises bwIntra up to twice bwInter while NVLink allows (search.cc)."""
    if nodes != 2:
        return replace(ring, pattern="tree")
    best = ring.bw_intra
    for speed in T.speeds(hw.sm, True, hw.system.version):
        if speed <= best or speed > 2 * ring.bw_inter + _EPS:
            continue
        channels, _, _ = _pack_intra(hw, speed, ring.channels)
        if channels >= ring.channels:
            best = speed
    return replace(ring, pattern="tree", bw_intra=best)


def head_capacity(hw: NodeHardware, head: str) -> tuple[float, Bottleneck | None]:
    """Network bandwidth one NVLS/CollNet head GPU can drive: its NICs, through the links they share."""
    res = _Residual(hw)
    total, tight = 0.0, None
    for port in (p for p in hw.nets if p.local_gpu == head):
        out = net_links(hw, head, port)
        room = min(min(res.left.get(link, 0.0) for link in out), port.bw)
        if room <= _EPS:
            continue
        res.take(out, room)
        total += room
        narrowest = min(out, key=lambda link: hw.system.links[link[0]][link[1]]["bw"])
        tight = hw.link_bottleneck(*narrowest, hw.system.links[narrowest[0]][narrowest[1]]["bw"], "")
    return total, tight


def nvls_graph(hw: NodeHardware, nodes: int) -> Graph | None:
    """The NVLS graph: one head per channel; every GPU's NVSwitch link carries each channel once and
    its own head channel twice (ncclTopoSearchTryNvls), so speed <= NVLink / (channels + 1)."""
    if not hw.nvswitch or hw.sm < 90 or len(hw.bus_ids) < 2:
        return None
    if any(("nvs", 0) not in hw.system.links.get(gpu_id(b), {}) for b in hw.bus_ids):
        return None
    if nodes == 1:
        channels = min(T.MAX_NVLS_ARITY, len(hw.bus_ids))
    else:
        heads = sorted({p.local_gpu for p in hw.nets if p.local_gpu})
        channels = min(T.MAX_NVLS_ARITY, len(heads), len(hw.bus_ids))
        if channels < 1:
            return None
    slowest = min(hw.bus_ids, key=lambda b: hw.system.links[gpu_id(b)][("nvs", 0)]["bw"])
    nvlink = hw.system.links[gpu_id(slowest)][("nvs", 0)]["bw"]
    intra = next((s for s in T.speeds(hw.sm, False, hw.system.version) if (channels + 1) * s <= nvlink + _EPS), 0.0)
    if not intra:
        return None
    bottleneck = hw.nvlink_bottleneck(slowest, nvlink, f"{channels} NVLS channels at {intra:g} GB/s per NVSwitch "
                                                       f"link ({channels + 1} x {intra:g} <= {nvlink:g})")
    type_intra, type_inter = _path_types(hw)
    if nodes == 1:
        orders = tuple(ChannelOrder((hw.gpu_entity(b),)) for b in hw.bus_ids[:channels])
        return Graph("nvls", channels, intra, intra, type_intra, type_inter, bottleneck, orders=orders)
    inter, tight = _heads_speed(hw)
    if not inter:
        return None
    return Graph("nvls", channels, intra, inter, type_intra, type_inter, bottleneck, tight,
                 _head_orders(hw, heads[:channels]))


def _head_orders(hw: NodeHardware, heads: list[str]) -> tuple[ChannelOrder, ...]:
    """One channel per head GPU, through the first network device it drives."""
    orders = []
    for head in heads:
        port = next(p for p in hw.nets if p.local_gpu == head)
        orders.append(ChannelOrder((hw.gpu_entity(head),), port.entity, port.entity))
    return tuple(orders)


def _heads_speed(hw: NodeHardware) -> tuple[float, Bottleneck | None]:
    heads = sorted({p.local_gpu for p in hw.nets if p.local_gpu})
    capacities = [(head_capacity(hw, h), h) for h in heads]
    (cap, tight), head = min(capacities, key=lambda x: x[0][0])
    speed = next((s for s in T.speeds(hw.sm, True, hw.system.version) if s <= cap + _EPS), 0.0)
    if tight is not None:
        tight = replace(tight, detail=f"network side of head GPU {hw.gpu(head).dev}: {cap:g} GB/s through its NICs "
                                      f"({tight.detail.lstrip(': ') or tight.link}), {speed:g} GB/s per channel")
    return speed, tight


def collnet_graphs(hw: NodeHardware, ring: Graph) -> tuple[Graph | None, Graph | None]:
    """CollNet (SHARP) graphs: Direct has one head per local NIC GPU (at most NCCL_MAX_DIRECT_ARITY+1);
    Chain is a tree with the ring's channel count (src/init.cc)."""
    heads = sorted({p.local_gpu for p in hw.nets if p.local_gpu})
    if not heads:
        return None, None
    speed, tight = _heads_speed(hw)
    if not speed:
        return None, None
    bottleneck = tight or ring.bottleneck
    direct = None
    if hw.nvswitch:
        count = min(len(heads), T.MAX_DIRECT_ARITY + 1)
        direct = Graph("collnet_direct", count, speed, speed, ring.type_intra, ring.type_inter, bottleneck, tight,
                       _head_orders(hw, heads[:count]))
    chain = replace(ring, pattern="collnet_chain")
    return direct, chain


def combine(graphs: list[Graph]) -> Graph:
    """One graph for all nodes: fewest channels, least bandwidth, worst path types (src/init.cc)."""
    if len(graphs) == 1:
        return graphs[0]
    worst = min(graphs, key=lambda g: (g.channels * g.bw_intra, g.channels * g.bw_inter))
    channels = min(g.channels for g in graphs)
    return replace(worst, channels=channels, bw_intra=min(g.bw_intra for g in graphs),
                   bw_inter=min(g.bw_inter for g in graphs), orders=worst.orders[:channels])
