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
from itertools import accumulate, chain

from topolint.inputs.source import InputError
from topolint.model.facts import location

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
        from lxml import etree  # only when XML is parsed: the suppression scanner needs none of it

        parser = _PARSERS.parser = _safe(etree.XMLParser)
    return parser


def _safe(parser_class, **kwargs):
    """A parser of ``parser_class`` that expands no entity and opens nothing."""
    # collect_ids=False must not be passed: it makes libxml2 load the external DTD and parameter
    # entities a DOCTYPE names, from disk, despite load_dtd=False. The resolver is a second
    # guard: every external resource libxml2 asks lxml for is an empty string.
    parser = parser_class(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        **kwargs,
    )
    parser.resolvers.add(_no_external_resources())
    return parser


def pull_parser(events: tuple[str, ...]):
    """An lxml pull parser with parse_xml's protections, for readers that stream (hwloc)."""
    from lxml import etree

    return _safe(etree.XMLPullParser, events=events)


def _no_external_resources():
    resolver = getattr(_PARSERS, "resolver", None)
    if resolver is None:
        from lxml import etree

        class NoExternalResources(etree.Resolver):
            def resolve(self, url, pubid, context):
                return self.resolve_string("", context)

        resolver = _PARSERS.resolver = NoExternalResources()
    return resolver


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

    check_element_count(path, text)
    try:
        root = etree.fromstring(text.encode("utf-8"), _parser())
    except etree.XMLSyntaxError as exc:
        raise _malformed(path, text, exc) from None
    _check_attribute_counts(path, root)
    return root


def _malformed(path: str, text: str, exc) -> InputError:
    line, column = exc.position if exc.position else (exc.lineno or 1, 0)
    lines = text.splitlines()
    if lines and (line or 1) > len(lines):  # truncated: libxml2 stops past the last newline
        line, column = len(lines), len(lines[-1]) + 1
    message = re.sub(r", line \d+, column \d+$", "", exc.msg or "malformed XML")
    return InputError(path, line or 1, f"malformed XML: {message}", column or 0)


# Characters fed to libxml2 at a time: the elements of one chunk are in its tree at once.
_CHUNK = 2048
# A named entity reference other than XML's five. lxml takes a document whose only logged errors
# are undeclared entities as well-formed, and libxml2's push parser stops logging after 100
# errors: `<a b="&x;&x;...` cut short after 100 of them read as a whole file. Such a text (no
# NCCL file has one) is checked by the whole-document parse before it is streamed.
_ENTITY_REFERENCE = re.compile(r"&(?!(?:lt|gt|amp|quot|apos);|#)")


def iter_elements(path: str, text: str):
    """Each element in document order as ``(element, parent, previous)``: the indexes (in this
    order) of the element it is in (None for the root) and of the element before it in that
    one (None for a first child); or the InputError parse_xml gives.

    Streamed (issue 20: the whole tree of a 4 MiB file was 20 bytes of C memory per input byte):
    libxml2 reads the text a chunk at a time and every element is freed once the next element
    after it starts, so an element may be read only until the generator is resumed. Its
    attributes are complete, its children not yet read. The guards of parse_xml hold: the
    same parser options and resolver, the element count checked first, and the first element
    with more than MAX_ATTRIBUTES attributes is TL001 once the rest is found well-formed (not
    yielded: its values are never read)."""
    from lxml import etree

    check_element_count(path, text)
    if _ENTITY_REFERENCE.search(text):
        parse_xml(path, text)
    parser = _safe(etree.XMLPullParser, events=("start",))
    enclosing: list = []  # (element, index) of the elements the current one is in
    count = 0
    crowded = None  # (tag, attribute count, line) of the first element with too many attributes
    try:
        for start in range(0, len(text) + _CHUNK, _CHUNK):  # one past the last chunk: close()
            if start < len(text):
                parser.feed(text[start:start + _CHUNK].encode("utf-8"))
            elif parser.close() is None:  # no root, yet no error: never seen, but never a topology
                raise etree.XMLSyntaxError("Document is empty", None, 1, 1)
            for _, element in parser.read_events():
                parent, previous = element.getparent(), None
                while enclosing and enclosing[-1][0] is not parent:
                    previous = enclosing.pop()[1]  # the last one closed in the parent: the sibling before
                if parent is not None:
                    read = parent.index(element)
                    if read:
                        del parent[:read]  # the siblings before it, read and done with
                if crowded is None:
                    attributes = len(element.attrib)
                    if attributes > MAX_ATTRIBUTES:
                        crowded = (element.tag, attributes, element.sourceline or 1)
                    else:
                        yield element, enclosing[-1][1] if enclosing else None, previous
                enclosing.append((element, count))
                count += 1
    except etree.XMLSyntaxError as exc:
        del enclosing[:]
        parse_xml(path, text)  # libxml2's whole-document parse words the error, as it always has
        raise _malformed(path, text, exc) from None
    if crowded is not None:
        raise _too_many_attributes(path, *crowded)


def _check_attribute_counts(path: str, root) -> None:
    """TL001 at the first element with more than MAX_ATTRIBUTES attributes (counted in C: the
    count is linear, reading the values is not)."""
    from lxml import etree

    for element in root.iter(etree.Element):
        count = len(element.attrib)
        if count > MAX_ATTRIBUTES:
            raise _too_many_attributes(path, element.tag, count, element.sourceline or 1)


def _too_many_attributes(path: str, tag: str, count: int, line: int) -> InputError:
    return InputError(path, line, f"malformed XML: <{tag}> has {count} attributes "
                      f"(more than {MAX_ATTRIBUTES}: no topology has that many; NCCL keeps 16)")


def check_element_count(path: str, text: str) -> None:
    if text.count("<") <= MAX_ELEMENTS:
        return
    for count, match in enumerate(_START_TAG.finditer(text), start=1):
        if count > MAX_ELEMENTS:
            line, column = LineIndex(text).position(match.start())
            raise InputError(path, line, f"malformed XML: more than {MAX_ELEMENTS} elements (no topology "
                             "has that many)", column)


def start_tags(text: str) -> list[tuple[str, int, int]]:
    """(tag, line, column) of each element's ``<``, in document order (lxml only knows the line
    of its ``>``)."""
    return list(iter_start_tags(text))


def iter_start_tags(text: str):
    """start_tags one at a time. One pass: offsets only grow, so the line is counted on from the
    last tag."""
    names: dict[str, str] = {}  # one string per tag name, not one per element
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
            yield names.setdefault(tag, tag), line, offset - line_start + 1


class ElementLocations:
    """The Location of each element iter_elements yields, called in its order: its start tag's
    line and column from the text where the tags line up with lxml's elements, else lxml's line
    with no column. The tags are scanned as the elements come, never all held."""

    def __init__(self, path: str, text: str):
        self.path = path
        self._tags = iter_start_tags(text)
        self._aligned = False

    def __call__(self, element, tag: str):
        """``element``'s Location; ``tag`` is its ``tag`` as read."""
        if not self._aligned:  # tags before the root (none in practice) would shift the zip
            self._aligned = True
            skipped = []
            for scanned in self._tags:
                if scanned[0] == tag:
                    self._tags = chain([scanned], self._tags)
                    break
                skipped.append(scanned)
            else:
                self._tags = iter(skipped)
        scanned = next(self._tags, None)
        if scanned is not None and scanned[0] == tag:
            return location(self.path, scanned[1], scanned[2])
        return location(self.path, element.sourceline or 1, 0)


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
