"""One node's fabric, joined: each RDMA port with its netdev, link speed, GIDs, QoS and the GPUs it
serves; interfaces with their addresses and routes; mounts with the interface that reaches
their server. Rules read this view; nothing here re-parses.

Joins (issue 10):
- HCA port -> netdev: ibdev2netdev, else the netdev column of show_gids / sysfs ``gid_attrs/ndevs``;
- netdev -> speed: ethtool; -> addresses: ip addr; server -> interface: ip route, else the
  interface whose subnet holds ``clientaddr=``;
- HCA port -> PCIe tree: the NCCL topology dump's ``net`` of that name and port sits under a
  ``pci`` device (its bus id); the GPUs that pick it as their nearest NIC are the ones it serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from topolint.model.fabric import (
    EcnSetting,
    EthtoolLink,
    Gid,
    IbPort,
    Interface,
    Mount,
    QosPort,
    Route,
    TrafficClass,
)
from topolint.model.numbers import ipv4_address, ipv4_in, ipv4_network

RDMA_TOOLS = ("ibstat", "ibstatus", "ibv_devinfo", "ibdev2netdev", "show_gids")
# Tool order when several report one port: ibv_devinfo knows MTUs, ibstat rates, ibstatus subnets.
_TOOL_ORDER = {"ibstat": 0, "ibv_devinfo": 1, "ibstatus": 2}


@dataclass
class PortView:
    hca: str
    port: int
    reports: list[IbPort] = field(default_factory=list)  # one per tool that listed the port
    netdev: str | None = None
    netdev_source: object = None  # the Location that tied the port to its netdev
    gids: list[Gid] = field(default_factory=list)
    link: EthtoolLink | None = None  # ethtool of its netdev: the speed when no port report gives a rate

    @property
    def rate(self) -> tuple[float | None, str]:
        """(Gb/s, where it comes from): the port report's Rate, else ethtool's Speed of its netdev."""
        rate = self.value("rate_gbps")
        if rate is not None:
            return rate, self.report_with("rate_gbps").tool or "port report"
        if self.link is not None and self.link.speed_mbps:
            return self.link.speed_mbps / 1000, f"ethtool {self.netdev}"
        return None, "no rate known"

    def value(self, name: str):
        """The first report that knows ``name`` (state, rate_gbps, active_mtu...)."""
        for report in self.reports:
            found = getattr(report, name)
            if found is not None:
                return found
        return None

    def report_with(self, name: str) -> IbPort:
        return next((r for r in self.reports if getattr(r, name) is not None), self.reports[0])

    @property
    def key(self) -> tuple[str, int]:
        return (self.hca, self.port)

    @property
    def state(self) -> str | None:
        return self.value("state")

    @property
    def active(self) -> bool:
        return self.state == "active"

    @property
    def link_layer(self) -> str | None:
        layer = self.value("link_layer")
        if layer is None and self.gids:  # show_gids: a RoCE port has v2 GIDs or a netdev on each
            layer = "ethernet" if any(g.version == "v2" for g in self.gids) else None
        return layer

    @property
    def subnet(self) -> str | None:
        """The fabric this port is on: an IB subnet prefix (ibstatus, or the first 64 bits of its
        GIDs), or None when unknown. RoCE L2 networks come from the netdev's IPv4 subnet."""
        prefix = self.value("subnet_prefix")
        if prefix:
            return prefix
        if self.link_layer == "infiniband":
            prefixes = {":".join(g.gid.split(":")[:4]) for g in self.gids if g.gid.count(":") == 7}
            return prefixes.pop() if len(prefixes) == 1 else None
        return None

    @property
    def label(self) -> str:
        return f"{self.hca} port {self.port}"


