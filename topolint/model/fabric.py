"""Fabric facts: RDMA ports (ibstat, ibstatus, ibv_devinfo), HCA to netdev maps (ibdev2netdev),
GID tables (show_gids), RoCE QoS (mlnx_qos, ECN and traffic-class sysfs), link speeds (ethtool),
interfaces and routes (ip), and mounts. Every value keeps the line it came from.

Each file kind is one ``FabricFile`` subclass with a ``KIND`` that NodeModel.available() reports,
so a rule needs "ports", "gids", ... exactly as it needs "topology".
"""

from __future__ import annotations

from typing import ClassVar, Optional

from topolint.model.facts import Fact, Location, packed_loc
from topolint.model.schema import Field


class FabricFile(Fact):
    KIND: ClassVar[str] = "fabric"
    path: str

    def kinds(self) -> set[str]:
        return {self.KIND}


# ---- RDMA ports -----------------------------------------------------------------------------------
class IbPort(Fact):
    """One port of an HCA. ``state`` is normalised: active, down, init, armed (ibstat's
    "Initializing" is init); ``phys_state``: linkup, polling, disabled, ... lower case.
    ``rate_gbps`` is what the tool printed, stale on a port that is not Active."""

    hca: str
    port: int
    tool: Optional[str] = None  # ibstat, ibstatus, ibv_devinfo
    state: Optional[str] = None
    phys_state: Optional[str] = None
    rate_gbps: Optional[float] = None
    link_layer: Optional[str] = None  # "infiniband" or "ethernet"
    model: Optional[str] = None  # CA type MT4129 / vendor_part_id 4129, as "MT4129"
    firmware: Optional[str] = None
    system_guid: Optional[str] = None  # one card's ports share it (ibstat System image GUID, sys_image_guid)
    lid: Optional[int] = None
    active_mtu: Optional[int] = None  # bytes
    max_mtu: Optional[int] = None
    subnet_prefix: Optional[str] = None  # IB: the first 64 bits of the default GID (ibstatus)
    port_guid: Optional[str] = None  # ibstat Port GUID, 16 hex digits: what a fabric file names the port by
    loc: Location  # the port's header line
    lines: dict[str, Location] = {}  # field name -> its line ("state", "rate", "active_mtu", ...)

    def at(self, name: str) -> Location:
        return self.lines.get(name, self.loc)

    @property
    def active(self) -> bool:
        return self.state == "active"


class PortsFile(FabricFile):
    KIND: ClassVar[str] = "ports"
    tool: str  # ibstat, ibstatus, ibv_devinfo
    ports: list[IbPort] = []
    failures: list[Location] = []  # ibpanic / "Failed to get IB devices list" lines: the tool failed


class NetdevLink(Fact):
    """``mlx5_0 port 1 ==> ens1f0 (Up)``: ``netdev_up`` is the netdev's state, not the port's."""

    # Slots, not a dict, and loc packed (facts.packed_loc): one per line of a few dozen bytes
    # (issue 20); defaults in _field_specs.
    __slots__ = ("hca", "port", "netdev", "netdev_up", "pci", "_path", "_at")
    _state_names = (*__slots__[:-2], "loc")
    _field_specs = {**dict.fromkeys(("netdev", "netdev_up", "pci"), Field(default=None)), "loc": Field()}
    hca: str
    port: int
    netdev: Optional[str]
    netdev_up: Optional[bool]
    pci: Optional[str]  # -v: the HCA's PCI address, normalised (0000:17:00.0)
    loc: Location = packed_loc()


class NetdevMap(FabricFile):
    KIND: ClassVar[str] = "netdev-map"
    links: list[NetdevLink] = []


class Gid(Fact):
    hca: str
    port: int
    index: int
    gid: str
    ipv4: Optional[str] = None
    version: Optional[str] = None  # "v1" (RoCE v1 or IB), "v2" (RoCE v2)
    netdev: Optional[str] = None
    loc: Location

    @property
    def link_local(self) -> bool:
        return self.gid.lower().startswith("fe80:")


class GidTable(FabricFile):
    KIND: ClassVar[str] = "gids"
    gids: list[Gid] = []


# ---- RoCE QoS -------------------------------------------------------------------------------------
class QosPort(Fact):
    """One ``mlnx_qos -i IF`` (or ``dcb pfc show``) report. ``pfc[p]`` is PFC on priority p;
    ``dscp2prio`` maps a DSCP to its priority (trust dscp)."""

    interface: Optional[str] = None
    hca: Optional[str] = None
    trust: Optional[str] = None  # "pcp" or "dscp"
    pfc: Optional[list[bool]] = None
    dscp2prio: dict[int, int] = {}
    loc: Location
    lines: dict[str, Location] = {}

    def at(self, name: str) -> Location:
        return self.lines.get(name, self.loc)


class EcnSetting(Fact):
    """``/sys/class/net/IF/ecn/roce_np|roce_rp/enable/PRIO`` = 0/1."""

    interface: str
    role: str  # "np" (notification point, receiver) or "rp" (reaction point, sender)
    priority: int
    enabled: bool
    loc: Location


