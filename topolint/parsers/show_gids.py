"""``show_gids`` into a GidTable (output-formats.md section 6).

Header ``DEV PORT INDEX GID IPv4 VER DEV``, a ``---`` row, one row per GID and a trailer
``n_gids_found=N``. Native output is TAB-separated with empty IPv4 and netdev cells; pastes turn
tabs into spaces and misalign columns, so cells are told apart by their shape (a GID has
colons, an IPv4 address dots, the version is v1/v2), not by position.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import Gid, GidTable
from topolint.model.facts import build
from topolint.model.numbers import decimal, ipv4_address
from topolint.parsers._lines import PROMPT, at, malformed, numbered

HEADER = re.compile(r"DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV")
SEPARATOR = re.compile(r"[-\s]+")
TRAILER = re.compile(r"n_gids_found=(\d+)")
GID = re.compile(r"[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{0,4}){2,7}")
EXPECTED = "'DEV PORT INDEX GID [IPv4] VER [NETDEV]'"


def parse_show_gids(source: SourceFile) -> GidTable:
    path = source.path
    result = build(GidTable, path=path, gids=[])
    for line in numbered(source.text):
        if HEADER.fullmatch(line.text) or SEPARATOR.fullmatch(line.text) or TRAILER.fullmatch(line.text):
            continue
        if not result.gids and PROMPT.match(line.text) and "show_gids" in line.text:
            continue
        cells = line.text.split()
        if len(cells) < 4 or decimal(cells[1]) is None or decimal(cells[2]) is None or not GID.fullmatch(cells[3]):
            raise malformed("show_gids", path, line, EXPECTED)
        rest = cells[4:]
        ipv4 = rest.pop(0) if rest and ipv4_address(rest[0]) is not None else None
        version = rest.pop(0) if rest and re.fullmatch(r"v[12]", rest[0]) else None
        netdev = rest.pop(0) if rest else None
        if rest:
            raise InputError(path, line.number, f"malformed show_gids output: {len(rest)} cells after the netdev "
                             f"({' '.join(rest)[:40]!r})", line.column)
        result.gids.append(build(Gid, hca=cells[0], port=decimal(cells[1]), index=decimal(cells[2]),
                                 gid=cells[3].lower(), ipv4=ipv4, version=version, netdev=netdev,
                                 loc=at(path, line)))
    return result
