"""Detectors for the fabric outputs (ibstat family, GIDs, RoCE QoS, ethtool, ip, mounts), by
content only. sniff.py runs them after the NCCL and nvidia-smi detectors and before the config
formats; each looks at the first lines of a file, so a paste with a prompt line still matches."""

from __future__ import annotations

import re

IBSTAT, IBSTATUS, IBV_DEVINFO, IBDEV2NETDEV = "ibstat", "ibstatus", "ibv_devinfo", "ibdev2netdev"
SHOW_GIDS, MLNX_QOS, SYSFS_DUMP, ETHTOOL = "show_gids", "mlnx_qos", "sysfs-dump", "ethtool"
IP_ADDR, IP_ROUTE, MOUNTS = "ip-addr", "ip-route", "mounts"
FABRIC_FORMATS = {IBSTAT, IBSTATUS, IBV_DEVINFO, IBDEV2NETDEV, SHOW_GIDS, MLNX_QOS, SYSFS_DUMP, ETHTOOL, IP_ADDR,
                  IP_ROUTE, MOUNTS}

_HEAD = 8192
_IBSTAT = re.compile(r"^\s*CA '[^'\s]+'\s*\n\s*(?:CA type|Number of ports|Firmware version|Port \d+):", re.M)
_IB_FAILED = re.compile(r"\A\s*(?:ib(?:warn|panic): \[\d+\] |Failed to get IB devices list|No IB devices found)")
_IBSTATUS = re.compile(r"^\s*Infiniband device '[^'\s]+' port \d+ status:\s*$", re.M)
_IBV_DEVINFO = re.compile(r"^\s*hca_id:\s*\S+\s*\n\s*(?:transport|fw_ver|node_guid):", re.M)
_IBDEV2NETDEV = re.compile(r"\A(?:[^\n]*ibdev2netdev[^\n]*\n)?\s*(?:[0-9a-fA-F:.]+\s+)?[A-Za-z][\w.-]*(?:\s+\([^\n]*?\)[^\n]*?)?"
                           r"\s+port\s+\d+(?:\s+\([A-Z_]+\))?\s+==>\s")
_SHOW_GIDS = re.compile(r"^\s*DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV\s*$", re.M)
_MLNX_QOS = re.compile(r"^\s*(?:PFC configuration:|Priority trust state:|dscp2prio mapping:|tc: \d+ ratelimit:|"
                       r"[^\n]*\bprio-pfc\s+\d:(?:on|off)|dscp-prio\s+\d+:\d)", re.M)
_SYSFS = re.compile(r"\A\s*(?:/sys/class/(?:net|infiniband)/\S+?(?::|\s=\s)|[^\n]*[#$]\s*(?:cat|grep(?:\s+-\w+)*\s+\.)\s+/sys/class/(?:net|infiniband)/)")
_ETHTOOL = re.compile(r"^(?:[^\n]*?:\s*)?Settings for [^\s:]+:\s*$", re.M)
_ETHTOOL_FIELDS = re.compile(r"^\s+Speed: (?:\d+Mb/s|Unknown!)\s*$.*^\s+(?:Duplex|Link detected|Auto-negotiation|Lanes):",
                             re.M | re.S)
_IP_ADDR = re.compile(r"^\d+: [^\s:]+: <[A-Z0-9_,-]*> mtu \d+", re.M)
_IP_JSON_ADDR = re.compile(r'\A\s*\[\s*\{.{0,2000}?"ifname"\s*:.{0,2000}?"(?:addr_info|operstate)"', re.S)
_IP_ROUTE = re.compile(r"\A(?:\s*[^\n]*[#$] ip [^\n]*\n)?\s*(?:default via \S+|(?:\d{1,3}\.){3}\d{1,3}(?:/\d+)? (?:via \S+ )?dev \S+)")
_IP_JSON_ROUTE = re.compile(r'\A\s*\[\s*\{\s*"(?:type"\s*:\s*"\w+"\s*,\s*")?dst"\s*:')
_MOUNT_LINE = re.compile(
    r"^(?:\S+ on /\S* type \S+ \([^\n]*\)"  # mount
    r"|\S+ /\S* \S+ (?:rw|ro)(?:,\S*)? \d+ \d+"  # /proc/mounts
    r"|\d+ \d+ \d+:\d+ \S+ +/\S* \S+(?: \S+)*? - \S+ \S+ \S+"  # mountinfo
    r"|/\S* from \S+:\S*)\s*$",  # nfsstat -m
    re.M)


def _first_lines(text: str, count: int = 3) -> list[str]:
    return [line for line in text[:_HEAD].splitlines() if line.strip()][:count]


def fabric_format(text: str) -> str | None:
    head = text[:_HEAD]
    if _IBSTAT.search(head):
        return IBSTAT
    if _IBSTATUS.search(head):
        return IBSTATUS
    if _IB_FAILED.match(head):  # the tool ran and failed: a fact too (NET005 does not conclude "only link")
        return IBV_DEVINFO if head.lstrip().startswith(("Failed", "No IB")) else IBSTAT
    if _IBV_DEVINFO.search(head):
        return IBV_DEVINFO
    if _IBDEV2NETDEV.match(head):
        return IBDEV2NETDEV
    if _SHOW_GIDS.search(head):
        return SHOW_GIDS
    if _MLNX_QOS.search(head):
        return MLNX_QOS
    if _SYSFS.match(head):
        return SYSFS_DUMP
    if _ETHTOOL.search(head) or _ETHTOOL_FIELDS.search(head):
        return ETHTOOL
    if _IP_ADDR.search(head) or _IP_JSON_ADDR.match(head):
        return IP_ADDR
    if _IP_ROUTE.match(head) or _IP_JSON_ROUTE.match(head):
        return IP_ROUTE
    first = _first_lines(head)
    if first and any(_MOUNT_LINE.match(line.strip()) for line in first):
        return MOUNTS
    return None


FABRIC_DETECTORS = [fabric_format]
# How the fabric parsers begin an InputError's message: a folder walk reports these as TL001.
MALFORMED = ("malformed ibstat", "malformed ibv_devinfo", "malformed ibdev2netdev", "malformed show_gids",
             "malformed mlnx_qos", "malformed sysfs dump", "malformed ethtool", "malformed ip ", "malformed mount")
