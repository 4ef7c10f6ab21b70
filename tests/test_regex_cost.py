"""Detector and parser regexes stay linear over multi-line input (issue 7).

The nccl-tests detector once began with ``^`` + ``\\s*`` under re.M: at every line start the
``\\s*`` ran over all the blank lines that followed before the rest failed, so 64 KiB of blank
lines took over 8 s (fixed in 6feef94 by using ``[ \\t]``). Python's re engine exposes no step
count and time is no test, so the work is counted instead: at every position where a match is
attempted (each line start for a ``^`` under re.M, every position for an unanchored search), the
number of characters the pattern's optional lead (``\\s*``, an optional group, a lazy
``[^\\n]*?`` made greedy, as the engine scans it when the rest fails) can consume. That count is
deterministic and grows with the square of the input on the old pattern.

Every module-level pattern in topolint/inputs and topolint/parsers is held to it over runs of
blanks, newlines and word characters, and none may nest an unbounded repeat in another (the
``(a+)+`` shape) unless reviewed below.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import re._compiler as sre_compile  # private, but stable in 3.11: compiles a parsed sub-pattern
import re._parser as sre_parse

from pathlib import Path

import pytest

import topolint
import topolint.inputs
import topolint.parsers
from topolint.inputs import sniff

SCALES = (1, 16)
SLACK = 1.6
# Runs a lead could be made to scan: blank lines, blanks, word characters, digits, separators.
RUNS = ("\n", " \n", "\r\n", " ", "\t", "x", "x\n", "0", "#", ":", "a b\n")
SEARCHES = {"search", "finditer", "findall", "sub", "subn", "split"}
# Reviewed nested repeats: each iteration starts with a character the inner repeat cannot match
# (so a string splits into iterations one way only), or the pattern is tried once per line/value.
NESTED_OK = {
    "topolint.inputs.fabric_sniff._MOUNT_LINE",  # (?: \S+)*?: a blank starts each iteration; .match a line
    "topolint.inputs.fabric_sniff._SYSFS",  # (?:\s+-\w+)*: a "-" after the blanks; \A, tried once
    "topolint.inputs.sniff._XML_PROLOGUE",  # (?:<!--.*?-->\s*|<!DOCTYPE...)*: "<" starts each; .match once
    "topolint.parsers._lines.KEY_VALUE",  # (?: [\w...]+)*: a blank starts each, not in the class; .match a line
    "topolint.parsers.ethtool.KEY_VALUE",  # the same pattern, imported
    "topolint.parsers.ibstat.KEY_VALUE",
    "topolint.parsers.ibv_devinfo.KEY_VALUE",
    "topolint.parsers._sourced._SCRIPT_DIR",  # (?:\s+[0-9]*>&?[\w/.-]*)*: ">" is mandatory; .match a value
    "topolint.parsers.mounts.MOUNTINFO",  # as _MOUNT_LINE
    "topolint.parsers.ip_addr.BRIEF",  # (?:\s+\S+/\d+)*: blanks start each, \S+ stops at them
    "topolint.parsers.mlnx_qos.DCB_APP",  # (?:\d+:\d\s*)+: one digit after ":", then a new \d+
    "topolint.parsers.nccl_log.IB_ITEM",  # (?::-?\d*)*: ":" starts each, \d* stops at it
    "topolint.parsers.nccl_log.RING",  # (?:\s+\d+)+: blanks start each, \d+ stops at them
    "topolint.parsers.nccl_log.SOCKET_USING",  # (?:\s+\[\d+\][^\s:]+:\S+)+: the same
    "topolint.parsers.nccl_log.TREES",  # (?: \[\d+\] ...)+: " [" starts each
    "topolint.parsers.numactl._DISTANCE_ROW",  # (?:\s+\d+)+: blanks start each
}


def _methods(name: str) -> set[str]:
    """The re methods the package calls on a pattern of this name (by name, over every module)."""
    call = re.compile(r"\b%s\.(\w+)\(" % re.escape(name))
    return {m.group(1) for path in SOURCES for m in call.finditer(path.read_text(encoding="utf-8"))}


SOURCES = sorted(Path(topolint.__file__).parent.rglob("*.py"))


def _patterns() -> dict[str, re.Pattern]:
    found = {}
    for package in (topolint.inputs, topolint.parsers):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                    found[f"{info.name}.{name}"] = value
    return found


PATTERNS = _patterns()


def _greedy(items):
    """The items with lazy repeats made greedy (the scan a failing lazy repeat makes)."""
    out = []
    for op, av in items:
        if op is sre_parse.MIN_REPEAT:
            op = sre_parse.MAX_REPEAT
        if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)):
            low, high, body = av
            av = (low, high, _sub(body.state, _greedy(body.data)))
        elif op is sre_parse.SUBPATTERN:
            group, add, remove, body = av
            av = (group, add, remove, _sub(body.state, _greedy(body.data)))
        elif op is sre_parse.BRANCH:
            av = (av[0], [_sub(b.state, _greedy(b.data)) for b in av[1]])
        out.append((op, av))
    return out


def _sub(state, items) -> sre_parse.SubPattern:
    return sre_parse.SubPattern(state, list(items))


def _compiled(state, items, flags: int) -> re.Pattern:
    return sre_compile.compile(_sub(state, items), flags)


def lead_and_anchor(pattern: re.Pattern, searched: bool = True) -> tuple[re.Pattern | None, str]:
    """(the optional lead as a pattern of its own, where matches are tried: "lines", "every" or
    "once"). A pattern only ever applied with .match()/.fullmatch() is tried once a call.

    The lead is the longest run of leading items that can all match the empty string: the engine
    tries them, and scans as far as they reach, before a mandatory item can fail."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    items = list(parsed.data)
    where = "every" if searched else "once"
    if items and items[0] == (sre_parse.AT, sre_parse.AT_BEGINNING):
        if not pattern.flags & re.M or not searched:
            return None, "once"
        items, where = items[1:], "lines"
    lead = []
    for item in items:
        trial = _compiled(parsed.state, lead + [item], pattern.flags)
        if trial.fullmatch("") is None:
            break
        lead.append(item)
    if not lead:
        return None, where
    return _compiled(parsed.state, _greedy(lead), pattern.flags), where


