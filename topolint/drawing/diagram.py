"""A node as a drawing shows it: boxes for CPUs (NUMA nodes), PCIe switches, GPUs, NICs and the
NVSwitches, and the links NCCL's graph holds between them, each labelled with the path type one
step over it counts as and its bandwidth (model/system.py); or, for an ``nvidia-smi topo -m``
matrix, the matrix itself: the pairwise paths it states, never a PCIe tree made up from them.

Every box carries its entity ids (the ones findings name) and the file and line it comes from;
values the completion filled (model/completion.py) are marked as assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.model.node import cpu_entity, gpu_entity, nic_entity, pci_entity

ASSUMED = "*"  # after a value the file does not state: filled from the node's outputs or an option
MAX_CODES = 4  # finding codes a box lists; more are counted


def wrapped(head: str, names: list[str], width: int = 26) -> list[str]:
    """``head`` and the names, as lines of at most ``width`` characters where names allow."""
    lines, current = [], head
    for name in names:
        piece = name if current in (head, "  ") else f", {name}"
        if len(current) + len(piece) > width and current not in (head, "  "):
            lines.append(current + ",")
            current, piece = "  ", name
        current += piece
    return lines + [current]


@dataclass
class Box:
    """One drawn element."""

    id: str  # unique in its diagram
    kind: str  # cpu, switch, gpu, nic, nvswitch, device; matrix rows: gpu, nic
    title: str
    lines: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)  # the ids findings name, the primary one first
    where: str | None = None  # "path:line" of the element, row or cell it comes from
    parent: str | None = None  # the box above it in the PCIe tree
    details: list[str] = field(default_factory=list)  # what its tooltip says besides entity and place
    graph_node: tuple | None = None  # its node in NCCL's graph (model/system.py)
    marks: dict[str, str] = field(default_factory=dict)  # "finding" -> severity, "related" -> severity, "bottleneck"
    codes: list[str] = field(default_factory=list)  # the rules of the findings about it
    bottlenecks: list[str] = field(default_factory=list)  # the algorithms it bounds

    @property
    def notes(self) -> list[str]:
        """The lines marks add below a box's own: "! NUMA001", "bottleneck: ring, tree"."""
        lines = []
        if self.codes:
            more = len(self.codes) - MAX_CODES
            lines.append("! " + " ".join(self.codes[:MAX_CODES]) + (f" +{more}" if more > 0 else ""))
        if self.bottlenecks:
            lines += wrapped("bottleneck: ", self.bottlenecks)
        return lines


@dataclass
class Link:
    """A link between two boxes: ``tree`` (a PCIe link to the parent ``a``), ``nvswitch`` (a GPU's
    NVLinks to the NVSwitches), ``peer`` (NVLinks between two GPUs) or ``cpu`` (C2C or NVLink from a
    GPU to its CPU)."""

    id: str
    a: str
    b: str
    kind: str
    label: str
    where: str | None = None
    details: list[str] = field(default_factory=list)
    bottleneck: list[str] = field(default_factory=list)  # the algorithms it bounds


@dataclass
class Bus:
    """The CPU interconnect of one host: every pair of its CPUs is joined by a SYS link."""

    id: str
    cpus: list[str]
    label: str
    details: list[str] = field(default_factory=list)
    bottleneck: list[str] = field(default_factory=list)


@dataclass
class Cell:
    """One cell of a matrix: the relation of row to column as printed, where it is printed."""

    text: str
    where: str | None
    marks: dict[str, str] = field(default_factory=dict)  # "route" -> severity, "relay" -> severity


@dataclass
class MatrixGrid:
    labels: list[str]  # the matrix's columns (GPUs then NICs), each a row box "m:LABEL" too
    cells: dict[tuple[str, str], Cell]  # (row label, column label)
    affinity: list[tuple[str, dict[str, str]]]  # ("CPU Affinity", {row label: value}), ...


@dataclass
class Route:
    """The path a finding is about, as the drawn links (or matrix cells) it follows."""

    legs: list[tuple[str, str]]  # consecutive box ids
    severity: str
    code: str
    relay: bool  # a route through a relay (PXN): drawn dashed


