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
from topolint.model.facts import Location, build
from topolint.model.numbers import c_int, strtol

NEEDS = ("topology",)

NCCL_TOPO_XML_VERSION = 1


class Parameters(CheckParameters):
    pass


def _lines(locations: list[Location]) -> str:
    lines = [str(loc.line) for loc in locations]
    return ", ".join(lines[:10]) + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")


# Attributes NCCL never fills in from the live system (NVML, sysfs): a file without them fails
# ncclTopoGetSystemFromXml even on the machine (src/graph/topo.cc ncclTopoAddNvLinks, ncclTopoAddC2c).
_NEVER_FILLED = ("of node nvlink not found", "of node c2c not found", "of node pcilink not found")


def check(context, params: Parameters) -> Iterator[Hit]:
    entity = f"{context.node.name}/system"
    for topology in context.node.topologies:
        known = list(_known_problems(entity, topology, context.node.sources.get(topology.path)))
        yield from known
        if not known:
            yield from _nccl_reader(entity, topology, context.version)


def _nccl_reader(entity: str, topology, version) -> Iterator[Hit]:
    """What NCCL's own reader (model/nccl_xml.py, a port of src/graph/xml.cc) and graph builder
    refuse that lxml accepted: a start tag split over lines, spaces around '=', a BOM, text
    between elements, a value over 255 characters, an <nvlink> without tclass; and, before 2.27,
    a single-quoted or over-long value NCCL misreads (undefined behaviour)."""
    from topolint.model.nccl_graph import TopologyRejected, check_loads

    try:
        check_loads(topology, version)
    except TopologyRejected as error:
        if error.line == 0 and not any(marker in error.message for marker in _NEVER_FILLED):
            return  # a graph-stage refusal NCCL may not make on the machine (it fills from sysfs/NVML)
        line = error.line or topology.system_loc.line
        location = build(Location, path=topology.path, line=line, column=0)
        yield Hit(
            entity=entity,
            location=location,
            variant="misread" if error.undefined else "reader",
            fields={"file": topology.path, "line": line, "message": error.message, "nccl_version": str(version)},
            evidence=[f"{topology.path}:{line}: NCCL {version}'s reader (src/graph/xml.cc): {error.message}"],
            autofix=_remove_bom(topology),
        )


def _remove_bom(topology):
    """A safe fix when the file starts with a byte-order mark: NCCL's reader stops at its first
    byte (src/graph/xml.cc xmlGetNode: "expecting '<'"), so the mark is the error NCCL reports
    and the file cannot load today, whatever else it holds."""
    from topolint.engine.fixes import SAFE, remove_bom

    return remove_bom(topology.path, "Remove the byte-order mark", SAFE) if topology.bom else None


def _known_problems(entity: str, topology, source) -> Iterator[Hit]:
    path = topology.path
    if topology.xml_declaration is not None:
        yield Hit(
            entity=entity,
            location=topology.xml_declaration,
            variant="declaration",
            fields={"file": path, "line": topology.xml_declaration.line},
            evidence=[f"{where(topology.xml_declaration)}: <?xml ...?> declaration"],
            autofix=_remove_declaration(source, topology.xml_declaration.line),
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
