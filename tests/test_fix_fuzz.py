"""Fuzzing the fix path (issue 20 item 6): a fixable sample of every config format
(fixtures/fixes/, the round-trip fixtures of tests/test_fixes.py), mutated as tests/test_fuzz.py
mutates inputs, fixed with --fix --unsafe-fixes, then checked again. The fixed file still parses
in the format it had, every finding whose fix was written is gone, nothing is left unwritten
(the file is a checked path and nobody changed it), and a file that could not be read before is
not touched. Deterministic and budgeted like tests/test_fuzz.py: TOPOLINT_FUZZ_EXAMPLES examples
(default 25; ``TOPOLINT_FUZZ_EXAMPLES=2000`` for the long local run)."""

from __future__ import annotations

import os

from conftest import FIXTURES
from fuzzing import MUTATIONS, format_of, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topolint.commands.check import CheckOptions, run_check
from topolint.commands.fix import fix_check
from topolint.inputs.source import InputError, SourceFile, decode_input
from topolint.parsers.registry import parse

EXAMPLES = int(os.environ.get("TOPOLINT_FUZZ_EXAMPLES", "25"))
FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=EXAMPLES,
                suppress_health_check=list(HealthCheck), print_blob=True)
# The fixtures hold renames, value edits and byte-order-mark fixes in every way each format writes them.
SAMPLES = sorted(p for p in (FIXTURES / "fixes").iterdir() if p.is_file())
# Mutations that keep a file text (utf16 and nul make it unreadable, which the last check covers).
mutation_lists = st.lists(st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 2**31), st.integers(0, 255)),
                          min_size=1, max_size=2)


def _parses(name: str, data: bytes) -> str | None:
    """The format a walk gives the file, when it parses in it; None when it does not."""
    try:
        text = decode_input(name, data)
        fmt = format_of(name, text)
        if fmt is None:
            return None
        parse(fmt, SourceFile(path=name, text=text, real_path=name, format=fmt))
    except InputError:
        return None
    return fmt


def _fixable(result) -> set[tuple[str, str, int]]:
    return {(f.code, f.fingerprint, f.line) for f in result.active if f.autofix is not None}


def test_every_sample_has_fixes():
    """Unmutated, every sample has fixable findings: the fuzz below mutates inputs the fix path acts on."""
    assert len(SAMPLES) >= 10, SAMPLES
    previous = os.getcwd()
    os.chdir(FIXTURES / "fixes")
    try:
        empty = [p.name for p in SAMPLES if not _fixable(run_check(CheckOptions(paths=[p.name], isolated=True,
                                                                                 cache=False)))]
    finally:
        os.chdir(previous)
    assert empty == []


@FUZZ
@given(sample=st.sampled_from(SAMPLES), mutations=mutation_lists)
def test_a_fixed_file_still_parses_and_its_fixed_findings_are_gone(tmp_path_factory, sample, mutations):
    folder = tmp_path_factory.mktemp("fixfuzz")
    data = sample.read_bytes()
    for name, position, choice in mutations:
        data = mutate(data, name, position, choice)
    target = folder / sample.name
    target.write_bytes(data)
    options = CheckOptions(paths=[sample.name], isolated=True, cache=False)
    previous = os.getcwd()
    os.chdir(folder)
    try:
        before = run_check(options)
        run = fix_check(options, unsafe=True, write=True)
    finally:
        os.chdir(previous)
    after = target.read_bytes()
    fmt = _parses(sample.name, data)
    if fmt is None:  # unreadable before: nothing to fix, nothing written
        assert after == data
        return
    assert run.not_written == [], run.not_written
    assert _parses(sample.name, after) == fmt, after.decode("utf-8", "replace")
    if after != data:
        assert run.count > 0
    # Renames change the entity (and so the fingerprint); value and mark edits keep it, and the
    # finding must be gone from its line: fixed findings are never reported again.
    assert not _fixable(before) & {(f.code, f.fingerprint, f.line) for f in run.result.active}
    assert not _fixable(run.result), [f.autofix for f in run.result.active if f.autofix]
