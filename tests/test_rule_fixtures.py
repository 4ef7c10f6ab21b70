"""Every rule has bad and good fixtures in fixtures/rules/CODE/; findings are kept as snapshots.

A fixture named bad*.* must raise the rule, good*.* must not; the snapshot records exactly
what `topolint check FILE --select CODE --format concise` prints. A fixture folder (bad_x/,
good_y/) is one node of several files, for rules that compare inputs (TL003).
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES, assert_snapshot, run_cli

from topolint.engine.rule import load_rules

# topology/ in a rule folder is not a fixture: config rules check their fixtures against it. Hidden
# entries (a result cache left by running topolint in a fixture folder) are not fixtures either.
RULE_FIXTURES = sorted(p for p in (FIXTURES / "rules").glob("*/*")
                       if not p.name.startswith(".") and (p.is_file() or (p.is_dir() and p.name != "topology")))


def _runnable(code: str) -> bool:
    """False for rules that exist with docs but need facts no parser provides yet (UNAVAILABLE):
    their bad fixtures record that nothing fires until a parser lands."""
    from topolint.checks import load_check

    rule = next(r for r in load_rules() if r.code == code)
    return rule.check == "inputs" or not getattr(load_check(rule.check), "UNAVAILABLE", None)


@pytest.mark.parametrize("fixture", RULE_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rule_fixture(fixture):
    code = fixture.parent.name
    # Config rules that check settings against hardware take the rule folder's topology/ (--topology).
    topology = fixture.parent / "topology"
    extra = ["--topology", topology.relative_to(FIXTURES.parent)] if topology.is_dir() else []
    result = run_cli("check", fixture.relative_to(FIXTURES.parent), "--select", code,
                     "--format", "concise", "--preview", *extra)
    codes = [line.split(": ", 2)[1].split()[0] for line in result.stdout.splitlines() if ": " in line]
    if fixture.name.startswith("bad") and _runnable(code):
        assert code in codes, result.stdout
    else:
        assert code not in codes, result.stdout
    assert_snapshot(f"rules/{code}__{fixture.stem}.txt", result.snapshot())


@pytest.mark.parametrize("rule", [r for r in load_rules() if r.check != "inputs"], ids=lambda r: r.code)
def test_every_rule_has_bad_and_good_fixtures(rule):
    names = [p.name for p in (FIXTURES / "rules" / rule.code).glob("*")]
    assert any(n.startswith("bad") for n in names), f"{rule.code} has no bad fixture"
    assert any(n.startswith("good") for n in names), f"{rule.code} has no good fixture"
