"""A node's inventory: a compact, typed record of the hardware and software facts the cross-node
rules compare (docs/fleet.md, schema in docs/inventory.schema.json).

Every value is a ``Sourced``: the value and the input file and line it was read from. An
inventory written by ``topolint check NODE --inventory FILE`` keeps those raw positions; read
back (``read_inventory``), each value also knows the line of the inventory file that holds it
(``Sourced.at``), so a finding from an inventories-only run points at a line the user can open
and its evidence names the raw input the value came from.

The file is JSON, one value a line: ``{"value": 400, "path": "gpu017/ibstat.txt", "line": 14}``.
The reader finds each value's line from the ``"value"`` keys of the text, in document order (the
only objects with a ``"value"`` key are Sourced values), so a file re-indented by another tool
still reads with its own lines.
"""

from __future__ import annotations

import json
import re
from typing import Literal, Optional, Union

from topolint.model.facts import Fact, Location, build, location
from topolint.model.nesting import json_deepest
from topolint.model.numbers import decimal, decimal_fraction
from topolint.model.schema import Field

INVENTORY_FORMAT = 1  # the "topolint_inventory" key: the format version of the file
FORMAT_KEY = "topolint_inventory"
MAX_INVENTORY_BYTES = 4 * 1024 * 1024  # a 16-GPU, 32-port node writes ~40 KB
Scalar = Union[bool, int, float, str]


class Sourced(Fact):
    """One value and where it was read: the raw input's path (as the run that built it showed it)
    and line. ``at`` (not in the file) is the inventory file's own line when read from one."""

    # Slots, not a dict: an inventory read is mostly these (issue 20), a third of the size each.
    # ``at`` is two of them (``kept_at``), not a pair: a tuple less per value.
    __slots__ = ("value", "path", "line", "_at_file", "_at_line")
    _field_specs = {
        "value": Field(description="the value (a count, a rate in Gb/s, a version, a name)"),
        "path": Field(min_length=1, max_length=4096, description="the input file that states it"),
        "line": Field(ge=1, le=100_000_000, description="its line in that file (1-based)"),
    }
    value: Scalar
    path: str
    line: int

    @property
    def where(self) -> Location:
        """The line a finding points at: the inventory file's when read from one, else the raw input's."""
        at = self.kept_at
        return location(*at) if at is not None else location(self.path, self.line)

    @property
    def kept_at(self) -> tuple[str, int] | None:
        """(inventory file, line) when the value was read from an inventory file (``at``, kept as a
        pair: a fleet holds hundreds of thousands of values)."""
        file = getattr(self, "_at_file", None)
        return None if file is None else (file, self._at_line)

    @property
    def origin(self) -> str:
        """``path:line`` of the raw input, for evidence."""
        return f"{self.path}:{self.line}"


def sourced(value, loc: Location | None) -> Sourced | None:
    """A Sourced for ``value`` read at ``loc``; None when either is unknown."""
    if value is None or loc is None:
        return None
    obj = Sourced.__new__(Sourced)
    object.__setattr__(obj, "value", value)
    object.__setattr__(obj, "path", loc.path)
    object.__setattr__(obj, "line", loc.line)
    return obj


_PCI_ADDRESS = r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$"


class GpuInventory(Fact):
    """One GPU, by its PCI address (the slot: the same on every node of a model)."""

    bus_id: Optional[str] = Field(default=None, pattern=_PCI_ADDRESS,
                                  description="PCI address, 0000:18:00.0 (absent: no input named it)")
    index: Optional[int] = Field(default=None, ge=0, le=1024, description="nvidia-smi / NCCL index")
    model: Optional[Sourced] = Field(default=None, description='model name ("H100 SXM5") or PCI id')
    nvlinks: Optional[Sourced] = Field(default=None, description="active NVLinks of this GPU")
    pcie_gen: Optional[Sourced] = Field(default=None, description="PCIe generation the link runs at (LnkSta)")
    pcie_width: Optional[Sourced] = Field(default=None, description="PCIe lanes the link runs at (LnkSta)")
    numa_node: Optional[Sourced] = Field(default=None, description="NUMA node of the GPU")
    fabric_state: Optional[Sourced] = Field(default=None, description="nvidia-smi -q Fabric State as printed "
                                                                      '("Completed", "In Progress", "N/A")')
    fabric_status: Optional[Sourced] = Field(default=None, description='nvidia-smi -q Fabric Status ("Success")')
    fabric_health: Optional[Sourced] = Field(default=None, description='nvidia-smi -q Fabric Health Summary '
                                                                       '("Healthy")')

    @property
    def key(self) -> str:
        """What names this GPU across nodes: its bus id, else ``#INDEX``."""
        return self.bus_id or f"#{self.index}"


