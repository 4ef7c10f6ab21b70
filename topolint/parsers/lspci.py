"""lspci outputs: ``-vvv`` blocks (with or without ``-D`` domains and ``-nn`` ids), header-less
excerpts (a grep of ``ACSCtl:`` lines, a pasted fragment), and one-line lists (plain, ``-D``,
``-nn``). Trees (``-t``/``-tv``) are in lspci_tree.py.

Indentation is not trusted (pastes turn tabs into 2, 4 or 8 spaces): a line at column 0 is a
device header, an indented line is an attribute of the device above it. Lines with no device
above them form anonymous devices, one per repeated field, which rules judge but never attribute.
One pass over the lines; bridges are matched to their devices through a per-domain bus table.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build, location
from topolint.model.host import AcsControl, LspciDevice, LspciFile, PciLinkState
from topolint.model.numbers import decimal, decimal_fraction, hex_int, pci_address, remembered
from topolint.parsers._lines import first_text_line

HEADER = re.compile(r"((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(\S.*)")
_CLASS = re.compile(r"(?P<name>[^:\[]*[^:\[\s])(?:\s*\[(?P<code>[0-9a-fA-F]{4})\])?:\s*(?P<rest>.*)")
_IDS = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\](?=[^\[]*$)")
# No leading \s*: a sub() tries every position, and \s* ran over each run of blanks (a header line
# of 40,000 blanks took 3 s); [^()] stops at the next "(" for the same reason.
_REV = re.compile(r"\((?:rev|prog-if)[^()]*\)")
_SPEED = re.compile(r"Speed\s+([^,\s(]+)(?:\s*\((ok|downgraded)\))?")
_WIDTH = re.compile(r"Width\s+x(\d{1,3})(?:\s*\((ok|downgraded)\))?")
_GTS = re.compile(r"([0-9.]+)\s*GT/s")
_BUS = re.compile(r"secondary=([0-9a-fA-F]{2}),\s*subordinate=([0-9a-fA-F]{2})")
_EXPRESS = re.compile(r"Express\s+(?:\(v\d+\)\s+)?([A-Za-z][A-Za-z /-]*?)(?:\s*\(Slot[+-]\))?,")
_FLAG = re.compile(r"([A-Za-z][A-Za-z0-9]*)([+-])")
_SUPPORTED = re.compile(r"Supported Link Speeds:\s*(?:[0-9.]+-)?([0-9.]+)\s*GT/s")
# Repeated in one anonymous device, these start the next one (a grep prints one per device).
_ANONYMOUS_ONCE = {"LnkCap": "lnk_cap", "LnkSta": "lnk_sta", "ACSCtl": "acs_ctl", "NUMA node": "numa_node"}


def _loc(path: str, line: int, column: int = 1) -> Location:
    return location(path, line, column)


def header_fields(path: str, number: int, line: str) -> dict | None:
    """A device's fields from a header line (``0000:17:00.0 3D controller [0302]: NVIDIA ... [10de:2330]``)."""
    parts = _header_parts(line)
    if parts is None:
        return None
    address, class_name, class_code, vendor_id, device_id, description = parts
    return {"address": address, "class_name": class_name, "class_code": class_code, "vendor_id": vendor_id,
            "device_id": device_id, "description": description, "loc": _loc(path, number)}


# A cluster repeats the same device headers and LnkCap/LnkSta/ACSCtl values on every node: what
# they say is remembered (numbers.remembered: short texts only, in a bounded table).
@remembered
def _header_parts(line: str) -> tuple | None:
    match = HEADER.fullmatch(line.rstrip())
    if not match:
        return None
    address = pci_address(match.group(1))
    parts = _CLASS.fullmatch(match.group(2))
    if address is None or parts is None:
        return None
    rest = parts.group("rest")
    ids = _IDS.search(_REV.sub("", rest))
    return (address, parts.group("name"), parts.group("code"), ids.group(1).lower() if ids else None,
            ids.group(2).lower() if ids else None, rest)


def link_state(value: str, loc: Location) -> PciLinkState:
    speed_text, speed_gts, speed_flag, width, width_flag = _link_fields(value)
    return build(PciLinkState, speed_text=speed_text, speed_gts=speed_gts, speed_flag=speed_flag, width=width,
                 width_flag=width_flag, loc=loc)


@remembered
def _link_fields(value: str) -> tuple:
    speed, width = _SPEED.search(value), _WIDTH.search(value)
    gts = _GTS.fullmatch(speed.group(1)) if speed else None
    return (speed.group(1) if speed else None, decimal_fraction(gts.group(1)) if gts else None,
            speed.group(2) if speed else None, decimal(width.group(1)) if width else None,
            width.group(2) if width else None)


class _Reader:
    """Devices as field dicts while reading (built once at the end: no per-field setattr)."""

    def __init__(self, source: SourceFile):
        self.path = source.path
        self.devices: list[dict] = []
        self.device: dict | None = None
        self.anonymous = False
        self.has_ids = False
        # ACSCtl flags by the line's text: every bridge of a node prints the same few, and a dict of
        # seven flags is four times its line; the facts share one (rules only read it).
        self.acs_flags: dict[str, dict[str, bool]] = {}

    def header(self, fields: dict) -> None:
        self.devices.append(fields)
        self.device, self.anonymous = fields, False
        self.has_ids = self.has_ids or fields["vendor_id"] is not None

    def current(self, number: int, key: str) -> dict:
        """The device an attribute line belongs to; a new anonymous one where there is none, or
        where an anonymous one already has this field."""
        attribute = _ANONYMOUS_ONCE.get(key)
        if self.device is None or (self.anonymous and attribute and self.device.get(attribute) is not None):
            self.device = {"loc": _loc(self.path, number)}
            self.devices.append(self.device)
            self.anonymous = True
        return self.device

    def attribute(self, number: int, column: int, key: str, value: str) -> None:
        handler = _HANDLERS.get(key)
        if key == "Capabilities":
            handler = _denied if value.startswith("<access denied>") else _capability
        if key == "ACSCtl":
            flags = self.acs_flags.get(value)
            if flags is None:
                flags = self.acs_flags[value] = dict(_acs_flags(value))
            device = self.current(number, key)
            device["acs_ctl"] = build(AcsControl, flags=flags, loc=location(self.path, number, column))
            return
        handler(self.current(number, key), value, (self.path, number, column))


