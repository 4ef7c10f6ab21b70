"""TOPO001: NCCL's own XML parser would refuse the topology file and communicator init fails.

NCCL reads NCCL_TOPO_FILE with a small hand-written parser (src/graph/xml.cc), not a real XML
parser. What it does with a file comes from topolint's port of that parser and of the graph
builder (model/nccl_xml.py, model/nccl_graph.py), held to NCCL's answers by tests/test_oracle.py,
text included: an ``<?xml ...?>`` declaration ends in ``expected >, got '?'`` (or, with a space
before ``?>``, is read as an element NCCL ignores: every later element reuses its slot and the
file ends in ``unterminated`` with an empty name), a ``<!DOCTYPE`` swallows the rest of the file
the same way, a tab where NCCL expects ``<`` ends in ``expecting '<', got '\\t'`` (only space, CR
and LF are skipped), and ``<system version>`` must be 1. One finding per kind of problem per
file; the one NCCL stops at quotes NCCL's own WARN text, the others say NCCL stops before them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._nccl_load import nccl_load
from topolint.checks._topology import where
from topolint.engine.finding import Hit
from topolint.model.facts import Location, build
from topolint.model.numbers import c_int, strtol

NEEDS = ("topology",)

NCCL_TOPO_XML_VERSION = 1
_TAB_STOP = "XML Parse error : expecting '<', got '\t'"


class Parameters(CheckParameters):
    pass


def _lines(locations: list[Location]) -> str:
    lines = [str(loc.line) for loc in locations]
    return ", ".join(lines[:10]) + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")


def check(context, params: Parameters) -> Iterator[Hit]:
    entity = f"{context.node.name}/system"
    for topology in context.node.topologies:
        load = nccl_load(context, topology)
        yield from topology_hits(entity, topology, context.node.sources.get(topology.path), load, context.version)


def topology_hits(entity: str, topology, source, load, version) -> Iterator[Hit]:
    """TOPO001's findings for one file, given NCCL's load of it (checks/_nccl_load.py)."""
    error = load.reported
    stop = None  # the finding that quotes NCCL's WARN text
    known = []
    if error is not None:  # the port is the authority: no refusal, no known problem
        for hit, causes in _known_problems(entity, topology, source, error):
            if stop is None and causes:
                stop = hit
            known.append(hit)
    for hit in known:
        hit.fields["nccl"] = _stop_clause(error, version, hit.location.line) if hit is stop \
            else _before_clause(error)
    yield from known
    misread = _misread(entity, topology, load, version, quoted=stop is not None)
    if misread is not None:
        yield misread
        if error is not None and misread.fields.get("stops_here"):
            return
    if error is not None and stop is None and not (misread is not None and error.undefined):
        yield _reader(entity, topology, error, version)


def shown(text: str) -> str:
    """NCCL's WARN text on one line: a tab, CR or LF in it (the character NCCL names in "got
    '%c'") written as C writes it, \\t, \\r, \\n."""
    return text.replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n")


def _stop_clause(error, version, line: int) -> str:
    """How NCCL stops at the construct on ``line``: its WARN text, and where if not there."""
    quoted = f'"{shown(error.message)}"'
    if error.line == line:
        return f"NCCL {version}'s parser stops with {quoted} and communicator init fails"
    if _swallowed(error) and error.within == line:
        return (f"NCCL {version}'s parser reads it as an element it ignores, which swallows the rest of the file "
                f"(every later element reuses its slot, so any closing tag closes it), and stops at line "
                f"{error.line} with {quoted}; communicator init fails")
    return f"NCCL {version}'s parser stops at line {error.line} with {quoted} and communicator init fails"


def _before_clause(error) -> str:
    where_first = error.within if _swallowed(error) and error.within else error.line
    what = "misreads the file" if error.undefined else "stops"
    return f"NCCL {what} before reaching it (line {where_first}: see that finding); this fails too once that is fixed"


def _swallowed(error) -> bool:
    """NCCL reached the end of the file inside an element it ignores (src/graph/xml.cc xmlLoadSub)."""
    return error.message == "XML Parse : unterminated "


