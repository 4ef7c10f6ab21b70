"""The join of a node's facts to the devices of its topology: which RDMA port, HCA, netdev, lspci
device, GPU model and NVLink count belongs to which GPU or NIC of a topology file.

This is the one join of node facts to devices (docs/node-model.md). The completion
(model/completion.py) fills a static file from it; TL003 (checks/_host_joins.py) compares
through it; config rules (NET002's HCA names) and fleet inventories read it. Every joined fact
is a ``NodeFact``: the value, what the output says in words, the line that says it, and how the
fact reached the device. Joins, strongest first:

- by PCI address, where a source names one: ``ibdev2netdev -v`` and hwloc's OS devices give an
  HCA's address; lspci and hwloc give a GPU's or NIC's PCI ids, class and links at an address;
- by HCA name: a topology's ``<net name="mlx5_0" port="1">`` is ibstat's ``mlx5_0`` port 1;
- by GPU index: nvidia-smi numbers GPUs in PCI bus order, so the topology's GPUs (by ``dev``
  when every GPU states one, else sorted by bus id) are its GPU0, GPU1, ... when the counts agree;
- without addresses, by count: every Active port of the NICs' link layer at one rate, as many
  as the NICs (``rate_rule``); every NVIDIA GPU of lspci of one model, as many as the GPUs.

Nothing is guessed past that: a fact that joins no device is left out, and ``RateRule.note``
says why a rate did not join.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from topolint.model.devices import GpuModel, device_kind, gpu_model_by_name, hex_pci_id, lspci_gpu_model, pci_ids
from topolint.model.fabric_view import FabricView, PortView
from topolint.model.facts import Location, TopologyFile
from topolint.model.host import LspciDevice, LspciFile
from topolint.model.matrix import MatrixView, gpu_bus_ids, join_gpus, nv_count, topo_matrices
from topolint.model.numbers import cpulist, decimal

# PCI class of a topology's NIC -> the link layer of the ports it is (src/graph/topo.cc reads 0x02
# as a NIC; 0x0207 is an InfiniBand controller, 0x0200 an Ethernet one: RoCE, EFA, sockets).
LINK_LAYER_OF_CLASS = {"0x0207": "infiniband", "0x0200": "ethernet"}
NVLINKS_PER_GPU_MAX = 18  # NVLink4/5 GPUs have 18; a larger sum over a matrix row means NVSwitches


def where(loc: Location | None) -> str:
    return f"{loc.path}:{loc.line}" if loc is not None else "-"


@dataclass(frozen=True)
class NodeFact:
    """A value one of the node's outputs gives about a device, and how it reached the device."""

    value: object
    text: str  # what the output says, in words: "ibstat: mlx5_0 port 1 Active, Rate 400"
    loc: Location | None  # the line that says it
    join: str  # how it was tied to the device: "PCI address 0101:00:00.0 (ibdev2netdev -v)", "GPU index 3"

    def evidence(self) -> str:
        at = f"{where(self.loc)}: " if self.loc is not None else ""
        return f"{at}{self.text} (joined by {self.join})"


@dataclass(frozen=True)
class NvLinkSpec:
    """NVLinks a node fact gives one GPU: ``count`` links to ``target`` (a peer's bus id, or None
    for the NVSwitches), of NCCL's target class."""

    target: str | None
    count: int
    tclass: str


@dataclass
class GpuFacts:
    """What the node's outputs say about one GPU of a topology."""

    bus_id: str
    index: int | None = None  # nvidia-smi's GPU index
    index_join: str = ""  # "its dev attribute" or "PCI bus order"
    lspci: LspciDevice | None = None
    model: NodeFact | None = None  # value: GpuModel
    nvlinks: NodeFact | None = None  # value: tuple[NvLinkSpec, ...]
    active_nvlinks: NodeFact | None = None  # value: int (nvidia-smi nvlink -s)
    fabric: NodeFact | None = None  # value: GpuFabric (nvidia-smi -q, --query-gpu fabric.*)


@dataclass(frozen=True)
class QueriedJoin:
    """A GPU of nvidia-smi -q / --query-gpu and the GPU it is: ``key`` is its bus id, else ``#INDEX``."""

    key: str
    bus_id: str | None
    gpu: object  # model.gpu_query.QueriedGpu
    how: str  # how it was tied to the bus id