# Handlers get where the value is as (path, line, column): only those that keep a Location
# make one (most lines a rule reads are judged by their device's header).
def _numa(device: dict, value: str, at: tuple) -> None:
    device["numa_node"], device["numa_loc"] = decimal(value), location(*at)


def _driver(device: dict, value: str, at: tuple) -> None:
    device["driver"] = value.strip() or None


def _bus(device: dict, value: str, at: tuple) -> None:
    match = _BUS.search(value)
    if match:
        device["secondary_bus"], device["subordinate_bus"] = hex_int(match.group(1)), hex_int(match.group(2))


def _lnk_cap(device: dict, value: str, at: tuple) -> None:
    device["lnk_cap"] = link_state(value, location(*at))


def _lnk_sta(device: dict, value: str, at: tuple) -> None:
    device["lnk_sta"] = link_state(value, location(*at))


def _lnk_cap2(device: dict, value: str, at: tuple) -> None:
    match = _SUPPORTED.search(value)
    if match:
        device["lnk_cap2_max_gts"] = decimal_fraction(match.group(1))


@remembered
def _acs_flags(value: str) -> tuple:
    return tuple((m.group(1), m.group(2) == "+") for m in _FLAG.finditer(value))


def _denied(device: dict, value: str, at: tuple) -> None:
    device["capabilities_denied"] = location(*at)


def _capability(device: dict, value: str, at: tuple) -> None:
    match = _EXPRESS.search(value)
    if match:
        device["port_type"] = match.group(1).strip()


_HANDLERS = {"NUMA node": _numa, "Kernel driver in use": _driver, "Bus": _bus, "LnkCap": _lnk_cap,
             "LnkSta": _lnk_sta, "LnkCap2": _lnk_cap2}  # ACSCtl: _Reader.attribute
# One scan of the whole text finds every unindented line (a header, or an error) and the
# attribute lines some rule reads; the other lines of -vvv are skipped by the regex engine.
# Scanned as "\n" + text: a literal first character lets the engine jump from line to line
# (a leading ^ with re.M made it try every character of the text).
_LINES = re.compile(r"\n(?:(\S[^\n]*)|([ \t]+)(NUMA node|Kernel driver in use|Bus|LnkCap2|LnkCap|LnkSta|ACSCtl|"
                    r"Capabilities(?=:[ \t]*(?:<access denied>|\[[^\]\n]*\][ \t]+Express))):[ \t]*([^\n]*))")
_INDENTED = re.compile(r"^[ \t]+\S", re.M)


def link_parents(devices: list[dict]) -> None:
    """Each device's parent bridge: the deepest bridge whose secondary..subordinate range holds its
    bus (per domain, a 256-entry table filled widest range first)."""
    tables: dict[str, list[str | None]] = {}
    bridges = [d for d in devices if d.get("address") and d.get("secondary_bus") is not None
               and d.get("subordinate_bus") is not None]
    for bridge in sorted(bridges, key=lambda b: b["secondary_bus"] - b["subordinate_bus"]):
        table = tables.setdefault(bridge["address"].rsplit(":", 2)[0], [None] * 256)
        for bus in range(bridge["secondary_bus"], min(bridge["subordinate_bus"], 255) + 1):
            table[bus] = bridge["address"]
    for device in devices:
        address = device.get("address")
        domain, bus, _ = address.rsplit(":", 2) if address else (None, None, None)
        table = tables.get(domain)
        if table is not None:
            parent = table[hex_int(bus)]
            device["parent"] = parent if parent != address else None


def parse_lspci(source: SourceFile) -> LspciFile:
    """Any lspci output but a tree (lspci_tree.parse_tree takes those)."""
    from topolint.parsers.lspci_tree import TREE_START, parse_tree

    text = source.text
    if TREE_START.match(first_text_line(text)):
        return parse_tree(source)
    reader = _Reader(source)
    scanned = "\n" + text
    number, position = 0, 0  # the line a match's "\n" starts: the newlines up to and with it
    for match in _LINES.finditer(scanned):
        start = match.start() + 1
        number += scanned.count("\n", position, start)
        position = start
        header, indent, key, value = match.groups()
        if header is None:
            reader.attribute(number, len(indent) + 1, key, value.rstrip("\r"))
            continue
        fields = header_fields(source.path, number, header)
        if fields is None:
            raise InputError(source.path, number, "malformed lspci output: expected a device line "
                                                  "(BB:DD.F class: name) or an indented attribute", 1)
        reader.header(fields)
    if not reader.devices:
        raise InputError(source.path, 1, "malformed lspci output: no device and no link or ACS line")
    indented = _INDENTED.search(text) is not None
    named = any(d.get("address") for d in reader.devices)
    kind = "verbose" if indented and named else "excerpt" if indented else "list"
    link_parents(reader.devices)
    found, reader.devices = reader.devices, []
    devices = []
    for i, fields in enumerate(found):  # each dict dropped once its device is built: not both held whole
        devices.append(build(LspciDevice, **fields))
        found[i] = None
    return build(LspciFile, path=source.path, kind=kind, has_ids=reader.has_ids, devices=devices)
