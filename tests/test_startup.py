"""Start-up work a config-only check (what pre-commit runs on every commit) is spared. Speed
itself is measured by benchmarks/startup.py, not here."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT

import topolint.checks
from topolint.checks import check_needs, load_check

CHECKS = [m.name for m in pkgutil.iter_modules(topolint.checks.__path__) if not m.name.startswith("_")]


@pytest.mark.parametrize("name", CHECKS)
def test_needs_read_without_import_agree_with_the_module(name):
    found = check_needs(name)
    assert found is None or found == tuple(load_check(name).NEEDS)


def test_needs_of_most_checks_are_read_without_import():
    assert sum(check_needs(name) is not None for name in CHECKS) >= len(CHECKS) - 2


def test_config_only_check_imports_only_config_checks():
    code = ("import sys, io, contextlib; from topolint.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['check', {str(FIXTURES / 'rules' / 'ENV004' / 'bad.env')!r}, '--isolated'])\n"
            "from topolint.checks import load_check\n"
            "print(sorted(m for m in sys.modules if m.startswith('topolint.checks.') and not m[16:].startswith('_')"
            " and load_check(m[16:]).NEEDS and 'config' not in load_check(m[16:]).NEEDS))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_skipped_checks_still_say_why_with_verbose(tmp_path):
    """Checks not imported still leave their note: the --verbose output is what it was."""
    from conftest import run_cli

    result = run_cli("check", FIXTURES / "rules" / "ENV004" / "bad.env", "--isolated", "-v")
    assert "NUMA001 not run on node bad: no topology or matrix input" in result.stderr, result.stderr


def test_a_run_of_one_node_imports_no_cross_node_check_nor_pydantic(tmp_path):
    """One node, with the result cache on (cold, then warm): its inventory is built for the cache
    entry without pydantic, and the cluster stage, which has nothing to compare, is not imported."""
    node = FIXTURES / "rules" / "FLEET001" / "bad_port_rate" / "gpu003"
    code = ("import sys, io, contextlib; from topolint.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    main(['check', {str(node)!r}, '--isolated', '--cache-dir', {str(tmp_path / 'cache')!r}])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' or m.startswith("
            "('topolint.checks._fleet', 'topolint.checks.differs_from_group', 'topolint.fleet.groups'))))")
    env = {k: v for k, v in os.environ.items() if k != "TOPOLINT_NO_CACHE"}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
                             env=env)
        assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
    assert list((tmp_path / "cache").rglob("*.json")), "the run wrote its cache entry"