def _reader(entity: str, topology, error, version) -> Hit:
    """What NCCL's own reader (model/nccl_xml.py, a port of src/graph/xml.cc) and graph builder
    refuse that lxml accepted: a start tag split over lines, spaces around '=', a BOM, text
    between elements, a value over 255 characters, an <nvlink> without tclass; and, before 2.27,
    an over-long value NCCL reads past its buffer (undefined behaviour)."""
    line = error.line or topology.system_loc.line
    fields = {"file": topology.path, "line": line, "message": shown(error.message), "nccl_version": str(version)}
    variant = "misread" if error.undefined else "reader"
    if not error.undefined and _swallowed(error) and error.within:
        variant, fields["stop_line"], line = "swallowed", line, error.within
        fields["line"] = line
    return Hit(
        entity=entity,
        location=build(Location, path=topology.path, line=line, column=0),
        variant=variant,
        fields=fields,
        evidence=[f"{topology.path}:{error.line or line}: NCCL {version}'s reader (src/graph/xml.cc): "
                  f"{shown(error.message)}"],
        autofix=_remove_bom(topology),
    )


def _misread(entity: str, topology, load, version, quoted: bool) -> Hit | None:
    """A single-quoted value NCCL 2.26 and older read up to the next double quote (src/graph/xml.cc
    xmlGetValue at v2.26.6): what it read, and what NCCL then does."""
    if not load.misreads:
        return None
    first = load.misreads[0]
    error = load.reported if load.error is not None else None
    fields = {"file": topology.path, "line": first.line, "attribute": first.attribute, "value": shown(first.value),
              "nccl_version": str(version), "count": len(load.misreads)}
    if load.error is not None and error is None:
        fields["outcome"] = "and then fails to build the graph from what it read"
    elif error is None:
        fields["outcome"] = "and loads the file with that value"
    elif error.undefined:
        fields["outcome"] = f"and then reads past its buffer at line {error.line} ({shown(error.message)})"
    elif not quoted and error.line == first.line:
        fields["outcome"] = f'and then stops with "{shown(error.message)}"; communicator init fails'
        fields["stops_here"] = True
    else:
        fields["outcome"] = f"and reads on; NCCL stops at line {error.line}"
    evidence = [f"{topology.path}:{m.line}: {m.attribute}='... read by NCCL {version} as \"{m.value}\""
                for m in load.misreads[:10]]
    return Hit(entity=entity, location=build(Location, path=topology.path, line=first.line, column=0),
               variant="quote", fields=fields, evidence=evidence)


def _remove_bom(topology):
    """A safe fix when the file starts with a byte-order mark: NCCL's reader stops at its first
    byte (src/graph/xml.cc xmlGetNode: "expecting '<'"), so the mark is the error NCCL reports
    and the file cannot load today, whatever else it holds."""
    from topolint.engine.fixes import SAFE, remove_bom

    return remove_bom(topology.path, "Remove the byte-order mark", SAFE) if topology.bom else None


def _known_problems(entity: str, topology, source, error) -> Iterator[tuple[Hit, bool]]:
    """The constructs topolint names itself, each with whether it is where NCCL's reader stops
    (``error``, the port's refusal): inside the element that starts on its line, or its text."""
    path = topology.path
    if topology.xml_declaration is not None:
        yield Hit(
            entity=entity,
            location=topology.xml_declaration,
            variant="declaration",
            fields={"file": path, "line": topology.xml_declaration.line},
            evidence=[f"{where(topology.xml_declaration)}: <?xml ...?> declaration"],
            autofix=_remove_declaration(source, topology.xml_declaration.line),
        ), error.within == topology.xml_declaration.line
    if topology.doctype is not None:
        yield Hit(
            entity=entity,
            location=topology.doctype,
            variant="doctype",
            fields={"file": path, "line": topology.doctype.line},
            evidence=[f"{where(topology.doctype)}: <!DOCTYPE ...>"],
        ), error.within == topology.doctype.line
    for hit in _version(entity, topology):
        yield hit, error.message.startswith("XML Topology has wrong version") or \
            error.message == "Attribute version of node system not found"
    if topology.tabs_between_elements:
        tabs = topology.tabs_between_elements
        yield Hit(
            entity=entity,
            location=tabs[0],
            variant="tabs",
            fields={"file": path, "lines": _lines(tabs), "count": len(tabs),
                    "line_word": "line" if len(tabs) == 1 else "lines"},
            evidence=[f"{path}: tab characters outside comments on lines {_lines(tabs)}"],
        ), error.message == _TAB_STOP and error.line in {t.line for t in tabs}


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
