"""``ip addr`` (``ip a``), ``ip -br addr`` and ``ip -j addr`` into an InterfacesFile.

Text: ``2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP ...``, then
indented ``link/ether ...``, ``inet 10.0.0.4/24 ... scope global eth0``, ``inet6 ...`` and
``valid_lft`` lines. ``eth0@if5`` (a veth end) is named ``eth0``. Brief: ``eth0 UP 10.0.0.4/24
fe80::1/64``. JSON: the list ip prints, with ``ifname``, ``flags``, ``operstate``, ``mtu``,
``link_type`` and ``addr_info`` (``family``, ``local``, ``prefixlen``, ``scope``).
"""

from __future__ import annotations

import re
from sys import intern  # flags, states and scopes are a few words repeated on every interface

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import IfAddress, Interface, InterfacesFile
from topolint.model.facts import build
from topolint.model.numbers import decimal, ipv4_network
from topolint.parsers import _json
from topolint.parsers._lines import PROMPT, at, malformed, numbered

HEADER = re.compile(r"(\d+):\s+([^\s:@]+)(?:@\S+)?:\s+<([^>]*)>(.*)")
ADDRESS = re.compile(r"(inet6?)\s+([0-9A-Fa-f:.]+)(?:/(\d+))?(?:\s+peer\s+\S+)?(.*)")
LINK = re.compile(r"link/(\S+)(?:\s.*)?")
BRIEF = re.compile(r"([^\s@]+)(?:@\S+)?\s+(UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT)((?:\s+\S+/\d+)*)\s*")
DETAIL = re.compile(r"(valid_lft|altname|vf \d+|prop|netnsid|inet6? .*|RX:|TX:|\d+\s+\d+|link-netnsid).*")
EXPECTED = "'N: NAME: <FLAGS> ... state S', 'inet ADDR/LEN ...' or 'link/TYPE ...'"


def parse_ip_addr(source: SourceFile) -> InterfacesFile:
    if source.text.lstrip().startswith("["):
        return _parse_json(source)
    path = source.path
    result = build(InterfacesFile, path=path, interfaces=[])
    current: Interface | None = None
    for line in numbered(source.text):
        header = HEADER.fullmatch(line.text)
        if header:
            rest = header.group(4)
            state = re.search(r"\bstate (\S+)", rest)
            mtu = re.search(r"\bmtu (\d+)", rest)
            current = build(Interface, name=header.group(2), flags=[intern(f) for f in header.group(3).split(",")],
                            state=intern(state.group(1)) if state else None, mtu=decimal(mtu.group(1)) if mtu else None,
                            addresses=[], loc=at(path, line))
            result.interfaces.append(current)
            continue
        brief = BRIEF.fullmatch(line.text)
        if brief and current is None:
            interface = build(Interface, name=brief.group(1), flags=[], state=brief.group(2), addresses=[],
                              loc=at(path, line))
            for cidr in brief.group(3).split():
                interface.addresses.append(_address(cidr, path, line))
            result.interfaces.append(interface)
            continue
        if current is None:
            if PROMPT.match(line.text):
                continue
            raise malformed("ip addr", path, line, EXPECTED)
        address = ADDRESS.fullmatch(line.text)
        link = LINK.fullmatch(line.text)
        if address:
            scope = re.search(r"\bscope (\S+)", address.group(4))
            current.addresses.append(build(IfAddress, family=intern(address.group(1)), address=address.group(2).lower(),
                                           prefix=decimal(address.group(3)) if address.group(3) else None,
                                           scope=intern(scope.group(1)) if scope else None, loc=at(path, line)))
        elif link:
            current.link_type = link.group(1)
        elif not DETAIL.match(line.text):
            raise malformed("ip addr", path, line, EXPECTED)
    return result


def _address(cidr: str, path: str, line) -> IfAddress:
    address, _, prefix = cidr.partition("/")
    family = "inet" if ipv4_network(cidr) is not None else "inet6"
    return build(IfAddress, family=family, address=address.lower(), prefix=decimal(prefix), scope=None,
                 loc=at(path, line, line.raw.find(cidr) + 1))


def _parse_json(source: SourceFile) -> InterfacesFile:
    path = source.path
    data = _json.load(path, source.text, "ip -j addr")
    if not isinstance(data, list):
        raise InputError(path, 1, "malformed ip -j addr JSON: expected a list of interfaces")
    names, locals_ = _json.Positions(path, source.text, "ifname"), _json.Positions(path, source.text, "local")
    result = build(InterfacesFile, path=path, interfaces=[])
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("ifname"), str):
            raise InputError(path, 1, "malformed ip -j addr JSON: an entry without an \"ifname\" string")
        flags = item.get("flags") if isinstance(item.get("flags"), list) else []
        interface = build(Interface, name=item["ifname"], flags=[str(f) for f in flags],
                          state=item.get("operstate") if isinstance(item.get("operstate"), str) else None,
                          mtu=item.get("mtu") if isinstance(item.get("mtu"), int) else None,
                          link_type=item.get("link_type") if isinstance(item.get("link_type"), str) else None,
                          addresses=[], loc=names.take())
        for info in item.get("addr_info") or []:
            if isinstance(info, dict) and isinstance(info.get("local"), str):
                interface.addresses.append(build(
                    IfAddress, family=str(info.get("family") or ""), address=info["local"].lower(),
                    prefix=info.get("prefixlen") if isinstance(info.get("prefixlen"), int) else None,
                    scope=info.get("scope") if isinstance(info.get("scope"), str) else None, loc=locals_.take()))
        result.interfaces.append(interface)
    return result
