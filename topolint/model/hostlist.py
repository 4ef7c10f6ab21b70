"""Slurm hostlist expressions, expanded the way ``scontrol show hostnames`` expands them: the one
function every scheduler input shares (topology.conf, topology.yaml, SLURM_JOB_NODELIST, node
lists).

``gpu[001-032,040]`` is gpu001 .. gpu032 and gpu040: a range keeps the zero padding of its first
number; text after the brackets follows each name (``rack[1-2]-ib``); several bracket groups in
one name give every combination, the first group varying slowest (``a[1-2]b[1-2]``: a1b1 a1b2
a2b1 a2b2). Names are separated by commas outside brackets. Input order and duplicates are kept
(``gpu-b4-[1,0]`` is gpu-b4-1 then gpu-b4-0; ``n1,n1`` is two names), as Slurm's hostlist keeps
them before anything sorts or uniqs it.

Expansion is bounded (``MAX_HOSTS``): an expression of a dozen characters can name a billion
hosts, and the work stays linear in the hosts named, never in the numbers' size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import product

from topolint.model.numbers import decimal

MAX_HOSTS = 1 << 20  # one expression, or one file's expressions together (a Budget)
MAX_GROUPS = 8  # bracket groups in one name (Slurm's multi-dimensional names use 2 or 3)


class HostlistError(ValueError):
    """An expression Slurm would refuse; ``column`` is 1-based within the expression."""

    def __init__(self, message: str, column: int = 0):
        super().__init__(message)
        self.message = message
        self.column = column


class Budget:
    """Hosts still to expand, shared by the expressions of one file (so a file of many small
    expressions cannot name more hosts than one could)."""

    def __init__(self, hosts: int = MAX_HOSTS):
        self.left = hosts

    def take(self, count: int, column: int) -> None:
        if count > self.left:
            raise HostlistError(f"names more than {MAX_HOSTS} hosts (the bound on a hostlist expression)", column)
        self.left -= count


_MARKS = re.compile(r"[\[\],]")  # what _split_top looks at: the text between is copied, not read a character at a time
_BLANK = re.compile(r"\s")  # str.isspace's characters (both are Py_UNICODE_ISSPACE)
_BRACKET_OR_BLANK = re.compile(r"[\[\]\s]")
_NAME = re.compile(r"[^,]+")
_GROUP = re.Match.group


def _split_top(text: str) -> Iterator[tuple[int, str]]:
    """The comma-separated names of ``text`` outside brackets, each with its 0-based offset."""
    depth, start, opened = 0, 0, 0
    for mark in _MARKS.finditer(text):
        char, index = mark.group(), mark.start()
        if char == "[":
            if depth:
                raise HostlistError("'[' inside brackets", index + 1)
            depth, opened = 1, index
        elif char == "]":
            if not depth:
                raise HostlistError("']' without '['", index + 1)
            depth = 0
        elif not depth:
            yield start, text[start:index]
            start = index + 1
    if depth:
        raise HostlistError("'[' without ']'", opened + 1)
    yield start, text[start:]


def _numbers(body: str, offset: int) -> list[tuple[int, int, int]]:
    """The ranges of one bracket body: (first, last, width of the zero padding)."""
    ranges = []
    position = offset
    for part in body.split(","):
        low, dash, high = part.partition("-")
        low, high = low.strip(), high.strip() if dash else low.strip()
        if not (low.isdigit() and high.isdigit() and low.isascii() and high.isascii()) or len(low) > 18 or len(high) > 18:
            raise HostlistError(f"[{body}]: expected numbers and ranges (N or N-M) between the brackets", position + 1)
        first, last = decimal(low), decimal(high)
        if last < first:
            raise HostlistError(f"range {part.strip()} runs backwards", position + 1)
        ranges.append((first, last, len(low) if low.startswith("0") and len(low) > 1 else 0))
        position += len(part) + 1
    return ranges


def _parts(name: str, offset: int) -> list[tuple[str, list[tuple[int, int, int]] | None]]:
    """A name as literal text and bracket groups, in order."""
    parts: list[tuple[str, list | None]] = []
    rest, position = name, offset
    while "[" in rest:
        before, _, after = rest.partition("[")
        body, _, rest = after.partition("]")
        parts.append((before, None))
        parts.append(("", _numbers(body, position + len(before) + 1)))
        position += len(before) + len(body) + 2
    parts.append((rest, None))
    return parts


def _count(groups: list[list[tuple[int, int, int]]]) -> int:
    total = 1
    for ranges in groups:
        total *= sum(last - first + 1 for first, last, _ in ranges)
        if total > MAX_HOSTS:
            return total
    return total


def _values(ranges: list[tuple[int, int, int]]) -> list[str]:
    return [str(n).zfill(width) for first, last, width in ranges for n in range(first, last + 1)]


def _expand_name(name: str, offset: int, budget: Budget, count_only: bool = False) -> Iterator[str] | int:
    """A name's hosts (or, ``count_only``, how many: the product of its groups' sizes)."""
    parts = _parts(name, offset)
    groups = [ranges for _, ranges in parts if ranges is not None]
    if len(groups) > MAX_GROUPS:
        raise HostlistError(f"more than {MAX_GROUPS} bracket groups in one name", offset + 1)
    count = _count(groups)
    budget.take(count, offset + 1)
    if count_only:
        return count
    pieces = [(text,) if ranges is None else _values(ranges) for text, ranges in parts]
    return map("".join, product(*pieces))  # the first group varies slowest, as Slurm orders them


def iter_hosts(expression: str, budget: Budget | None = None) -> Iterator[str]:
    """``expand`` one name at a time (its errors as it reaches them)."""
    budget = budget or Budget()
    if _written_out(expression, budget) is not None:
        return map(_GROUP, _NAME.finditer(expression))
    return _walk(expression, budget)


def _written_out(expression: str, budget: Budget) -> int | None:
    """How many names an expression of names written out (no brackets, no blanks) has, taken
    from the budget; None for any other (or one past the budget: ``_walk`` says where). The
    regex walks such names, not Python a character at a time."""
    if _BRACKET_OR_BLANK.search(expression):
        return None
    count = sum(1 for _ in _NAME.finditer(expression))
    if count > budget.left:
        return None
    budget.left -= count
    return count


def _walk(expression: str, budget: Budget, count_only: bool = False) -> Iterator:
    """The names of ``expression`` one at a time (``count_only``: how many each name is)."""
    for offset, name in _split_top(expression):
        stripped = name.strip()
        if not stripped:
            continue
        lead = offset + len(name) - len(name.lstrip())
        if _BLANK.search(stripped):
            raise HostlistError(f"{stripped!r}: a host name holds no blanks", lead + 1)
        if "[" not in stripped:
            budget.take(1, lead + 1)
            yield 1 if count_only else stripped
        elif count_only:
            yield _expand_name(stripped, lead, budget, True)
        else:
            yield from _expand_name(stripped, lead, budget)


def expand(expression: str, budget: Budget | None = None) -> list[str]:
    """The host names of a Slurm hostlist expression, in order, duplicates kept. HostlistError
    for what Slurm refuses (unbalanced brackets, a range that runs backwards, letters in a
    range) or an expression past the bound. Blanks around names are dropped; an empty name
    (``a,,b``) names nothing."""
    return list(iter_hosts(expression, budget))


def count_hosts(expression: str, budget: Budget | None = None) -> int:
    """How many hosts ``expression`` names, its errors as ``expand``'s, no list made."""
    budget = budget or Budget()
    count = _written_out(expression, budget)
    if count is None:
        count = sum(_walk(expression, budget, True))
    return count


class Hosts(Sequence):
    """The hosts of one expression, kept as the expression and its count: a parsed file holds a
    few bytes a host (``gb1-[01-18]`` is 18 names; issue 20: memory bounded by the input) and
    names are made as a consumer walks them. Compares equal to the list ``expand`` gives."""

    __slots__ = ("expression",)

    def __init__(self, expression: str):
        self.expression = expression  # one count_hosts has checked: every error at parse time

    def __len__(self) -> int:
        return sum(1 for _ in self)  # counted again, not held: len() is rare, a host a line is not

    def __iter__(self) -> Iterator[str]:
        return iter_hosts(self.expression)

    def __getitem__(self, index):
        return expand(self.expression)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Hosts):
            return list(self) == list(other)
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return repr(list(self))


EMPTY = Hosts("")  # no host: one shared, a Hosts is never changed


def compress(hosts: list[str], limit: int = 8) -> str:
    """A short, readable list of ``hosts`` for evidence: the first ``limit`` names and a count of
    the rest (never a hostlist expression: a reader sees the names)."""
    shown = ", ".join(hosts[:limit])
    return shown + (f" and {len(hosts) - limit} more" if len(hosts) > limit else "")
