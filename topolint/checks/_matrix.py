"""Helpers the checks share when they read ``nvidia-smi topo -m`` matrices."""

from __future__ import annotations

from topolint.engine.finding import Related
from topolint.model.matrix import MatrixView, bus_ids, path_name, topo_matrices
from topolint.model.node import gpu_entity, nic_entity


class MatrixContext:
    """One matrix of a node with what the checks need: lookups, bus ids from the node's XML."""

    def __init__(self, node, matrix):
        self.node = node
        self.matrix = matrix
        self.view = MatrixView(matrix)
        self.bus = bus_ids(node, matrix)

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

    def nic_related(self, label: str, message: str) -> Related:
        row = self.view.rows.get(label)
        loc = row.loc if row is not None else self.matrix.header_loc
        return Related(location=loc, entity=self.nic_entity(label), message=message)

    def nearest_nics(self, gpu: str, version) -> tuple[str | None, list[str]]:
        """(path name, NICs at it) of a GPU's best NIC paths, or (None, []) when unknown/none."""
        best, chosen = None, []
        for nic in self.view.nics:
            name = path_name(self.view.rel(gpu, nic))
            if name is None:
                continue
            rank = version.rank(name)
            if best is None or rank < best:
                best, chosen = rank, [nic]
            elif rank == best:
                chosen.append(nic)
        if best is None:
            return None, []
        return path_name(self.view.rel(gpu, chosen[0])), chosen

    def pxn_proxy(self, gpu: str, version) -> tuple[str | None, str | None, bool]:
        """(peer GPU, its NIC) of a PXN route: an NVLink peer reaching a NIC at PXB or closer.
        The bool is False when some peer's NIC paths are unknown (rows cut) and none was found."""
        known = True
        if not version.has_pxn:
            return None, None, True
        for peer in self.view.nvlink_peers(gpu):
            path, nics = self.nearest_nics(peer, version)
            if any(self.view.rel(peer, n) is None for n in self.view.nics):
                known = False
            if path is not None and version.at_most(path, "PXB"):
                return peer, nics[0], True
        return None, None, known


def matrix_contexts(node, complete_only: bool = False) -> list[MatrixContext]:
    out = []
    for matrix in topo_matrices(node):
        context = MatrixContext(node, matrix)
        if complete_only and not context.view.complete:
            continue
        out.append(context)
    return out


def gpu_text(label: str) -> str:
    return f"GPU {label[3:]}"


def cell_where(loc) -> str:
    return f"{loc.path}:{loc.line}:{loc.column}"
