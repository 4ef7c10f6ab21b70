"""RDMA sysfs files as ``grep -r . DIR`` prints them (``PATH:VALUE``), as spiderpool's QoS
script prints them (``... PATH = VALUE``), or as a terminal session of ``cat PATH`` commands
shows them (output-formats.md section 8), into a SysfsDump:

- ``/sys/class/net/IF/ecn/roce_np|roce_rp/enable/PRIO``: ECN (DCQCN) on that priority, 0/1;
- ``/sys/class/infiniband/HCA/tc/N/traffic_class``: ``Global tclass=106``, or empty when unset;
- ``/sys/class/infiniband/HCA/ports/N/gids/I``, ``gid_attrs/types/I`` (``IB/RoCE v1``,
  ``RoCE v2``) and ``gid_attrs/ndevs/I``: a GID table, as show_gids prints it.

Other files under /sys are accepted and not kept; a line that is neither is unreadable.
"""

from __future__ import annotations

import re

from topolint.inputs.source import SourceFile
from topolint.model.fabric import EcnSetting, Gid, SysfsDump, TrafficClass
from topolint.model.facts import Location, build
from topolint.model.numbers import decimal, hex_int
from topolint.parsers._lines import PROMPT, Line, at, malformed, numbered

SYSFS_LINE = re.compile(r"(?:[^/\n]*?:\s*)?(/sys/[^\s:=]+)\s*(?::|\s=\s?)(.*)")
CAT = re.compile(r".*?[#$]\s*cat\s+(/sys/\S+)\s*")
ECN = re.compile(r"/sys/class/net/([^/]+)/ecn/roce_(np|rp)/enable/(\d+)")
TCLASS = re.compile(r"/sys/class/infiniband/([^/]+)/tc/(\d+)/traffic_class")
GID_FILE = re.compile(r"/sys/class/infiniband/([^/]+)/ports/(\d+)/(gids|gid_attrs/types|gid_attrs/ndevs)/(\d+)")
GLOBAL_TCLASS = re.compile(r"Global tclass=(\d+)")
ZERO_GID = re.compile(r"[0:]+")
EXPECTED = "'/sys/...:VALUE' (grep -r . DIR)"


class SysfsReader:
    """Collects sysfs values into a SysfsDump; mlnx_qos.py uses it for the lines its wrappers add."""

    def __init__(self, path: str):
        self.path = path
        self.dump = build(SysfsDump, path=path, ecn=[], traffic_classes=[], gids=[])
        self.gid_parts: dict[tuple[str, int, int], dict] = {}

    def add(self, file: str, value: str, loc: Location) -> bool:
        """Keep ``value`` of sysfs ``file``; False when the path is not under /sys."""
        if not file.startswith("/sys/"):
            return False
        value = value.strip()
        ecn = ECN.fullmatch(file)
        if ecn:
            enabled = decimal(value)
            if enabled in (0, 1):
                self.dump.ecn.append(build(EcnSetting, interface=ecn.group(1), role=ecn.group(2),
                                           priority=decimal(ecn.group(3)), enabled=enabled == 1, loc=loc))
            return True
        tclass = TCLASS.fullmatch(file)
        if tclass:
            number = GLOBAL_TCLASS.fullmatch(value)
            self.dump.traffic_classes.append(build(TrafficClass, hca=tclass.group(1), tc=decimal(tclass.group(2)),
                                                   tclass=decimal(number.group(1)) if number else None, loc=loc))
            return True
        gid = GID_FILE.fullmatch(file)
        if gid:
            key = (gid.group(1), decimal(gid.group(2)), decimal(gid.group(4)))
            self.gid_parts.setdefault(key, {"loc": loc})[gid.group(3)] = value
        return True

    def finish(self) -> SysfsDump:
        for (hca, port, index), parts in sorted(self.gid_parts.items()):
            value = parts.get("gids", "")
            if not value or ZERO_GID.fullmatch(value):
                continue  # an unused table slot
            kind = parts.get("gid_attrs/types", "")
            version = "v2" if "v2" in kind else "v1" if kind else None
            self.dump.gids.append(build(Gid, hca=hca, port=port, index=index, gid=value.lower(),
                                        ipv4=_mapped_ipv4(value), version=version,
                                        netdev=parts.get("gid_attrs/ndevs") or None, loc=parts["loc"]))
        return self.dump


def _mapped_ipv4(gid: str) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (``::ffff:c0a8:0684`` -> 192.168.6.132)."""
    groups = gid.lower().split(":")
    if len(groups) != 8 or groups[5] != "ffff" or any(g.strip("0") for g in groups[:5]):
        return None
    high, low = hex_int(groups[6] or "0"), hex_int(groups[7] or "0")
    if high is None or low is None:
        return None
    return f"{high >> 8}.{high & 255}.{low >> 8}.{low & 255}"


def sysfs_line(reader: SysfsReader, line: Line, pending: list) -> bool:
    """Read one line of a dump or session into ``reader``; False when it is neither."""
    cat = CAT.fullmatch(line.text) if len(line.text) <= 4096 else None  # a command line is short
    if cat:
        pending[:] = [cat.group(1), line]
        reader.add(cat.group(1), "", at(reader.path, line))  # empty until an output line says otherwise
        return True
    if PROMPT.match(line.text):
        pending.clear()
        return True
    match = SYSFS_LINE.fullmatch(line.text)
    if match:
        pending.clear()
        return reader.add(match.group(1), match.group(2), at(reader.path, line, line.raw.find("/sys/") + 1))
    if pending:  # the output of ``cat PATH``
        file, _ = pending
        _replace_last(reader, file, line)
        pending.clear()
        return True
    return False


def _replace_last(reader: SysfsReader, file: str, line: Line) -> None:
    tclass = TCLASS.fullmatch(file)
    if tclass and reader.dump.traffic_classes:
        reader.dump.traffic_classes.pop()
    reader.add(file, line.text, at(reader.path, line))


def parse_sysfs_dump(source: SourceFile) -> SysfsDump:
    reader = SysfsReader(source.path)
    pending: list = []
    for line in numbered(source.text):
        if not sysfs_line(reader, line, pending):
            raise malformed("sysfs dump", source.path, line, EXPECTED)
    return reader.finish()
