"""Helpers the config parsers share: which variables to keep, literal values, name positions."""

from __future__ import annotations

import re

ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_DEFAULT = r"\$\{{{name}:?[-=]([^}}$`]*)\}}"


def wanted(name: str) -> bool:
    """NCCL settings are kept; CUDA_VISIBLE_DEVICES becomes a launch fact."""
    return name.startswith("NCCL_")


def shell_value(name: str, raw: str) -> tuple[str | None, bool]:
    """(literal value or None, default_only) of a value as the shell would expand it.

    ``${NAME:-v}`` / ``${NAME-v}`` / ``${NAME:=v}`` of the variable itself is a default: the
    setting applies only when the variable is unset, and ``v`` is what NCCL then reads.
    """
    if "$" not in raw and "`" not in raw:
        return raw, False
    match = re.fullmatch(_DEFAULT.format(name=re.escape(name)), raw)
    if match:
        return match.group(1), True
    return None, False


class Cursor:
    """Finds names in a run of physical lines, left to right, for 1-based line and column."""

    def __init__(self, lines: list[str], first: int, last: int):
        self.lines = lines
        self.first = first  # 1-based
        self.last = last
        self.line = first
        self.col = 0

    def find(self, text: str, assignment: bool = False) -> tuple[int, int]:
        for number in range(self.line, self.last + 1):
            start = self.col if number == self.line else 0
            found = _name_at(self.lines[number - 1], text, start, assignment)
            if found is not None:
                self.line, self.col = number, found + len(text)
                return number, found + 1
        return self.line, 0


def written_at(line_text: str, index: int, value: str | None) -> str | None:
    """The text that writes ``value`` at ``index`` (0-based) of a line: the value itself, or the
    value between a pair of quotes; None when the line has neither there (escapes, interpolation,
    a value split over lines), so no value edit is offered."""
    if not value or index < 0:
        return None
    if line_text.startswith(value, index):
        return value
    quote = line_text[index:index + 1]
    if quote in ("'", '"') and line_text.startswith(value + quote, index + 1):
        return quote + value + quote
    return None


_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _name_at(line: str, name: str, start: int, assignment: bool) -> int | None:
    """Index of ``name`` as a whole word (followed by ``=`` for an assignment) at or after ``start``.

    A string search, not a regex compiled per name: a script or Dockerfile sets thousands of
    distinct names, and compiling each one cost ~0.1 ms (a 256 KB Dockerfile took 2 s)."""
    at = line.find(name, start)
    while at >= 0:
        end = at + len(name)
        clear_before = at == 0 or (line[at - 1] not in _WORD_CHARS and line[at - 1] != "$")
        clear_after = line.startswith("=", end) if assignment else end == len(line) or line[end] not in _WORD_CHARS
        if clear_before and clear_after:
            return at
        at = line.find(name, at + 1)
    return None