@dataclass
class NicFacts:
    """What the node's outputs say about one NIC of a topology (one ``<nic>`` or NIC ``<pci>``)."""

    bus_id: str | None
    pci_class: str | None
    hca: NodeFact | None = None  # value: the HCA name, for a NIC whose file names none
    ports: list[PortView] | None = None  # the HCA's ports, by port number
    lspci: LspciDevice | None = None


@dataclass
class RateRule:
    """Active ports of one link layer at one rate, as many as the NICs they stand for: that rate
    fills those NICs without a per-NIC join. ``rate`` is None when the rule joins nothing, and
    ``note`` says why (differing rates, another count, no port of that layer)."""

    link_layer: str
    nics: int
    ports: list[PortView]
    rate: NodeFact | None
    note: str


class NodeJoin:
    """The join for one node (``node_join(node)`` keeps one per node)."""

    def __init__(self, node):
        self.node = node

    # ---- host facts by address ------------------------------------------------------------------
    @cached_property
    def fabric(self) -> FabricView:
        return FabricView(self.node)

    @cached_property
    def lspci_at(self) -> dict[str, tuple[LspciFile, LspciDevice]]:
        """PCI address -> (lspci file, device): the most detailed output first (-vvv over a list)."""
        order = {"verbose": 0, "excerpt": 1, "list": 2, "tree": 3}
        found: dict[str, tuple[LspciFile, LspciDevice]] = {}
        for lspci in sorted(getattr(self.node, "lspci", []), key=lambda f: order.get(f.kind, 9)):
            for device in lspci.devices:
                if device.address:
                    found.setdefault(device.address, (lspci, device))
        return found

    def lspci_devices_with_numa(self):
        """(lspci file, device) for each device whose NUMA node lspci states (TL003's NUMA join)."""
        for lspci in getattr(self.node, "lspci", []):
            for device in lspci.devices:
                if device.address and device.numa_node is not None and device.numa_node >= 0:
                    yield lspci, device

    @staticmethod
    def nvidia_gpus(lspci: LspciFile) -> list[LspciDevice]:
        """An lspci output's NVIDIA GPUs in bus order: nvidia-smi's GPU0, GPU1, ..."""
        return sorted((d for d in lspci.devices if d.address and device_kind(d) == "gpu"
                       and (d.vendor_id == "10de" or (d.description or "").startswith("NVIDIA"))),
                      key=lambda d: d.address)

    @cached_property
    def lspci_gpus(self) -> list[tuple[LspciFile, LspciDevice]]:
        """(lspci file, device) of each GPU (NVIDIA or AMD) of the first listing (``-vvv`` or the
        plain list) that shows any, in bus order: the node's GPUs when no topology file names them."""
        for lspci in getattr(self.node, "lspci", []):
            if lspci.kind in ("verbose", "list"):
                found = [(lspci, d) for d in lspci.devices if d.address and device_kind(d) == "gpu"]
                if found:
                    return sorted(found, key=lambda pair: pair[1].address)
        return []

    def index_bus_ids(self, count: int) -> dict[int, str]:
        """nvidia-smi GPU index -> bus id, for an output listing ``count`` GPUs: from the node's
        topology file (a dump first), else lspci's GPUs in bus order (nvidia-smi's order) when as many."""
        keys = gpu_bus_ids(self.node, count)
        if not keys and len(self.lspci_gpus) == count:
            keys = {index: device.address for index, (_, device) in enumerate(self.lspci_gpus)}
        return keys

    @cached_property
    def numactl_cpus(self) -> dict[int, tuple]:
        """NUMA id -> (CpuSet, NumaNode, table) for numactl's nodes that have CPUs."""
        found = {}
        for table in getattr(self.node, "numa_tables", []):
            for numa in table.nodes:
                cpus = cpulist(numa.cpus)
                if cpus:
                    found.setdefault(numa.node_id, (cpus, numa, table))
        return found

    # ---- HCAs -------------------------------------------------------------------------------------
    @cached_property
    def hcas_at(self) -> dict[str, list[NodeFact]]:
        """PCI address -> the HCAs a source places there (value: HCA name): ibdev2netdev -v first,
        then hwloc's OpenFabrics OS devices."""
        found: dict[str, list[NodeFact]] = {}
        seen: set[str] = set()
        for netdev_map in self.fabric._of("netdev-map"):
            for link in netdev_map.links:
                if link.pci and link.hca not in seen:
                    seen.add(link.hca)
                    found.setdefault(link.pci, []).append(NodeFact(
                        link.hca, f"ibdev2netdev -v: {link.hca} is at {link.pci}", link.loc,
                        f"PCI address {link.pci} (ibdev2netdev -v)"))
        for topology in getattr(self.node, "hwloc", []):
            for device in topology.os_devices:
                if device.bus_id and device.name and device.osdev_class == "openfabrics" and device.name not in seen:
                    seen.add(device.name)
                    found.setdefault(device.bus_id, []).append(NodeFact(
                        device.name, f"hwloc: OS device {device.name} under PCI {device.bus_id}", device.loc,
                        f"PCI address {device.bus_id} (hwloc)"))
        return found

    @cached_property
    def hca_addresses(self) -> dict[str, str]:
        """HCA name -> its PCI address: ``hcas_at``'s (ibdev2netdev -v, hwloc), else the ``<pci>`` an
        NCCL dump's ``<net>`` of that name sits under (NCCL found the device there)."""
        found = {fact.value: bus for bus, facts in self.hcas_at.items() for fact in facts}
        for topology in getattr(self.node, "topologies", []):
            if topology.kind == "dump":
                for nic in topology.nics:
                    for net in nic.nets:
                        if net.name and nic.bus_id:
                            found.setdefault(net.name, nic.bus_id)
        return found

    @cached_property
    def _ports_by_hca(self) -> dict[str, list[PortView]]:
        found: dict[str, list[PortView]] = {}
        for port in self.fabric.ports.values():
            found.setdefault(port.hca, []).append(port)
        return {hca: sorted(ports, key=lambda p: p.port) for hca, ports in found.items()}

    def ports_of(self, hca: str) -> list[PortView]:
        return list(self._ports_by_hca.get(hca, []))

    @cached_property
    def hcas(self) -> dict[str, NodeFact]:
        """Every HCA the node's outputs name (value: the name) -> the first fact naming it: port
        reports (ibstat, ibstatus, ibv_devinfo), ibdev2netdev, show_gids, hwloc (NET002's names)."""
        found: dict[str, NodeFact] = {}
        for port in self.fabric.ports.values():
            report = port.reports[0]
            found.setdefault(port.hca, NodeFact(port.hca, f"{report.tool or 'port report'}: {port.label}",
                                                report.loc, "HCA name"))
        for facts in self.hcas_at.values():
            for fact in facts:
                found.setdefault(fact.value, fact)
        for gid in self.fabric.gids:
            found.setdefault(gid.hca, NodeFact(gid.hca, f"GID table: {gid.hca} port {gid.port}", gid.loc, "HCA name"))
        return found

    @cached_property
    def _hwloc_gpus(self) -> dict[str, object]:
        """PCI address -> hwloc's GPU OS device that names a model."""
        found = {}
        for topology in getattr(self.node, "hwloc", []):
            for device in topology.os_devices:
                if device.bus_id and device.gpu_model:
                    found.setdefault(device.bus_id, device)
        return found

    # ---- GPUs -------------------------------------------------------------------------------------
    def gpus(self, topology: TopologyFile) -> dict[str, GpuFacts]:
        """Bus id -> what the node's outputs say about that GPU of ``topology``."""
        found = {g.bus_id: GpuFacts(g.bus_id) for g in topology.gpus}
        indexed = self._indices(topology)
        for bus, (index, how) in indexed.items():
            found[bus].index, found[bus].index_join = index, how
        for bus, facts in found.items():
            at = self.lspci_at.get(bus)
            facts.lspci = at[1] if at else None
            facts.model = self._model_at(bus, at)
        self._models_by_index(found)
        self._models_by_count(topology, found)
        self._nvlinks_by_index(topology, found)
        self._nvlinks_from_hwloc(found)
        self._from_gpu_query(found)
        return found

    def _indices(self, topology: TopologyFile) -> dict[str, tuple[int, str]]:
        gpus = topology.gpus
        stated = gpus and all(g.dev is not None for g in gpus) and len({g.dev for g in gpus}) == len(gpus)
        how = "its dev attribute (NVML's index)" if stated else "PCI bus order (nvidia-smi's order)"
        return {gpu.bus_id: (index, how) for index, gpu in join_gpus(topology).items()}

    def _model_at(self, bus: str, at) -> NodeFact | None:
        if at is not None and device_kind(at[1]) == "gpu":
            model = lspci_gpu_model(at[1])
            if model is not None:
                ids = pci_ids(at[1])
                return NodeFact(model, f"lspci: {bus} is {model.name}{f' [{ids}]' if ids else ''}, SM{model.sm}",
                                at[1].loc, f"PCI address {bus} (lspci)")
        device = self._hwloc_gpus.get(bus)
        model = gpu_model_by_name(device.gpu_model) if device is not None else None
        if model is not None:
            return NodeFact(model, f"hwloc: GPU {device.name} is {device.gpu_model}, SM{model.sm}", device.loc,
                            f"PCI address {bus} (hwloc)")
        return None

    def status_by_index(self, count: int | None = None) -> dict[int, object]:
        """nvidia-smi nvlink -s GPU blocks by index, from the first output that lists ``count``
        GPUs (None: the first output)."""
        for status in getattr(self.node, "nvlink_status", []):
            if count is None or len(status.gpus) == count:
                return {g.index: g for g in status.gpus}
        return {}

    def _models_by_index(self, found: dict[str, GpuFacts]) -> None:
        status = self.status_by_index(len(found))
        for facts in found.values():
            seen = status.get(facts.index) if facts.index is not None else None
            if seen is None:
                continue
            join = f"GPU index {facts.index}, {facts.index_join}"
            model = gpu_model_by_name(seen.name)
            if facts.model is None and model is not None:
                facts.model = NodeFact(model, f"nvidia-smi nvlink -s: GPU {seen.index} is {seen.name}, SM{model.sm}",
                                       seen.loc, join)
            active = active_nvlinks(seen)
            facts.active_nvlinks = NodeFact(active, f"nvidia-smi nvlink -s: GPU {seen.index} has {active} active "
                                                    f"NVLink{'s' if active != 1 else ''}", seen.loc, join)

    @cached_property
    def queried(self) -> list[QueriedJoin]:
        """Every GPU of the node's ``nvidia-smi -q`` and ``--query-gpu`` outputs, first file first,
        each once: by the bus id it prints, else by its index (``index_bus_ids``), else ``#INDEX``."""
        found: list[QueriedJoin] = []
        seen: set[str] = set()
        for query in getattr(self.node, "gpu_queries", []):
            keys = None
            for gpu in query.gpus:
                bus, how = gpu.bus_id, "PCI address (its GPU header)" if query.kind == "query" else "pci.bus_id"
                if bus is None:
                    keys = self.index_bus_ids(len(query.gpus)) if keys is None else keys
                    bus, how = keys.get(gpu.index), f"GPU index {gpu.index}, PCI bus order (nvidia-smi's order)"
                key = bus or f"#{gpu.index}"
                if key not in seen:
                    seen.add(key)
                    found.append(QueriedJoin(key, bus, gpu, how if bus else "not joined (no bus id)"))
        return found

    def _from_gpu_query(self, found: dict[str, GpuFacts]) -> None:
        """Fabric state and (where no address gave one) the model, from nvidia-smi -q by bus id."""
        for joined in self.queried:
            facts = found.get(joined.key)
            if facts is None:
                continue
            gpu = joined.gpu
            model = gpu_model_by_name(gpu.name.value) if gpu.name is not None else None
            if facts.model is None and model is not None:
                facts.model = NodeFact(model, f"nvidia-smi -q: {joined.key} is {gpu.name.text}, SM{model.sm}",
                                       gpu.name.loc, joined.how)
            if gpu.fabric is not None and facts.fabric is None:
                state = gpu.fabric.state.text if gpu.fabric.state is not None else "not stated"
                facts.fabric = NodeFact(gpu.fabric, f"nvidia-smi -q: {joined.key} Fabric State {state}",
                                        gpu.fabric.loc, joined.how)

    def _models_by_count(self, topology: TopologyFile, found: dict[str, GpuFacts]) -> None:
        """lspci outputs whose NVIDIA GPUs are all one model, as many as the topology's GPUs: that
        model for every GPU that no address or index joined (a VM's file names other addresses)."""
        missing = [f for f in found.values() if f.model is None]
        if not missing:
            return
        for lspci in getattr(self.node, "lspci", []):
            gpus = self.nvidia_gpus(lspci)
            models = {m for m in (lspci_gpu_model(d) for d in gpus)}
            if len(gpus) == len(topology.gpus) and len(models) == 1 and None not in models:
                model: GpuModel = models.pop()
                fact = NodeFact(model, f"lspci: {len(gpus)} NVIDIA GPUs, every one {model.name} (SM{model.sm})",
                                gpus[0].loc, f"count: lspci's {len(gpus)} GPUs are one model, as many as the "
                                             "topology's (no address joins them one by one)")
                for facts in missing:
                    facts.model = fact
                return

    def _nvlinks_by_index(self, topology: TopologyFile, found: dict[str, GpuFacts]) -> None:
        """NV# of an nvidia-smi topo -m matrix that lists as many GPUs (GPUi is the i-th GPU)."""
        by_index = {f.index: f for f in found.values() if f.index is not None}
        for matrix in topo_matrices(self.node):
            view = MatrixView(matrix)
            if not view.complete or len(view.gpus) != len(found):
                continue
            for label in view.gpus:
                facts = by_index.get(view.gpu_index(label))
                row = view.gpu_row(label)
                if facts is None or row is None or facts.nvlinks is not None:
                    continue
                links = matrix_row_links(view, label, {lab: by_index[view.gpu_index(lab)].bus_id for lab in view.gpus
                                                       if view.gpu_index(lab) in by_index})
                cells = sorted({view.rel(label, p) for p in view.gpus if p != label
                                and nv_count(view.rel(label, p))}) or ["no NV# cell"]
                what = (f"{links[0].count} NVLinks to NVSwitches" if links and links[0].target is None
                        else f"{sum(link.count for link in links)} NVLinks to peers" if links else "no NVLink")
                facts.nvlinks = NodeFact(tuple(links), f"nvidia-smi topo -m: {label} {'/'.join(cells)} to its "
                                                       f"peers: {what}", row.loc,
                                         f"GPU index {facts.index}, {facts.index_join}")

    def _nvlinks_from_hwloc(self, found: dict[str, GpuFacts]) -> None:
        from topolint.model.hwloc_nvlink import gpu_nvlinks

        missing = {bus for bus, f in found.items() if f.nvlinks is None}
        if not missing:
            return
        for topology in getattr(self.node, "hwloc", []):
            ids = {bus: _hex_id(self.lspci_at.get(bus)) for bus in missing}
            for bus, links in gpu_nvlinks(topology, ids).items():
                if bus not in missing or any(link.count is None for link in links):
                    continue
                specs = tuple(NvLinkSpec(link.target if link.tclass != "0x068000" else None, link.count,
                                         link.tclass) for link in links if link.count)
                total = sum(s.count for s in specs)
                found[bus].nvlinks = NodeFact(_merged(specs), f"hwloc NVLinkBandwidth: {total} NVLinks",
                                              links[0].loc if links else topology.loc, f"PCI address {bus} (hwloc)")
                missing.discard(bus)

    # ---- NICs -------------------------------------------------------------------------------------
    def nics(self, topology: TopologyFile) -> list[NicFacts]:
        """Per topology NIC (in ``topology.nics`` order): its class, its HCA by address and its ports."""
        pci = topology.pci_by_bus()
        out = []
        for nic in topology.nics:
            device = pci.get(nic.bus_id or "")
            pci_class = (device.pci_class or "").lower() if device is not None else None
            facts = NicFacts(nic.bus_id, pci_class)
            at = self.lspci_at.get(nic.bus_id or "")
            facts.lspci = at[1] if at else None
            named = [n.name for n in nic.nets if n.name]
            if named:
                facts.ports = [p for name in dict.fromkeys(named) for p in self.ports_of(name)]
            elif nic.bus_id and len(self.hcas_at.get(nic.bus_id, [])) == 1:
                facts.hca = self.hcas_at[nic.bus_id][0]
                facts.ports = self.ports_of(facts.hca.value)
            out.append(facts)
        return out

    def rate_rule(self, link_layer: str, nics: int, taken: set) -> RateRule:
        """Every Active port of ``link_layer`` that no NIC took by address or name, at one rate and
        as many as the ``nics`` NICs without a rate: that rate for each of them."""
        ports = [p for p in self.fabric.ports.values() if p.active and p.key not in taken]
        mine = sorted((p for p in ports if p.link_layer == link_layer), key=lambda p: (natural(p.hca), p.port))
        unknown = [p for p in ports if p.link_layer is None]
        layer = "InfiniBand" if link_layer == "infiniband" else "Ethernet"
        rates = sorted({p.rate[0] for p in mine if p.rate[0]})
        if unknown:
            return RateRule(link_layer, nics, mine, None, f"{len(unknown)} Active port(s) state no link layer "
                                                           f"({unknown[0].label}): which NICs they are is unknown")
        if not mine:
            return RateRule(link_layer, nics, mine, None, f"no Active {layer} port in the node's port reports")
        if len(mine) != nics:
            return RateRule(link_layer, nics, mine, None,
                            f"{len(mine)} Active {layer} ports, but {nics} such NIC(s) without a speed: no "
                            "one-to-one join without PCI addresses (ibdev2netdev -v names them)")
        if len(rates) != 1 or any(not p.rate[0] for p in mine):
            shown = ", ".join(f"{r:g}" for r in rates) or "none"
            return RateRule(link_layer, nics, mine, None,
                            f"the {len(mine)} Active {layer} ports run at different rates ({shown} Gb/s) and name no "
                            "PCI address: which NIC runs at which rate is unknown (ibdev2netdev -v names them)")
        first = mine[0]
        report = first.report_with("rate_gbps")
        fact = NodeFact(rates[0], f"{report.tool or 'port report'}: {len(mine)} Active {layer} ports "
                                  f"({mine[0].label} .. {mine[-1].label}), every one at {rates[0]:g} Gb/s",
                        report.at("rate"), f"count: as many Active {layer} ports at one rate as the file's "
                                           f"{nics} {layer} NIC(s) (no per-NIC join)")
        return RateRule(link_layer, nics, mine, fact, "")


