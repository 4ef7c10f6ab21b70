"""``lldpctl`` / ``lldpcli show neighbors`` in its four forms into an LldpFile
(model/fabric_links.py): what each local interface hears over LLDP, the switch (its chassis id,
SysName, description, Bridge capability) and the switch's port at the other end of the cable.

- text (the default): ``Interface:    eth0, via: LLDP, RID: 1, Time: ...`` then ``Chassis:``
  (``ChassisID:    mac 00:1c:..``, ``SysName:``, ``SysDescr:`` whose continuation lines have no
  key, ``Capability:   Bridge, on``) and ``Port:`` (``PortID:       ifname Ethernet20``,
  ``PortDescr:``) blocks between dashed lines; lines before the first ``Interface:`` (a prompt,
  the ``LLDP neighbors:`` title) are not parsed.
- ``-f json``: ``{"lldp": {"interface": {"eth0": {...}}}}``, or a list of such one-key objects
  when several interfaces hear neighbours; ``chassis`` is keyed by the SysName, or holds ``id``
  directly when the neighbour sends none.
- ``-f json0``: every value a list, names in ``"name"`` keys.
- ``-f keyvalue``: ``lldp.eth0.chassis.name=sw1`` lines; a line without the ``lldp.`` key
  continues the value above it (a multi-line description); the first value of a key wins (a
  later line with the same key is a paste's slip, not a change); ``#`` lines are not parsed.

Neighbours heard over another protocol (CDP from a pod's veth) are kept with their protocol;
the fabric graph reads LLDP ones whose chassis is a switch.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build, location
from topolint.model.fabric_links import LldpFile, LldpNeighbour
from topolint.parsers._json import load
from topolint.parsers._lines import Line, malformed, numbered

_INTERFACE = re.compile(r"Interface:\s+([^\s,]+),\s*via:\s*([^\s,]+)")
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]{0,31}):(?:\s+(.*))?$")
_KV = re.compile(r"lldp\.([^\s=.]{1,64})\.([^\s=]{1,200})=(.*)$")


def parse_lldpctl(source: SourceFile) -> LldpFile:
    text = source.text.lstrip("\ufeff")
    head = text.lstrip()
    if head.startswith("{"):
        return _json(source)
    for line in numbered(text):
        if line.text.startswith("#"):
            continue
        if line.text.startswith("lldp."):
            return _keyvalue(source)
        if _INTERFACE.match(line.text):
            break
    return _text(source)


# ---- text ---------------------------------------------------------------------------------------------
def _text(source: SourceFile) -> LldpFile:
    path = source.path
    result = build(LldpFile, path=path, style="text", neighbours=[])
    current: dict | None = None
    section, last_key = "", None
    for line in numbered(source.text):
        text = line.text
        interface = _INTERFACE.match(text)
        if interface:
            current = _start(result, interface.group(1), interface.group(2), path, line)
            section, last_key = "", None
            continue
        if current is None or set(text) == {"-"}:
            last_key = None if current is not None else last_key
            continue
        key = _KEY.match(text)
        if key is None:
            if last_key in ("SysDescr", "PortDescr"):  # a description's continuation line
                field = "chassis_descr" if last_key == "SysDescr" else "port_descr"
                current[field] = f"{current[field]} {text}"
                continue
            raise malformed("lldpctl", path, line, "'Key: value' lines under an 'Interface:' line")
        name, value = key.group(1), (key.group(2) or "").strip()
        if name in ("Chassis", "Port") and not value:
            section = name
        last_key = name
        _set_text(current, section, name, value)
    return _finish(result)


def _set_text(current: dict, section: str, name: str, value: str) -> None:
    if name == "ChassisID":
        current.setdefault("chassis_id", value)
    elif name == "SysName":
        current.setdefault("chassis_name", value)
    elif name == "SysDescr":
        current.setdefault("chassis_descr", value)
    elif name == "Capability" and section != "Port":
        kind, _, state = value.partition(",")
        if kind.strip() in ("Bridge", "Router"):
            current["bridge"] = bool(current.get("bridge")) or state.strip() == "on"
        elif kind.strip() == "Station" and state.strip() == "on" and current.get("bridge") is None:
            current["bridge"] = False
    elif name == "PortID":
        current.setdefault("port_id", value)
    elif name == "PortDescr":
        current.setdefault("port_descr", value)


def _start(result: LldpFile, interface: str, protocol: str, path: str, line: Line) -> dict:
    current = {"interface": interface, "protocol": protocol, "loc": location(path, line.number, line.column)}
    result.neighbours.append(current)
    return current


def _finish(result: LldpFile) -> LldpFile:
    result.neighbours = [build(LldpNeighbour, **found) for found in result.neighbours]
    return result


# ---- keyvalue -----------------------------------------------------------------------------------------
def _keyvalue(source: SourceFile) -> LldpFile:
    path = source.path
    result = build(LldpFile, path=path, style="keyvalue", neighbours=[])
    by_interface: dict[str, dict] = {}
    values: dict[str, dict[str, str]] = {}
    last: tuple[str, str] | None = None
    for line in numbered(source.text):
        text = line.text
        if text.startswith("#"):
            continue
        match = _KV.match(text)
        if match is None:
            if last is None:
                raise malformed("lldpctl", path, line, "'lldp.INTERFACE.KEY=VALUE' lines")
            interface, key = last
            values[interface][key] += " " + text  # a value continued on the next line
            continue
        interface, key, value = match.groups()
        if interface not in by_interface:
            by_interface[interface] = _start(result, interface, "LLDP", path, line)
            values[interface] = {}
        if key in values[interface]:
            last = None  # the first value of a key wins; a continuation after a repeat is dropped with it
            continue
        values[interface][key] = value.strip()
        last = (interface, key)
    for interface, current in by_interface.items():
        found = values[interface]
        current["protocol"] = found.get("via", "LLDP")
        ids = [(k.split(".", 1)[1], v) for k, v in found.items()
               if k.startswith("chassis.") and k.split(".", 1)[1] in ("mac", "local", "ip", "ifname", "ifalias")]
        if ids:
            current["chassis_id"] = f"{ids[0][0]} {ids[0][1]}"
        for key, field in (("chassis.name", "chassis_name"), ("chassis.descr", "chassis_descr"),
                           ("port.descr", "port_descr")):
            if key in found:
                current[field] = found[key]
        capabilities = [found.get(f"chassis.{kind}.enabled") for kind in ("Bridge", "Router")]
        if any(c is not None for c in capabilities):
            current["bridge"] = "on" in capabilities
        elif found.get("chassis.Station.enabled") == "on":
            current["bridge"] = False
        ports = [(k.split(".", 1)[1], v) for k, v in found.items()
                 if k.startswith("port.") and k.split(".", 1)[1] in ("ifname", "local", "mac", "ip", "ifalias")]
        if ports:
            current["port_id"] = f"{ports[0][0]} {ports[0][1]}"
    return _finish(result)


# ---- json and json0 -----------------------------------------------------------------------------------
def _json(source: SourceFile) -> LldpFile:
    path, text = source.path, source.text
    document = load(path, text, "lldpctl")
    if not isinstance(document, dict) or "lldp" not in document:
        raise InputError(path, 1, "malformed lldpctl JSON: expected an object with an \"lldp\" key")
    lldp = document["lldp"]
    json0 = isinstance(lldp, list)
    result = build(LldpFile, path=path, style="json0" if json0 else "json", neighbours=[])
    finder = _Finder(path, text)
    for name, body in _interfaces(lldp[0] if json0 and lldp else lldp, json0, path):
        current = {"interface": name, "protocol": _scalar(body.get("via"), json0) or "LLDP",
                   "loc": finder.find(name)}
        result.neighbours.append(current)
        _chassis(current, body.get("chassis"), json0)
        _port(current, body.get("port"), json0)
    return _finish(result)


def _interfaces(lldp, json0: bool, path: str):
    if not isinstance(lldp, dict):
        if lldp in ([], None):
            return
        raise InputError(path, 1, "malformed lldpctl JSON: \"lldp\" holds no interface object")
    interfaces = lldp.get("interface", [])
    if json0:
        for body in interfaces if isinstance(interfaces, list) else []:
            if isinstance(body, dict) and isinstance(body.get("name"), str):
                yield body["name"], body
        return
    items = interfaces if isinstance(interfaces, list) else [interfaces]
    for item in items:
        if isinstance(item, dict):
            for name, body in item.items():
                if isinstance(body, dict):
                    yield str(name), body


def _first(value):
    """json0 wraps every value in a list of one object."""
    while isinstance(value, list):
        value = value[0] if value else None
    return value


def _scalar(value, json0: bool) -> str | None:
    value = _first(value)
    if isinstance(value, dict):
        value = value.get("value")
    value = _first(value)
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _identity(value, json0: bool) -> str | None:
    value = _first(value)
    if isinstance(value, dict) and "value" in value:
        kind, found = _scalar(value.get("type"), json0), _scalar(value.get("value"), json0)
        return f"{kind} {found}" if kind and found else found
    return _scalar(value, json0)


def _chassis(current: dict, chassis, json0: bool) -> None:
    chassis = _first(chassis)
    if not isinstance(chassis, dict):
        return
    if not json0 and "id" not in chassis and len(chassis) == 1:
        name, body = next(iter(chassis.items()))  # -f json keys the chassis by its SysName
        if isinstance(body, dict):
            current["chassis_name"] = str(name)
            chassis = body
    if json0:
        name = _scalar(chassis.get("name"), json0)
        if name:
            current["chassis_name"] = name
    _id_and_descr(current, chassis, json0, "chassis")
    if current.get("chassis_descr"):
        current["chassis_descr"] = " ".join(current["chassis_descr"].split())  # \r\n inside a description
    capabilities = chassis.get("capability")
    capabilities = capabilities if isinstance(capabilities, list) else [capabilities]
    enabled = {}
    for capability in capabilities:
        capability = _first(capability)
        if isinstance(capability, dict):
            enabled[_scalar(capability.get("type"), json0)] = capability.get("enabled") is True
    if "Bridge" in enabled or "Router" in enabled:
        current["bridge"] = enabled.get("Bridge", False) or enabled.get("Router", False)
    elif enabled.get("Station"):
        current["bridge"] = False


def _port(current: dict, port, json0: bool) -> None:
    port = _first(port)
    if isinstance(port, dict):
        _id_and_descr(current, port, json0, "port")


def _id_and_descr(current: dict, body: dict, json0: bool, part: str) -> None:
    """``chassis_id``/``port_id`` ("mac 00:1c:..", "ifname swp1") and the description of one part."""
    identity = _identity(body.get("id"), json0)
    if identity:
        current[f"{part}_id"] = identity
    descr = _scalar(body.get("descr"), json0)
    if descr:
        current[f"{part}_descr"] = descr


class _Finder:
    """The line of each interface's name, searched forward in document order (linear)."""

    def __init__(self, path: str, text: str):
        self.path, self.text, self.offset, self.line, self.counted = path, text, 0, 1, 0

    def find(self, name: str):
        quoted = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
        at = self.text.find(quoted, self.offset)
        if at < 0:
            return location(self.path, self.line, 0)
        self.line += self.text.count("\n", self.counted, at)
        self.counted = self.offset = at + len(quoted)
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return location(self.path, self.line, column)