class TrafficClass(Fact):
    """``/sys/class/infiniband/HCA/tc/N/traffic_class``: ``Global tclass=106`` or empty (unset)."""

    hca: str
    tc: int  # the port number the tc folder is named after
    tclass: Optional[int] = None
    loc: Location


class QosFile(FabricFile):
    KIND: ClassVar[str] = "qos"
    ports: list[QosPort] = []
    ecn: list[EcnSetting] = []
    traffic_classes: list[TrafficClass] = []


# ---- Ethernet links, interfaces, routes, mounts ---------------------------------------------------
class EthtoolLink(Fact):
    interface: Optional[str] = None  # None for a paste without its "Settings for IF:" line
    speed_mbps: Optional[int] = None  # None: no Speed line, or "Unknown!"
    speed_text: Optional[str] = None
    lanes: Optional[int] = None
    duplex: Optional[str] = None
    link_detected: Optional[bool] = None
    loc: Location
    lines: dict[str, Location] = {}

    def at(self, name: str) -> Location:
        return self.lines.get(name, self.loc)


class EthtoolFile(FabricFile):
    KIND: ClassVar[str] = "ethtool"
    links: list[EthtoolLink] = []


class IfAddress(Fact):
    family: str  # "inet" or "inet6"
    address: str
    prefix: Optional[int] = None
    scope: Optional[str] = None
    loc: Location


class Interface(Fact):
    name: str
    flags: list[str] = []
    state: Optional[str] = None  # operstate as printed: UP, DOWN, UNKNOWN
    mtu: Optional[int] = None
    link_type: Optional[str] = None  # ether, loopback, infiniband, none
    addresses: list[IfAddress] = []
    loc: Location

    @property
    def up(self) -> bool:
        return self.state == "UP" or (self.state in (None, "UNKNOWN") and "UP" in self.flags and "LOWER_UP" in self.flags)


class InterfacesFile(FabricFile):
    KIND: ClassVar[str] = "interfaces"
    interfaces: list[Interface] = []


class Route(Fact):
    destination: str  # "default" or a prefix ("10.0.0.0/16", "10.0.0.1")
    gateway: Optional[str] = None
    device: Optional[str] = None
    source: Optional[str] = None
    loc: Location


class RoutesFile(FabricFile):
    KIND: ClassVar[str] = "routes"
    routes: list[Route] = []


class Mount(Fact):
    source: str
    mountpoint: str
    fstype: str
    options: dict[str, str] = {}  # "addr" -> "10.0.0.5", "hard" -> ""
    loc: Location

    @property
    def server(self) -> str | None:
        """The server's address: ``addr=`` (the kernel's resolved address), else the source's host."""
        if self.options.get("addr"):
            return self.options["addr"]
        host, sep, _ = self.source.rpartition(":")
        return host.strip("[]") if sep and host else None


# Network filesystems STOR001 does not judge: their mount options do not name the addresses used.
OTHER_NETWORK_FS = ("lustre", "gpfs", "wekafs", "beegfs", "cifs", "smb3", "ceph", "glusterfs", "9p", "fuse.weka",
                    "fuse.beegfs", "fuse.glusterfs", "fuse.sshfs", "fuse.juicefs", "fuse.s3fs")


class MountsFile(FabricFile):
    KIND: ClassVar[str] = "mounts"
    form: str  # proc-mounts, mountinfo, mount, nfsstat
    mounts: list[Mount] = []

    def verbose_notes(self) -> list[str]:
        return [f"line {m.loc.line}: {m.fstype} {m.source} on {m.mountpoint} not judged by STOR001 (only NFS "
                "names its server and client addresses)" for m in self.mounts if m.fstype in OTHER_NETWORK_FS][:20]


class SysfsDump(FabricFile):
    """``grep -r . /sys/class/...`` (or ``cat`` in a terminal session) of the RDMA sysfs files:
    ECN enables, traffic classes, GIDs and their types. Its kinds are what it holds."""

    KIND: ClassVar[str] = "sysfs"
    ecn: list[EcnSetting] = []
    traffic_classes: list[TrafficClass] = []
    gids: list[Gid] = []

    def kinds(self) -> set[str]:
        return ({"qos"} if self.ecn or self.traffic_classes else set()) | ({"gids"} if self.gids else set())


FABRIC_KINDS = (PortsFile, NetdevMap, GidTable, QosFile, SysfsDump, EthtoolFile, InterfacesFile, RoutesFile, MountsFile)


# Interfaces that are not the node's network: loopback, containers, bridges, tunnels, CNI overlays.
VIRTUAL_PREFIXES = ("docker", "veth", "virbr", "br-", "cali", "tun", "flannel", "cni", "vxlan", "kube-ipvs")


def virtual_interface(name: str) -> bool:
    return name == "lo" or name.startswith(VIRTUAL_PREFIXES)


def netdev_entity(node: str, name: str) -> str:
    return f"{node}/netdev/{name}"