@dataclass
class Diagram:
    node: str
    style: str  # "tree" or "matrix"
    source: str  # what was drawn, in words
    boxes: dict[str, Box] = field(default_factory=dict)  # in drawing order
    links: list[Link] = field(default_factory=list)
    buses: list[Bus] = field(default_factory=list)
    grid: MatrixGrid | None = None
    routes: list[Route] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the drawing assumes or leaves out
    system: object = None  # the model/system.py System drawn (tree style): routes follow its paths

    def add(self, box: Box) -> Box:
        self.boxes[box.id] = box
        return box

    def box_of_entity(self, entity: str) -> Box | None:
        index = getattr(self, "_entities", None)
        if index is None:
            index = self._entities = {}
            for box in self.boxes.values():
                for name in box.entities:
                    index.setdefault(name, box)
        return index.get(entity)

    def box_of_graph_node(self, node: tuple) -> Box | None:
        index = getattr(self, "_graph", None)
        if index is None:
            index = self._graph = {b.graph_node: b for b in self.boxes.values() if b.graph_node is not None}
            for key in (self.system.nets if self.system is not None else ()):
                owner = index.get(self.system.nic_node(key))
                if owner is not None:
                    index[key] = owner
        return index.get(node)

    def link_between(self, a: str, b: str) -> Link | None:
        index = getattr(self, "_pairs", None)
        if index is None:
            index = self._pairs = {}
            for link in self.links:
                index.setdefault(frozenset((link.a, link.b)), link)
        return index.get(frozenset((a, b)))

    def bus_of(self, a: str, b: str) -> Bus | None:
        return next((bus for bus in self.buses if a in bus.cpus and b in bus.cpus), None)


