"""TOPO001: NCCL's own XML parser would refuse the topology file and communicator init fails.

NCCL reads NCCL_TOPO_FILE with a small hand-written parser (src/graph/xml.cc), not a real XML
parser: a ``<?xml ...?>`` declaration ends in ``expected >, got '?'``, a ``<!DOCTYPE`` swallows
the rest of the file, a tab where it expects ``<`` ends in ``expecting '<', got '\\t'`` (only
space, CR and LF are skipped), and ``<system version>`` must be 1 (``XML Topology has wrong
version``). One finding per kind of problem per file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._topology import where
from topolint.engine.finding import Hit
from topolint.model.facts import Location
from topolint.model.numbers import c_int, strtol

NEEDS = ("topology",)

NCCL_TOPO_XML_VERSION = 1


class Parameters(CheckParameters):
    pass


def _lines(locations: list[Location]) -> str:
    lines = [str(loc.line) for loc in locations]
    return ", ".join(lines[:10]) + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")


def check(context, params: Parameters) -> Iterator[Hit]:
    entity = f"{context.node.name}/system"
    for topology in context.node.topologies:
        path = topology.path
        if topology.xml_declaration is not None:
            yield Hit(
                entity=entity,
                location=topology.xml_declaration,
                variant="declaration",
                fields={"file": path, "line": topology.xml_declaration.line},
                evidence=[f"{where(topology.xml_declaration)}: <?xml ...?> declaration"],
                autofix=_remove_declaration(context.node.sources.get(path), topology.xml_declaration.line),
            )
        if topology.doctype is not None:
            yield Hit(
                entity=entity,
                location=topology.doctype,
                variant="doctype",
                fields={"file": path, "line": topology.doctype.line},
                evidence=[f"{where(topology.doctype)}: <!DOCTYPE ...>"],
            )
        yield from _version(entity, topology)
        if topology.tabs_between_elements:
            tabs = topology.tabs_between_elements
            yield Hit(
                entity=entity,
                location=tabs[0],
                variant="tabs",
                fields={"file": path, "lines": _lines(tabs), "count": len(tabs),
                        "line_word": "line" if len(tabs) == 1 else "lines"},
                evidence=[f"{path}: tab characters outside comments on lines {_lines(tabs)}"],
            )


_DECLARATION = re.compile(r"<\?xml\b.*?\?>")


def _remove_declaration(source, line: int):
    """A safe fix: the declaration NCCL cannot read goes; NCCL skips the blank it leaves."""
    from topolint.engine.fixes import SAFE, replace_on_line

    if source is None:
        return None
    match = _DECLARATION.search(source.line_text(line))
    if not match:
        return None
    return replace_on_line(source.path, line, match.start() + 1, match.group(), "",
                           "Remove the <?xml ...?> declaration", SAFE)


def _version(entity: str, topology) -> Iterator[Hit]:
    raw = topology.version
    if raw is None:
        yield Hit(
            entity=entity,
            location=topology.system_loc,
            variant="version_missing",
            fields={"file": topology.path},
            evidence=[f"{where(topology.system_loc)}: <system> has no version attribute"],
        )
        return
    value = c_int(strtol(raw)[0])  # src/graph/xml.h xmlGetAttrInt: int = strtol(str, NULL, 0)
    if value == NCCL_TOPO_XML_VERSION:
        return
    yield Hit(
        entity=entity,
        location=topology.system_loc,
        variant="version_rccl" if value == 2 else "version",
        fields={"file": topology.path, "version": raw, "read_as": value},
        evidence=[f'{where(topology.system_loc)}: <system version="{raw}">, NCCL reads {value}, '
                  f"needs {NCCL_TOPO_XML_VERSION} (NCCL_TOPO_XML_VERSION)"],
    )
