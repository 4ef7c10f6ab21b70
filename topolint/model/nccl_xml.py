"""NCCL's own topology XML reader (src/graph/xml.cc xmlGetNode, xmlGetToken, xmlGetValue,
xmlLoadSub and the ncclTopoXmlLoad* handlers), reimplemented in Python to accept and refuse
exactly what they do, byte for byte (tests/test_oracle.py holds it to their answers).

lxml accepts much that NCCL refuses (a start tag split over lines, spaces around ``=``, a UTF-8
BOM, text between elements, a value over MAX_STR_LEN) and NCCL keeps only the elements its
handlers know (an unknown element is read and dropped with its children). This reader gives
the tree NCCL keeps, or NCCL's WARN text and the line where NCCL stopped.
"""

from __future__ import annotations

import re

from topolint.model.facts import Location, XmlNode, build
from topolint.model.nccl_version import NcclVersion
from topolint.model.numbers import c_int, strtol

MAX_STR_LEN = 255
MAX_ATTR_COUNT = 16
NODE_NONE, NODE_OPEN, NODE_CLOSE, NODE_SINGLE = 0, 1, 2, 3


class NcclXmlError(Exception):
    """NCCL's reader fails: ``message`` is its WARN text, ``line`` where it stopped, ``within``
    the line of the top-level element it was reading (None: between elements), ``misreads``
    the values it read past their end before it stopped (see ``Misread``)."""

    def __init__(self, message: str, line: int, undefined: bool = False, within: int | None = None,
                 misreads: tuple = ()):
        super().__init__(message)
        self.message, self.line, self.undefined = message, line, undefined
        self.within, self.misreads = within, misreads


class Misread(tuple):
    """(line, attribute, value): a single-quoted value NCCL 2.26 and older read up to the next
    double quote (src/graph/xml.cc xmlGetValue at v2.26.6 ends a value at '"' only)."""

    __slots__ = ()

    def __new__(cls, line: int, attribute: str, value: str):
        return super().__new__(cls, (line, attribute, value))

    line = property(lambda self: self[0])
    attribute = property(lambda self: self[1])
    value = property(lambda self: self[2])


def _handlers(version: NcclVersion) -> dict[str, tuple[str, ...]]:
    """The child elements each handler keeps (the ncclTopoXmlLoad* functions of the version)."""
    pci = ("pci", "gpu", "nic") + (("pcilink",) if version.behaviour("pcilinks") else ())
    gpu = ("nvlink",) + (("c2c",) if version.behaviour("c2c_links") else ())
    return {"": ("system",), "system": ("cpu",), "cpu": ("pci", "nic"), "pci": pci, "gpu": gpu, "nic": ("net",),
            "net": (), "nvlink": (), "c2c": (), "pcilink": ()}


_TOKEN_END = re.compile(rb"[= >/\n\r]")


