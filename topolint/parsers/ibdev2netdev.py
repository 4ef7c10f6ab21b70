"""``ibdev2netdev`` (and ``-v``) into a NetdevMap (output-formats.md section 5).

``mlx5_0 port 1 ==> ens1f0 (Up)``; ``-v`` prefixes the PCI address, the model and the port
state: ``0000:17:00.0 mlx5_0 (MT4123 - MCX653105A) ConnectX-6 fw 20.31 port 1 (ACTIVE) ==> ib0 (Up)``.
``(Up)``/``(Down)`` is the netdev's operstate, not the port's. ``| column -t`` spacing and
trailing ``# comments`` (pastes) are accepted; a device without a netdev prints ``==> (Down)``.
"""

from __future__ import annotations

import re

from topolint.inputs.source import SourceFile
from topolint.model.fabric import NetdevLink, NetdevMap
from topolint.model.facts import build
from topolint.model.numbers import decimal, pci_address
from topolint.parsers._lines import PROMPT, at, malformed, numbered

LINK = re.compile(r"(?:(?P<pci>[0-9a-fA-F:.]+)\s+)?(?P<hca>[A-Za-z][\w.-]*)(?:\s+\(.*?\).*?)?\s+port\s+(?P<port>\d+)"
                  r"(?:\s+\((?P<state>[A-Z_]+)\))?\s+==>\s+(?P<netdev>[^\s()#]+)?\s*\((?P<up>Up|Down)\)\s*(?:#.*)?")
EXPECTED = "'HCA port N ==> NETDEV (Up|Down)'"


def parse_ibdev2netdev(source: SourceFile) -> NetdevMap:
    path = source.path
    result = build(NetdevMap, path=path, links=[])
    for line in numbered(source.text):
        match = LINK.fullmatch(line.text)
        if match is None:
            if not result.links and PROMPT.match(line.text) and "ibdev2netdev" in line.text:
                continue
            raise malformed("ibdev2netdev", path, line, EXPECTED)
        result.links.append(build(NetdevLink, hca=match.group("hca"), port=decimal(match.group("port")),
                                  netdev=match.group("netdev"), netdev_up=match.group("up") == "Up",
                                  pci=pci_address(match.group("pci")), loc=at(path, line)))
    return result