class FabricView:
    def __init__(self, node, version=None):
        self.node = node
        self.version = version
        self.files = node.fabric

    def _of(self, kind: str) -> list:
        return [f for f in self.files if f.KIND == kind or kind in f.kinds()]

    # ---- ports ----------------------------------------------------------------------------------
    @cached_property
    def ports(self) -> dict[tuple[str, int], PortView]:
        views: dict[tuple[str, int], PortView] = {}
        for ports_file in sorted(self._of("ports"), key=lambda f: _TOOL_ORDER.get(f.tool, 9)):
            for report in ports_file.ports:
                views.setdefault((report.hca, report.port), PortView(report.hca, report.port)).reports.append(report)
        for gid in self.gids:
            view = views.get((gid.hca, gid.port))
            if view is not None:
                view.gids.append(gid)
        links = {link.interface: link for link in self.ethtool_links if link.interface}
        for view in views.values():
            view.netdev, view.netdev_source = self._netdev_of(view.hca, view.port)
            view.link = links.get(view.netdev)
        return views

    @cached_property
    def tool_failures(self) -> list:
        """Lines where an RDMA tool said it failed (ibpanic, "Failed to get IB devices list"), and
        the bundle manifest's lines for RDMA tools that failed, timed out, were missing or refused."""
        found = [loc for f in self._of("ports") for loc in f.failures]
        bundle = getattr(self.node, "bundle", None)
        if bundle is not None:
            found += [c.loc for c in bundle.failed if c.argv and c.argv[0] in RDMA_TOOLS]
        return found

    @cached_property
    def gids(self) -> list[Gid]:
        return [g for f in self._of("gids") for g in f.gids]

    @cached_property
    def _netdevs(self) -> dict[tuple[str, int], tuple[str, object]]:
        """(hca, port) -> (netdev, the line that says so): ibdev2netdev first, then the GID tables."""
        found: dict[tuple[str, int], tuple[str, object]] = {}
        for netdev_map in self._of("netdev-map"):
            for link in netdev_map.links:
                if link.netdev:
                    found.setdefault((link.hca, link.port), (link.netdev, link.loc))
        for gid in self.gids:
            if gid.netdev:
                found.setdefault((gid.hca, gid.port), (gid.netdev, gid.loc))
        return found

    def _netdev_of(self, hca: str, port: int):
        return self._netdevs.get((hca, port), (None, None))

    def fabric_of(self, port: PortView) -> tuple[str, str] | None:
        """(link layer, subnet) of a port: an IB subnet prefix, or the IPv4 network of a RoCE port's
        netdev (ip addr); None when the inputs do not say, and then the port is compared with none."""
        if port.link_layer == "infiniband" and port.subnet:
            return ("infiniband", port.subnet)
        if port.link_layer == "ethernet" and port.netdev in self.interfaces:
            for a in self.interfaces[port.netdev].addresses:
                network = ipv4_network(f"{a.address}/{a.prefix}") if a.family == "inet" and a.prefix else None
                if network is not None:
                    base, length = network
                    return ("ethernet", f"{base >> 24}.{base >> 16 & 255}.{base >> 8 & 255}.{base & 255}/{length}")
        return None

    @cached_property
    def _ports_by_netdev(self) -> dict[str, PortView]:
        found: dict[str, PortView] = {}
        for view in self.ports.values():
            if view.netdev:
                found.setdefault(view.netdev, view)
        return found

    def hca_of_netdev(self, netdev: str) -> PortView | None:
        return self._ports_by_netdev.get(netdev)

    @cached_property
    def _ports_by_hca(self) -> dict[str, PortView]:
        found: dict[str, PortView] = {}
        for view in self.ports.values():
            found.setdefault(view.hca, view)
        return found

    def first_port_of_hca(self, hca: str) -> PortView | None:
        """The HCA's first port, in the order the port reports list them."""
        return self._ports_by_hca.get(hca)

    @property
    def roce(self) -> bool:
        """Some RDMA port runs over Ethernet (or the node has RoCE QoS settings and no IB port)."""
        layers = {p.link_layer for p in self.ports.values()}
        if "ethernet" in layers:
            return True
        return bool(self._of("qos")) and "infiniband" not in layers

    @property
    def infiniband_only(self) -> bool:
        layers = {p.link_layer for p in self.ports.values()} - {None}
        return layers == {"infiniband"}

    # ---- Ethernet links, interfaces, routes ------------------------------------------------------
    @cached_property
    def ethtool_links(self) -> list[EthtoolLink]:
        return [link for f in self._of("ethtool") for link in f.links]

    @cached_property
    def _ethtool_by_interface(self) -> dict[str, EthtoolLink]:
        found: dict[str, EthtoolLink] = {}
        for link in self.ethtool_links:
            if link.interface:
                found.setdefault(link.interface, link)
        return found

    def ethtool_of(self, netdev: str | None) -> EthtoolLink | None:
        return self._ethtool_by_interface.get(netdev) if netdev else None

    @cached_property
    def interfaces(self) -> dict[str, Interface]:
        found: dict[str, Interface] = {}
        for f in self._of("interfaces"):
            for interface in f.interfaces:
                found.setdefault(interface.name, interface)
        return found

    @cached_property
    def routes(self) -> list[Route]:
        return [r for f in self._of("routes") for r in f.routes]

    @cached_property
    def _interfaces_by_address(self) -> dict[str, Interface]:
        found: dict[str, Interface] = {}
        for interface in self.interfaces.values():
            for a in interface.addresses:
                found.setdefault(a.address, interface)
        return found

    def interface_with_address(self, address: str) -> Interface | None:
        return self._interfaces_by_address.get(address)

    def route_to(self, address: str) -> tuple[str | None, str]:
        """(interface, why) that reaches ``address``: the longest matching route, else the
        interface whose own subnet holds it. (None, why) when nothing says."""
        target = ipv4_address(address)
        if target is None:
            return None, f"{address} is not an IPv4 address"
        best: tuple[int, Route] | None = None
        for route in self.routes:
            network = (0, 0) if route.destination == "default" else ipv4_network(route.destination)
            if network is not None and route.device and ipv4_in(target, network):
                if best is None or network[1] > best[0]:
                    best = (network[1], route)
        if best is not None:
            route = best[1]
            return route.device, f"{route.loc.path}:{route.loc.line}: route {route.destination} dev {route.device}"
        for interface in self.interfaces.values():
            for a in interface.addresses:
                network = ipv4_network(f"{a.address}/{a.prefix}") if a.family == "inet" and a.prefix is not None else None
                if network is not None and network[1] > 0 and ipv4_in(target, network):
                    return interface.name, f"{a.loc.path}:{a.loc.line}: {interface.name} has {a.address}/{a.prefix}"
        return None, f"no route or interface subnet holds {address}"

    # ---- RoCE QoS -------------------------------------------------------------------------------
    @cached_property
    def qos_ports(self) -> list[QosPort]:
        return [q for f in self._of("qos") if hasattr(f, "ports") for q in f.ports]

    @cached_property
    def ecn(self) -> list[EcnSetting]:
        return [e for f in self._of("qos") for e in getattr(f, "ecn", [])]

    @cached_property
    def traffic_classes(self) -> list[TrafficClass]:
        return [t for f in self._of("qos") for t in getattr(f, "traffic_classes", [])]

    @cached_property
    def _ecn_by_key(self) -> dict[tuple[str | None, int], list[EcnSetting]]:
        """(interface, priority) -> its ECN lines in order, and (None, priority) -> every
        interface's: each call a look-up, not a scan of every setting (a dump of many ports)."""
        found: dict[tuple[str | None, int], list[EcnSetting]] = {}
        for e in self.ecn:
            if e.interface is not None:
                found.setdefault((e.interface, e.priority), []).append(e)
            found.setdefault((None, e.priority), []).append(e)
        return found

    def ecn_of(self, interface: str) -> list[EcnSetting]:
        """The ECN lines of ``interface``, in order."""
        return self._ecn_by_interface.get(interface, [])

    @cached_property
    def _ecn_by_interface(self) -> dict[str, list[EcnSetting]]:
        found: dict[str, list[EcnSetting]] = {}
        for e in self.ecn:
            found.setdefault(e.interface, []).append(e)
        return found

    def ecn_enabled(self, interface: str | None, priority: int) -> tuple[bool | None, list[EcnSetting]]:
        """Whether DCQCN is on for ``priority`` (both roce_np and roce_rp where shown), and the lines."""
        shown = list(self._ecn_by_key.get((interface, priority), ()))
        if not shown:
            return None, []
        return all(e.enabled for e in shown), shown

    def traffic_class_of(self, hca: str | None) -> TrafficClass | None:
        """The last ``tc/N/traffic_class`` value read for the HCA (a session may set it twice)."""
        return self._last_traffic_class.get(hca)

    @cached_property
    def _last_traffic_class(self) -> dict[str | None, TrafficClass]:
        """HCA -> the last traffic class read for it; None -> the last of all."""
        found: dict[str | None, TrafficClass] = {}
        for t in self.traffic_classes:
            found[t.hca] = found[None] = t
        return found

    # ---- mounts ---------------------------------------------------------------------------------
    @cached_property
    def mounts(self) -> list[Mount]:
        return [m for f in self._of("mounts") for m in f.mounts]

    # ---- the PCIe tree (NCCL topology dumps) ---------------------------------------------------------
    def gpus_served(self, context, hca: str, port: int) -> tuple[list[str], object, str | None]:
        """GPU labels ("GPU 0 (0000:18:00.0)") whose nearest NIC is this HCA port in an NCCL dump,
        the dump's ``net`` location and the NIC's PCI address; ([], None, None) when no dump names it."""
        for topology in self.node.topologies:
            if topology.kind != "dump":
                continue
            system = context.system(topology)
            for key, (nic, net) in system.nets.items():
                if net.name != hca or (net.port is not None and net.port != port):
                    continue
                gpus = [gpu for gpu in topology.gpus
                        if any(k == key for k, _ in system.nearest_nets(gpu))]
                labels = [f"GPU {g.dev if g.dev is not None else '?'} ({g.bus_id})" for g in gpus]
                return labels, net.loc, nic.bus_id
        return self._gpus_under_switch(hca)

    # ---- the PCIe tree without a dump: ibdev2netdev -v / hwloc give the HCA's address, lspci the tree
    def pci_of(self, hca: str) -> tuple[str | None, object]:
        return self._pci_by_hca.get(hca, (None, None))

    @cached_property
    def _pci_by_hca(self) -> dict[str, tuple[str, object]]:
        """HCA -> (PCI address, its line): ibdev2netdev -v first, then hwloc's OS devices."""
        found: dict[str, tuple[str, object]] = {}
        for netdev_map in self._of("netdev-map"):
            for link in netdev_map.links:
                if link.pci:
                    found.setdefault(link.hca, (link.pci, link.loc))
        hwloc: dict[str, tuple[str, object]] = {}
        for topology in getattr(self.node, "hwloc", []):
            for device in topology.os_devices:
                if device.bus_id:
                    hwloc.setdefault(device.name, (device.bus_id, device.loc))
        return {**hwloc, **found}

    @cached_property
    def _lspci_devices(self) -> dict:
        return {d.address: d for f in getattr(self.node, "lspci", []) for d in f.devices if d.address}

    def _gpus_under_switch(self, hca: str) -> tuple[list[str], object, str | None]:
        """GPUs that share a PCIe switch with the HCA in lspci's tree (the path NCCL calls PIX or
        PXB): those pick it as their nearest NIC. ([], None, address) when lspci does not say."""
        address, loc = self.pci_of(hca)
        devices = self._lspci_devices
        if address is None or address not in devices:
            return [], None, address

        def switches(start: str) -> set[str]:
            """Bridges above a device, up to (not including) its root port."""
            found, current = set(), devices.get(start)
            while current is not None and current.parent and len(found) < 32:
                parent = devices.get(current.parent)
                if parent is None or (parent.port_type or "").startswith("Root"):
                    break
                found.add(parent.address)
                current = parent
            return found

        mine = switches(address)
        gpus = [d for d in devices.values() if (d.class_code or "").startswith(("0300", "0302"))
                or (d.class_name or "") in ("3D controller", "VGA compatible controller") and (d.vendor_id or "10de") == "10de"]
        served = sorted(d.address for d in gpus if mine & switches(d.address))
        return [f"the GPU at {a}" for a in served], loc if served else None, address
