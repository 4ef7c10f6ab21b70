"""Reading an ``nvidia-smi topo -m`` matrix as NCCL would: relations, NVLink counts, NUMA nodes,
cgroup views, and the join with an NCCL topology XML of the same node.

Cells keep nvidia-smi's names (NODE, SOC, NV12); they compare through NcclVersion.rank, where
NODE ranks as PHB, SOC as SYS and NV# as NVL (nccl-formats.md 1.5). No graph library is needed:
a matrix already states every pairwise path.
"""

from __future__ import annotations

import re
from functools import cached_property

from topolint.model.facts import Gpu, MatrixRow, TopologyFile, TopoMatrix
from topolint.model.numbers import cpulist, decimal, remembered

PCIE_LOCAL = {"PIX", "PXB", "PHB", "NODE"}  # relations that stay on one socket
CROSS_SOCKET = {"SYS", "SOC"}


@remembered  # a matrix has few distinct cells, asked by many checks
def path_name(cell: str | None) -> str | None:
    """The NCCL path name of a cell: NV# is NVL, SOC is SYS, NODE stays NODE (ranks as PHB)."""
    if cell is None or cell in ("X", "N/A", ""):
        return None
    if cell.startswith("NV"):
        return "NVL"
    return "SYS" if cell == "SOC" else cell


@remembered  # a matrix has few distinct cells, asked by many checks
def nv_count(cell: str | None) -> int:
    """Bonded NVLinks in a cell such as ``NV12``; 0 for anything else."""
    return decimal(cell[2:]) or 0 if cell and cell.startswith("NV") and cell[2:].isascii() else 0


def cpu_count(text: str | None) -> int | None:
    """CPUs in a cpulist such as ``0-47,96-143``; None when it does not parse."""
    cpus = cpulist(text) if text else None
    return len(cpus) if cpus is not None else None


@remembered  # a matrix has few distinct cells, asked by many checks
def single_numa(value: str | None) -> int | None:
    """A NUMA Affinity cell naming one node; None for N/A, blank, ranges and lists."""
    return decimal(value) if value is not None and value.isascii() and value.isdigit() else None


class MatrixView:
    """Lookups over one ``topo -m`` matrix. Unknown cells (rows cut from a paste) are None."""

    def __init__(self, matrix: TopoMatrix):
        self.matrix = matrix
        self.col = {label: i for i, label in enumerate(matrix.columns)}
        self.rows = {row.label: row for row in matrix.rows}
        self.gpus = [c for c, k in zip(matrix.columns, matrix.column_kinds) if k == "gpu"]
        self.nics = [c for c, k in zip(matrix.columns, matrix.column_kinds) if k == "nic"]

    def rel(self, a: str, b: str) -> str | None:
        row = self.rows.get(a)
        if row is not None and b in self.col:
            return row.cells[self.col[b]]
        row = self.rows.get(b)
        if row is not None and a in self.col:
            return row.cells[self.col[a]]
        return None

    def rel_loc(self, a: str, b: str):
        """Where the cell for (a, b) is: in a's row, else in b's row."""
        row = self.rows.get(a)
        if row is not None:
            return self.matrix.cell_loc(row, self.col[b])
        row = self.rows[b]
        return self.matrix.cell_loc(row, self.col[a])

    def nic_name(self, label: str) -> str:
        return self.matrix.nic_names.get(label, label)

    def gpu_index(self, label: str) -> int:
        return decimal(label[3:])  # the parser only accepts GPU labels with a plain index

    def gpu_row(self, label: str) -> MatrixRow | None:
        return self.rows.get(label)

    def numa(self, label: str) -> int | None:
        row = self.rows.get(label)
        return single_numa(row.numa_affinity) if row is not None else None

    @cached_property
    def grace(self) -> bool:
        """A populated GPU NUMA ID column: GPU memory is a NUMA node (Grace C2C systems)."""
        return any(r.gpu_numa_id not in (None, "N/A") for r in self.matrix.rows if r.kind == "gpu")

    @cached_property
    def complete(self) -> bool:
        """Every GPU row is present and this is not a cgroup/Slurm view: node-wide rules may run."""
        return not self.matrix.gpu_rows_missing and self.matrix.restricted is None

    def nvlink_peers(self, gpu: str) -> list[str]:
        return [g for g in self.gpus if g != gpu and nv_count(self.rel(gpu, g)) > 0]

    @cached_property
    def socket_groups(self) -> dict[str, int]:
        """Labels joined by same-socket PCIe relations (PIX/PXB/PHB/NODE), numbered by first
        appearance: a stand-in for the NUMA node where the matrix has no NUMA column."""
        parent = {label: label for label in self.matrix.columns}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for row in self.matrix.rows:
            for label, cell in zip(self.matrix.columns, row.cells):
                if cell in PCIE_LOCAL and row.label in parent:
                    parent[find(row.label)] = find(label)
        numbers: dict[str, int] = {}
        out = {}
        for label in self.matrix.columns:
            out[label] = numbers.setdefault(find(label), len(numbers))
        return out

    def different_numa(self, a: str, b: str) -> bool | None:
        """True when two GPUs sit on different NUMA nodes, None when the matrix cannot tell."""
        na, nb = self.numa(a), self.numa(b)
        if na is not None and nb is not None:
            return na != nb
        ga, gb = self.socket_groups[a], self.socket_groups[b]
        if ga != gb and (self.rel(a, b) in CROSS_SOCKET or any(
                self.rel(x, y) in CROSS_SOCKET for x, gx in self.socket_groups.items() if gx == ga
                for y, gy in self.socket_groups.items() if gy == gb)):
            return True  # no PCIe relation joins their sides, and the sides are SYS apart
        return None


