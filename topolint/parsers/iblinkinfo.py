"""``iblinkinfo`` (default layout) into a FabricFile (model/fabric_links.py).

infiniband-diags iblinkinfo.c prints a header per node, ``CA: <NodeDescription>:`` or
``Switch: 0x<guid> <NodeDescription>:``, then one line per port:

    0x<portguid>  LID  PORT[EXT] ==( 4X  53.125 Gbps Active/  LinkUp)==>  RLID RPORT[EXT] "<peer>" ( )
               LID  PORT[EXT] ==(                Down/ Polling)==>             [  ] "" ( )

(a CA's lines start with the port GUID, a switch's with the switch LID). The width and the lane's
signalling rate (``25.78125 Gbps`` is EDR, ``53.125 Gbps`` HDR, ``10.0 Gbps (FDR10)``) come
first, then the logical and the physical state. A linked port names its peer by LID, port and
description; the last parentheses hold iblinkinfo's own hint when the link runs below what both
ends support (``Could be 4X``, ``Could be 25.78125 Gbps``). ``Down/ Polling`` with no peer is a
port with nothing cabled; ``"Port not available"`` a port up whose peer was not discovered.
Each cable is printed from both of its ends: one link, at the line printed first. A peer
whose own lines are missing (a pasted listing cut short) is named by its LID and description.
Lines before the first header (a shell prompt, a title) are not parsed.
"""

from __future__ import annotations

import re
import sys

from topolint.inputs.source import SourceFile
from topolint.model.facts import build, location
from topolint.model.numbers import decimal
from topolint.model.fabric_links import FabricFile, FabricLink, FabricNode, FabricPort, cable_key, host_of, lane_speed
from topolint.parsers._lines import Line, malformed, numbered

_HEADER = re.compile(r"(CA|Switch|Router): (?:(0x[0-9a-fA-F]{1,16}) )?(.*):$")
_LOCAL = re.compile(r"(?:(0x[0-9a-fA-F]{1,16})\s+)?(\d{1,5})\s+(\d{1,4})\[[^\]\n]{0,8}\]\s*==\($")
_STATE = re.compile(r"(?:(\d{1,2})X\s+(.{1,40}?)\s+)?([A-Za-z]{1,16})/\s*([A-Za-z]{1,32})$")
_REMOTE = re.compile(r'(?:(\d{1,5})\s+(\d{1,4}))?\s*\[[^\]\n]{0,8}\]\s+"([^"\n]*)"\s*\((.*)\)$')
_EXPECTED = "'[0xGUID] LID PORT[ ] ==( WIDTH SPEED STATE/ PHYSSTATE)==> [RLID RPORT[ ] \"peer\" ( )]'"
_KIND = {"CA": "ca", "Switch": "switch", "Router": "router"}


def parse_iblinkinfo(source: SourceFile) -> FabricFile:
    path = source.path
    result = build(FabricFile, path=path, tool="iblinkinfo", nodes={}, links=[], ports=[])
    by_lid: dict[int, str] = {}  # LID -> node id, for the peers the lines name by LID
    # (node id, port, width, speed, state, phys, remote lid, remote port, remote desc, hint, line, column):
    # the position, not the Line with its two copies of the text, held until the file is read
    rows = []
    current: dict | None = None
    seen: set[tuple] = set()
    for line in numbered(source.text):
        header = _HEADER.match(line.text) if "==" not in line.text else None
        if header is not None:
            kind, guid, description = header.groups()
            current = {"kind": _KIND[kind], "guid": guid and _guid(guid), "description": description, "line": line}
            if guid:
                _add_node(result, _guid(guid), current, None)
            continue
        if current is None:
            if "==(" in line.text:
                raise malformed("iblinkinfo", path, line, "a 'CA: NAME:' or 'Switch: 0xGUID NAME:' line first")
            continue  # what precedes the first header: a prompt, a title
        rows.append(_port_row(result, current, line, path, by_lid))
    for node_id, port, width, speed, state, phys, rlid, rport, rdesc, hint, number, column in rows:
        if rlid is None:
            result.ports.append(build(FabricPort, node=node_id, port=port, state=state, phys_state=phys,
                                      loc=location(path, number, column)))
            continue
        peer = by_lid.get(rlid)
        if peer is None:  # its own lines are not in the file
            peer = f"lid:{rlid}"
            if peer not in result.nodes:
                result.nodes[peer] = build(FabricNode, id=peer, kind="ca" if host_of(rdesc) else "switch",
                                           description=rdesc, lid=rlid, loc=location(path, number, column))
        key = cable_key(node_id, port, peer, rport)
        if key in seen:
            continue
        seen.add(key)
        result.links.append(build(FabricLink, a=node_id, a_port=port, b=peer, b_port=rport, width=width, speed=speed,
                                  state=state, phys_state=phys, could_be=hint,
                                  loc=location(path, number, column)))
    return result


