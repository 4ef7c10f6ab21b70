"""``ibdev2netdev`` (and ``-v``) into a NetdevMap (output-formats.md section 5).

``mlx5_0 port 1 ==> ens1f0 (Up)``; ``-v`` prefixes the PCI address, the model and the port
state: ``0000:17:00.0 mlx5_0 (MT4123 - MCX653105A) ConnectX-6 fw 20.31 port 1 (ACTIVE) ==> ib0 (Up)``.
``(Up)``/``(Down)`` is the netdev's operstate, not the port's. ``| column -t`` spacing and
trailing ``# comments`` (pastes) are accepted; a device without a netdev prints ``==> (Down)``.
"""

from __future__ import annotations

from topolint.inputs.fabric_sniff import ibdev2netdev_fields
from topolint.inputs.source import SourceFile
from topolint.model.fabric import NetdevLink, NetdevMap
from topolint.model.facts import build
from topolint.model.numbers import decimal, pci_address
from topolint.parsers._lines import PROMPT, at, malformed, numbered

EXPECTED = "'HCA port N ==> NETDEV (Up|Down)'"


def parse_ibdev2netdev(source: SourceFile) -> NetdevMap:
    path = source.path
    result = build(NetdevMap, path=path, links=[])
    for line in numbered(source.text):
        match = ibdev2netdev_fields(line.text)
        if match is None:
            if not result.links and PROMPT.match(line.text) and "ibdev2netdev" in line.text:
                continue
            raise malformed("ibdev2netdev", path, line, EXPECTED)
        result.links.append(build(NetdevLink, hca=match["hca"], port=decimal(match["port"]), netdev=match["netdev"],
                                  netdev_up=match["up"], pci=pci_address(match["pci"]), loc=at(path, line)))
    return result
