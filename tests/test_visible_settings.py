"""visible_settings (checks/_config.py) answers each file and scope once per run: NET007 asks it
for every setting of a scope, and a fresh copy per question was a pass over them all each time."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from topolint.checks._config import visible_settings
from topolint.inputs.source import SourceFile
from topolint.parsers.registry import parse


def _calls(function, *args) -> tuple[int, object]:
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        result = function(*args)
    finally:
        sys.setprofile(None)
    return calls, result


def test_a_scope_asked_again_is_answered_from_what_was_kept():
    config = parse("envfile", SourceFile(path=".env", text="NCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5_0\n" * 500))
    context = SimpleNamespace(configs=[config], shared={})
    scope = config.settings[0].scope
    first = visible_settings(context, config, scope)
    assert len(first) == 1000
    calls, again = _calls(visible_settings, context, config, scope)
    assert calls <= 5, calls  # a look-up, not the index walked and copied again
    assert again is first  # the same answer, not a copy of it