def restricted_view(matrix: TopoMatrix) -> str | None:
    """Why a matrix looks like a cgroup/Slurm view of a node (only some GPUs, restricted CPUs)."""
    if matrix.kind != "topo":
        return None
    view = MatrixView(matrix)
    gpu_rows = [r for r in matrix.rows if r.kind == "gpu"]
    if not gpu_rows:
        return None
    # Only some GPUs: many NICs that no visible GPU reaches without crossing the socket.
    far = [n for n in view.nics
           if all((view.rel(g, n) or "?") in CROSS_SOCKET for g in view.gpus)]
    if len(far) >= 4 and len(far) > len(view.gpus) and len(view.nics) >= 2 * len(view.gpus):
        return (f"{len(view.gpus)} GPU{'s' if len(view.gpus) > 1 else ''} but {len(view.nics)} NICs, "
                f"{len(far)} of them reachable from no listed GPU without crossing the socket "
                f"(the job sees only its allocated GPUs)")
    affinities = {r.cpu_affinity for r in gpu_rows}
    if len(gpu_rows) >= 2 and len(affinities) == 1:
        shared = next(iter(affinities))
        count = cpu_count(shared)
        if count is not None and count < len(gpu_rows):
            return (f"every GPU reports CPU affinity {shared} ({count} CPU{'s' if count > 1 else ''} for "
                    f"{len(gpu_rows)} GPUs): the job's cpuset, not the GPUs' NUMA nodes")
        numas = {r.numa_affinity for r in gpu_rows}
        if len(numas) == 1 and not view.grace:
            numa = next(iter(numas))
            if numa and re.fullmatch(r"[\d,\-]+", numa) and not numa.isdigit():
                return (f"every GPU reports CPU affinity {shared} and NUMA affinity {numa} (several NUMA "
                        f"nodes): the job's cpuset, not the GPUs' NUMA nodes")
    return None


# ---- the join with an NCCL topology XML (TL003, shared entity ids) ------------------------------
def join_gpus(topology: TopologyFile, matrix: TopoMatrix | None = None) -> dict[int, Gpu]:
    """Matrix GPU index -> the XML's GPU: by ``gpu@dev`` when every GPU has one, else by sorted
    bus id (nvidia-smi numbers GPUs in PCI order unless CUDA_DEVICE_ORDER says otherwise)."""
    gpus = topology.gpus
    if gpus and all(g.dev is not None for g in gpus) and len({g.dev for g in gpus}) == len(gpus):
        return {g.dev: g for g in gpus}
    return dict(enumerate(sorted(gpus, key=lambda g: g.bus_id)))


def bus_ids(node, matrix: TopoMatrix) -> dict[int, str]:
    """Bus ids for a matrix's GPUs from the node's XML (a dump preferred), when the GPU counts agree."""
    return gpu_bus_ids(node, sum(1 for k in matrix.column_kinds if k == "gpu"))


def gpu_bus_ids(node, count: int) -> dict[int, str]:
    """nvidia-smi GPU index -> bus id from the node's XML (a dump preferred), for an output that
    lists ``count`` GPUs: the XML must have as many."""
    for topology in sorted(node.topologies, key=lambda t: t.kind != "dump"):
        if len(topology.gpus) == count:
            return {index: gpu.bus_id for index, gpu in join_gpus(topology).items()}
    return {}


def topo_matrices(node) -> list[TopoMatrix]:
    return [m for m in getattr(node, "matrices", []) if m.kind == "topo"]