def active_nvlinks(status_gpu) -> int:
    """Active NVLinks of one GPU block of ``nvidia-smi nvlink -s``."""
    return 0 if status_gpu.all_inactive else len(status_gpu.active)


def matrix_row_links(view: MatrixView, label: str, bus_of: dict[str, str] | None = None) -> list[NvLinkSpec]:
    """The NVLinks of the GPU ``label`` of a ``topo -m`` matrix (``matrix_links`` of its NV#
    cells); ``bus_of``: the peers' bus ids (default: their labels, to count the links)."""
    counts = {peer: nv_count(view.rel(label, peer)) for peer in view.gpus if peer != label}
    return matrix_links(counts, bus_of if bus_of is not None else {peer: peer for peer in view.gpus})


def matrix_links(counts: dict[str, int], bus_of: dict[str, str]) -> list[NvLinkSpec]:
    """A matrix row's NV# counts as NCCL's nvlink elements: NV# to every peer adding up to more
    than a GPU has links means NVSwitches (every pair of an HGX board reads NV12/NV18); otherwise
    the counts are direct links to those peers."""
    from topolint.model.facts import GPU_CLASS, NVSWITCH_CLASS

    total = sum(counts.values())
    if total > NVLINKS_PER_GPU_MAX and len({c for c in counts.values() if c}) == 1:
        return [NvLinkSpec(None, max(counts.values()), NVSWITCH_CLASS)]
    return [NvLinkSpec(bus_of[peer], c, GPU_CLASS) for peer, c in counts.items() if c and peer in bus_of]


def natural(name: str) -> tuple:
    """mlx5_2 before mlx5_10."""
    return tuple((0, decimal(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name))


def _merged(specs: tuple) -> tuple:
    """NVSwitch links summed into one (NCCL joins every NVSwitch into one NVS node)."""
    switch = sum(s.count for s in specs if s.target is None)
    others = tuple(s for s in specs if s.target is not None)
    return ((NvLinkSpec(None, switch, "0x068000"),) if switch else ()) + others


def _hex_id(at) -> str | None:
    return hex_pci_id(at[1]) if at else None


_JOINS: dict[int, tuple] = {}
_JOINS_LIMIT = 8  # a cluster run checks one node at a time; its facts are released after


def node_join(node) -> NodeJoin:
    """The node's join, kept for the latest nodes (a rule, the completion and the estimate ask alike)."""
    kept = _JOINS.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    join = NodeJoin(node)
    _JOINS[id(node)] = (node, join)
    while len(_JOINS) > _JOINS_LIMIT:
        _JOINS.pop(next(iter(_JOINS)))
    return join


