"""Typed facts that parsers produce. Every fact remembers where it came from.

Parsers build these with ``build`` (no validation of every value on the hot path); the schema is
still the pydantic model, and tests validate parser output against it.
"""

from __future__ import annotations

from typing import Literal, Optional

from topolint.model.schema import ConfigDict, Field
from topolint.model.schema import Model as BaseModel

DeviceKind = Literal["gpu", "nic", "bridge", "nvswitch", "cpu", "other", "unknown"]
TopologyKind = Literal["dump", "static"]


_FIELD_DEFAULTS: dict[type, tuple[tuple, frozenset]] = {}
_REQUIRED, _FRESH = object(), object()  # markers in a class's field order
_set = object.__setattr__


def build(cls, **values):
    """``cls.model_construct(**values)`` at a fraction of its cost, for parsers' hot paths.

    Like model_construct it trusts its input; mutable defaults ([] / {}, a default_factory's
    model) are fresh per object. Attributes are set one by one in the class's field order, never
    as a dict of the caller's order: instances of one class then share one key table (CPython's
    key-sharing dicts, inline values since 3.11), about half the memory of a dict per fact, and
    facts are most of what a parse holds (issue 20: memory bounded by the input).
    """
    spec = _FIELD_DEFAULTS.get(cls)
    if spec is None:
        order = []
        for name, info in cls.model_fields.items():
            if info.is_required():
                order.append((name, _REQUIRED, None))
                continue
            default = info.get_default(call_default_factory=True)
            if isinstance(default, (list, dict, set)):
                order.append((name, _FRESH, type(default)))
            elif info.default_factory is not None:
                order.append((name, _FRESH, info.default_factory))  # a model made per object, never shared
            else:
                order.append((name, default, None))
        spec = _FIELD_DEFAULTS[cls] = (tuple(order), frozenset(name for name, _, _ in order))
    order, names = spec
    obj = _new_object(cls)
    for name, default, factory in order:
        if name in values:
            _set(obj, name, values[name])
        elif default is _FRESH:
            _set(obj, name, factory())
        elif default is not _REQUIRED:
            _set(obj, name, default)
    if len(values) > len(names) or not names.issuperset(values):  # a name the class does not declare
        for name, value in values.items():
            if name not in names:
                _set(obj, name, value)
    return obj


def location(path: str, line: int, column: int = 0) -> "Location":
    """``build(Location, path=..., line=..., column=...)`` for the commonest fact (one per
    element or line a rule may point at), without build's generic merge."""
    obj = _new_object(Location)
    _set(obj, "path", path)
    _set(obj, "line", line)
    _set(obj, "column", column)
    return obj


_new_object = object.__new__


class Fact(BaseModel):
    __slots__ = ()
    model_config = ConfigDict(frozen=False, extra="forbid", defer_build=True)


class Location(Fact):
    """A position in an input file: 1-based line and column (0 = unknown column)."""

    # Slots, not a dict: one Location per element or line a rule may point at (issue 20). A slot
    # cannot also be a class attribute, so the Field()s are declared in _field_specs.
    __slots__ = ("path", "line", "column")
    _field_specs = {"line": Field(ge=1), "column": Field(default=0, ge=0)}
    path: str
    line: int
    column: int


class Cpu(Fact):
    """A ``<cpu>`` element: one NUMA node of one host."""

    index: int  # order of appearance in the file
    numa_id: Optional[int] = None
    affinity: Optional[str] = None
    arch: Optional[str] = None
    vendor: Optional[str] = None
    family_id: Optional[int] = None
    model_id: Optional[int] = None
    host_hash: Optional[str] = None
    attrs: dict[str, str] = {}
    loc: Location


def pci_kind_from_class(pci_class: str | None) -> str:
    """NCCL's class dictionary, prefix matched as kvDictPciClass does."""
    if not pci_class:
        return "unknown"
    value = pci_class.lower()
    if value.startswith("0x0604"):
        return "bridge"
    if value.startswith("0x068000"):
        return "nvswitch"
    if value.startswith("0x068001"):
        return "cpu"
    if value.startswith("0x03"):
        return "gpu"
    if value.startswith("0x02"):
        return "nic"
    return "other"


class PciDevice(Fact):
    """A ``<pci>`` element. ``kind`` follows NCCL's class matching (prefix 0x03 GPU, 0x02 NIC...)."""

    bus_id: str
    kind: DeviceKind
    pci_class: Optional[str] = None
    vendor: Optional[str] = None
    device: Optional[str] = None
    subsystem_vendor: Optional[str] = None
    subsystem_device: Optional[str] = None
    link_speed: Optional[str] = None
    link_width: Optional[str] = None
    parent_bus_id: Optional[str] = None  # None: directly under the CPU
    cpu_index: int
    attrs: dict[str, str] = {}
    loc: Location


