"""Typed facts that parsers produce. Every fact remembers where it came from.

Parsers build these with ``build`` (no validation of every value on the hot path); the schema is
still the pydantic model, and tests validate parser output against it.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
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


def _nones(*names: str) -> dict:
    """``_field_specs`` of slotted fields that default to None (a slot has no class default)."""
    return {name: Field(default=None) for name in names}


class Location(Fact):
    """A position in an input file: 1-based line and column (0 = unknown column)."""

    # Slots, not a dict: one Location per element or line a rule may point at (issue 20). A slot
    # cannot also be a class attribute, so the Field()s are declared in _field_specs.
    __slots__ = ("path", "line", "column")
    _field_specs = {"line": Field(ge=1), "column": Field(default=0, ge=0)}
    path: str
    line: int
    column: int


# The facts of an NCCL topology XML, one per element (issue 20), have slots, their Field()s in
# _field_specs, as Location.
class Cpu(Fact):
    """A ``<cpu>`` element: one NUMA node of one host."""

    __slots__ = ("index", "numa_id", "affinity", "arch", "vendor", "family_id", "model_id", "host_hash", "attrs", "loc")
    _field_specs = {**_nones(*__slots__[1:8]), "attrs": Field(default={})}
    index: int  # order of appearance in the file
    numa_id: Optional[int]
    affinity: Optional[str]
    arch: Optional[str]
    vendor: Optional[str]
    family_id: Optional[int]
    model_id: Optional[int]
    host_hash: Optional[str]
    attrs: dict[str, str]
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

    __slots__ = ("bus_id", "kind", "pci_class", "vendor", "device", "subsystem_vendor", "subsystem_device",
                 "link_speed", "link_width", "parent_bus_id", "cpu_index", "attrs", "loc")
    _field_specs = {**_nones(*__slots__[2:10]), "attrs": Field(default={})}
    bus_id: str
    kind: DeviceKind
    pci_class: Optional[str]
    vendor: Optional[str]
    device: Optional[str]
    subsystem_vendor: Optional[str]
    subsystem_device: Optional[str]
    link_speed: Optional[str]
    link_width: Optional[str]
    parent_bus_id: Optional[str]  # None: directly under the CPU
    cpu_index: int
    attrs: dict[str, str]
    loc: Location


# The classes an NCCL dump gives an nvlink's target (src/graph/xml.cc ncclTopoGetXmlFromGpu, "Fill
# target classes"), read as src/graph/topo.cc kvDictPciClass reads them.
GPU_CLASS = "0x030200"
NVSWITCH_CLASS = "0x068000"
CPU_CLASS = "0x068001"


class NvLink(Fact):
    __slots__ = ("target", "count", "tclass", "bw_mbps", "attrs", "loc")
    _field_specs = {**_nones(*__slots__[:4]), "attrs": Field(default={})}
    target: Optional[str]
    count: Optional[int]
    tclass: Optional[str]
    bw_mbps: Optional[int]  # hwloc's NVLinkBandwidth value, for links read from an hwloc export
    attrs: dict[str, str]
    loc: Location


class C2cLink(Fact):
    __slots__ = ("bw_mbps", "count", "loc")
    _field_specs = _nones("bw_mbps", "count")
    bw_mbps: Optional[int]
    count: Optional[int]
    loc: Location


class Gpu(Fact):
    """A ``<gpu>`` element (or a PCI device whose class says GPU, in partial files)."""

    __slots__ = ("bus_id", "dev", "sm", "rank", "gdr", "cpu_index", "nvlinks", "c2c", "attrs", "loc")
    _field_specs = {**_nones("dev", "sm", "rank", "gdr"), "nvlinks": Field(default=[]), "c2c": Field(default=[]),
                    "attrs": Field(default={})}
    bus_id: str
    dev: Optional[int]
    sm: Optional[int]
    rank: Optional[int]
    gdr: Optional[bool]
    cpu_index: int
    nvlinks: list[NvLink]
    c2c: list[C2cLink]
    attrs: dict[str, str]
    loc: Location


class Net(Fact):
    """A ``<net>`` element: one network device (an HCA port, an EFA device, an interface)."""

    __slots__ = ("name", "dev", "speed_mbps", "port", "gdr", "guid", "attrs", "loc")
    _field_specs = {**_nones(*__slots__[:6]), "attrs": Field(default={})}
    name: Optional[str]
    dev: Optional[int]
    speed_mbps: Optional[int]
    port: Optional[int]
    gdr: Optional[bool]
    guid: Optional[str]
    attrs: dict[str, str]
    loc: Location


class Nic(Fact):
    """A ``<nic>`` element; ``bus_id`` is None for a NIC directly under a CPU (virtual NICs)."""

    __slots__ = ("bus_id", "cpu_index", "nets", "loc")
    _field_specs = {"bus_id": Field(default=None), "nets": Field(default=[])}
    bus_id: Optional[str]
    cpu_index: int
    nets: list[Net]
    loc: Location


class XmlElementStat(Fact):
    """Per-element facts the topology-file rules need: empty attributes, child counts."""

    __slots__ = ("tag", "child_count", "empty_attrs", "loc")
    _field_specs = {"empty_attrs": Field(default=[])}
    tag: str
    child_count: int
    empty_attrs: list[str]
    loc: Location


class TagNames(Sequence):
    """Strings of a small vocabulary (an XML file's tag names), each held as its index in
    ``names``: a byte an entry, two past 256 names (a list held 8 bytes an element)."""

    def __init__(self):
        self.names: list[str] = []
        self.codes = array("B")
        self._code: dict[str, int] = {}

    def append(self, name: str) -> None:
        code = self._code.get(name)
        if code is None:
            code = self._code[name] = len(self.names)
            self.names.append(name)
            if code in (256, 65536):
                self.codes = array("H" if code == 256 else "I", self.codes)
        self.codes.append(code)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.names[code] for code in self.codes[index]]
        return self.names[self.codes[index]]


class XmlElementStats(Sequence):
    """``TopologyFile.elements`` by columns: each XmlElementStat is made when it is read (a stat
    object per element was a tenth of a parse's memory, issue 20). ``tags`` and ``locs`` hold one
    entry per element in document order; ``child_counts`` and ``blanks`` (the names of blank
    attributes) only the elements that have any."""

    def __init__(self, tags: Sequence[str], locs: list[Location], child_counts: dict[int, int],
                 blanks: dict[int, list[str]]):
        self.tags, self.locs, self.child_counts, self.blanks = tags, locs, child_counts, blanks

    def __len__(self) -> int:
        return len(self.tags)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._stat(i) for i in range(len(self.tags))[index]]
        return self._stat(range(len(self.tags))[index])

    def __iter__(self):
        return map(self._stat, range(len(self.tags)))

    def _stat(self, i: int) -> XmlElementStat:
        stat = _new_object(XmlElementStat)
        _set(stat, "tag", self.tags[i])
        _set(stat, "child_count", self.child_counts.get(i, 0))
        _set(stat, "empty_attrs", self.blanks.get(i) or [])
        _set(stat, "loc", self.locs[i])
        return stat

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (list, XmlElementStats)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self) -> str:
        return repr(list(self))


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
    __slots__ = ("gpus", "nets")  # one per <channel> (issue 20)
    _field_specs = {"gpus": Field(default=[]), "nets": Field(default=[])}
    gpus: list[int]
    nets: list[str]


class NcclGraph(Fact):
    __slots__ = ("graph_id", "pattern", "nchannels", "type_intra", "type_inter", "speed_intra", "speed_inter",
                 "channels", "loc")
    _field_specs = {**_nones(*__slots__[:7]), "channels": Field(default=[])}
    graph_id: Optional[str]
    pattern: Optional[str]
    nchannels: Optional[int]
    type_intra: Optional[str]
    type_inter: Optional[str]
    speed_intra: Optional[float]
    speed_inter: Optional[float]
    channels: list[GraphChannel]
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
