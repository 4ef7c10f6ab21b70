"""``ibnetdiscover`` (the topology file) and ``ibnetdiscover -p`` (one line per port) into a
FabricFile (model/fabric_links.py).

The topology file (infiniband-diags ibnetdiscover.c) is blocks of ``key=value`` header lines,
a node line (``Switch 65 "S-<guid>" # "<NodeDescription>" ... lid 73 ...``, ``Ca 1 "H-<guid>"
# "<desc>"``, ``Rt ...``) and one line per linked port: ``[1] "H-<guid>"[1](<portguid>) #
"<peer desc>" lid 647 4xNDR`` on a switch, ``[1](<portguid>) "S-<guid>"[17] # lid 657 lmc 0
"<peer desc>" lid 73 4xNDR`` on a CA. Each cable appears from both ends: it is one link, at the
line of the end printed first. A node listed only as a peer (a truncated discovery) keeps the
description its peer line gives.

``-p``: ``CA 134 1 0x<guid> 4x EDR - SW 1719 10 0x<guid> ( 'o0001 HCA-1' - 'ib-i1l1s01' )``;
a port with no peer ends after its speed with its own description (``4x ???``: no link; a
down port may print a stale ``4x SDR``): an unlinked port, not a link.
"""

from __future__ import annotations

import re

from topolint.inputs.source import SourceFile
from topolint.model.facts import build, location
from topolint.model.numbers import decimal
from topolint.model.fabric_links import FabricFile, FabricLink, FabricNode, FabricPort, cable_key, lane_speed
from topolint.parsers._lines import PROMPT, Line, malformed, numbered

KINDS = {"Switch": "switch", "Ca": "ca", "Rt": "router", "SW": "switch", "CA": "ca", "RT": "router"}
_HEADER_KEYS = ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "routerguid")
# Node line: Switch|Ca|Rt, port count, quoted id, then a comment with the quoted description.
_NODE = re.compile(r'(Switch|Ca|Rt)\s+(\d{1,4})\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*(.*))?$')
# Port line: [port](optional [ext N]) (optional (portguid)), the peer's quoted id, [peer port],
# optional [ext] and (peer port guid), then the comment.
_PORT = re.compile(r'\[(\d{1,4})\](?:\[[^\]\n]{0,16}\])?(?:\(([0-9a-fA-F]{1,16})\))?\s+'
                   r'"([SHR])-([0-9a-fA-F]{1,16})"\[(\d{1,4})\](?:\[[^\]\n]{0,16}\])?(?:\(([0-9a-fA-F]{1,16})\))?'
                   r'\s*(?:#\s*(.*))?$')
_QUOTED = re.compile(r'"([^"\n]*)"')
_LID = re.compile(r"\blid (\d{1,5})\b")
_WIDTH_SPEED = re.compile(r"\b(\d{1,2})x([A-Z][A-Z0-9]{2,5})\s*$")
_EXPECTED = "a '#' comment, 'key=value', a 'Switch'/'Ca'/'Rt' node line or a '[port]' link line"
_EXPECTED_P = "'TYPE LID PORT GUID WIDTH SPEED [- TYPE LID PORT GUID ( 'desc' - 'desc' )]'"


def _guid(text: str) -> str:
    return text.lower().removeprefix("0x").rjust(16, "0")


def parse_ibnetdiscover(source: SourceFile) -> FabricFile:
    """The topology file or ``-p`` output, told apart by the first line that is not a comment."""
    for line in numbered(source.text):
        if line.text.startswith("#") or PROMPT.match(line.text) and "ibnetdiscover" in line.text:
            continue
        if line.text.split(None, 1)[0] in ("SW", "CA", "RT"):
            return parse_ports(source)
        break
    return _Topology(source).parse()