class NicPortInventory(Fact):
    """One RDMA port (an HCA port), by name."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}:[0-9]{1,3}$", description="HCA:PORT, mlx5_0:1")
    model: Optional[Sourced] = Field(default=None, description="HCA model (ConnectX-7, MT4129)")
    rate_gbps: Optional[Sourced] = Field(default=None, description="link rate in Gb/s")
    state: Optional[Sourced] = Field(default=None, description="port state: active, down, init, armed")
    link_layer: Optional[Sourced] = Field(default=None, description="infiniband or ethernet")
    netdev: Optional[Sourced] = Field(default=None, description="the network interface of the port")
    firmware: Optional[Sourced] = Field(default=None, description="HCA firmware version")
    mtu: Optional[Sourced] = Field(default=None, description="active MTU of the port (bytes)")
    netdev_mtu: Optional[Sourced] = Field(default=None, description="MTU of its network interface (bytes)")
    gid_index: Optional[Sourced] = Field(default=None, description="RoCE: index of the first RoCE v2 IPv4 GID")
    port_guid: Optional[Sourced] = Field(default=None, description="InfiniBand port GUID, 16 hex digits (ibstat): "
                                         "what joins the port to a fabric file's host")
    pcie_gen: Optional[Sourced] = None
    pcie_width: Optional[Sourced] = None
    numa_node: Optional[Sourced] = None


class SoftwareInventory(Fact):
    """Versions of what a job runs on, each as the node printed it."""

    driver: Optional[Sourced] = Field(default=None, description="NVIDIA kernel driver version")
    cuda: Optional[Sourced] = Field(default=None, description="CUDA version the driver supports")
    ofed: Optional[Sourced] = Field(default=None, description="MLNX_OFED / DOCA-OFED release")
    kernel: Optional[Sourced] = Field(default=None, description="Linux kernel release")
    nvidia_peermem: Optional[Sourced] = Field(
        default=None, description='"loaded", "loaded as nv_peer_mem" (the older module) or "not loaded"')
    modules: dict[str, Sourced] = Field(default_factory=dict, max_length=256,
                                        description="versions of kernel modules (/sys/module/NAME/version)")


def _no_software() -> SoftwareInventory:
    """An empty SoftwareInventory, made without validation (which would import pydantic)."""
    return build(SoftwareInventory)


class Inventory(Fact):
    """A node's inventory. Absent values are unknown (no input said), never zero."""

    topolint_inventory: Literal[1] = Field(description="the inventory format version")
    node: str = Field(pattern=r"^[^/\x00-\x1f]{1,255}$", description="the node's name (its host name)")
    topolint_version: str = Field(default="", max_length=64, description="the topolint that wrote it")
    gpu_count: Optional[Sourced] = Field(default=None, description="GPUs the node shows")
    numa_nodes: Optional[Sourced] = Field(default=None, description="NUMA nodes with CPUs")
    nic_ports: Optional[Sourced] = Field(default=None, description="RDMA ports the node lists")
    nvlink_domain: Optional[Sourced] = Field(
        default=None, description="the multi-node NVLink domain of the node's GPUs, CLUSTERUUID/CLIQUEID from "
                                  "nvidia-smi -q's Fabric section (absent: none stated; an all-zero ClusterUUID "
                                  "is no domain shared with other nodes)")
    gpus: list[GpuInventory] = Field(default_factory=list, max_length=1024)
    nics: list[NicPortInventory] = Field(default_factory=list, max_length=1024)
    software: SoftwareInventory = Field(default_factory=_no_software)
    nccl_env: dict[str, Sourced] = Field(default_factory=dict, max_length=1024,
                                         description="NCCL_* settings found in the node's files")
    unknown: dict[str, str] = Field(default_factory=dict, max_length=64,
                                    description='what no input of the node states, and why: a field ("gpu_count", '
                                                '"nics.mtu") -> the parts it is missing on and the inputs that '
                                                'would state it')


