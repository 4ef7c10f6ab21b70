"""Every parser is linear in its input (issue 7, item 8): work (Python function calls, counted
with a profiler hook, so the count is deterministic) and peak memory (tracemalloc) at 1x, 4x and
16x the input size grow no faster than the size, with some slack. Time ratios live in
benchmarks/parsers.py, not here.

The inputs come from tests/growers.py (shared with the benchmark): for every registered parser,
ONE valid input of n distinct units, so no size is skipped for being refused and the parser does
its full work at every scale. A parser registered without a grower fails the meta-test below.
"""

from __future__ import annotations

import sys
import tracemalloc

import pytest
from growers import GROWERS, grown_formats

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Fact
from topolint.parsers.registry import PARSERS, parse

SCALES = (1, 4, 16)
SLACK = 1.6  # allowed growth beyond linear between 1x and 16x (allocator and list growth)


def _cost(fmt: str, text: str) -> tuple[int, int]:
    """(function calls, peak bytes allocated) of parsing ``text``."""
    source = SourceFile(path="input", text=text)
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    tracemalloc.start()
    sys.setprofile(count)
    try:
        parse(fmt, source)
    finally:
        sys.setprofile(None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return calls, peak


def _facts(result) -> int:
    """How many facts a parser returned (walked without recursion)."""
    seen, stack, count = set(), [result], 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, Fact):
            count += 1
            stack.extend(vars(item).values())
    return count


def _parsed(fmt: str, text: str):
    try:
        return parse(fmt, SourceFile(path="input", text=text))
    except InputError as exc:
        pytest.fail(f"{fmt}: the grown input is refused ({exc.message}, line {exc.line}): fix the grower")


@pytest.mark.parametrize("grower", GROWERS, ids=[f"{g.fmt}-{g.name}" for g in GROWERS])
def test_grown_inputs_cost_linear_work_and_memory(grower):
    texts = {scale: grower.make(grower.base * scale) for scale in SCALES}
    # Warm on one unit: imports and lazy tables are not the parser's cost, but the 1x input must
    # not be warmed itself (re's compile cache would then hide a per-name regex compile at 1x).
    _parsed(grower.fmt, grower.make(1))
    costs = {scale: _cost(grower.fmt, text) for scale, text in texts.items()}
    for scale in SCALES[1:]:
        growth = len(texts[scale]) / len(texts[1])
        calls, peak = costs[scale]
        assert calls <= costs[1][0] * growth * SLACK, (grower.fmt, scale, costs)
        assert peak <= costs[1][1] * growth * SLACK + 256 * 1024, (grower.fmt, scale, costs)


@pytest.mark.parametrize("grower", [g for g in GROWERS if g.distinct], ids=lambda g: f"{g.fmt}-{g.name}")
def test_grown_inputs_are_one_valid_input_of_distinct_units(grower):
    """A grower the parser accepts but ignores would measure nothing: the facts grow with n."""
    small, large = (_facts(_parsed(grower.fmt, grower.make(grower.base * scale))) for scale in (1, 16))
    assert large >= small * 8, (grower.fmt, grower.name, small, large)


def test_every_registered_parser_has_a_grower():
    assert set(PARSERS) - grown_formats() == set(), "add a grower to tests/growers.py"
    assert grown_formats() <= set(PARSERS)
