"""NCCL_DEBUG=INFO logs (and NCCL_DEBUG=VERSION's version line alone) into an NcclLog
(nccl-formats.md section 4).

A log line is ``[ts] host:pid:tid [dev] [file:line [(func)]] NCCL INFO|WARN|TRACE msg``
(``src/debug.cc`` ncclDebugLogV), often behind a launcher's tag (``[1,0]<stdout>:`` from Open MPI,
``[rank0]:`` / ``[default0]:`` from torchrun). Lines of other programs and of many ranks are
interleaved: they are skipped, never an error. Each message format below cites the NCCL source
that prints it (NVIDIA/nccl@5067397c = v2.30.7 unless a version is named).

``LogReader`` is also fed by the nccl-tests parser, whose output carries the ranks' INFO lines.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.measured import (
    Channel,
    ChannelCounts,
    Comm,
    LogLine,
    MeasuredFile,
    NcclLog,
    NetDevice,
    RankInit,
    Setting,
    TopoPrintLine,
    TuningChoice,
)
from topolint.model.numbers import decimal, printed_float

MALFORMED = "malformed NCCL log"  # collect.py reports these from folder walks too
# Launcher tags in front of a line: Open MPI --tag-output, torchrun/elastic, Slurm --label.
LAUNCHER_TAG = re.compile(r"(?:\[\d+,\d+\]<std(?:out|err)>:|\[(?:rank|default)\d+\]:\s?|\d+: )")
PREFIX = re.compile(
    r"(?:\[(?P<ts>[^\]]*)\]\s*)?(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>\d+)\]\s+"
    # Between the device and "NCCL": nothing (INFO, tried first), "file.cc:123 [(func)]" (WARN), a
    # TRACE time, or a plugin's C++ signature ("int nccl_net_ofi_create_plugin(...):208"); bounded.
    r"(?:|[^\n]{1,400}?\s)NCCL\s+(?P<level>INFO|WARN|TRACE|CALL)\b ?"
)
# The version line without a prefix (NCCL_DEBUG=VERSION; printf'ed up to 2.22): the whole line, after
# the "[%F %T] " timestamp NCCL_DEBUG_TIMESTAMP_LEVELS=VERSION adds (inputs/sniff.py VERSION_LINE).
BANNER = re.compile(r"(?:\[[^\]]{1,64}\] )?(?P<line>NCCL version (?P<ver>\d+\.\d+\.\d+)[0-9A-Za-z.]{0,16}"
                    r"\+cuda(?P<cuda>\d+\.\d+))\s*$")

# Message formats (what follows "NCCL INFO ").
VERSION = re.compile(r"NCCL version (?P<ver>\d+\.\d+\.\d+)")  # init.cc showVersion
NETWORK = re.compile(r"Using network (?P<net>.+?)\s*$")  # init.cc: INFO "Using network %s"
IB_USING = re.compile(r"NET/IB : Using(?P<devs>.*?)(?:\s*\[RO\])?\s*;\s*OOB\s")  # net_ib/init.cc
IB_ITEM = re.compile(r"\[(?P<i>\d+)\](?P<name>[^\s:\[]+):(?P<port>\d+)(?::-?\d*)*/(?P<link>IB|RoCE)")
IB_DETAIL = re.compile(r"NET/IB: \[(?P<i>\d+)\] (?P<name>[^:\s]+):\S*?/(?:IB|RoCE)\b.*?\bspeed=(?P<speed>\d+)")
SOCKET_USING = re.compile(r"NET/Socket : Using(?P<ifs>(?:\s+\[\d+\][^\s:]+:\S+)+)")  # net_socket.cc
SOCKET_ITEM = re.compile(r"\[(?P<i>\d+)\](?P<name>[^\s:]+):")
SETTING = re.compile(r"(?P<name>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<value>.*?)\.?\s*$")  # param.cc
CHANNEL = re.compile(
    r"Channel (?P<c>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)\[(?P<sd>[0-9a-fA-Fx]+)\] -> (?P<dst>\d+)\[(?P<dd>[0-9a-fA-Fx]+)\]"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>\S.*?)\s*$"
)
NET_VIA = re.compile(r"NET/(?P<net>[^/]+)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<rest>\S*)")
COMM = re.compile(r"comm 0x[0-9a-fA-F]+ rank (?P<r>\d+) nRanks (?P<n>\d+) nNodes (?P<nn>\d+) localRanks (?P<lr>\d+)")
INIT = re.compile(
    r"comm 0x[0-9a-fA-F]+ rank (?P<r>\d+) nranks (?P<n>\d+) cudaDev (?P<cd>\d+)(?: nvmlDev \d+)? "
    r"busId (?P<bus>[0-9a-fA-F]+)\b.*- Init (?:START|COMPLETE)"
)
COUNTS = re.compile(
    r"(?P<coll>\d+) coll channels,(?: (?P<collnet>\d+) collnet channels,)?(?: (?P<nvls>\d+) nvls channels,)? "
    r"(?P<p2p>\d+) p2p channels"
)
SYSTEM_START = re.compile(r"=== System : ")  # topo.cc ncclTopoPrint
SYSTEM_END = re.compile(r"={10,}\s*$")
TOPO_NODE = re.compile(
    r"(?:\+ (?P<lt>LOC|NVL|C2C|PCI|SYS|NET)\[(?P<bw>[\d.]+)\] - )?"
    r"(?P<type>GPU|PCI|NVS|CPU|NIC|NET|GIN|RMA|DEV|CXB|XC2C)/(?P<id>[0-9A-Fa-f-]+)(?: \((?P<info>[^)]*)\))?\s*$"
)
PATHS = re.compile(r"(?P<from>(?:GPU|NET)/[0-9A-Fa-f-]+) :(?P<items>.*)$")  # paths.cc printNodePaths
PATH_ITEM = re.compile(r"(?P<t>[A-Z]+)/(?P<id>[0-9a-fA-F-]+) \((?P<hops>\d+)/(?P<bw>[\d.]+)/(?P<pt>[A-Z]+)\)")
TUNING = re.compile(r"(?:(?P<func>[A-Za-z]+): )?(?P<bytes>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)")  # enqueue.cc
RING = re.compile(r"Channel \d+/\d+ :(?P<ranks>(?:\s+\d+)+)(?:\.\.\.)?\s*$")  # graph/rings.cc dumpLine
TREES = re.compile(r"Trees(?P<items>(?: \[\d+\] -?\d+/-?\d+/-?\d+->\d+->-?\d+)+)\s*$")  # init.cc
PLUGIN = re.compile(r"(?:NET|TUNER|PROFILER|ENV|GIN)/Plugin ?:|NET/OFI |Successfully loaded external plugin")
# Lines that show an RDMA transport was tried and failed, or turned off: the expectation that
# PERF003 needs. The healthy noise of optional plugins ("Failed to find ncclCollNetPlugin_v9
# symbol", "PROFILER/Plugin: Could not find: libnccl-profiler.so", "NET/Plugin: Could not find:
# libnccl-net.so. Using internal network plugin.") never matches.
RDMA_ATTEMPT = re.compile(
    r"NET/IB : No (?:device|IP interface) found"  # net_ib/init.cc ncclIbInitDevices
    r"|Failed to open libibverbs"  # misc/ibvwrap.cc (<=2.29.7)
    r"|NET/OFI .*(?:initiali[sz]ation failed|Initializing plugin failed|[Nn]o eligible provider)"  # aws-ofi-nccl
    r"|NET/Plugin ?: .*(?:[Ff]ailed to (?:load|initiali[sz]e)|[Ii]nit(?:ialization)? failed)"
)
FAILURE = re.compile(r"(?P<host>[^\s:]+): Test (?:NCCL failure|CUDA failure|timeout)\b")  # nccl-tests common.h


def printable(text: str) -> str:
    """Text from a log as reports may show it: control characters (terminal escapes) spelled out."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def strip_launcher_tag(text: str) -> tuple[str, int]:
    """(text without a launcher's tag, how many characters were cut)."""
    match = LAUNCHER_TAG.match(text)
    return (text[match.end():], match.end()) if match else (text, 0)