def gbs(value: float) -> str:
    """A bandwidth as drawn: one decimal at most, no trailing zero."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def where(loc) -> str | None:
    return f"{loc.path}:{loc.line}" if loc is not None else None


def _device_name(pci) -> str | None:
    from topolint.model.devices import known_devices
    from topolint.model.numbers import hex_int

    vendor, device = hex_int(pci.vendor), hex_int(pci.device)
    if vendor is None or device is None:
        return None
    entry = known_devices().get(f"0x{vendor:04x}:0x{device:04x}")
    return entry.get("name") if entry else None


class _TreeBuilder:
    """A diagram of NCCL's graph of one topology (completed or derived) for one node."""

    def __init__(self, node: str, system, source: str, completion=None):
        self.node, self.system, self.topology = node, system, system.topology
        self.completion = completion
        self.diagram = Diagram(node, "tree", source, system=system)
        self.net_keys = {id(fact): key for key, (_, fact) in system.nets.items()}  # a <net> -> its NET node

    def assumed(self, entity: str, field_name: str) -> list:
        return self.completion.assumed(entity, field_name) if self.completion is not None else []

    def mark_assumed(self, entity: str, field_name: str, text: str, box: Box) -> str:
        found = self.assumed(entity, field_name)
        box.details.extend(f"assumed: {a.text()}" for a in found)
        return text + ASSUMED if found else text

    def build(self) -> Diagram:
        topo = self.topology
        for cpu in topo.cpus:
            self._cpu(cpu)
        latest: dict[str, str] = {}  # bus id -> box id (a repeated bus id keeps the latest, as System does)
        nic_of = {nic.bus_id: nic for nic in topo.nics if nic.bus_id}
        for pci in topo.pci:
            box_id = f"pci:{pci.bus_id}"
            if box_id in self.diagram.boxes:
                box_id = f"{box_id}#{sum(1 for b in self.diagram.boxes if b.startswith(box_id))}"
            parent = latest.get(pci.parent_bus_id) if pci.parent_bus_id is not None else None
            parent = parent or f"cpu:{pci.cpu_index}"
            latest[pci.bus_id] = box_id
            box = self._pci(box_id, pci, nic_of.get(pci.bus_id))
            box.parent = parent if parent in self.diagram.boxes else None
            self._tree_link(box, pci)
        for index, nic in enumerate(topo.nics):
            if not nic.bus_id:
                self._bare_nic(index, nic)
        self._gpu_links()
        self._buses()
        return self.diagram

    def _cpu(self, cpu) -> None:
        entity = cpu_entity(self.node, cpu.numa_id, cpu.index)
        lines = [" ".join(v for v in (cpu.arch, cpu.vendor) if v)] if cpu.arch or cpu.vendor else []
        details = [f"affinity {cpu.affinity}"] if cpu.affinity else []
        self.diagram.add(Box(f"cpu:{cpu.index}", "cpu", f"NUMA {cpu.numa_id}" if cpu.numa_id is not None
                             else f"CPU #{cpu.index}", lines, [entity], where(cpu.loc), None, details,
                             ("cpu", cpu.index)))

    def _pci(self, box_id: str, pci, nic) -> Box:
        node, bus = self.node, pci.bus_id
        name = _device_name(pci)
        details = [f"class {pci.pci_class}" if pci.pci_class else "no class stated"]
        details += [f"vendor {pci.vendor} device {pci.device}"] if pci.vendor or pci.device else []
        if pci.kind == "gpu":
            return self._gpu_box(box_id, pci, name, details)
        if pci.kind == "nic":
            box = Box(box_id, "nic", "NIC", [bus], [pci_entity(node, bus)], where(pci.loc), None, details,
                      ("nic", bus))
            self._nets(box, nic)
            return self.diagram.add(box)
        kind, title = {"bridge": ("switch", "PCIe switch"), "nvswitch": ("nvswitch", "NVSwitch")}.get(
            pci.kind, ("device", "PCI device"))
        lines = [bus] + ([name] if name else [])
        return self.diagram.add(Box(box_id, kind, title, lines, [pci_entity(node, bus)], where(pci.loc), None,
                                    details, ("pci", bus)))

    def _gpu_box(self, box_id: str, pci, name: str | None, details: list[str]) -> Box:
        node, bus = self.node, pci.bus_id
        gpu = self.system.gpus.get(bus)
        entity = gpu_entity(node, bus)
        box = Box(box_id, "gpu", f"GPU {gpu.dev}" if gpu is not None and gpu.dev is not None else "GPU", [bus],
                  [entity, pci_entity(node, bus)], where(gpu.loc if gpu is not None else pci.loc), None, details,
                  ("gpu", bus) if gpu is not None else ("pci", bus))
        about = []
        if name:
            about.append(name)
        if gpu is not None and gpu.sm:
            about.append(self.mark_assumed(entity, "sm", f"SM{gpu.sm}", box))
        if about:
            box.lines.append(" ".join(about))
        if gpu is None:
            box.details.append("no <gpu> element: NCCL fills it at run time")
        return self.diagram.add(box)

    def _nets(self, box: Box, nic) -> None:
        """A line per network device (name:port and rate, then NCCL's NET link); their entities
        go first, the box's own (its PCI device) last."""
        nets = nic.nets if nic is not None else []
        if not nets:
            box.lines.append("no network device")
        entities = []
        for net in nets:
            name = f"{net.name}:{net.port if net.port is not None else 1}" if net.name else \
                f"port {net.port if net.port is not None else 1}"
            entity = nic_entity(self.node, net.name or (nic.bus_id if nic else None) or "nic", net.port)
            entities.append(entity)
            if net.name:
                entities.append(f"{self.node}/netdev/{net.name}")
            rate = f"{gbs(net.speed_mbps / 1000)} Gb/s" if net.speed_mbps and net.speed_mbps > 0 else "no speed"
            rate = self.mark_assumed(entity, "speed", rate, box)
            box.lines.append(self.mark_assumed(entity, "net", f"{name} {rate}", box))  # the whole <net> filled
            key = self.net_keys.get(id(net))
            if key is not None:
                bw = self.system.links[self.system.nic_node(key)][key]["bw"]
                default = "" if net.speed_mbps and net.speed_mbps > 0 else " (NCCL's 10 Gb/s)"
                box.lines.append(f"  NET {gbs(bw)} GB/s{default}")
            box.details.append(f"{name}: {where(net.loc)}")
        box.entities[:0] = entities

    def _bare_nic(self, index: int, nic) -> None:
        """A <nic> directly under a <cpu> (no PCI device: a virtual NIC)."""
        box_id = f"nic:{nic.cpu_index}#{index}"
        key = next(k for k in self.system.nets if k[1] == index)
        box = Box(box_id, "nic", "NIC", ["no PCI device"], [], where(nic.loc), f"cpu:{nic.cpu_index}",
                  ["a <nic> directly under its <cpu>: NCCL links it to the CPU"], self.system.nic_node(key))
        self._nets(box, nic)
        self.diagram.add(box)
        cpu_node = ("cpu", nic.cpu_index)
        link = self.system.links[box.graph_node][cpu_node]
        self.diagram.links.append(Link(f"tree:{box_id}", box.parent, box_id, "tree",
                                       f"{self.system.link_type(cpu_node, box.graph_node)} {gbs(link['bw'])} GB/s",
                                       where(nic.loc), ["NCCL's bandwidth for a NIC without a PCI device"]))

    def _tree_link(self, box: Box, pci) -> None:
        if box.parent is None or box.graph_node is None:
            return
        parent = self.diagram.boxes[box.parent].graph_node
        link = self.system.links.get(box.graph_node, {}).get(parent)
        if link is None:
            return
        details = [f"link_speed {pci.link_speed!r} link_width {pci.link_width!r}"
                   if pci.link_speed is not None or pci.link_width is not None else "no link speed or width stated"]
        label = f"{self.system.link_type(parent, box.graph_node)} {gbs(link['bw'])} GB/s"
        entity = pci_entity(self.node, pci.bus_id)
        if self.assumed(entity, "link_speed") or self.assumed(entity, "link_width"):
            label += ASSUMED
            details += [f"assumed: {a.text()}" for f in ("link_speed", "link_width") for a in self.assumed(entity, f)]
        self.diagram.links.append(Link(f"tree:{box.id}", box.parent, box.id, "tree", label, where(pci.loc), details))

    def _gpu_links(self) -> None:
        system, diagram = self.system, self.diagram
        gpu_box = {b.graph_node: b for b in diagram.boxes.values() if b.kind == "gpu"}
        peers_seen = set()
        for gpu in self.topology.gpus:
            node = ("gpu", gpu.bus_id)
            box = gpu_box.get(node)
            if box is None:
                continue
            entity = gpu_entity(self.node, gpu.bus_id)
            mark = ASSUMED if self.assumed(entity, "nvlinks") else ""
            counts: dict[str, int] = {}
            for nvlink in gpu.nvlinks:
                if nvlink.target != gpu.bus_id and (nvlink.count or 0) > 0:
                    target = nvlink.target if (nvlink.tclass or "").lower().startswith("0x03") else \
                        ("cpu" if (nvlink.tclass or "").lower().startswith("0x068001") else "nvs")
                    counts[target] = counts.get(target, 0) + nvlink.count
            loc = where(gpu.nvlinks[0].loc) if gpu.nvlinks else box.where
            for remote, link in system.links.get(node, {}).items():
                bw = gbs(link["bw"])
                if link["type"] == "NVL" and remote == ("nvs", 0):
                    nvs = diagram.boxes.get("nvs") or diagram.add(Box("nvs", "nvswitch", "NVSwitch",
                                                                      ["NVLink switches"], [], None, None,
                                                                      ["NCCL's one NVS node for every NVSwitch"],
                                                                      ("nvs", 0)))
                    diagram.links.append(Link(f"nvl:{box.id}", box.id, nvs.id, "nvswitch",
                                              f"NVL x{counts.get('nvs', 0)}{mark} {bw} GB/s", loc))
                elif link["type"] == "NVL" and remote[0] == "gpu" and remote in gpu_box:
                    pair = frozenset((node, remote))
                    if pair in peers_seen:
                        continue
                    peers_seen.add(pair)
                    back = system.links.get(remote, {}).get(node)
                    label = f"NVL x{counts.get(remote[1], 0)}{mark} {bw} GB/s"
                    if back is not None and back["bw"] != link["bw"]:
                        label += f" ({gbs(back['bw'])} back)"
                    diagram.links.append(Link(f"peer:{box.id}:{gpu_box[remote].id}", box.id, gpu_box[remote].id,
                                              "peer", label, loc))
                elif link["type"] in ("NVL", "C2C") and remote[0] == "cpu":
                    count = f" x{counts.get('cpu', 0)}" if link["type"] == "NVL" else ""
                    c2c_loc = where(gpu.c2c[0].loc) if link["type"] == "C2C" and gpu.c2c else loc
                    diagram.links.append(Link(f"cpu:{box.id}", f"cpu:{remote[1]}", box.id, "cpu",
                                              f"{link['type']}{count} {bw} GB/s", c2c_loc))

    def _buses(self) -> None:
        system, topo = self.system, self.topology
        hosts: dict[str, list] = {}
        for cpu in topo.cpus:
            hosts.setdefault(cpu.host_hash or "", []).append(cpu)
        for number, cpus in enumerate(hosts.values()):
            if len(cpus) < 2:
                continue
            speeds = sorted({system.links[("cpu", a.index)][("cpu", b.index)]["bw"] for a in cpus for b in cpus
                             if a.index != b.index and ("cpu", b.index) in system.links.get(("cpu", a.index), {})})
            if not speeds:
                continue
            self.diagram.buses.append(Bus(f"sys:{number}", [f"cpu:{c.index}" for c in cpus],
                                          f"SYS {'/'.join(gbs(s) for s in speeds)} GB/s",
                                          ["NCCL's CPU-to-CPU bandwidth for this CPU model (src/graph/topo.h)"]))


