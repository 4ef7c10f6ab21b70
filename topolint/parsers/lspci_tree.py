"""``lspci -t`` / ``-tv`` trees.

A device's bus is the nearest bracket (``[0000:00]`` for a domain root, ``[01]`` or ``[01-08]``
for the bus a bridge opens) to its left that is still open: the output is depth first, so a stack
of brackets by column answers it, popped when a token appears at or left of a bracket's column.
With ``-v`` the rest of a device's line (after two spaces) is its name. One pass; the stack is
at most as deep as the line is long.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.host import LspciDevice, LspciFile
from topolint.model.numbers import hex_int
from topolint.parsers._lines import lines_of

TREE_START = re.compile(r"\s*-(?:\+-)?\[[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}\]-")
_TOKEN = re.compile(r"\[(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2})(?:-([0-9a-fA-F]{2}))?\]"
                    r"|(?<=[-+\\])([0-9a-fA-F]{2})\.([0-7])(?:  (\S.*))?")
_CONNECTORS = re.compile(r"[\s|+\\\-]*")


def parse_tree(source: SourceFile) -> LspciFile:
    devices: list[LspciDevice] = []
    stack: list[tuple[int, str, int, str | None]] = []  # (column, domain, bus, bridge address)
    last: LspciDevice | None = None
    names: dict[str, str] = {}  # a tree repeats a few device names (eight GPUs, their NICs): one string each
    for number, line in enumerate(lines_of(source.text), 1):
        if not line.strip():
            continue
        position = 0
        for match in _TOKEN.finditer(line):
            if not _CONNECTORS.fullmatch(line, position, match.start()):
                raise InputError(source.path, number, "malformed lspci tree: expected a tree connector, a bus "
                                                      "[BB] or a device DD.F", position + 1)
            column = match.start()
            while stack and stack[-1][0] >= column:
                stack.pop()
            if match.group(2):  # a bracket: the bus a bridge (or the domain root) opens
                domain = match.group(1) or (stack[-1][1] if stack else None)
                if domain is None:
                    raise InputError(source.path, number, "malformed lspci tree: a bus with no domain above it",
                                     column + 1)
                parent = last.address if match.group(1) is None and last is not None else None
                stack.append((column, domain.lower(), hex_int(match.group(2)), parent))
            else:
                if not stack:
                    raise InputError(source.path, number, "malformed lspci tree: a device with no bus", column + 1)
                _, domain, bus, parent = stack[-1]
                address = f"{hex_int(domain):04x}:{bus:02x}:{hex_int(match.group(4)):02x}.{match.group(5)}"
                name = match.group(6)
                last = build(LspciDevice, address=address, description=name and names.setdefault(name, name),
                             parent=parent,
                             loc=build(Location, path=source.path, line=number, column=column + 1))
                devices.append(last)
            position = match.end()
            if match.group(6):
                break  # the rest of the line is the device's name
        if not _CONNECTORS.fullmatch(line, position):
            raise InputError(source.path, number, "malformed lspci tree: unexpected text", position + 1)
    if not devices:
        raise InputError(source.path, 1, "malformed lspci tree: no device")
    return build(LspciFile, path=source.path, kind="tree", devices=devices)