class _Line:
    """One NCCL line as read; facts (LogLine, Location) are built only for lines that are kept."""

    __slots__ = ("reader", "level", "host", "device", "message", "number", "column", "_loc")

    def __init__(self, reader, level, host, device, message, number, column):
        self.reader, self.level, self.host, self.device = reader, level, host, device
        self.message, self.number, self.column, self._loc = message, number, column, None

    @property
    def loc(self) -> Location:
        if self._loc is None:
            self._loc = self.reader.loc(self.number, self.column)
        return self._loc

    def fact(self, message: str | None = None) -> LogLine:
        return build(LogLine, level=self.level, host=self.host, device=self.device,
                     message=self.message if message is None else message, loc=self.loc)


class LogReader:
    """Collects NCCL log facts line by line; ``feed`` answers whether the line was NCCL's."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.log = build(NcclLog)
        self._in_system: str | None = None  # host whose "=== System" print is open
        self._choices: set[tuple] = set()  # TUNING lines seen (function, bytes, algorithm, protocol, host)
        # A message's first characters pick the handler: one regex per line, not one per format.
        self._by_start = (("Channel ", self._channel), ("NCCL version", self._version), ("Using network", self._network),
                          ("NCCL_", self._setting), ("comm ", self._comm), ("NET/IB", self._devices),
                          ("NET/Socket", self._devices), ("=== System", self._system_start), ("GPU/", self._paths),
                          ("NET/", self._paths), ("Trees", self._trees), ("Connected all rings", self._connected))

    def loc(self, number: int, column: int) -> Location:
        return build(Location, path=self.path, line=number, column=column)

    def feed(self, text: str, number: int, offset: int = 0) -> bool:
        """``text`` is the line without a launcher tag; ``offset`` the characters cut before it."""
        if "NCCL" not in text:
            return False
        prefix = PREFIX.match(text)
        if prefix is None:
            return self._unprefixed(text, number, offset)
        self.log.line_count += 1
        line = _Line(self, prefix.group("level"), printable(prefix.group("host")), decimal(prefix.group("dev")),
                     printable(text[prefix.end():].rstrip()), number, offset + prefix.end() + 1)
        if line.level == "WARN":
            kept = line.fact()
            self.log.warnings.append(kept)
            if RDMA_ATTEMPT.search(line.message):
                self.log.rdma_attempts.append(kept)
            return True
        self._message(line)
        return True

    def _unprefixed(self, text: str, number: int, offset: int) -> bool:
        """The version banner at NCCL_DEBUG=VERSION/WARN and nccl-tests failure lines have no prefix."""
        stripped = text.strip()
        banner = BANNER.match(stripped)
        if banner:
            self.log.line_count += 1
            column = offset + 1 + len(text) - len(text.lstrip()) + banner.start("line")
            self.log.versions.append(build(LogLine, level="", message=banner.group("ver"),
                                           loc=self.loc(number, column)))
            return True
        failure = FAILURE.match(stripped)
        if failure:
            self.log.failures.append(build(LogLine, level="", host=printable(failure.group("host")),
                                           message=printable(stripped),
                                           loc=self.loc(number, offset + 1)))
            return True
        return False

    def _message(self, line: _Line) -> None:
        message = line.message
        if self._in_system == line.host and self._system_line(line):
            return
        for start, handler in self._by_start:
            if message.startswith(start) and handler(line):
                return
        if message[:1].isdigit():
            self._counts(line) or self._tuning(line)
        elif "comm 0x" in message and "Init" in message:
            self._init(line)
        else:
            self._misc(line)

    def _version(self, line: _Line) -> bool:
        match = VERSION.match(line.message)
        if match:
            self.log.versions.append(line.fact(match.group("ver")))
        return bool(match)

    def _network(self, line: _Line) -> bool:
        match = NETWORK.match(line.message)
        if match:
            self.log.networks.append(line.fact(match.group("net")))
        return bool(match)

    def _setting(self, line: _Line) -> bool:
        match = SETTING.match(line.message)
        if match:
            self.log.settings.append(build(Setting, name=match.group("name"), value=match.group("value"),
                                           host=line.host, loc=line.loc))
            if match.group("name") == "NCCL_IB_DISABLE" and decimal(match.group("value")) == 1:
                self.log.rdma_attempts.append(line.fact())  # RDMA turned off by configuration
        return bool(match)

    def _channel(self, line: _Line) -> bool:
        match = CHANNEL.match(line.message)
        if not match:
            ring = RING.match(line.message)
            if ring:
                self.log.rings.append(line.fact(ring.group("ranks").strip()))
            return bool(ring)
        via = match.group("via")
        transport = via.split("/", 1)[0]
        fields = dict(channel=decimal(match.group("c")), src=decimal(match.group("src")),
                      src_device=match.group("sd"), dst=decimal(match.group("dst")), dst_device=match.group("dd"),
                      direction=match.group("dir"), transport=transport, detail=via, host=line.host, loc=line.loc)
        net = NET_VIA.match(via) if transport == "NET" else None
        if net:
            fields.update(net=net.group("net"), net_device=decimal(net.group("dev")),
                          proxy=decimal(net.group("proxy")) if net.group("proxy") else None,
                          gdr="/GDRDMA" in net.group("rest"))
        self.log.channels.append(build(Channel, **fields))
        return True

    def _comm(self, line: _Line) -> bool:
        comm = COMM.match(line.message)
        if comm:
            self.log.comms.append(build(Comm, rank=decimal(comm.group("r")), nranks=decimal(comm.group("n")),
                                        nnodes=decimal(comm.group("nn")), local_ranks=decimal(comm.group("lr")),
                                        host=line.host, loc=line.loc))
            return True
        return self._init(line)

    def _init(self, line: _Line) -> bool:
        init = INIT.search(line.message)
        if init:
            self.log.inits.append(build(RankInit, rank=decimal(init.group("r")), nranks=decimal(init.group("n")),
                                        cuda_device=decimal(init.group("cd")), bus_id=init.group("bus").lower(),
                                        host=line.host, loc=line.loc))
        return bool(init)

    def _counts(self, line: _Line) -> bool:
        match = COUNTS.match(line.message)
        if match:
            optional = {k: decimal(match.group(k)) if match.group(k) else None for k in ("collnet", "nvls")}
            self.log.counts.append(build(ChannelCounts, coll=decimal(match.group("coll")),
                                         p2p=decimal(match.group("p2p")), host=line.host, loc=line.loc, **optional))
        return bool(match)

    def _devices(self, line: _Line) -> bool:
        message, host = line.message, line.host
        ib = IB_USING.match(message)
        if ib:
            for item in IB_ITEM.finditer(ib.group("devs")):
                self.log.net_devices.append(build(NetDevice, net="IB", index=decimal(item.group("i")),
                                                  name=item.group("name"), port=decimal(item.group("port")),
                                                  link=item.group("link"), host=host, loc=line.loc))
            return True
        detail = IB_DETAIL.match(message)
        if detail:
            index, name = decimal(detail.group("i")), detail.group("name")
            for device in self.log.net_devices:
                if device.net == "IB" and device.host == host and device.index == index and device.name == name:
                    device.speed_mbps = decimal(detail.group("speed"))
            return True
        sockets = SOCKET_USING.match(message)
        if sockets:
            for item in SOCKET_ITEM.finditer(sockets.group("ifs")):
                self.log.net_devices.append(build(NetDevice, net="Socket", index=decimal(item.group("i")),
                                                  name=item.group("name"), host=host, loc=line.loc))
            return True
        if RDMA_ATTEMPT.match(message):
            self.log.rdma_attempts.append(line.fact())
            return True
        return False

    def _system_start(self, line: _Line) -> bool:
        if SYSTEM_START.match(line.message):
            self._in_system = line.host
            return True
        return False

    def _system_line(self, line: _Line) -> bool:
        if SYSTEM_END.match(line.message):
            self._in_system = None
            return True
        node = TOPO_NODE.match(line.message.strip())
        if not node:
            self._in_system = None  # the print ended without its closing line (an excerpt)
            return False
        self.log.topology.append(build(TopoPrintLine,
            kind="link" if node.group("lt") else "node", node_type=node.group("type"), node_id=node.group("id"),
            link_type=node.group("lt"), bandwidth=printed_float(node.group("bw")) if node.group("bw") else None,
            info=node.group("info"), host=line.host, loc=line.loc))
        return True

    def _paths(self, line: _Line) -> bool:
        match = PATHS.match(line.message)
        if not match:
            return False
        for item in PATH_ITEM.finditer(match.group("items")):
            self.log.topology.append(build(TopoPrintLine,
                kind="path", path_from=match.group("from"), node_type=item.group("t"), node_id=item.group("id"),
                bandwidth=printed_float(item.group("bw")), path_type=item.group("pt"), host=line.host, loc=line.loc))
        return True

    def _trees(self, line: _Line) -> bool:
        trees = TREES.match(line.message)
        if trees:
            self.log.trees.append(line.fact(trees.group("items").strip()))
        return bool(trees)

    def _connected(self, line: _Line) -> bool:
        self.log.connected.append(line.fact())
        return True

    def _tuning(self, line: _Line) -> bool:
        match = TUNING.match(line.message)
        if not match:
            return False
        key = (match.group("func"), match.group("bytes"), match.group("algo"), match.group("proto"), line.host)
        if key not in self._choices:  # nccl-tests repeats each call: one fact per distinct choice
            self._choices.add(key)
            self.log.tuning.append(build(TuningChoice, function=match.group("func"), bytes=decimal(match.group("bytes")),
                                         algorithm=match.group("algo"), protocol=match.group("proto"),
                                         host=line.host, loc=line.loc))
        return True

    def _misc(self, line: _Line) -> None:
        if " Bytes -> Algo " in line.message and self._tuning(line):
            return
        if PLUGIN.match(line.message):
            kept = line.fact()
            self.log.plugin_lines.append(kept)
            if RDMA_ATTEMPT.search(line.message):
                self.log.rdma_attempts.append(kept)
        elif RDMA_ATTEMPT.search(line.message):
            self.log.rdma_attempts.append(line.fact())


def parse_nccl_log(source: SourceFile) -> MeasuredFile:
    reader = LogReader(source.path)
    for number, raw in enumerate(source.text.splitlines(), start=1):
        text, cut = strip_launcher_tag(raw)
        reader.feed(text, number, cut)
    if reader.log.line_count == 0:
        raise InputError(source.path, 1, f"{MALFORMED}: no 'host:pid:tid [dev] NCCL INFO ...' line "
                         "and no 'NCCL version X+cudaY' line (expected NCCL_DEBUG=INFO or VERSION output)")
    return build(MeasuredFile, path=source.path, kind="nccl-log", log=reader.log)
