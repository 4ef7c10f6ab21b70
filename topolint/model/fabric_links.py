"""Facts of the fabric as cabled: what ``ibnetdiscover`` (plain and ``-p``), ``iblinkinfo`` and
``lldpctl`` say about switches, host adapters and the links between them. These are files of the
cluster, not of one node: the cluster stage reads them (fleet/fabric_graph.py) next to the
nodes' inventories. Every element keeps the line it came from.

Rates: InfiniBand names a lane speed (SDR ... XDR) and a width (1x, 2x, 4x, 8x, 12x); a link runs
at width x lane rate. iblinkinfo prints the lane's signalling rate ("53.125 Gbps" for HDR),
ibnetdiscover the speed's name ("4xHDR"); both are turned into one ``speed`` name so files of
either tool compare, and ``rate_gbps`` is the nominal data rate (4x HDR = 200).
"""

from __future__ import annotations

import re
from typing import ClassVar, Optional

from topolint.model.facts import Fact, Location

# IBTA lane speeds: name -> (order, nominal data rate of one lane in Gb/s, signalling rates tools print)
LANE_SPEEDS: dict[str, tuple[int, float, tuple[str, ...]]] = {
    "SDR": (1, 2.5, ("2.5",)),
    "DDR": (2, 5.0, ("5.0", "5")),
    "QDR": (3, 10.0, ("10.0", "10")),
    "FDR10": (4, 10.0, ()),  # Mellanox's FDR10: 10.3125 signalling, printed "10.0 Gbps (FDR10)"
    "FDR": (5, 14.0, ("14.0625",)),
    "EDR": (6, 25.0, ("25.78125",)),
    "HDR": (7, 50.0, ("53.125",)),
    "NDR": (8, 100.0, ("106.25",)),
    "XDR": (9, 200.0, ("212.5",)),
}
SPEED_BY_SIGNAL = {signal: name for name, (_, _, signals) in LANE_SPEEDS.items() for signal in signals}


_SPEED_NAMES = {name: name for name in LANE_SPEEDS}


def cable_key(a: str, a_port: int, b: str, b_port: int) -> tuple:
    """The same key for a cable read from either end: a flat tuple, a quarter of the frozenset of
    two ends it stands for (the parsers hold one a link until the file is read; issue 20)."""
    return (a, a_port, b, b_port) if (a, a_port) <= (b, b_port) else (b, b_port, a, a_port)


def lane_speed(token: str) -> str | None:
    """The speed name of a tool's token: ``HDR``, ``53.125``, ``53.125 Gbps``, ``10.0 Gbps (FDR10)``."""
    token = token.strip()
    upper = token.upper()
    if upper in LANE_SPEEDS:
        return _SPEED_NAMES[upper]  # the one string, not a copy a link
    if "FDR10" in upper:
        return "FDR10"
    number = token.split()[0] if token else ""
    return SPEED_BY_SIGNAL.get(number)


def link_rate(width: int | None, speed: str | None) -> float | None:
    if width is None or speed not in LANE_SPEEDS:
        return None
    return width * LANE_SPEEDS[speed][1]


def speed_order(speed: str | None) -> int:
    return LANE_SPEEDS[speed][0] if speed in LANE_SPEEDS else 0


def describe_link(width: int | None, speed: str | None) -> str:
    """``4x HDR (200 Gb/s)``; the parts the file stated."""
    parts = [f"{width}x" if width else "", speed or ""]
    text = " ".join(p for p in parts if p) or "unknown width and speed"
    rate = link_rate(width, speed)
    return f"{text} ({rate:g} Gb/s)" if rate else text


class FabricNode(Fact):
    """A switch, a host adapter (CA) or a router of an InfiniBand fabric, or an LLDP neighbour."""

    id: str  # what links name it by: its GUID (16 hex digits, lower case), else "lid:N" or "chassis:ID"
    kind: str  # "switch", "ca", "router"
    description: str = ""  # NodeDescription as printed ("MF0;A09-P1-IBLEAF-04-04:MQM9701/U1", "gpu01 mlx5_0")
    guid: Optional[str] = None
    lid: Optional[int] = None
    loc: Location


class FabricLink(Fact):
    """One cable between two ports, as one of the files printed it (each end once: a tool that
    prints both directions gives one link). ``a`` is the side whose line this is."""

    a: str  # FabricNode.id
    a_port: int
    b: str
    b_port: int
    width: Optional[int] = None  # lanes: 1, 2, 4, 8, 12
    speed: Optional[str] = None  # LANE_SPEEDS name
    state: Optional[str] = None  # "active", "init", "armed", "down" (iblinkinfo); None: not printed
    phys_state: Optional[str] = None  # "linkup", "polling", "disabled", ...
    could_be: Optional[str] = None  # iblinkinfo's own hint, "Could be 4X" / "Could be 53.125 Gbps"
    loc: Location

    @property
    def rate_gbps(self) -> float | None:
        return link_rate(self.width, self.speed)