# The classes an NCCL dump gives an nvlink's target (src/graph/xml.cc ncclTopoGetXmlFromGpu, "Fill
# target classes"), read as src/graph/topo.cc kvDictPciClass reads them.
GPU_CLASS = "0x030200"
NVSWITCH_CLASS = "0x068000"
CPU_CLASS = "0x068001"


class NvLink(Fact):
    target: Optional[str] = None
    count: Optional[int] = None
    tclass: Optional[str] = None
    bw_mbps: Optional[int] = None  # hwloc's NVLinkBandwidth value, for links read from an hwloc export
    attrs: dict[str, str] = {}
    loc: Location


class C2cLink(Fact):
    bw_mbps: Optional[int] = None
    count: Optional[int] = None
    loc: Location


class Gpu(Fact):
    """A ``<gpu>`` element (or a PCI device whose class says GPU, in partial files)."""

    bus_id: str
    dev: Optional[int] = None
    sm: Optional[int] = None
    rank: Optional[int] = None
    gdr: Optional[bool] = None
    cpu_index: int
    nvlinks: list[NvLink] = []
    c2c: list[C2cLink] = []
    attrs: dict[str, str] = {}
    loc: Location


class Net(Fact):
    """A ``<net>`` element: one network device (an HCA port, an EFA device, an interface)."""

    name: Optional[str] = None
    dev: Optional[int] = None
    speed_mbps: Optional[int] = None
    port: Optional[int] = None
    gdr: Optional[bool] = None
    guid: Optional[str] = None
    attrs: dict[str, str] = {}
    loc: Location


class Nic(Fact):
    """A ``<nic>`` element; ``bus_id`` is None for a NIC directly under a CPU (virtual NICs)."""

    bus_id: Optional[str] = None
    cpu_index: int
    nets: list[Net] = []
    loc: Location


class XmlElementStat(Fact):
    """Per-element facts the topology-file rules need: empty attributes, child counts."""

    tag: str
    child_count: int
    empty_attrs: list[str] = []
    loc: Location


class XmlNode(Fact):
    """One element of a topology file as NCCL's own parser keeps it: name, attributes, children
    in file order. The NCCL graph port (model/nccl_graph.py) walks this, as topo.cc walks its
    ncclXml."""

    name: str
    attrs: dict[str, str] = {}
    children: list["XmlNode"] = []
    loc: Location

    def kids(self, name: str | None = None) -> list["XmlNode"]:
        return self.children if name is None else [c for c in self.children if c.name == name]

    def first(self, name: str) -> Optional["XmlNode"]:
        return next((c for c in self.children if c.name == name), None)

    def descendants(self, name: str) -> list["XmlNode"]:
        """Every element named ``name`` below this one, in document order (iterative)."""
        found, stack = [], list(reversed(self.children))
        while stack:
            node = stack.pop()
            if node.name == name:
                found.append(node)
            stack.extend(reversed(node.children))
        return found


class TopologyFile(Fact):
    """An NCCL topology XML (``NCCL_TOPO_DUMP_FILE`` output or a static ``NCCL_TOPO_FILE``)."""

    path: str
    kind: TopologyKind
    version: Optional[str] = None
    system_loc: Location
    xml_declaration: Optional[Location] = None
    doctype: Optional[Location] = None
    tabs_between_elements: list[Location] = []
    element_count: int = 0
    elements: list[XmlElementStat] = []
    cpus: list[Cpu] = []
    pci: list[PciDevice] = []
    gpus: list[Gpu] = []
    nics: list[Nic] = []
    text: str = ""  # the file as read, for NCCL's own reader (model/nccl_xml.py)
    bom: bool = False

    def cpu(self, index: int) -> Cpu:
        return self.cpus[index]

    def pci_by_bus(self) -> dict[str, PciDevice]:
        return {p.bus_id: p for p in self.pci}


class GraphChannel(Fact):
    gpus: list[int] = []
    nets: list[str] = []


class NcclGraph(Fact):
    graph_id: Optional[str] = None
    pattern: Optional[str] = None
    nchannels: Optional[int] = None
    type_intra: Optional[str] = None
    type_inter: Optional[str] = None
    speed_intra: Optional[float] = None
    speed_inter: Optional[float] = None
    channels: list[GraphChannel] = []
    loc: Location


class GraphFile(Fact):
    """An NCCL graph XML (``NCCL_GRAPH_DUMP_FILE``): recognised and summarised, not linted."""

    path: str
    version: Optional[str] = None
    graphs: list[NcclGraph] = []
    loc: Location


# ---- nvidia-smi topo -m / -p2p matrices -------------------------------------------------------
MatrixKind = Literal["topo", "p2p"]