def _guid(text: str) -> str:
    return text.lower().removeprefix("0x").rjust(16, "0")


def _add_node(result: FabricFile, node_id: str, current: dict, lid: int | None) -> str:
    if node_id not in result.nodes:
        header = current["line"]
        result.nodes[node_id] = build(FabricNode, id=node_id, kind=current["kind"], description=current["description"],
                                      guid=node_id if not node_id.startswith("lid:") else None, lid=lid,
                                      loc=location(result.path, header.number, header.column))
    elif lid is not None and result.nodes[node_id].lid is None:
        result.nodes[node_id].lid = lid
    return node_id


def _port_row(result: FabricFile, current: dict, line: Line, path: str, by_lid: dict) -> tuple:
    text = line.text
    start, end = text.find("==("), text.find("==>")
    if start < 0 or end < start:
        raise malformed("iblinkinfo", path, line, _EXPECTED)
    local = _LOCAL.match(text[:start + 3])
    inside = text[start + 3:end]
    close = inside.find(")")
    # The state's own parentheses end at the ")" after the physical state: a "(FDR10)" or the
    # "(HOQ:..)" of --switch-settings may follow inside "==( ... )==>".
    state_text = inside[:close] if close >= 0 else ""
    if "(FDR10" in state_text or state_text.endswith("(FDR10"):
        close = inside.find(")", close + 1)
        state_text = inside[:close]
    state = _STATE.search(state_text.strip().replace("(FDR10)", "FDR10")) if close >= 0 else None
    remote = _REMOTE.match(text[end + 3:].strip())
    not_available = text[end + 3:].strip() == '"Port not available"'
    if local is None or state is None or (remote is None and not not_available):
        raise malformed("iblinkinfo", path, line, _EXPECTED)
    own_guid, lid, port = local.group(1), decimal(local.group(2)), decimal(local.group(3))
    if current["kind"] == "switch" and current["guid"]:
        node_id = current["guid"]
    elif own_guid:
        node_id = _guid(own_guid)
    else:
        node_id = f"lid:{lid}"
    _add_node(result, node_id, current, lid)
    by_lid.setdefault(lid, node_id)
    width = decimal(state.group(1)) if state.group(1) else None
    speed = lane_speed(state.group(2)) if state.group(2) else None
    if state.group(2) and speed is None:
        raise malformed("iblinkinfo", path, line, "a lane speed such as '25.78125 Gbps' or '53.125 Gbps'")
    logical, phys = sys.intern(state.group(3).lower()), sys.intern(state.group(4).lower())  # a few states
    if remote is None or remote.group(1) is None:
        return node_id, port, width, speed, logical, phys, None, None, None, None, line.number, line.column
    hint = " ".join(remote.group(4).split()) or None
    return (node_id, port, width, speed, logical, phys, decimal(remote.group(1)), decimal(remote.group(2)),
            remote.group(3), hint, line.number, line.column)
