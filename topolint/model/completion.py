"""The completed node: a static topology file completed from the node's own outputs, as NCCL
completes it at run time, each filled value an assumption with the fact that supplied it.

NCCL reads a static ``NCCL_TOPO_FILE`` and fills what it does not state from the machine
(src/graph/topo.cc ``ncclTopoGetSystem`` at v2.30.7-1; src/graph/xml.cc):

- ``ncclTopoFillGpu`` puts a ``<gpu dev sm rank gdr>`` under the GPU's ``<pci>`` (``sm`` from
  NVML's compute capability when the file has none, ``ncclTopoGetXmlFromGpu``), and adds the
  GPU's ``<nvlink>`` elements from NVML only when the file has none for it: one per remote
  device, counting the active P2P-capable links (a remote that is not visible, as in a VM, is
  taken as an NVSwitch: target ``fffffff:ffff:ff``);
- ``ncclTopoProcessNet`` -> ``ncclTopoPopulateNics`` -> ``ncclTopoFillNet`` puts a ``<nic><net
  name=...>`` under the device's ``<pci>`` when the file has no net of that name, and
  ``xmlInitAttrInt`` sets ``speed``, ``port``, ``guid``, ``maxconn`` and ``gdr`` from the network
  plugin only where the file does not state them;
- ``ncclTopoGetXmlFromSys`` reads a ``<pci>``'s ``class``, ``vendor``, ``device`` and, when the
  attribute is absent (not when it is empty), ``link_speed`` and ``link_width`` from sysfs
  (``max_link_speed``/``max_link_width`` of the device and of its port, the smaller).

topolint cannot ask the driver; ``complete`` takes the same values from what the node's outputs
say, through the one join of node facts to devices (model/node_join.py), or from options the
user gives (``Overrides``: estimate's ``--nvlinks``, ``--nic-gbps``, ``--gpu-sm``,
``--pcie-gen``). The completed topology is a copy: its facts and its XML text (the filled
elements inserted on the lines of the elements they belong to, so NCCL's own graph,
model/nccl_graph.py, reads what NCCL reads at run time, and every location stays the file's).
A dump is what NCCL already filled: it is never completed. Rules about the file as written
(TOPO*, NVL001 on a static file) read ``Completion.stated``; rules about the node, the estimate
and live read ``Completion.topology`` and name ``Completion.assumptions`` as their evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topolint.model.facts import (
    NVSWITCH_CLASS,
    Gpu,
    Location,
    Net,
    Nic,
    NvLink,
    PciDevice,
    TopologyFile,
    build,
    pci_kind_from_class,
)
from topolint.model.node import gpu_entity, nic_entity, pci_entity
from topolint.model.node_join import LINK_LAYER_OF_CLASS, NodeFact, NvLinkSpec, node_join
from topolint.model.pcie import GT_PER_GENERATION

INVISIBLE_NVLINK_TARGET = "fffffff:ffff:ff"  # xml.cc: a remote NVML cannot name (a VM's NVSwitch)
OPTION = "an option given on the command line"


@dataclass(frozen=True)
class Overrides:
    """Values the user states for what the file leaves out (estimate's options). They apply to
    every element they describe and win over node facts; a node fact that disagrees is noted."""

    nvlinks: int | None = None  # NVLinks per GPU to NVSwitches, for GPUs that state none
    nic_gbps: float | None = None  # speed of every network device without one
    gpu_sm: int | None = None  # SM of GPUs without one
    pcie_gen: int | None = None  # PCIe generation of links without a link_speed
    gpu_sm_source: str | None = None  # what gave gpu_sm when it is not an option (live: the output's GPU model)


@dataclass(frozen=True)
class Assumption:
    """One value the file does not state, filled from a node fact (or an option): never file content."""

    entity: str  # the device it fills: node/gpu/BUS, node/nic/NAME:PORT, node/pci/BUS
    field: str  # sm, nvlinks, gpu, net, speed, class, vendor, device, link_speed, link_width
    value: str
    fact: NodeFact  # what supplied it, where, and how it reached the device

    def text(self) -> str:
        return f"{self.entity}: {self.field} {self.value} assumed from {self.fact.evidence()}"


@dataclass
class Completion:
    node: str
    stated: TopologyFile  # the file as written
    topology: TopologyFile  # the file as NCCL completes it at run time (a copy)
    assumptions: list[Assumption] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # what stays unstated, and why

    @property
    def changed(self) -> bool:
        return bool(self.assumptions)

    def assumed(self, entity: str | None = None, field_name: str | None = None) -> list[Assumption]:
        return [a for a in self.assumptions if (entity is None or a.entity == entity)
                and (field_name is None or a.field == field_name)]

    def notes(self) -> list[str]:
        """One line per assumption kind and per unresolved value, for --verbose and the estimate."""
        return _summary(self) + list(self.unresolved)


def complete(node, topology: TopologyFile, overrides: Overrides | None = None) -> Completion:
    """``topology`` completed from ``node``'s facts (and ``overrides``). Kept per node, topology and
    overrides: the estimate, every rule and live ask alike."""
    overrides = overrides or Overrides()
    key = (id(node), id(topology), overrides)
    kept = _KEPT.get(key)
    if kept is not None and kept[0] is node and kept[1] is topology:
        return kept[2]
    if topology.kind == "dump" or not topology.gpus and not topology.nics and not topology.pci:
        done = Completion(node.name, topology, topology)
    else:
        done = _Completer(node, topology, overrides).run()
    _KEPT[key] = (node, topology, done)
    while len(_KEPT) > _KEPT_LIMIT:
        _KEPT.pop(next(iter(_KEPT)))
    return done


_KEPT: dict[tuple, tuple] = {}
_KEPT_LIMIT = 16


def completed_topologies(node, overrides: Overrides | None = None) -> list[Completion]:
    return [complete(node, t, overrides) for t in node.topologies]


def _option(value, text: str) -> NodeFact:
    return NodeFact(value, text, None, OPTION)


class _Completer:
    def __init__(self, node, topology: TopologyFile, overrides: Overrides):
        self.node, self.stated, self.options = node, topology, overrides
        self.name = node.name
        self.join = node_join(node)
        self.edits = _Edits(topology.text)
        self.done = Completion(node.name, topology, topology)
        self.reasons: dict[str, list[str]] = {}

    def assume(self, entity: str, field_name: str, value, fact: NodeFact) -> None:
        self.done.assumptions.append(Assumption(entity, field_name, str(value), fact))

    def unsure(self, entity: str, reason: str) -> None:
        """A value that stays unstated on ``entity``; devices with one reason share one note."""
        self.reasons.setdefault(reason, []).append(entity)

    def _flush_reasons(self) -> None:
        for reason, entities in self.reasons.items():
            who = entities[0] if len(entities) == 1 else f"{len(entities)} devices ({entities[0]}, ...)"
            self.done.unresolved.append(f"{self.stated.path}: {who}: {reason}")

    def run(self) -> Completion:
        pci, added_gpus, added_nics = self._pci()
        gpus = self._gpus(pci, added_gpus)
        nics = self._nics(pci, added_nics)
        update = {"pci": pci, "gpus": gpus, "nics": nics}
        self._flush_reasons()
        if self.done.assumptions:
            text = self.edits.apply()
            if text is None and self.stated.text:
                self.done.unresolved.append(f"{self.stated.path}: the filled values could not be placed in the "
                                            "file's text; NCCL's own graph of it is not used")
            update["text"] = text or ""
            self.done.topology = self.stated.model_copy(update=update)
        return self.done

    # ---- <pci>: class, ids and links from lspci at the same address ------------------------------
    def _pci(self) -> tuple[list[PciDevice], list[Gpu], list[Nic]]:
        out, gpus, nics = [], [], []
        by_bus = self.stated.pci_by_bus()
        parents = {p.parent_bus_id for p in self.stated.pci if p.parent_bus_id}
        for device in self.stated.pci:
            at = self.join.lspci_at.get(device.bus_id)
            lspci = at[1] if at else None
            update, attrs = {}, {}
            entity = pci_entity(self.name, device.bus_id)
            if lspci is not None and "class" not in device.attrs and lspci.class_code:
                value = f"0x{lspci.class_code.lower()}00"
                update["pci_class"], attrs["class"] = value, value
                self.assume(entity, "class", value, NodeFact(value, f"lspci: {device.bus_id} class "
                                                                   f"{lspci.class_code}", lspci.loc,
                                                             f"PCI address {device.bus_id} (lspci)"))
                kind = pci_kind_from_class(value)
                if device.kind in ("unknown", "other") and device.bus_id not in parents:
                    update["kind"] = kind
                    if kind == "gpu":
                        gpus.append(build(Gpu, bus_id=device.bus_id, dev=None, sm=None, rank=None, gdr=None,
                                          cpu_index=device.cpu_index, nvlinks=[], c2c=[], attrs={}, loc=device.loc))
                    elif kind == "nic":
                        nics.append(build(Nic, bus_id=device.bus_id, cpu_index=device.cpu_index, nets=[],
                                          loc=device.loc))
            if lspci is not None:
                for name, value in (("vendor", lspci.vendor_id), ("device", lspci.device_id)):
                    if name not in device.attrs and value:
                        update[name] = attrs[name] = f"0x{value.lower()}"
            speed, width, fact = self._link(device, lspci, by_bus)
            if speed is not None and "link_speed" not in device.attrs:
                update["link_speed"] = attrs["link_speed"] = speed
                self.assume(entity, "link_speed", speed, fact)
            if width is not None and "link_width" not in device.attrs:
                update["link_width"] = attrs["link_width"] = width
                self.assume(entity, "link_width", width, fact)
            if update:
                self.edits.attributes(device.loc, "pci", attrs)
                device = device.model_copy(update={**update, "attrs": {**device.attrs, **attrs}})
            out.append(device)
        return out, gpus, nics

    def _link(self, device: PciDevice, lspci, by_bus) -> tuple[str | None, str | None, NodeFact | None]:
        """What NCCL reads from sysfs for an absent link_speed/link_width: the device's and its
        port's maximum, the smaller (lspci LnkCap); --pcie-gen stands for it without lspci."""
        if "link_speed" in device.attrs and "link_width" in device.attrs:
            return None, None, None
        if lspci is not None and lspci.lnk_cap is not None and lspci.lnk_cap.speed_gts:
            cap = lspci.lnk_cap
            port = self.join.lspci_at.get(lspci.parent or "")
            port_cap = port[1].lnk_cap if port else None
            gts = min(cap.speed_gts, port_cap.speed_gts) if port_cap and port_cap.speed_gts else cap.speed_gts
            lanes = min(cap.width or 0, port_cap.width or 0) if port_cap and port_cap.width else cap.width
            text = f"lspci: {device.bus_id} LnkCap {cap.speed_text or gts} x{cap.width or '?'}" + (
                f", its port {port[1].address} LnkCap {port_cap.speed_text} x{port_cap.width or '?'}"
                if port_cap else "")
            fact = NodeFact(gts, text, cap.loc, f"PCI address {device.bus_id} (lspci)")
            return f"{gts:.1f} GT/s PCIe", (str(lanes) if lanes else None), fact
        if self.options.pcie_gen:
            gen = self.options.pcie_gen
            return f"{GT_PER_GENERATION[gen]} GT/s PCIe", None, _option(gen, f"--pcie-gen {gen}")
        return None, None, None

    # ---- GPUs: <gpu>, sm and nvlinks -----------------------------------------------------------------
    def _gpus(self, pci: list[PciDevice], added: list[Gpu]) -> list[Gpu]:
        stated_by_bus = {g.bus_id: g for g in self.stated.gpus}
        for gpu in added:
            stated_by_bus.setdefault(gpu.bus_id, gpu)
        order = [p.bus_id for p in pci if p.bus_id in stated_by_bus]
        order += [g.bus_id for g in self.stated.gpus if g.bus_id not in order]
        gpus = [stated_by_bus[bus] for bus in order]
        probe = self.stated.model_copy(update={"gpus": gpus})
        facts = self.join.gpus(probe)
        pci_by_bus = {p.bus_id: p for p in pci}
        out = [self._gpu(gpu, facts[gpu.bus_id], pci_by_bus.get(gpu.bus_id)) for gpu in gpus]
        self._disagreements(facts)
        return out

    def _gpu(self, gpu: Gpu, facts, pci: PciDevice | None) -> Gpu:
        entity = gpu_entity(self.name, gpu.bus_id)
        # A <pci> of a GPU class with no <gpu> child (the parser's GPU fact is the <pci> itself).
        pci_only = bool(self.stated.text) and not gpu.attrs and pci is not None and gpu.loc is pci.loc
        update: dict = {}
        sm, sm_fact = gpu.sm, None
        if sm is None and "sm" not in gpu.attrs:
            if self.options.gpu_sm:
                said = self.options.gpu_sm_source or f"--gpu-sm {self.options.gpu_sm}"
                sm, sm_fact = self.options.gpu_sm, _option(self.options.gpu_sm, said)
            elif facts.model is not None:
                sm, sm_fact = facts.model.value.sm, facts.model
            if sm_fact is not None:
                update["sm"] = sm
                self.assume(entity, "sm", sm, sm_fact)
            else:
                self.unsure(entity, "no SM stated and no node fact gives the GPU model (nvidia-smi, lspci -nn, "
                                    "hwloc; the estimate takes --gpu-sm)")
        links = None
        if not gpu.nvlinks:
            links = self._nvlinks(entity, facts)
            if links is not None:
                update["nvlinks"] = [build(NvLink, target=s.target or INVISIBLE_NVLINK_TARGET, count=s.count, tclass=s.tclass,
                                           attrs=_nvlink_attrs(s), loc=gpu.loc) for s in links]
        attrs = {}
        if not pci_only:
            if "sm" in update:
                attrs["sm"] = str(sm)
            if gpu.attrs and "rank" not in gpu.attrs and facts.index is not None:
                # ncclTopoGetSystem sets rank (and, if unset, gdr) on each rank's <gpu>.
                update["rank"] = gpu.dev if gpu.dev is not None else facts.index
                attrs["rank"] = str(update["rank"])
                if "gdr" not in gpu.attrs:
                    attrs["gdr"], update["gdr"] = "1", True
                self.assume(entity, "rank", f"{attrs['rank']}{', gdr=1' if 'gdr' in attrs else ''}",
                            NodeFact(attrs["rank"], "one rank per GPU, numbered as the GPUs"
                                     + ("; GPUDirect RDMA supported" if "gdr" in attrs else ""), None,
                                     "NCCL's rank of a <gpu> (topo.cc ncclTopoGetSystem)"))
            if attrs:
                self.edits.attributes(gpu.loc, "gpu", attrs)
            if links:
                self.edits.children(gpu.loc, "gpu", "".join(_nvlink_xml(s) for s in links))
        elif sm is not None and facts.index is not None:
            # A <pci> of a GPU class with no <gpu>: NCCL adds one for each rank's GPU.
            attrs = {"dev": str(facts.index), "sm": str(sm), "rank": str(facts.index), "gdr": "1"}
            update.update(dev=facts.index, rank=facts.index, gdr=True)
            self.assume(entity, "gpu", "<gpu> with dev and rank = its GPU index, gdr=1",
                        NodeFact(facts.index, f"the GPU's index in {facts.index_join}, one rank per GPU, "
                                              "GPUDirect RDMA supported", None,
                                 "NCCL's fill of a <pci> GPU without <gpu> (xml.cc ncclTopoFillGpu)"))
            inner = "".join(_nvlink_xml(s) for s in links or ())
            self.edits.children(gpu.loc, "pci", _element("gpu", attrs, inner))
        elif update:
            self.unsure(entity, "a <pci> GPU without <gpu>: NCCL adds it with the GPU's SM and index, which the "
                                "node's facts do not give; its links are estimated only")
        if not update:
            return gpu
        return gpu.model_copy(update={**update, "attrs": {**gpu.attrs, **attrs}})

    def _nvlinks(self, entity: str, facts) -> tuple[NvLinkSpec, ...] | None:
        if self.options.nvlinks:
            count = self.options.nvlinks
            self.assume(entity, "nvlinks", f"{count} to NVSwitches", _option(count, f"--nvlinks {count}"))
            return (NvLinkSpec(None, count, NVSWITCH_CLASS),)
        if facts.nvlinks is not None:
            links = facts.nvlinks.value
            self.assume(entity, "nvlinks", _links_text(links), facts.nvlinks)
            return links
        active, model = facts.active_nvlinks, facts.model.value if facts.model is not None else None
        if active is not None and (active.value == 0 or (model is not None and model.nvswitch_links)):
            links = (NvLinkSpec(None, active.value, NVSWITCH_CLASS),) if active.value else ()
            fact = active if not active.value else NodeFact(
                active.value, f"{active.text}; {model.name} is an NVSwitch board part", active.loc, active.join)
            self.assume(entity, "nvlinks", _links_text(links), fact)
            return links
        self.unsure(entity, "no nvlink stated; NCCL adds the GPU's NVLinks from the driver at run time, which no "
                            "input shows (nvidia-smi topo -m, nvidia-smi nvlink -s with the GPU model, hwloc; the "
                            "estimate takes --nvlinks N)")
        return None

    def _disagreements(self, facts: dict) -> None:
        """An option that overrides a node fact saying otherwise."""
        if self.options.gpu_sm:
            other = {f.model.value.sm for f in facts.values() if f.model is not None} - {self.options.gpu_sm}
            if other:
                said = self.options.gpu_sm_source or f"--gpu-sm {self.options.gpu_sm}"
                self.done.unresolved.append(f"{said} given; the node's facts say SM"
                                            f"{'/'.join(map(str, sorted(other)))}")
        if self.options.nvlinks:
            seen = {sum(s.count for s in f.nvlinks.value) for f in facts.values() if f.nvlinks is not None}
            seen |= {f.active_nvlinks.value for f in facts.values() if f.active_nvlinks is not None}
            other = seen - {self.options.nvlinks}
            if other:
                self.done.unresolved.append(f"--nvlinks {self.options.nvlinks} given; the node's facts show "
                                            f"{'/'.join(map(str, sorted(other)))} NVLinks per GPU")

    # ---- NICs: <nic><net>, speed ------------------------------------------------------------------
    def _nics(self, pci: list[PciDevice], added: list[Nic]) -> list[Nic]:
        nics = list(self.stated.nics) + added
        probe = self.stated.model_copy(update={"nics": nics, "pci": pci})
        facts = self.join.nics(probe)
        next_dev = max((n.dev for nic in nics for n in nic.nets if n.dev is not None), default=-1) + 1
        taken = {p.key for f in facts for p in (f.ports or [])}
        waiting: dict[str, list[tuple[int, int | None]]] = {}  # link layer -> (nic index, net index or None)
        out = list(nics)
        for i, (nic, nf) in enumerate(zip(nics, facts)):
            if nic.nets:
                nets = list(nic.nets)
                for j, net in enumerate(nets):
                    if net.speed_mbps is None and "speed" not in net.attrs:
                        fact = self._speed(net, nf)
                        if fact is not None:
                            nets[j] = self._with_speed(nic, net, fact)
                        else:
                            waiting.setdefault(_layer(nf), []).append((i, j))
                out[i] = nic.model_copy(update={"nets": nets}) if nets != nic.nets else nic
            elif nf.pci_class is not None and nf.pci_class.startswith("0x02"):
                made, next_dev = self._nets_by_address(nic, nf, next_dev)
                if made is not None:
                    out[i] = made
                else:
                    waiting.setdefault(_layer(nf), []).append((i, None))
        for layer, members in waiting.items():
            fact = self._rule(layer, len(members), taken)
            for i, j in members:
                if fact is None:
                    continue
                nic = out[i]
                if j is None:
                    net, next_dev = self._new_net(nic, None, 1, fact, _rdma(layer), next_dev)
                    out[i] = self._with_nets(nic, [net])
                else:
                    nets = list(nic.nets)
                    nets[j] = self._with_speed(nic, nets[j], fact)
                    out[i] = nic.model_copy(update={"nets": nets})
        return out

    def _speed(self, net: Net, nf) -> NodeFact | None:
        if self.options.nic_gbps:
            return _option(self.options.nic_gbps, f"--nic-gbps {self.options.nic_gbps:g}")
        port = self.join.fabric.ports.get((net.name, net.port or 1)) if net.name else None
        if port is not None and port.active and port.rate[0]:
            report = port.report_with("rate_gbps") if port.value("rate_gbps") is not None else None
            loc = report.at("rate") if report is not None else port.link.at("speed")
            return NodeFact(port.rate[0], f"{port.rate[1]}: {port.label} Active at {port.rate[0]:g} Gb/s", loc,
                            f"HCA name {net.name}")
        link = self.join.fabric.ethtool_of(net.name)
        if link is not None and link.speed_mbps:
            return NodeFact(link.speed_mbps / 1000, f"ethtool: {net.name} Speed {link.speed_text or link.speed_mbps}",
                            link.at("speed"), f"interface name {net.name}")
        return None

    def _with_speed(self, nic: Nic, net: Net, fact: NodeFact) -> Net:
        mbps = round(fact.value * 1000)
        self.assume(nic_entity(self.name, net.name or nic.bus_id or "nic", net.port), "speed", f"{mbps} Mb/s", fact)
        self.edits.attributes(net.loc, "net", {"speed": str(mbps)})
        return net.model_copy(update={"speed_mbps": mbps, "attrs": {**net.attrs, "speed": str(mbps)}})

    def _nets_by_address(self, nic: Nic, nf, next_dev: int) -> tuple[Nic | None, int]:
        """A NIC <pci> without <nic>: one net per Active port of the HCA at its address (NCCL's IB
        plugin lists Active ports only), or the --nic-gbps speed."""
        if self.options.nic_gbps:
            fact = _option(self.options.nic_gbps, f"--nic-gbps {self.options.nic_gbps:g}")
            name = nf.hca.value if nf.hca is not None else None
            net, next_dev = self._new_net(nic, name, 1, fact, _rdma(_layer(nf)) or nf.hca is not None, next_dev)
            return self._with_nets(nic, [net]), next_dev
        if nf.hca is None:
            return None, next_dev
        active = [p for p in nf.ports or [] if p.active]
        if not active:
            state = ", ".join(f"{p.label} {p.state or '?'}" for p in nf.ports or []) or "no port report"
            self.done.unresolved.append(f"{pci_entity(self.name, nic.bus_id)}: {nf.hca.value} ({nf.hca.evidence()}) "
                                        f"has no Active port ({state}): NCCL lists no network device there")
            return None, next_dev
        nets = []
        for port in active:
            rate = port.rate[0]
            if not rate:
                self.done.unresolved.append(f"{nf.hca.value} {port.label}: Active, no rate known")
                continue
            report = port.report_with("rate_gbps") if port.value("rate_gbps") is not None else None
            loc = report.at("rate") if report is not None else port.link.at("speed")
            fact = NodeFact(rate, f"{port.rate[1]}: {port.label} Active at {rate:g} Gb/s; {nf.hca.text}", loc,
                            nf.hca.join)
            net, next_dev = self._new_net(nic, port.hca, port.port, fact, True, next_dev)
            nets.append(net)
        if not nets:
            return None, next_dev
        return self._with_nets(nic, nets), next_dev

    def _new_net(self, nic: Nic, name: str | None, port: int, fact: NodeFact, gdr: bool, dev: int):
        mbps = round(fact.value * 1000)
        attrs = {**({"name": name} if name else {}), "dev": str(dev), "speed": str(mbps), "port": str(port),
                 **({"gdr": "1"} if gdr else {})}
        entity = nic_entity(self.name, name or nic.bus_id or "nic", port)
        self.assume(entity, "net", f"{name or 'a network device'} port {port} at {mbps} Mb/s"
                                   f"{', GPUDirect RDMA' if gdr else ''}", fact)
        return build(Net, name=name, dev=dev, speed_mbps=mbps, port=port, gdr=gdr or None, guid=None, attrs=attrs,
                     loc=nic.loc), dev + 1

    def _with_nets(self, nic: Nic, nets: list[Net]) -> Nic:
        """A NIC <pci> given its <nic> (one, holding every net, as ncclTopoFillNet adds them)."""
        self.edits.children(nic.loc, "pci", _element("nic", {}, "".join(_element("net", n.attrs) for n in nets)))
        return nic.model_copy(update={"nets": nets})

    def _rule(self, layer: str | None, count: int, taken: set) -> NodeFact | None:
        if self.options.nic_gbps:
            return _option(self.options.nic_gbps, f"--nic-gbps {self.options.nic_gbps:g}")
        if layer is None:
            self.done.unresolved.append(f"{count} network device(s) of a class other than InfiniBand (0x0207) or "
                                        "Ethernet (0x0200) without a speed: no port joins them")
            return None
        if not self.join.fabric.ports:
            return None  # no port report at all: the estimate says which input would settle it
        rule = self.join.rate_rule(layer, count, taken)
        if rule.rate is None:
            self.done.unresolved.append(f"{count} {layer} NIC(s) without a speed: {rule.note}; not joined")
        return rule.rate


def _layer(nf) -> str | None:
    return LINK_LAYER_OF_CLASS.get((nf.pci_class or "")[:6])


def _rdma(layer: str | None) -> bool:
    return layer == "infiniband"


def _links_text(links: tuple) -> str:
    if not links:
        return "none (no active NVLink)"
    switch = [s for s in links if s.target is None]
    if switch and len(links) == 1:
        return f"{switch[0].count} to NVSwitches"
    return ", ".join(f"{s.count} to {s.target or 'NVSwitches'}" for s in links)


def _nvlink_attrs(spec: NvLinkSpec) -> dict[str, str]:
    return {"target": spec.target or INVISIBLE_NVLINK_TARGET, "count": str(spec.count), "tclass": spec.tclass}


def _nvlink_xml(spec: NvLinkSpec) -> str:
    return _element("nvlink", _nvlink_attrs(spec))


def _escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _element(tag: str, attrs: dict[str, str], inner: str = "") -> str:
    text = "".join(f' {k}="{_escape(v)}"' for k, v in attrs.items())
    return f"<{tag}{text}>{inner}</{tag}>" if inner else f"<{tag}{text}/>"


class _Edits:
    """Insertions into a topology file's text that keep every line where it was: attributes right
    after an element's tag name, children right after its start tag (a self-closing tag opened)."""

    def __init__(self, text: str):
        self.text = text
        self._starts: list[int] | None = None
        self.attrs: dict[int, tuple[str, dict]] = {}
        self.kids: dict[int, tuple[str, list[str]]] = {}
        self.failed = False

    @property
    def starts(self) -> list[int]:
        """Where each line starts (found when the first edit is placed)."""
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self._starts

    def _offset(self, loc: Location, tag: str) -> int | None:
        if not self.text or loc is None or loc.line > len(self.starts):
            return None
        start = self.starts[loc.line - 1]
        if loc.column:
            offset = start + loc.column - 1
            return offset if self.text.startswith(f"<{tag}", offset) else None
        end = self.starts[loc.line] if loc.line < len(self.starts) else len(self.text)
        found = [m.start() for m in re.compile(f"<{re.escape(tag)}(?![A-Za-z0-9_])").finditer(self.text, start, end)]
        return found[0] if len(found) == 1 else None

    def attributes(self, loc: Location, tag: str, attrs: dict[str, str]) -> None:
        offset = self._offset(loc, tag)
        if offset is None:
            self.failed = True
            return
        self.attrs.setdefault(offset, (tag, {}))[1].update(attrs)

    def children(self, loc: Location, tag: str, xml: str) -> None:
        offset = self._offset(loc, tag)
        if offset is None:
            self.failed = True
            return
        self.kids.setdefault(offset, (tag, []))[1].append(xml)

    def _tag_end(self, offset: int) -> int | None:
        quote = None
        for i in range(offset, len(self.text)):
            ch = self.text[i]
            if quote:
                quote = None if ch == quote else quote
            elif ch in "\"'":
                quote = ch
            elif ch == ">":
                return i
        return None

    def apply(self) -> str | None:
        if self.failed or not self.text:
            return None
        inserts: list[tuple[int, int, str]] = []  # (offset, replace this many chars, with)
        for offset, (tag, attrs) in self.attrs.items():
            inserts.append((offset + 1 + len(tag), 0, "".join(f' {k}="{_escape(v)}"' for k, v in attrs.items())))
        for offset, (tag, xml) in self.kids.items():
            end = self._tag_end(offset)
            if end is None:
                return None
            body = "".join(xml)
            if self.text[end - 1] == "/":
                inserts.append((end - 1, 2, f">{body}</{tag}>"))
            else:
                inserts.append((end + 1, 0, body))
        text = self.text
        for offset, length, value in sorted(inserts, key=lambda x: -x[0]):
            text = text[:offset] + value + text[offset + length:]
        return text


def _summary(done: Completion) -> list[str]:
    """The assumptions grouped by what they fill and the file that supplied them (8 GPUs filled
    from one matrix is one line, naming the first fact), in a stable order."""
    groups: dict[tuple, list[Assumption]] = {}
    for a in done.assumptions:
        source = a.fact.loc.path if a.fact.loc is not None else (a.fact.join, a.fact.text)
        groups.setdefault((a.field, a.value, source), []).append(a)
    lines = []
    for (name, value, _), members in groups.items():
        first = members[0]
        who = first.entity if len(members) == 1 else f"{len(members)} devices ({first.entity}, ...)"
        fact = first.fact.text if first.fact.join == OPTION else first.fact.evidence()
        more = f" (and {len(members) - 1} more like it)" if len(members) > 1 and first.fact.join != OPTION else ""
        lines.append(f"{done.stated.path}: {who}: {name} {value}, not in the file: assumed from {fact}{more}")
    return lines