class FabricPort(Fact):
    """A port with no peer: unlinked (no cable: Down/Polling, "4x ???"), disabled, or one whose
    physical link is up while the port is not Active (cabled, and down)."""

    node: str  # FabricNode.id
    port: int
    state: Optional[str] = None
    phys_state: Optional[str] = None
    loc: Location

    @property
    def cabled(self) -> bool:
        """The cable is there (the physical link trained) but the port does not pass traffic."""
        return self.phys_state in ("linkup", "linkerrorrecovery", "portconfigurationtraining") \
            and self.state not in (None, "active")


class FabricFile(Fact):
    """One ``ibnetdiscover`` or ``iblinkinfo`` output: a subnet's nodes, links and unlinked ports."""

    KIND: ClassVar[str] = "fabric"
    path: str
    tool: str  # "ibnetdiscover", "ibnetdiscover -p", "iblinkinfo"
    nodes: dict[str, FabricNode] = {}
    links: list[FabricLink] = []
    ports: list[FabricPort] = []  # ports without a peer

    def summary(self) -> str:
        kinds = [node.kind for node in self.nodes.values()]
        return f"{kinds.count('switch')} switches, {kinds.count('ca')} adapters, {len(self.links)} links"


class LldpNeighbour(Fact):
    """What one local interface hears over LLDP: the switch (or host) at the other end of its cable."""

    interface: str  # the local netdev (eth0, enp79s0f0)
    chassis_id: Optional[str] = None  # "mac 00:1c:73:7f:b4:d7" style: subtype and value
    chassis_name: Optional[str] = None  # SysName
    chassis_descr: Optional[str] = None
    bridge: Optional[bool] = None  # Bridge/Router capability enabled: a switch; False: a host
    port_id: Optional[str] = None
    port_descr: Optional[str] = None
    protocol: str = "LLDP"  # lldpd also reports CDP, EDP, ... neighbours
    loc: Location

    @property
    def is_switch(self) -> bool:
        """A switch at the other end, not a host cabled back to back: an LLDP neighbour whose
        Bridge/Router capability is on, unless it is a server's lldpd (a server OS in its
        description and a MAC for its port id, as lldpd on Linux sends by default)."""
        if self.protocol != "LLDP" or self.bridge is False:
            return False
        descr = self.chassis_descr or ""
        server = any(os_name in descr for os_name in _SERVER_OS) and "Cumulus" not in descr and "SONiC" not in descr
        return not (server and (self.port_id or "").startswith("mac "))

    @property
    def switch(self) -> str:
        """How the neighbour is named: its SysName, else its chassis id."""
        return self.chassis_name or self.chassis_id or "?"

    @property
    def port(self) -> str:
        """The neighbour's port: an interface name when it sent one, else the description, else the id."""
        port_id = self.port_id or ""
        if port_id.startswith("ifname "):
            return port_id[len("ifname "):]
        if self.port_descr and (not port_id or port_id.startswith(("local ", "mac "))):
            return self.port_descr
        return port_id.split(" ", 1)[1] if " " in port_id else (port_id or "?")


_SERVER_OS = ("Ubuntu", "Red Hat", "Debian", "CentOS", "Rocky", "SUSE", "AlmaLinux", "Fedora", "Linux running on")


class LldpFile(Fact):
    """One ``lldpctl`` / ``lldpcli show neighbors`` output (text, -f json, json0 or keyvalue)."""

    KIND: ClassVar[str] = "lldp"
    path: str
    style: str  # "text", "json", "json0", "keyvalue"
    neighbours: list[LldpNeighbour] = []
    host: Optional[str] = None  # the node it was read from (the node folder it was found in)

    def summary(self) -> str:
        return f"{len(self.neighbours)} neighbours"


# A NodeDescription that names a host: "HOST HCA-1", "HOST mlx5_0" (the OS sets it to the host
# name and the device); the adapter's default ("MT4129 ConnectX7   Mellanox Technologies") and
# a SHARP Aggregation Node name none.
def host_of(description: str) -> tuple[str, str] | None:
    """(host, adapter) from a CA's NodeDescription, or None when it names no host."""
    words = description.split()
    if len(words) != 2 or "Mellanox" in description or "Aggregation" in description:
        return None
    host, adapter = words
    if not _ADAPTER.fullmatch(adapter):
        return None
    return host, adapter


_ADAPTER = re.compile(r"(?:HCA-\d{1,3}|mlx\d_\d{1,3}|[a-z][a-z0-9_]{0,15}\d|ib[a-z]?\d[\w-]{0,16}|roce\w{1,24}|bnxt_re\d{1,3})")
