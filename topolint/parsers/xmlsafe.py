"""Safe XML parsing for untrusted inputs, plus start-tag positions lxml does not give.

Entities are never expanded, no DTD, external entity or XInclude is ever opened (not even a
local file a DOCTYPE names: a FIFO there would hang the run), nothing is fetched from the
network, and the size is bounded before parsing (inputs.source.MAX_INPUT_BYTES, MAX_ELEMENTS
here; libxml2 itself stops at 256 levels of nesting without ``huge_tree``).
"""

from __future__ import annotations

import bisect
import re
import threading
from itertools import accumulate

from topolint.inputs.source import InputError

_TOKEN = re.compile(
    r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE(?:[^\[>]*\[.*?\])?[^>]*>|<([A-Za-z_][\w:.-]*)",
    re.S,
)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


# Far above NCCL's own limit (1,024 nodes at most, TOPO004) and real hwloc exports (thousands of
# objects on the largest machines); beyond it a file is no topology and is TL001 before parsing.
MAX_ELEMENTS = 200_000
_START_TAG = re.compile(r"<[A-Za-z_]")
# Attributes one element may have. lxml reads an element's attribute values one lookup by name
# each (``items()``, ``values()``), so n attributes cost n*n steps in C that no count of Python
# calls sees: 120,000 attributes on one element took over 40 s. NCCL keeps 16 an element
# (MAX_ATTR_COUNT) and hwloc writes about 20; past this bound a file is TL001 before any read.
MAX_ATTRIBUTES = 256


# One parser a thread, reused: building one (and its resolver class) cost ~40 us a document, and
# libxml2 resets a parser's state for each document (tests/test_parse_fast_paths.py).
_PARSERS = threading.local()


def _parser():
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = _new_parser()
    return parser


def _new_parser():
    from lxml import etree  # only when XML is parsed: the suppression scanner needs none of it

    # collect_ids=False must not be passed: it makes libxml2 load the external DTD and parameter
    # entities a DOCTYPE names, from disk, despite load_dtd=False. The resolver is a second
    # guard: every external resource libxml2 asks lxml for is an empty string.
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
    )

    class NoExternalResources(etree.Resolver):
        def resolve(self, url, pubid, context):
            return self.resolve_string("", context)

    parser.resolvers.add(NoExternalResources())
    return parser


class LineIndex:
    """Offsets to 1-based (line, column)."""

    def __init__(self, text: str):
        self._starts = [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1])]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1


def parse_xml(path: str, text: str):
    """The root element, or InputError with the line and column libxml2 stopped at."""
    from lxml import etree

    _check_element_count(path, text)
    try:
        root = etree.fromstring(text.encode("utf-8"), _parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno or 1, 0)
        lines = text.splitlines()
        if lines and (line or 1) > len(lines):  # truncated: libxml2 stops past the last newline
            line, column = len(lines), len(lines[-1]) + 1
        message = re.sub(r", line \d+, column \d+$", "", exc.msg or "malformed XML")
        raise InputError(path, line or 1, f"malformed XML: {message}", column or 0) from None
    _check_attribute_counts(path, root)
    return root


def _check_attribute_counts(path: str, root) -> None:
    """TL001 at the first element with more than MAX_ATTRIBUTES attributes (counted in C: the
    count is linear, reading the values is not)."""
    from lxml import etree

    for element in root.iter(etree.Element):
        count = len(element.attrib)
        if count > MAX_ATTRIBUTES:
            raise InputError(path, element.sourceline or 1, f"malformed XML: <{element.tag}> has {count} attributes "
                             f"(more than {MAX_ATTRIBUTES}: no topology has that many; NCCL keeps 16)")


def _check_element_count(path: str, text: str) -> None:
    if text.count("<") <= MAX_ELEMENTS:
        return
    for count, match in enumerate(_START_TAG.finditer(text), start=1):
        if count > MAX_ELEMENTS:
            line, column = LineIndex(text).position(match.start())
            raise InputError(path, line, f"malformed XML: more than {MAX_ELEMENTS} elements (no topology "
                             "has that many)", column)


def start_tags(text: str) -> list[tuple[str, int, int]]:
    """(tag, line, column) of each element's ``<``, in document order (lxml only knows the line
    of its ``>``). One pass: offsets only grow, so the line is counted on from the last tag."""
    tags, names = [], {}  # one string per tag name, not one per element
    line, line_start, scanned = 1, 0, 0
    count, rfind = text.count, text.rfind
    for match in _TOKEN.finditer(text):
        tag = match.group(1)
        if tag:
            offset = match.start()
            newlines = count("\n", scanned, offset)
            if newlines:
                line += newlines
                line_start = rfind("\n", scanned, offset) + 1
            scanned = offset
            tags.append((names.setdefault(tag, tag), line, offset - line_start + 1))
    return tags


def tab_lines(text: str) -> list[int]:
    """Lines holding a tab outside comments: NCCL's own XML parser only skips space, CR and LF."""
    if "\t" not in text:
        return []
    without_comments = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    index = LineIndex(without_comments)
    return sorted({index.position(m.start())[0] for m in re.finditer("\t", without_comments)})


def declaration_and_doctype(text: str) -> tuple[int | None, int | None]:
    """Lines of an ``<?xml ...?>`` declaration and a ``<!DOCTYPE``, which NCCL refuses."""
    decl = re.search(r"<\?xml\b", text)
    doctype = re.search(r"<!DOCTYPE\b", text, re.I)
    if not (decl or doctype):
        return None, None
    index = LineIndex(text)
    return (
        index.position(decl.start())[0] if decl else None,
        index.position(doctype.start())[0] if doctype else None,
    )
