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

    def nccl(self, version):
        """The end of NCCL's path computation on this matrix (NcclSystem.from_path_types): PXN
        and the GDR reroute by the version's rows, as for a topology file (model/nccl_version.py
        pxn_rule, local_net_rule, pxn_relay_needs_gdr), with equal bandwidths for every link of
        a kind (the matrix shows none) and NVLink bandwidth by NV#. None where NCCL fails the
        computation (src/graph/topo.cc ncclTopoGetLocalGpu on 2.18.1-2.18.3, "different netMasks")."""
        return self._remembered(("nccl", version), lambda: self._nccl(version))

    def _nccl(self, version):
        from topolint.model.nccl_graph import NcclSystem, TopologyRejected

        view = self.view
        gpus, nics = list(view.gpus), list(view.nics)
        gpu_gpu = {(a, b): ("NVL", nv_count(view.rel(ga, gb))) for a, ga in enumerate(gpus)
                   for b, gb in enumerate(gpus) if a != b and path_name(view.rel(ga, gb)) == "NVL"}
        gpu_net = {(g, n): self.path(gpu, nic) for g, gpu in enumerate(gpus) for n, nic in enumerate(nics)}
        try:
            return NcclSystem.from_path_types(version, [self._cpu_of(g) for g in gpus],
                                              [self._cpu_of(n) for n in nics], gpu_gpu, gpu_net)
        except TopologyRejected:  # 2.18.1-2.18.3: two best GPUs of a NIC with different NIC masks
            return None

    def _cpu_of(self, label: str):
        """The CPU of a row: its NUMA node, else the group PCIe relations join it to."""
        numa = self.numa_node(label)
        return numa if numa is not None else ("socket", self.view.socket_groups[label])

    def pxn_proxy(self, gpu: str, version) -> tuple[str | None, str | None, bool]:
        """(relay GPU, NIC) of the first NIC NCCL reaches from ``gpu`` by PXN, at this version's
        rule: the NIC's local GPU (ncclTopoGetLocalGpu) from 2.18, an NVLink peer at PXB that
        prefers the NIC before (src/graph/paths.cc ncclTopoComputePaths at v2.12.10, v2.12.12,
        v2.14.3, v2.18.5). The bool is False when some row is cut so a relay cannot be ruled out."""
        if not version.has_pxn or not self.view.nvlink_peers(gpu):
            return None, None, True
        known = all(self.view.rel(g, n) is not None for g in self.view.gpus for n in self.view.nics)
        nccl, g = self.nccl(version), list(self.view.gpus).index(gpu)
        if nccl is None:  # NCCL fails ncclTopoGetLocalGpu on these paths: no PXN answer
            return None, None, False
        for n, nic in enumerate(self.view.nics):
            relay = nccl.relay(g, n)
            if relay is not None:
                return list(self.view.gpus)[relay], nic, True
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