class MatrixRow(Fact):
    """One row of an ``nvidia-smi topo`` matrix. ``cells[i]`` is the relation to ``columns[i]`` of
    the matrix ("X", "SYS", "NODE", "NV12", "OK"...; SOC is kept as written); ``cell_columns[i]``
    is its 1-based column on ``loc.line`` (see ``TopoMatrix.cell_loc``)."""

    label: str  # GPU0, NIC3, mlx5_0
    kind: Literal["gpu", "nic"]
    index: int  # GPU index, or the NIC's position among the NIC columns
    cells: list[str] = []
    cell_columns: list[int] = []
    cpu_affinity: Optional[str] = None  # cpulist as printed ("0-47,96-143"); None: blank or absent
    numa_affinity: Optional[str] = None  # "0", "6-7", "0,3-9", "N/A"
    gpu_numa_id: Optional[str] = None  # "N/A" on x86; a NUMA node on Grace systems
    loc: Location


class TopoMatrix(Fact):
    """An ``nvidia-smi topo -m`` (kind topo) or ``nvidia-smi topo -p2p`` (kind p2p) matrix."""

    path: str
    kind: MatrixKind
    columns: list[str] = []  # GPU and NIC column labels, in header order
    column_kinds: list[str] = []  # "gpu" or "nic" per column
    affinity_columns: list[str] = []  # "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" as present
    nic_names: dict[str, str] = {}  # NIC Legend: NIC0 -> mlx5_0
    legend: Optional[str] = None  # "soc" (oldest), "sys" (with NODE), None: no legend
    rows: list[MatrixRow] = []
    missing_rows: list[str] = []  # labels with a column but no row (a cut paste)
    cut_line: Optional[int] = None  # a last line that was cut inside a row (dropped)
    repaired: list[Location] = []  # glued tokens split against the header
    restricted: Optional[str] = None  # why this looks like a cgroup/Slurm view, if it does
    header_loc: Location

    @property
    def partial(self) -> bool:
        return bool(self.missing_rows) or self.cut_line is not None

    @property
    def gpu_rows_missing(self) -> bool:
        return any(label.startswith("GPU") for label in self.missing_rows)

    def cell_loc(self, row: MatrixRow, column: int) -> Location:
        col = row.cell_columns[column] if column < len(row.cell_columns) else 0
        return build(Location, path=row.loc.path, line=row.loc.line, column=col)


# ---- nvidia-smi nvlink -s / --status --------------------------------------------------------------
class NvlinkLink(Fact):
    """One ``Link K: ...`` line. ``state`` is "active" for a rate (``25.781 GB/s``), else the word
    in angle brackets as printed, lowercased ("inactive"); ``loc`` points at the rate or state."""

    __slots__ = ("index", "state", "speed_gbps", "loc")  # one per link line (issue 20)
    _field_specs = {"speed_gbps": Field(default=None)}
    index: int
    state: str
    speed_gbps: Optional[float]  # per-link rate as printed (GB/s); None when not active
    loc: Location


class NvlinkGpuStatus(Fact):
    """One ``GPU N: NAME (UUID: ...)`` block. ``all_inactive`` marks NVML's one-line answer
    ("Unable to retrieve NVLink information as all links are inActive"): no Link lines then."""

    index: int
    name: str
    uuid: Optional[str] = None  # None when redacted ("(UUID: ...)")
    links: list[NvlinkLink] = []
    all_inactive: bool = False
    loc: Location

    @property
    def active(self) -> list[NvlinkLink]:
        return [link for link in self.links if link.state == "active"]

    @property
    def inactive(self) -> list[NvlinkLink]:
        return [link for link in self.links if link.state != "active"]


class NvlinkStatus(Fact):
    """An ``nvidia-smi nvlink -s`` (``--status``) output: the GPUs it lists, in file order."""

    path: str
    gpus: list[NvlinkGpuStatus] = []


def packed_loc() -> property:
    """A ``loc`` field kept in the slots ``_path`` and ``_at`` (line << 32 | column), not a
    Location: 48 bytes instead of the Location's 56 and its line's int (32), for facts made one
    per short line (issue 20). Each read makes an equal Location; a class using it lists ``loc``
    in ``_state_names`` (model/schema.py _state) and declares it required in ``_field_specs``."""

    def get(self) -> Location:
        at = self._at
        return self._path if at is None else location(self._path, at >> 32, at & 0xFFFFFFFF)

    def put(self, loc: Location) -> None:
        if type(loc) is Location and type(loc.line) is int and type(loc.column) is int \
                and loc.line >= 0 and 0 <= loc.column <= 0xFFFFFFFF:
            self._path, self._at = loc.path, loc.line << 32 | loc.column
        else:
            self._path, self._at = loc, None  # anything else is kept as it is

    return property(get, put)
