"""Helpers the checks share when they read ``nvidia-smi topo -m`` matrices."""

from __future__ import annotations

from topolint.checks._memo import across_nodes
from topolint.engine.finding import Related
from topolint.model.matrix import MatrixView, bus_ids, nv_count, path_name, topo_matrices
from topolint.model.node import gpu_entity, nic_entity
from topolint.model.values import Values

SHARED_CELLS = 4096  # larger matrices (no real node has one) keep their answers to themselves


class MatrixContext:
    """One matrix of a node with what the checks need: lookups, bus ids from the node's XML.
    Answers are remembered (the matrix does not change while its node is checked), so the
    checks that share one context (``matrix_contexts(node, shared=context.shared)``) derive
    each NUMA node, path and nearest NIC once."""

    def __init__(self, node, matrix):
        self.node = node
        self.matrix = matrix
        self.view = MatrixView(matrix)
        self.bus = bus_ids(node, matrix)
        # Answers depend on the matrix's values alone: nodes with the same matrix share them.
        self.content = _content(matrix) if len(matrix.columns) * len(matrix.rows) <= SHARED_CELLS else None
        self._memo, self._numa, self._paths = ({}, {}, {}) if self.content is None else \
            across_nodes("matrix answers", self.content, lambda: ({}, {}, {}))

    def _remembered(self, key: tuple, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def gpu_entity(self, label: str) -> str:
        """NODE/gpu/BUSID when the node's XML names the bus id, else NODE/gpu/INDEX."""
        index = self.view.gpu_index(label)
        return gpu_entity(self.node.name, self.bus.get(index, str(index)))

    def gpu_bus(self, label: str) -> str:
        return self.bus.get(self.view.gpu_index(label), "bus id unknown")

    def nic_entity(self, label: str) -> str:
        return nic_entity(self.node.name, self.view.nic_name(label), None)

    def nic_text(self, label: str) -> str:
        name = self.view.nic_name(label)
        return name if name == label else f"{name} ({label})"

    def numa_text(self, label: str) -> str:
        row = self.view.rows.get(label)
        value = row.numa_affinity if row is not None else None
        return value if value else "?"

    def nic_related(self, label: str, message: str, via: tuple[str, ...] | None = None) -> Related:
        """The NIC's row as a related line; ``via``: it ends the path the finding is about (Related.via)."""
        row = self.view.rows.get(label)
        loc = row.loc if row is not None else self.matrix.header_loc
        return Related(location=loc, entity=self.nic_entity(label), message=message, via=via)

    def numa_node(self, label: str) -> str | None:
        """The row's single NUMA node from the NUMA Affinity column; for a NIC without one, the
        node of the GPUs it reaches without crossing a CPU link (PIX, PXB, PHB, NODE), if one."""
        try:
            return self._numa[label]
        except KeyError:
            numa = self._numa[label] = self._numa_node(label)
            return numa

    def _numa_node(self, label: str) -> str | None:
        row = self.view.rows.get(label)
        value = (row.numa_affinity or "").strip() if row is not None else ""
        if value.isdigit():
            return value
        if label in self.view.gpus:
            return None
        near = {self.numa_node(g) for g in self.view.gpus
                if path_name(self.view.rel(g, label)) in ("PIX", "PXB", "PHB")}
        return near.pop() if len(near) == 1 and None not in near else None

    def best_nvlink(self, gpu: str) -> int:
        """The highest NV# in a GPU's cells to the other GPUs (0 for none)."""
        return self._remembered(("best_nvlink", gpu), lambda: max(
            (nv_count(self.view.rel(gpu, g)) for g in self.view.gpus if g != gpu), default=0))

    def same_numa(self, a: str, b: str) -> bool:
        numa = self.numa_node(a)
        return numa is not None and numa == self.numa_node(b)

    def path(self, gpu: str, nic: str) -> str | None:
        """NCCL's path type for a matrix cell. NCCL only gives SYS for a path that crosses a
        CPU-to-CPU link (src/graph/paths.cc ncclTopoSetPaths: LINK_SYS): SYS between a GPU and a
        NIC the NUMA column puts on one node is PHB to NCCL."""
        try:
            return self._paths[gpu, nic]
        except KeyError:
            path = self._paths[gpu, nic] = self._path(gpu, nic)
            return path

    def _path(self, gpu: str, nic: str) -> str | None:
        name = path_name(self.view.rel(gpu, nic))
        if name == "SYS" and self.same_numa(gpu, nic):
            return "PHB"
        return name

    def nearest_nics(self, gpu: str, version) -> tuple[str | None, list[str]]:
        """(path name, NICs at it) of a GPU's best NIC paths, or (None, []) when unknown/none.
        A matrix shows no bandwidths: NICs are ranked by path type alone."""
        name, chosen = self._remembered(("nearest", gpu, version), lambda: self._nearest_nics(gpu, version))
        return name, list(chosen)

    def _nearest_nics(self, gpu: str, version) -> tuple[str | None, list[str]]:
        best, chosen = None, []
        for nic in self.view.nics:
            name = self.path(gpu, nic)
            if name is None:
                continue
            rank = version.rank(name)
            if best is None or rank < best:
                best, chosen = rank, [nic]
            elif rank == best:
                chosen.append(nic)
        if best is None:
            return None, []
        return self.path(gpu, chosen[0]), chosen

    def local_gpus(self, nic: str, version) -> list[str]:
        """The GPUs at the NIC's best path type, in GPU order (ncclTopoGetLocal, bandwidths equal)."""
        return list(self._remembered(("local", nic, version), lambda: self._local_gpus(nic, version)))

    def _local_gpus(self, nic: str, version) -> list[str]:
        ranked = [(version.rank(p), g) for g in self.view.gpus if (p := self.path(g, nic)) is not None]
        if not ranked:
            return []
        best = min(r for r, _ in ranked)
        return [g for r, g in ranked if r == best]

    def channel_nic(self, gpu: str, channel: int, version) -> str | None:
        """ncclTopoGetLocalNet on the matrix: the NIC ``gpu`` uses on ``channel``."""
        _, nets = self.nearest_nics(gpu, version)
        if not nets:
            return None
        from topolint.model.nccl_graph import local_net_index

        gpus = self.local_gpus(nets[0], version) or [gpu]
        return nets[local_net_index(self.view.gpu_index(gpu), len(nets), len(gpus), channel, version)]

    def relay(self, nic: str, version) -> str | None:
        """ncclTopoGetLocalGpu on the matrix: the NIC's one PXN relay, the first of its best GPUs
        whose channels use it (src/graph/topo.cc)."""
        return self._remembered(("relay", nic, version), lambda: self._relay(nic, version))

    def _relay(self, nic: str, version) -> str | None:
        local = self.local_gpus(nic, version)
        for channel in range(version.max_channels):
            for g in local:
                if self.channel_nic(g, channel, version) == nic:
                    return g
        return None

    def pxn_proxy(self, gpu: str, version) -> tuple[str | None, str | None, bool]:
        """(relay GPU, NIC) of a PXN route. NCCL's relay for a NIC is that NIC's local GPU
        (ncclTopoGetLocalGpu), which must reach the NIC at PXB or closer and be a direct NVLink
        peer (NV#, not through another GPU) of ``gpu`` (src/graph/paths.cc ncclTopoComputePaths).
        The bool is False when some row is cut so a relay cannot be ruled out."""
        if not version.has_pxn:
            return None, None, True
        peers = self.view.nvlink_peers(gpu)
        if not peers:
            return None, None, True
        known = all(self.view.rel(g, n) is not None for g in self.view.gpus for n in self.view.nics)
        for nic in self.view.nics:
            relay = self.relay(nic, version)
            if relay is None or relay == gpu or relay not in peers:
                continue
            path = self.path(relay, nic)
            if path is not None and version.at_most(path, "PXB"):
                return relay, nic, True
        return None, None, known


def _content(matrix) -> tuple:
    """Everything MatrixContext's remembered answers (NUMA nodes, paths, nearest NICs, local
    GPUs, relays) read of a matrix: its labels, their kinds, the cells and NUMA affinities."""
    return Values((tuple(matrix.columns), tuple(matrix.column_kinds),
                   tuple((row.label, tuple(row.cells), row.numa_affinity) for row in matrix.rows)))


def matrix_contexts(node, complete_only: bool = False, shared: dict | None = None) -> list[MatrixContext]:
    """A context per ``topo -m`` matrix of the node; with ``shared`` (a CheckContext's), the
    same contexts for every check of the node."""
    if shared is None:
        contexts = [MatrixContext(node, matrix) for matrix in topo_matrices(node)]
    else:
        contexts = shared.get("matrix_contexts")
        if contexts is None:
            contexts = shared["matrix_contexts"] = [MatrixContext(node, matrix) for matrix in topo_matrices(node)]
    out = []
    for context in contexts:
        if complete_only and not context.view.complete:
            continue
        out.append(context)
    return out


def gpu_text(label: str) -> str:
    return f"GPU {label[3:]}"


def cell_where(loc) -> str:
    return f"{loc.path}:{loc.line}:{loc.column}"
