"""``ethtool IF`` into an EthtoolFile (output-formats.md section 9).

``Settings for IF:`` (vendor wrappers may prefix it: ``Netdev status:Settings for eth3:``) then
TAB-indented ``Key: value`` fields; link-mode lists and ``Current message level`` continue on
lines without a colon. ``Speed: 100000Mb/s`` or ``Speed: Unknown!`` (or no Speed line at all:
some drivers), ``Lanes: N`` (netlink ethtool), ``Duplex:``, ``Link detected: yes|no``. Several
runs in one file give several links; a tail or grep fragment without its ``Settings for`` line
is one link whose interface is unknown. Non-root noise (``Cannot get ...: Operation not
permitted``) is skipped.
"""

from __future__ import annotations

import re

from topolint.inputs.source import SourceFile
from topolint.model.fabric import EthtoolFile, EthtoolLink
from topolint.model.facts import build
from topolint.model.numbers import decimal
from topolint.parsers._lines import KEY_VALUE, PROMPT, Line, at, malformed, numbered, value_column

SETTINGS = re.compile(r"(?:.*?:\s*)?Settings for ([^\s:]+):")
SPEED = re.compile(r"(\d+)\s*Mb/s")
NOISE = re.compile(r"Cannot get .*|No data available|netlink error: .*")
EXPECTED = "'Settings for IF:' or 'Key: value'"


def parse_ethtool(source: SourceFile) -> EthtoolFile:
    path = source.path
    result = build(EthtoolFile, path=path, links=[])
    link: EthtoolLink | None = None
    # One object per distinct speed text, speed and duplex: every port of a node prints the same
    # (a fresh string and int per port is half of what a link holds, issue 20).
    shared: dict = {}
    for line in numbered(source.text):
        header = SETTINGS.fullmatch(line.text)
        if header:
            link = _new(result, path, line, header.group(1))
            continue
        if NOISE.fullmatch(line.text) or (PROMPT.match(line.text) and "ethtool" in line.text):
            continue
        pair = KEY_VALUE.fullmatch(line.text)
        if pair is None:
            if link is None:
                raise malformed("ethtool", path, line, EXPECTED)
            continue  # a continuation of the field above (link modes, message level)
        if link is None:
            link = _new(result, path, line, None)
        _field(link, pair.group(1).strip().lower(), pair.group(2).strip(), path, line, shared.setdefault)
    return result


def _new(result: EthtoolFile, path: str, line: Line, interface: str | None) -> EthtoolLink:
    link = build(EthtoolLink, interface=interface, loc=at(path, line), lines={})
    result.links.append(link)
    return link


def _field(link: EthtoolLink, key: str, value: str, path: str, line: Line, share) -> None:
    where = at(path, line, value_column(line, value))
    if key == "speed":
        speed = SPEED.fullmatch(value)
        mbps = decimal(speed.group(1)) if speed else None
        link.speed_mbps, link.speed_text, link.lines["speed"] = share(mbps, mbps), share(value, value), where
    elif key == "lanes":
        link.lanes = decimal(value)
    elif key == "duplex":
        duplex = value.split()[0].lower() if value else None
        link.duplex = share(duplex, duplex)
    elif key == "link detected":
        link.link_detected, link.lines["link_detected"] = {"yes": True, "no": False}.get(value.lower()), where