# ---- writing ------------------------------------------------------------------------------------
def _sourced_json(value: Sourced) -> str:
    return json.dumps({"value": value.value, "path": value.path, "line": value.line}, ensure_ascii=False)


def _lines(data, indent: str, key: str | None, out: list[str], last: bool) -> None:
    """``data`` (a dump of the model) as indented JSON lines, each Sourced on one line."""
    head = f"{indent}{json.dumps(key, ensure_ascii=False)}: " if key is not None else indent
    tail = "" if last else ","
    if isinstance(data, dict) and "value" in data and "path" in data:
        out.append(head + json.dumps(data, ensure_ascii=False) + tail)
    elif isinstance(data, dict) and data:
        out.append(head + "{")
        items = list(data.items())
        for position, (name, item) in enumerate(items):
            _lines(item, indent + "  ", name, out, position == len(items) - 1)
        out.append(indent + "}" + tail)
    elif isinstance(data, list) and data:
        out.append(head + "[")
        for position, item in enumerate(data):
            _lines(item, indent + "  ", None, out, position == len(data) - 1)
        out.append(indent + "]" + tail)
    else:
        out.append(head + json.dumps(data, ensure_ascii=False) + tail)


def _pruned(data):
    """The dump without unknown values (None) and empty containers: absent means unknown."""
    if isinstance(data, dict):
        kept = {k: _pruned(v) for k, v in data.items() if v is not None}
        return {k: v for k, v in kept.items() if v not in ({}, [])} if "value" not in kept else kept
    if isinstance(data, list):
        return [_pruned(v) for v in data]
    return data


def inventory_json(inventory: Inventory) -> str:
    """The inventory as the file holds it (deterministic: same inventory, same bytes)."""
    out: list[str] = []
    _lines(_pruned(inventory.model_dump()), "", None, out, True)
    return "\n".join(out) + "\n"


def inventory_plain(inventory: Inventory) -> dict:
    """The inventory as plain JSON data, as its file holds it (the result cache keeps this)."""
    return _pruned(inventory.model_dump())


def _restore(cls, data):
    """An instance of ``cls`` from plain data of exactly its shape, without pydantic (the result
    cache's own entries: a shape that does not fit is a miss, ValueError)."""
    if not isinstance(data, dict) or not set(data) <= set(cls.model_fields):
        raise ValueError(f"not a {cls.__name__}")
    values = {}
    for name, info in cls.model_fields.items():
        if name not in data:
            if info.is_required():
                raise ValueError(f"{cls.__name__}.{name} missing")
            continue  # build() gives each its own default (an empty SoftwareInventory)
        item = data[name]
        kind = _FIELD_KINDS[cls][name]
        if kind is Sourced:
            item = _restore_sourced(item)
        elif isinstance(kind, tuple) and kind[0] is list:
            item = [_restore(kind[1], v) for v in _checked(item, list)]
        elif kind == (dict, str):
            item = {str(k): interned(_checked(v, str)) for k, v in _checked(item, dict).items()}
        elif isinstance(kind, tuple) and kind[0] is dict:
            item = {str(k): _restore_sourced(v) for k, v in _checked(item, dict).items()}
        elif kind is SoftwareInventory:
            item = _restore(SoftwareInventory, item)
        elif item is not None and not isinstance(item, kind):
            raise ValueError(f"{cls.__name__}.{name}: {type(item).__name__}")
        values[name] = item
    return build(cls, **values)


def _checked(item, kind):
    if not isinstance(item, kind):
        raise ValueError(f"expected a {kind.__name__}")
    return item


def _restore_sourced(item) -> Sourced:
    if not (isinstance(item, dict) and set(item) == {"value", "path", "line"}
            and isinstance(item["value"], (bool, int, float, str)) and isinstance(item["path"], str)
            and type(item["line"]) is int):
        raise ValueError("not a Sourced value")
    return sourced(item["value"], location(item["path"], item["line"]))


