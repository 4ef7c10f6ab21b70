"""Every parser is linear in its input (issue 7, item 8), and so is every whole run (issue 20): work (Python function calls, counted
with a profiler hook, so the count is deterministic) and peak memory (tracemalloc) at 1x, 4x and
16x the input size grow no faster than the size, with some slack. Time ratios live in
benchmarks/parsers.py, not here.

The inputs come from tests/growers.py (shared with the benchmark): for every registered parser,
ONE valid input of n distinct units, so no size is skipped for being refused and the parser does
its full work at every scale. A parser registered without a grower fails the meta-test below.

Whole runs (parse, model and every rule, through the Python API in-process) are measured the same
way on each grower's input and on the rule-heavy shapes of tests/growers.py RUN_SHAPES: repeated
names, many scopes, shared affinities, many attributes, deep nesting. A run has a fixed cost
(rules loaded, the run set up) that would hide a quadratic rule at small sizes, so its counted
work is compared at the margin: what 16x adds over 1x against what 4x adds. Where the work is in
C (lxml, re, difflib), which a count of Python calls does not see, CPU time at 16x stays within
24x of 1x. By default every shape runs and a fixed sample of the growers; TOPOLINT_LONG=1 runs
every grower.
"""

from __future__ import annotations

import json
import os
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import pytest
from growers import GROWERS, RUN_SHAPES, grown_formats

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
        elif isinstance(item, (list, tuple, set, frozenset)) or isinstance(item, Sequence) and not isinstance(item, str):
            stack.extend(item)  # a lazy sequence (model/scheduler.py HostEntries) walked as the facts it makes
        elif isinstance(item, Fact):
            count += 1
            slots = getattr(type(item), "__slots__", ())  # Location keeps its values in slots
            stack.extend(vars(item).values() if hasattr(item, "__dict__") else
                         [getattr(item, name) for name in slots if hasattr(item, name)])
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


# ---- whole runs -----------------------------------------------------------------------------

RUN_SLACK = 1.6  # linear work adds 5x from 1x to 16x what it adds from 1x to 4x: 8x allowed
CPU_LIMIT = 24  # CPU seconds at 16x over 1x, for the shapes whose work is in C
LONG = os.environ.get("TOPOLINT_LONG") == "1"
# The growers whole runs measure by default (one per family of formats; TOPOLINT_LONG=1: all).
# Whole runs of the growers start from half their parser base: the run's work per unit is larger.
RUN_SAMPLE = {"topology", "ibstat_cas", "mlnx_qos_blocks", "shell_blocks", "env_lines", "pod", "launcher"}
_CONFIG_NAMES = {"shell": "job.sh", "dockerfile": "Dockerfile", "envfile": ".env", "nccl-conf": "nccl.conf",
                 "deepspeed-env": ".deepspeed_env", "config-yaml": "pod.yaml", "python": "launch.py",
                 "github-actions": ".github/workflows/ci.yml", "topolint-inventory": "node.json"}


def _place(folder: Path, fmt: str, text: str) -> Path:
    """``text`` where a run reads it as ``fmt``: by its name, by its content, or in a node bundle
    whose manifest names the format (outputs no content identifies: systemd-detect-virt)."""
    from topolint.inputs import config_names
    from topolint.inputs.sniff import sniff

    name = _CONFIG_NAMES.get(fmt, f"{fmt}.txt")
    if fmt in _CONFIG_NAMES or sniff(text) == fmt or config_names.by_name(name) == fmt:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
    bundle = folder / "bundle"
    bundle.mkdir()
    (bundle / "topolint-bundle.json").write_text(json.dumps(
        {"topolint_bundle": 1, "host": "n1", "commands": [{"file": "output.txt", "status": "ok", "format": fmt}]}))
    (bundle / "output.txt").write_text(text)
    return bundle


def _run(folder: Path, fmt_or_file: str, text: str, counted: bool = True) -> tuple[int, float]:
    """(Python calls, CPU seconds) of one whole run of ``text``; the calls only when ``counted``
    (the profiler hook would slow C-heavy work's CPU time down unevenly)."""
    import topolint

    folder.mkdir()
    if "." in fmt_or_file or fmt_or_file == "Dockerfile":  # a shape: its file name says the format
        path = folder / fmt_or_file
        path.write_text(text)
    else:
        path = _place(folder, fmt_or_file, text)
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    started = time.process_time()
    if counted:
        sys.setprofile(count)
    try:
        topolint.check([str(path)], isolated=True)
    finally:
        sys.setprofile(None)
    return calls, time.process_time() - started


def _assert_linear_run(tmp_path, what: str, make, base: int, c_heavy: bool) -> None:
    texts = {scale: make(base * scale) for scale in SCALES}
    _run(tmp_path / "warm", what, make(1))  # imports and lazy tables, not the 1x input itself
    calls = {scale: _run(tmp_path / f"x{scale}", what, text)[0] for scale, text in texts.items()}
    size = {scale: len(text) for scale, text in texts.items()}
    margin = (size[16] - size[1]) / max(size[4] - size[1], 1)
    added_4, added_16 = max(calls[4] - calls[1], calls[1] / 20), calls[16] - calls[1]
    assert added_16 <= added_4 * margin * RUN_SLACK, (what, calls, size)
    if c_heavy:
        cpu = {scale: _run(tmp_path / f"cpu{scale}", what, texts[scale], counted=False)[1] for scale in (1, 16)}
        assert cpu[16] <= cpu[1] * CPU_LIMIT, (what, cpu)


@pytest.mark.parametrize("shape", RUN_SHAPES, ids=lambda s: s.name)
def test_whole_runs_of_rule_heavy_shapes_cost_linear_work(shape, tmp_path):
    _assert_linear_run(tmp_path, shape.file, shape.make, shape.base, shape.c_heavy)


@pytest.mark.parametrize("grower", [g for g in GROWERS if LONG or g.name in RUN_SAMPLE],
                         ids=lambda g: f"{g.fmt}-{g.name}")
def test_whole_runs_of_grown_inputs_cost_linear_work(grower, tmp_path):
    _assert_linear_run(tmp_path, grower.fmt, grower.make, max(grower.base // 2, 1), c_heavy=False)


def test_the_whole_run_sample_names_growers_that_exist():
    assert RUN_SAMPLE <= {g.name for g in GROWERS}