def scan_work(pattern: re.Pattern, text: str, searched: bool = True) -> int:
    """Characters the lead scans, summed over every position a search tries (plus one a try)."""
    lead, where = lead_and_anchor(pattern, searched)
    if where == "once":
        return 1
    starts = ([0] + [m.end() for m in re.finditer("\n", text)]) if where == "lines" else range(len(text) + 1)
    if lead is None:
        return len(starts)
    matches = (lead.match(text, start) for start in starts)  # None where a \b or lookaround in it fails
    return sum(1 + (m.end() - m.start() if m else 0) for m in matches)


def _linear(pattern: re.Pattern, unit: str, base: int = 256, searched: bool = True) -> tuple[bool, dict]:
    work = {scale: scan_work(pattern, unit * base * scale, searched) for scale in SCALES}
    return work[16] <= work[1] * 16 * SLACK + 64, work


# The detector before 6feef94, rebuilt from today's pieces: ^ + launcher tag + \s*#?\s* under re.M.
OLD_TESTS_MARK = re.compile(
    r"^" + sniff._LAUNCHER_TAG + r"\s*#?\s*(?:size\s+count\s+type\s+redop\b|nThread \d+ nGpus \d+ minBytes \d+"
    r"|Avg bus bandwidth\s*:|nccl-tests version \S)", re.M)


def test_the_old_nccl_tests_detector_scans_blank_lines_quadratically():
    linear, work = _linear(OLD_TESTS_MARK, "\n")
    assert not linear, work
    assert work[16] > work[1] * 200, work  # quadratic: ~256x the work for 16x the lines


def test_the_nccl_tests_detector_scans_blank_lines_linearly():
    for unit in RUNS:
        linear, work = _linear(sniff._TESTS_MARK, unit)
        assert linear, (unit, work)
    assert sniff.sniff("\n" * 65536) is None  # and the detector still answers on that input


def test_the_work_count_sees_an_unanchored_lead():
    """The harness itself: an unanchored ``\\s*X`` search is quadratic on blanks, ``X`` is not."""
    assert not _linear(re.compile(r"\s*X"), " ")[0]
    assert _linear(re.compile(r"X\s*"), " ")[0]
    assert _linear(re.compile(r"^[^\n]*?:X", re.M), "a")[0]  # one line start per line: linear


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_detector_and_parser_regex_scans_linearly(name):
    pattern, methods = PATTERNS[name], _methods(name.rsplit(".", 1)[1])
    searched = not methods or bool(methods & SEARCHES)  # used through a table: assume a search
    for unit in RUNS:
        linear, work = _linear(pattern, unit, base=64, searched=searched)
        assert linear, f"{name} ({pattern.pattern!r}) scans {unit!r} runs super-linearly: {work}"


def _nested_unbounded(items, inside: bool = False) -> bool:
    for op, av in items:
        if op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT):
            low, high, body = av
            unbounded = high is sre_parse.MAXREPEAT
            if unbounded and inside:
                return True
            if _nested_unbounded(body.data, inside or unbounded):
                return True
        elif op is sre_parse.SUBPATTERN and _nested_unbounded(av[3].data, inside):
            return True
        elif op is sre_parse.BRANCH and any(_nested_unbounded(b.data, inside) for b in av[1]):
            return True
    return False


@pytest.mark.parametrize("name", sorted(set(PATTERNS) - NESTED_OK))
def test_no_regex_nests_unbounded_repeats(name):
    pattern = PATTERNS[name]
    assert not _nested_unbounded(sre_parse.parse(pattern.pattern, pattern.flags).data), (name, pattern.pattern)
