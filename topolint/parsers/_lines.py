"""Helpers the line-oriented fabric parsers share (ibstat, ibv_devinfo, mlnx_qos, ethtool, ...):
numbered lines with their first column, locations, and the key/value split those tools print."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from topolint.inputs.source import InputError
from topolint.model.facts import Location, build

# A shell prompt echoing a command (``root@host:~# ibstat``, ``$ mlnx_qos -i eth0``): pastes keep them.
PROMPT = re.compile(r"^(?:\[[^\]\n]{0,200}\]|[\w.@~:/-]{0,200})\s*[#$>](?:\s+\S|$)")
# Words of a key are separated by single spaces, so a run of blanks cannot be split two ways (linear).
KEY_VALUE = re.compile(r"([A-Za-z][\w()/.\[\]-]*(?: [\w()/.\[\]-]+)*)\s*:\s*(.*)$")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based
    raw: str
    text: str  # stripped
    column: int  # 1-based column of the first non-blank character


def numbered(text: str) -> Iterator[Line]:
    """Non-blank lines, numbered from 1."""
    for number, raw in enumerate(lines_of(text), start=1):
        stripped = raw.strip()
        if stripped:
            yield Line(number, raw, stripped, len(raw) - len(raw.lstrip()) + 1)


_NON_BLANK = re.compile(r"\S")
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # what str.splitlines splits at
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # \r\n is one break, as there


def lines_of(text: str) -> Iterator[str]:
    """``text.splitlines()`` one line at a time: the whole list of lines is another copy of the
    input (and a list entry per line) held for the length of a parse."""
    start = 0
    for end in _LINE_END.finditer(text):
        yield text[start:end.start()]
        start = end.end()
    if start < len(text):
        yield text[start:]


class TextLines(Sequence):
    """``text.split("\\n")`` as a sequence that cuts a line when asked for: the offsets of the line
    starts (4 bytes a line) instead of a str per line held beside the text through a parse (issue
    20). The shell, Dockerfile and YAML readers look lines up by number; only LF ends one there."""

    __slots__ = ("text", "starts")

    def __init__(self, text: str):
        starts = array("I" if len(text) < 2 ** 32 else "Q", [0])
        find, at = text.find, text.find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = find("\n", at + 1)
        self.text, self.starts = text, starts

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.starts)))]
        count = len(self.starts)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("line index out of range")
        end = self.starts[index + 1] - 1 if index + 1 < count else len(self.text)
        return self.text[self.starts[index]:end]

    def __iter__(self):
        return (self[i] for i in range(len(self.starts)))


def first_text_line(text: str) -> str:
    """``next((l for l in text.splitlines() if l.strip()), "")`` without splitting the whole text:
    the line that holds the first non-blank character (every line break is a blank)."""
    found = _NON_BLANK.search(text)
    if found is None:
        return ""
    start = 0
    for brk in _LINE_BREAK.finditer(text, 0, found.start()):
        start = brk.end()
    end = _LINE_BREAK.search(text, found.start())
    return text[start:end.start() if end else len(text)]


def at(path: str, line: Line, column: int | None = None) -> Location:
    return build(Location, path=path, line=line.number, column=line.column if column is None else column)


def value_column(line: Line, value: str) -> int:
    """1-based column of ``value`` in the line (its last occurrence after the key), else the line's."""
    index = line.raw.rfind(value) if value else -1
    return index + 1 if index >= 0 else line.column


def malformed(tool: str, path: str, line: Line, expected: str) -> InputError:
    shown = line.text if len(line.text) <= 60 else line.text[:57] + "..."
    return InputError(path, line.number, f"malformed {tool} output: expected {expected}; found {shown!r}", line.column)


def lowered(text: str | None) -> str | None:
    return text.strip().lower() if text and text.strip() else None