# The kind of each field _restore reads: a model, (list, model), (dict, Sourced) or a plain type.
_FIELD_KINDS = {
    GpuInventory: {"bus_id": str, "index": int, **{n: Sourced for n in
                                                   ("model", "nvlinks", "pcie_gen", "pcie_width", "numa_node",
                                                    "fabric_state", "fabric_status", "fabric_health")}},
    NicPortInventory: {"name": str, **{n: Sourced for n in NicPortInventory.model_fields if n != "name"}},
    SoftwareInventory: {**{n: Sourced for n in SoftwareInventory.model_fields}, "modules": (dict, Sourced)},
    Inventory: {"topolint_inventory": int, "node": str, "topolint_version": str, "gpu_count": Sourced,
                "numa_nodes": Sourced, "nic_ports": Sourced, "nvlink_domain": Sourced, "gpus": (list, GpuInventory),
                "nics": (list, NicPortInventory), "software": SoftwareInventory, "nccl_env": (dict, Sourced),
                "unknown": (dict, str)},
}


def inventory_from_plain(data) -> Inventory:
    """The inventory ``inventory_plain`` gave; ValueError when ``data`` is not of that shape."""
    inventory = _restore(Inventory, data)
    if inventory.topolint_inventory != INVENTORY_FORMAT:
        raise ValueError("another inventory format")
    return inventory


# ---- reading ------------------------------------------------------------------------------------
class InventoryError(ValueError):
    def __init__(self, line: int, message: str, column: int = 0):
        super().__init__(message)
        self.line, self.column, self.message = max(line, 1), column, message


# A "value" key: after "{" or "," (inside a string a quote is always escaped, so this never
# matches string content).
_VALUE_KEY = re.compile(r'[{,]\s*"value"\s*:')


def looks_like_inventory(head: str) -> bool:
    return head.lstrip().startswith("{") and f'"{FORMAT_KEY}"' in head[:4096]