def tree_diagram(node: str, system, source: str, completion=None) -> Diagram:
    """The diagram of ``system`` (model/system.py) for node ``node``; ``completion`` marks the
    values it filled as assumptions."""
    return _TreeBuilder(node, system, source, completion).build()


def matrix_diagram(node: str, matrix, bus_ids: dict[int, str] | None = None) -> Diagram:
    """An ``nvidia-smi topo -m`` matrix as the pairwise paths it states: a row box per GPU and
    NIC, and each cell where it is printed. ``bus_ids``: GPU index -> bus id from the node's XML."""
    from topolint.model.matrix import MatrixView

    view = MatrixView(matrix)
    bus_ids = bus_ids or {}
    diagram = Diagram(node, "matrix", f"nvidia-smi topo -m {matrix.path}: the pairwise paths it states")
    rows = {row.label: row for row in matrix.rows}
    for label, kind in zip(matrix.columns, matrix.column_kinds):
        row = rows.get(label)
        if kind == "gpu":
            index = view.gpu_index(label)
            entities = [gpu_entity(node, bus_ids.get(index, str(index)))]
            title, lines = label, ([bus_ids[index]] if index in bus_ids else [])
        else:
            name = view.nic_name(label)
            entities = [nic_entity(node, name, None), f"{node}/netdev/{name}"]
            title, lines = label, ([name] if name != label else [])
        details = [] if row is not None else ["no row: cut from the paste"]
        diagram.add(Box(f"m:{label}", kind, title, lines, entities, where(row.loc if row is not None else
                                                                          matrix.header_loc), None, details))
    cells = {}
    for row in matrix.rows:
        for column, (label, text) in enumerate(zip(matrix.columns, row.cells)):
            cells[(row.label, label)] = Cell(text, where(matrix.cell_loc(row, column)))
    affinity = []
    for name, attribute in (("CPU Affinity", "cpu_affinity"), ("NUMA Affinity", "numa_affinity"),
                            ("GPU NUMA ID", "gpu_numa_id")):
        if name in matrix.affinity_columns:
            affinity.append((name, {row.label: getattr(row, attribute) or "" for row in matrix.rows}))
    diagram.grid = MatrixGrid(list(matrix.columns), cells, affinity)
    if matrix.partial or matrix.restricted:
        diagram.notes.append("the matrix is partial or a restricted view: only what it shows is drawn")
    return diagram
