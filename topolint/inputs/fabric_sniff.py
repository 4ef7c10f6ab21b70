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
# Leading blanks are [ \t]*, never \s*: with re.M a \s* at each line start runs over the blank lines
# below it, which makes a file of blank lines quadratic.
_IBSTAT = re.compile(r"^[ \t]*CA '[^'\s]+'[ \t]*\r?\n[ \t]*(?:CA type|Number of ports|Firmware version|Port \d+):", re.M)
_IB_FAILED = re.compile(r"\A\s*(?:ib(?:warn|panic): \[\d+\] |Failed to get IB devices list|No IB devices found)")
_IBSTATUS = re.compile(r"^[ \t]*Infiniband device '[^'\s]+' port \d+ status:[ \t]*\r?$", re.M)
_IBV_DEVINFO = re.compile(r"^[ \t]*hca_id:[ \t]*\S+[ \t]*\r?\n[ \t]*(?:transport|fw_ver|node_guid):", re.M)
_SHOW_GIDS = re.compile(r"^[ \t]*DEV[ \t]+PORT[ \t]+INDEX[ \t]+GID[ \t]+IPv4[ \t]+VER[ \t]+DEV[ \t]*\r?$", re.M)
_MLNX_QOS = re.compile(r"^(?:[ \t]*(?:PFC configuration:|Priority trust state:|dscp2prio mapping:|tc: \d+ ratelimit:|"
                       r"dscp-prio\s+\d+:\d)|[^\n]*?\bprio-pfc\s+\d:(?:on|off))", re.M)
# After \A\s* each alternative starts at a non-blank (\S), so the blanks cannot be split two ways.
_SYSFS = re.compile(r"\A\s*(?:/sys/class/(?:net|infiniband)/\S+?(?::|\s=\s)"
                    r"|(?=\S)[^\n#$]*[#$]\s*(?:cat|grep(?:\s+-\w+)*\s+\.)\s+/sys/class/(?:net|infiniband)/)")
_ETHTOOL = re.compile(r"^(?:[^\n]*?:[ \t]*)?Settings for [^\s:]+:[ \t]*\r?$", re.M)
_ETHTOOL_SPEED = re.compile(r"^[ \t]+Speed: (?:\d+Mb/s|Unknown!)[ \t]*\r?$", re.M)
_ETHTOOL_FIELDS = re.compile(r"^[ \t]+(?:Duplex|Link detected|Auto-negotiation|Lanes):", re.M)
_IP_ADDR = re.compile(r"^\d+: [^\s:]+: <[A-Z0-9_,-]*> mtu \d+", re.M)
_IP_JSON_ADDR = re.compile(r'\A\s*\[\s*\{.{0,2000}?"ifname"\s*:.{0,2000}?"(?:addr_info|operstate)"', re.S)
_IP_ROUTE = re.compile(r"\A\s*(?:(?=\S)[^\n#$]*[#$] ip [^\n]*\n\s*)?"
                       r"(?:default via \S+|(?:\d{1,3}\.){3}\d{1,3}(?:/\d+)? (?:via \S+ )?dev \S+)")
_IP_JSON_ROUTE = re.compile(r'\A\s*\[\s*\{\s*"(?:type"\s*:\s*"\w+"\s*,\s*")?dst"\s*:')
_MOUNT_LINE = re.compile(
    r"^(?:\S+ on /\S* type \S+ \([^\n]*\)"  # mount
    r"|\S+ /\S* \S+ (?:rw|ro)(?:,\S*)? \d+ \d+"  # /proc/mounts
    r"|\d+ \d+ \d+:\d+ \S+ +/\S* \S+(?: \S+)*? - \S+ \S+ \S+"  # mountinfo
    r"|/\S* from \S+:\S*)\s*$",  # nfsstat -m
    re.M)


_STATE_WORD = re.compile(r"\(([A-Za-z_]+)\)")
_NETDEV_STATE = re.compile(r"\((Up|Down)\)")


def ibdev2netdev_fields(line: str) -> dict | None:
    """The parts of one ``ibdev2netdev`` line by its tokens (linear, no backtracking): ``HCA port N
    ==> NETDEV (Up|Down)``; ``-v`` adds a PCI address first, a description and ``(STATE)``; a paste
    may add a ``# comment``. None when the line is not one."""
    left, arrow, right = line.partition("==>")
    if not arrow:
        return None
    tokens = left.split()
    if len(tokens) >= 3 and _STATE_WORD.fullmatch(tokens[-1]):
        state, tokens = tokens[-1][1:-1], tokens[:-1]
    else:
        state = None
    if len(tokens) < 3 or tokens[-2] != "port" or not tokens[-1].isdigit() or len(tokens[-1]) > 3:
        return None
    pci = tokens[0] if ":" in tokens[0] and "." in tokens[0] and len(tokens) > 3 else None
    hca = tokens[1] if pci else tokens[0]
    words = right.split("#", 1)[0].split()
    if not words or not _NETDEV_STATE.fullmatch(words[-1]) or len(words) > 2:
        return None
    netdev = words[0] if len(words) == 2 else None
    if not re.fullmatch(r"[A-Za-z][\w.-]*", hca) or (netdev and "(" in netdev):
        return None
    return {"pci": pci, "hca": hca, "port": tokens[-1], "state": state, "netdev": netdev, "up": words[-1] == "(Up)"}


def _ibdev2netdev(head: str) -> bool:
    lines = [line for line in head.splitlines()[:4] if line.strip()]
    if lines and "ibdev2netdev" in lines[0] and "==>" not in lines[0]:
        lines = lines[1:]
    return bool(lines) and ibdev2netdev_fields(lines[0][:4096]) is not None


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
    if _ibdev2netdev(head):
        return IBDEV2NETDEV
    if _SHOW_GIDS.search(head):
        return SHOW_GIDS
    if _MLNX_QOS.search(head):
        return MLNX_QOS
    if _SYSFS.match(head):
        return SYSFS_DUMP
    if _ETHTOOL.search(head) or (_ETHTOOL_SPEED.search(head) and _ETHTOOL_FIELDS.search(head)):
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