def _sourced_paths(data, path: tuple, found: list) -> None:
    """The JSON path of every Sourced-shaped object, in document order (iterative: no recursion limit)."""
    stack = [(path, data)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, dict):
            if "value" in item:
                found.append(here)
                continue
            stack.extend(reversed([(here + (k,), v) for k, v in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([(here + (i,), v) for i, v in enumerate(item)]))


def _line_of(error_loc: tuple, positions: dict[tuple, int]) -> int:
    """The line of a validation error: the Sourced it is in or below, else the first value after it."""
    for cut in range(len(error_loc), 0, -1):
        line = positions.get(tuple(error_loc[:cut]))
        if line is not None:
            return line
    prefix = tuple(error_loc[:1])
    candidates = [line for key, line in positions.items() if key[:1] == prefix]
    return min(candidates) if candidates else 1


_INTERNED: dict[str, str] = {}


def interned(text: str) -> str:
    """One string object per raw input path or reason text (bounded: a cluster's nodes have their
    own files, and share a few dozen reasons)."""
    found = _INTERNED.get(text)
    if found is None:
        if len(_INTERNED) > 65536:
            _INTERNED.clear()
        found = _INTERNED[text] = text
    return found


def _attach(value, path: tuple, positions: dict[tuple, int], file: str) -> None:
    """Give every Sourced below ``value`` its line in the inventory file."""
    if isinstance(value, Sourced):
        line = positions.pop(path, None)  # each path is attached once: its key is freed as it is
        if line is not None:
            object.__setattr__(value, "_at_file", file)
            object.__setattr__(value, "_at_line", line)
        elif hasattr(value, "_at_file"):  # the streamed read's lines turned out not to pair (_StreamedRead)
            object.__delattr__(value, "_at_file")
        object.__setattr__(value, "path", interned(value.path))  # a node's values name a dozen files
    elif isinstance(value, Fact):
        for name in type(value).model_fields:
            _attach(getattr(value, name, None), path + (name,), positions, file)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _attach(item, path + (index,), positions, file)
    elif isinstance(value, dict):
        for key, item in value.items():
            _attach(item, path + (key,), positions, file)


def _shared_path(obj: dict) -> dict:
    """A decoded object with its ``path`` one shared string: every value repeats one of a node's
    dozen input paths, each a string of its own as json decodes it."""
    path = obj.get("path")
    if type(path) is str:
        obj["path"] = interned(path)
    return obj


def _value_lines(text: str):
    """The line of each ``"value"`` key, in order (newlines counted once, between matches)."""
    line, previous = 1, 0
    for match in _VALUE_KEY.finditer(text):
        start = match.end() - 1
        line += text.count("\n", previous, start)
        previous = start
        yield line


def _valid_in_parts(data: dict) -> bool:
    """Whether the document validates, checked a GPU and a port at a time: pydantic builds its own
    copy of what it validates, and the whole inventory's copy was the largest thing a read held
    (issue 20). False when any part fails (or a list is over its bound): the whole document is then
    validated, for pydantic's first error as it words and orders it."""
    from pydantic import ValidationError

    lists = {}
    for name, cls in (("gpus", GpuInventory), ("nics", NicPortInventory)):
        items = data.get(name)
        if isinstance(items, list):
            if len(items) > Inventory.model_fields[name].spec.kwargs["max_length"]:
                return False
            lists[name] = (items, cls.pydantic_model())
    try:
        Inventory.pydantic_model().model_validate({**data, **{name: [] for name in lists}}, strict=True)
        for items, model in lists.values():
            for item in items:
                model.model_validate(item, strict=True)
    except ValidationError:
        return False
    return True


def read_inventory(text: str, file: str) -> Inventory:
    """The inventory in ``text`` (the file ``file``), each value with its line; InventoryError
    names the line of what does not fit the schema."""
    try:
        return _StreamedRead(text, file).inventory()
    except (ValueError, IndexError, StopIteration, RecursionError):
        pass  # not a valid inventory: the whole document is decoded, for json's or pydantic's first error
    return _read_whole(text, file)


def _decoder() -> json.JSONDecoder:
    # numbers as the rest of topolint reads them (model/numbers.py): an absurd one is None
    return json.JSONDecoder(parse_int=decimal, parse_float=decimal_fraction, parse_constant=lambda _: None,
                            object_hook=_shared_path)


_SPACE = re.compile(r"[ \t\n\r]*")  # json's whitespace
_STREAMED = {"gpus": GpuInventory, "nics": NicPortInventory}


class _StreamedRead:
    """A valid inventory read a GPU and a port at a time: the top-level object is walked here and
    each item of ``gpus`` and ``nics`` decoded, validated and built before the next is decoded, so
    the decoded document (five times the text) is never held whole (issue 20). Whatever this
    walk does not accept (a JSON error, a key twice, a value off the schema) raises ValueError
    and the document is read whole instead, for the error json or pydantic words."""

    def __init__(self, text: str, file: str):
        self.text, self.file = text, file
        self.scan = _decoder().scan_once
        self.lines = _value_lines(text)
        self.sourced = self.keys = 0  # Sourced-shaped objects decoded, "value" keys their lines came from

    def _positions(self, value, path: tuple) -> dict[tuple, int]:
        """The line of each Sourced in ``value``: the next "value" keys of the text, in order."""
        paths: list[tuple] = []
        _sourced_paths(value, path, paths)
        self.sourced += len(paths)
        positions = {}
        for here in paths:
            line = next(self.lines, None)
            if line is None:
                break
            positions[here] = line
            self.keys += 1
        return positions

    def _space(self, index: int) -> int:
        return _SPACE.match(self.text, index).end()

    def _expect(self, index: int, char: str) -> int:
        if self.text[index] != char:
            raise ValueError(f"expected {char!r}")
        return self._space(index + 1)

    def _items(self, name: str, index: int) -> tuple[list, int]:
        """The built items of the array at ``index`` (its "["), and the index after its "]"."""
        cls, built = _STREAMED[name], []
        model = cls.pydantic_model()
        bound = Inventory.model_fields[name].spec.kwargs["max_length"]
        index = self._space(index + 1)
        if self.text[index] == "]":
            return built, index + 1
        while True:
            item, index = self.scan(self.text, index)
            if len(built) == bound:
                raise ValueError(f"{name}: over {bound} items")
            model.model_validate(item, strict=True)  # pydantic's copy: one item's at a time
            positions = self._positions(item, ())
            obj = _restore(cls, item)
            _attach(obj, (), positions, self.file)
            built.append(obj)
            index = self._space(index)
            if self.text[index] == "]":
                return built, index + 1
            index = self._space(self._expect(index, ","))

    def inventory(self) -> Inventory:
        from json.decoder import scanstring

        text, rest, streamed, positions = self.text, {}, {}, {}
        index = self._expect(self._space(0), "{")
        while text[index] != "}":
            if text[index] != '"':
                raise ValueError("expected a key")
            key, index = scanstring(text, index + 1)
            index = self._expect(self._space(index), ":")
            if key in rest or key in streamed:
                raise ValueError(f"{key!r} twice")  # json keeps the last one, in the first one's place
            if key in _STREAMED and text[index] == "[":
                streamed[key], index = self._items(key, index)
            else:
                rest[key], index = self.scan(text, index)
                positions.update(self._positions(rest[key], (key,)))
            index = self._space(index)
            if text[index] != "}":
                index = self._expect(index, ",")
        if self._space(index + 1) != len(text) or rest.get(FORMAT_KEY) != INVENTORY_FORMAT:
            raise ValueError("not an inventory")
        Inventory.pydantic_model().model_validate({**rest, **{name: [] for name in streamed}}, strict=True)
        inventory = inventory_from_plain(rest)
        _attach(inventory, (), positions, self.file)
        for name, built in streamed.items():
            object.__setattr__(inventory, name, built)
        if self.sourced != self.keys or next(self.lines, None) is not None:
            _attach(inventory, (), {}, self.file)  # the lines do not pair with the values: none kept
        return inventory


def _whole_positions(data: dict, text: str) -> dict[tuple, int]:
    """The line of each Sourced of the decoded document, by its path (none where they do not pair)."""
    paths: list[tuple] = []
    _sourced_paths(data, (), paths)
    lines = list(_value_lines(text)) if paths else []
    return dict(zip(paths, lines)) if len(lines) == len(paths) else {}


def _read_whole(text: str, file: str) -> Inventory:
    try:
        data = _decoder().decode(text)
    except json.JSONDecodeError as exc:
        raise InventoryError(exc.lineno, f"malformed inventory: {exc.msg}", exc.colno) from None
    except RecursionError:
        line, column = json_deepest(text)
        raise InventoryError(line, "malformed inventory: nested too deeply", column) from None
    if not isinstance(data, dict) or data.get(FORMAT_KEY) != INVENTORY_FORMAT:
        raise InventoryError(1, f'malformed inventory: expected an object with "{FORMAT_KEY}": {INVENTORY_FORMAT}')
    from pydantic import ValidationError

    try:  # strict: the data is exactly of the schema's types, so it is built as it is (fast) below
        if not _valid_in_parts(data):
            Inventory.pydantic_model().model_validate(data, strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(file)"
        raise InventoryError(_line_of(error["loc"], _whole_positions(data, text)),
                             f"malformed inventory: {where}: {error['msg']}") from None
    positions = _whole_positions(data, text)  # after pydantic's copy is dropped, not beside it
    # A valid document comes here only where the streamed read refused what pydantic accepts
    # (a key twice): built a GPU and a port at a time, each decoded item dropped once built.
    parts = {name: data.pop(name) for name in ("gpus", "nics") if isinstance(data.get(name), list)}
    inventory = inventory_from_plain(data)
    for name, items in parts.items():
        cls, built = _FIELD_KINDS[Inventory][name][1], []
        for index, item in enumerate(items):
            built.append(_restore(cls, item))
            items[index] = None
        object.__setattr__(inventory, name, built)
    _attach(inventory, (), positions, file)
    return inventory


def schema() -> dict:
    """The JSON Schema of the inventory file (docs/inventory.schema.json)."""
    document = Inventory.model_json_schema()
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["$id"] = "https://github.com/topolint/topolint/docs/inventory.schema.json"
    document["title"] = "topolint node inventory"
    return document


if __name__ == "__main__":  # python -m topolint.fleet.inventory > docs/inventory.schema.json
    print(json.dumps(schema(), indent=2, sort_keys=True))