class _Topology:
    def __init__(self, source: SourceFile):
        self.path = source.path
        self.source = source
        self.result = build(FabricFile, path=self.path, tool="ibnetdiscover", nodes={}, links=[], ports=[])
        self.current: FabricNode | None = None
        self.seen: set[tuple] = set()
        self.declared: set[str] = set()  # nodes whose own line was read (not only named by a peer)

    def parse(self) -> FabricFile:
        for line in numbered(self.source.text):
            text = line.text
            if text.startswith("#") or text.startswith(("ibwarn:", "ibwarn ")):
                continue
            if text[0] == "[":
                self.port(line)
            elif text.split("=", 1)[0] in _HEADER_KEYS and "=" in text:
                self.current = None  # a new block begins
            elif text.startswith(("Switch", "Ca", "Rt")):
                self.node(line)
            elif not self.result.nodes and PROMPT.match(text) and "ibnetdiscover" in text:
                continue
            else:
                raise malformed("ibnetdiscover", self.path, line, _EXPECTED)
        return self.result

    def node(self, line: Line) -> None:
        match = _NODE.match(line.text)
        if match is None:
            raise malformed("ibnetdiscover", self.path, line, "'Switch|Ca|Rt PORTS \"X-GUID\" # \"description\"'")
        kind, _ports, _letter, guid, comment = match.groups()
        quoted = _QUOTED.search(comment or "")
        lid = _LID.search(comment or "")
        node_id = _guid(guid)
        self.current = self.declare(node_id, KINDS[kind], quoted.group(1) if quoted else "", line,
                                    decimal(lid.group(1)) if lid else None, declared=True)

    def declare(self, node_id: str, kind: str, description: str, line: Line, lid: int | None,
                declared: bool) -> FabricNode:
        nodes = self.result.nodes
        known = nodes.get(node_id)
        if known is not None and (not declared or node_id in self.declared):
            return known
        node = build(FabricNode, id=node_id, kind=kind, description=description or (known.description if known else ""),
                     guid=node_id, lid=lid if lid is not None else (known.lid if known else None),
                     loc=location(self.path, line.number, line.column))
        if declared:
            self.declared.add(node_id)
        nodes[node_id] = node
        return node

    def port(self, line: Line) -> None:
        if self.current is None:
            raise malformed("ibnetdiscover", self.path, line, "a port line after a 'Switch', 'Ca' or 'Rt' line")
        match = _PORT.match(line.text)
        if match is None:
            raise malformed("ibnetdiscover", self.path, line, "'[PORT] \"X-GUID\"[PEERPORT] # ... WIDTHxSPEED'")
        port, _own_guid, letter, peer_guid, peer_port, _peer_port_guid, comment = match.groups()
        comment = comment or ""
        quoted = _QUOTED.findall(comment)
        lids = _LID.findall(comment)
        peer_kind = {"S": "switch", "H": "ca", "R": "router"}[letter]
        # A switch's port line names its peer first; a CA's names its own lid first, then the peer.
        peer_lid = decimal(lids[-1]) if lids else None
        peer = self.declare(_guid(peer_guid), peer_kind, quoted[-1] if quoted else "", line, peer_lid, declared=False)
        width_speed = _WIDTH_SPEED.search(comment)
        a_port, b_port = decimal(port), decimal(peer_port)
        key = cable_key(self.current.id, a_port, peer.id, b_port)
        if key in self.seen:
            return
        self.seen.add(key)
        self.result.links.append(build(
            FabricLink, a=self.current.id, a_port=a_port, b=peer.id, b_port=b_port,
            width=decimal(width_speed.group(1)) if width_speed else None,
            speed=lane_speed(width_speed.group(2)) if width_speed else None,
            loc=location(self.path, line.number, line.column)))


# ---- ibnetdiscover -p --------------------------------------------------------------------------------
_END = re.compile(r"(SW|CA|RT)\s+(\d{1,5})\s+(\d{1,4})\s+(0x[0-9a-fA-F]{1,16})\s+(\d{1,2})x\s+(\S{1,8})")
_PEER = re.compile(r"(SW|CA|RT)\s+(\d{1,5})\s+(\d{1,4})\s+(0x[0-9a-fA-F]{1,16})\s")
_DESCRIPTIONS = re.compile(r"\(\s*'([^'\n]*)'\s+-\s+'([^'\n]*)'\s*\)\s*$")
_OWN_DESCRIPTION = re.compile(r"'([^'\n]*)'\s*$")


def parse_ports(source: SourceFile) -> FabricFile:
    path = source.path
    result = build(FabricFile, path=path, tool="ibnetdiscover -p", nodes={}, links=[], ports=[])
    seen: set[tuple] = set()
    for line in numbered(source.text):
        text = line.text
        if text.startswith("#") or (not result.nodes and PROMPT.match(text) and "ibnetdiscover" in text):
            continue
        own = _END.match(text)
        if own is None:
            raise malformed("ibnetdiscover -p", path, line, _EXPECTED_P)
        rest = text[own.end():].strip()
        if rest.startswith("-"):
            peer = _PEER.match(rest[1:].strip())
            names = _DESCRIPTIONS.search(rest)
            if peer is None or names is None:
                raise malformed("ibnetdiscover -p", path, line, _EXPECTED_P)
            loc = location(path, line.number, line.column)  # one for the line's nodes and link
            a = _node(result, own, names.group(1), loc)
            b = _node(result, peer, names.group(2), loc)
            key = cable_key(a.id, decimal(own.group(3)), b.id, decimal(peer.group(3)))
            if key in seen:
                continue
            seen.add(key)
            result.links.append(build(
                FabricLink, a=a.id, a_port=decimal(own.group(3)), b=b.id, b_port=decimal(peer.group(3)),
                width=decimal(own.group(5)), speed=lane_speed(own.group(6)), loc=loc))
            continue
        name = _OWN_DESCRIPTION.search(rest) if rest else None
        if rest and name is None:
            raise malformed("ibnetdiscover -p", path, line, _EXPECTED_P)
        loc = location(path, line.number, line.column)
        node = _node(result, own, name.group(1) if name else "", loc)
        # No peer: nothing is cabled there, or the cable is dead; the printed speed is stale.
        result.ports.append(build(FabricPort, node=node.id, port=decimal(own.group(3)), loc=loc))
    return result


def _node(result: FabricFile, end: re.Match, description: str, loc) -> FabricNode:
    node_id = _guid(end.group(4))
    known = result.nodes.get(node_id)
    if known is not None:
        return known
    node = build(FabricNode, id=node_id, kind=KINDS[end.group(1)], description=description, guid=node_id,
                 lid=decimal(end.group(2)), loc=loc)
    result.nodes[node_id] = node
    return node