class _Reader:
    """The reader works on bytes with find/regex scans that keep the byte-by-byte semantics of
    NCCL's loops (which character ends a token, when a length check fires)."""

    def __init__(self, data: bytes, path: str, version: NcclVersion):
        self.data, self.pos, self.path = data, 0, path
        self._line, self._line_pos = 1, 0
        self.version = version
        self.checks_values = version.behaviour("xml_value_checks")
        self.handlers = _handlers(version)
        self.max_nodes, self.max_subs = version.max_xml_nodes, version.max_xml_children
        self.count = 0
        self.misreads: list[Misread] = []
        self.top_line: int | None = None  # the line of the top-level element being read

    @property
    def line(self) -> int:
        """The line of the last byte read (counted lazily)."""
        end = max(self.pos - 1, self._line_pos)
        self._line += self.data.count(b"\n", self._line_pos, end)
        self._line_pos = end
        return self._line

    def fail(self, message: str, undefined: bool = False):
        raise NcclXmlError(message, self.line, undefined, self.top_line, tuple(self.misreads))

    def getc(self, eof_ok: bool = False) -> str | None:
        if self.pos >= len(self.data):
            if eof_ok:
                return None
            self.fail("XML Parse : Unexpected EOF")
        byte = self.data[self.pos]
        self.pos += 1
        return chr(byte)

    def _text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("latin-1")

    def value(self, name: str) -> tuple[str, str]:
        """xmlGetValue: a quoted value, then the character after it. From 2.27 the byte at index
        254 after the quote fails ("too long") even when it is the closing quote."""
        c = self.getc()
        if c not in ('"', "'"):
            self.fail("XML Parse : Expected (double) quote.")
        start = self.pos
        if not self.checks_values:
            # <= 2.26: read up to the next double quote into a 256-byte buffer, unchecked
            # (src/graph/xml.cc xmlGetValue at v2.26.6), whichever quote opened the value.
            end = self.data.find(b'"', start)
            if end < 0:
                self.pos = len(self.data)
                self.fail("XML Parse : Unexpected EOF")
            if end - start >= MAX_STR_LEN + 1:
                self.pos = end
                what = "single-quoted value read up to the next double quote" if c == "'" else "value"
                self.fail(f"{what} longer than NCCL's 256-byte buffer: undefined behaviour", undefined=True)
            if c == "'":
                self.misreads.append(Misread(self.line, name, self._text(start, end)))
            self.pos = end + 1
            return self._text(start, end), self.getc()
        end = self.data.find(c.encode("latin-1"), start)
        if (end >= 0 and end - start >= MAX_STR_LEN - 1) or (end < 0 and len(self.data) - start > MAX_STR_LEN - 1):
            self.pos = start + MAX_STR_LEN
            self.fail(f"Error : value {self._text(start, start + MAX_STR_LEN - 1)} too long (max {MAX_STR_LEN})")
        if end < 0:
            self.pos = len(self.data)
            self.fail("XML Parse : Unexpected EOF")
        self.pos = end + 1
        return self._text(start, end), self.getc()

    def token(self, want_value: bool) -> tuple[str, str | None, str]:
        """xmlGetToken: a name up to space, >, / or a line end; or name=value. The byte at index
        254 fails ("too long") unless it is the '='."""
        start = self.pos
        match = _TOKEN_END.search(self.data, start)
        limit = MAX_STR_LEN - 1
        if match is None:
            self.pos = len(self.data)
            if len(self.data) - start > limit:
                self.fail(f"Error : name {self._text(start, start + limit)} too long (max {MAX_STR_LEN})")
            self.fail("XML Parse : Unexpected EOF")
        end = match.start()
        c = chr(self.data[end])
        if end - start > limit or (end - start == limit and c != "="):
            self.pos = start + limit + 1
            self.fail(f"Error : name {self._text(start, start + limit)} too long (max {MAX_STR_LEN})")
        self.pos = end + 1
        name = self._text(start, end)
        if c == "=":
            if not want_value:
                self.fail(f"XML Parse : Unexpected value with name {name}")
            value, last = self.value(name)
            return name, value, last
        return name, None, c

    def skip_comment(self, start: str, following: str) -> None:
        end = "..."
        for ch in start + following:
            end = end[1:] + ch
        while end != "-->":
            c = self.getc(eof_ok=True)
            if c is None:
                self.fail("XML Parse error : unterminated comment")
            end = end[1:] + c

    def node(self, at_top: bool = False) -> tuple[int, str, dict, int]:
        """xmlGetNode: (type, name, attributes, line of the '<'); ``at_top``: a top-level node,
        whose line ``top_line`` keeps from its '<' on."""
        while True:
            c = " "
            while c in (" ", "\n", "\r"):
                c = self.getc(eof_ok=True)
                if c is None:
                    return NODE_NONE, "", {}, self.line
            line = self.line
            if c != "<":
                self.fail(f"XML Parse error : expecting '<', got '{c}'")
            if at_top:
                self.top_line = line
            name, _, c = self.token(False)
            if name.startswith("!--"):
                self.skip_comment(name[3:], c)
                if at_top:
                    self.top_line = None
                continue
            break
        if name == "" and c == "/":
            name, _, c = self.token(False)
            if c != ">":
                self.fail(f"XML Parse error : unexpected trailing {c} in closing tag {name}")
            return NODE_CLOSE, name, {}, line
        attrs: dict[str, str] = {}
        count = 0
        while c == " ":
            key, value, c = self.token(True)
            if count < MAX_ATTR_COUNT:
                count += 1
                attrs.setdefault(key, value)  # xmlGetAttrIndex: the first of a repeated name wins
        kind = NODE_OPEN
        if c == "/":
            kind = NODE_SINGLE
            _, _, c = self.token(False)
        if c != ">":
            self.fail(f"XML Parse : expected >, got '{c}'")
        return kind, name, attrs, line

    def load_sub(self, head: XmlNode | None, head_kind: int, keep: tuple[str, ...] | None) -> None:
        """xmlLoadSub; ``keep`` None reads and drops the children (an element no handler knows).

        NCCL reads every node into the next free slot of its node array (``xml->nodes +
        xml->maxIndex``) and keeps the slot only for an element a handler takes, so an ignored
        element's children are read into the ignored element's own slot, after a memset: below
        an ignored element any closing tag closes it (it is compared with itself), and at the
        end of the file NCCL reports it "unterminated" with the name the memset left, none."""
        if head is not None and head_kind == NODE_SINGLE:
            return
        while True:
            if self.count == self.max_nodes:
                self.fail(f"Error : XML parser is limited to {self.max_nodes} nodes")
            at_top = head is None
            if at_top:
                self.top_line = None
            kind, name, attrs, line = self.node(at_top)
            if kind == NODE_NONE:
                if head is not None:
                    self.fail(f"XML Parse : unterminated {'' if keep is None else head.name}")
                return
            if head is not None and kind == NODE_CLOSE:
                if keep is not None and name != head.name:
                    self.fail(f"XML Mismatch : {head.name} / {name}")
                return
            if keep is not None and name in keep:
                node = build(XmlNode, name=name, attrs=attrs, loc=build(Location, path=self.path, line=line, column=0))
                if head is not None:
                    if len(head.children) == self.max_subs:
                        self.fail(f"Error : XML parser is limited to {self.max_subs} subnodes")
                    head.children.append(node)
                else:
                    self.roots.append(node)
                self.count += 1
                if name == "system":
                    self.system_checks(node)
                self.load_sub(node, kind, self.handlers.get(name, ()))
            else:
                dropped = build(XmlNode, name=name, attrs=attrs, loc=build(Location, path=self.path, line=line, column=0))
                self.load_sub(dropped, kind, None)

    def system_checks(self, node: XmlNode) -> None:
        """ncclTopoXmlLoadSystem: version must be 1."""
        text = node.attrs.get("version")
        if text is None:
            self.fail("Attribute version of node system not found")
        version = c_int(strtol(text, 0)[0])  # xmlGetAttrInt stores strtol's long in an int
        if version != 1:
            self.fail(f"XML Topology has wrong version {version}, 1 needed")


def read_nccl_xml(data: bytes, path: str, version: NcclVersion, misreads: list | None = None) -> XmlNode | None:
    """The <system> tree NCCL keeps from ``data`` (None when the file has none); raises
    NcclXmlError with NCCL's message when NCCL's reader fails. ``misreads`` (a list) receives
    the values NCCL read past their end when it accepts the file."""
    reader = _Reader(data, path, version)
    reader.roots = []
    reader.load_sub(None, NODE_OPEN, reader.handlers[""])
    if misreads is not None:
        misreads.extend(reader.misreads)
    return reader.roots[0] if reader.roots else None
