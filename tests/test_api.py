"""The Python API: topolint.check() returns typed findings and the summary the CLI reports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT, run_cli

import topolint

SOCKETS = FIXTURES / "samples" / "dgx-like-2socket-dump.xml"
HEALTHY = FIXTURES / "samples" / "healthy-8gpu-dump.xml"


@pytest.fixture(autouse=True)
def _in_the_repository(monkeypatch):
    monkeypatch.chdir(ROOT)  # findings name paths relative to the working directory, as on the CLI


def test_check_returns_typed_findings_and_summary():
    result = topolint.check(["fixtures/samples/dgx-like-2socket-dump.xml"], isolated=True)
    assert [f.code for f in result.findings] == ["NUMA001"] * 4
    first = result.findings[0]
    assert isinstance(first, topolint.Finding)
    assert (first.path, first.line, first.severity) == ("fixtures/samples/dgx-like-2socket-dump.xml", 53, "warning")
    assert first.entity == "dgx-like-2socket-dump/gpu/0000:9a:00.0"
    assert result.summary == topolint.Summary(warning=4)
    assert result.summary.total == 4 and result.exit_code() == 1 and result.exit_code(exit_zero=True) == 0


def test_check_agrees_with_the_command_line():
    cli = run_cli("check", SOCKETS, "--isolated", "--format", "json")
    api = topolint.check([str(SOCKETS)], isolated=True)
    assert api.render("json") == cli.stdout
    assert api.exit_code() == cli.exit_code == 1
    assert json.loads(cli.stdout)["summary"]["by_severity"]["warning"] == api.summary.warning


def test_check_of_a_healthy_machine_is_clean():
    result = topolint.check(HEALTHY, isolated=True)
    assert result.findings == [] and result.summary.total == 0 and result.exit_code() == 0
    assert result.render("concise").strip() == "All checks passed."


def test_selectors_as_a_list_or_a_comma_separated_string():
    only_numa = topolint.check([SOCKETS], select="numa,TL", isolated=True)
    none = topolint.check([SOCKETS], select=["ENV"], isolated=True)
    ignored = topolint.check([SOCKETS], ignore=["NUMA001"], isolated=True)
    assert only_numa.summary.warning == 4 and none.findings == [] and ignored.findings == []


def test_fail_level_changes_the_exit_code_not_the_findings():
    result = topolint.check([SOCKETS], fail_level="error", isolated=True)
    assert result.summary.warning == 4 and result.exit_code() == 0


def test_unreadable_input_is_a_finding_and_exit_code_2(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text('<system version="1">\n  <cpu numaid="0"\n')
    result = topolint.check([broken], isolated=True)
    assert [f.code for f in result.findings] == ["TL001"] and result.summary.unreadable
    assert result.exit_code(exit_zero=True) == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"select": ["NO_SUCH_RULE"]}, "NO_SUCH_RULE"),
    ({"fail_level": "fatal"}, "fail_level"),
    ({"nccl_version": "banana"}, "banana"),
    ({"paths": ["-"]}, "standard input"),
])
def test_bad_options_raise_usage_error(kwargs, message):
    kwargs.setdefault("paths", [SOCKETS])
    with pytest.raises(topolint.UsageError, match=message):
        topolint.check(isolated=True, **kwargs)


def test_site_rules_and_suppressed_findings_are_flagged(tmp_path):
    dump = tmp_path / "dump.xml"
    dump.write_text('<system version="1">\n  <cpu numaid="0" host_hash="0x1" affinity="ff">\n'
                    '    <!-- topolint: ignore[SITE001] lab NIC -->\n'
                    '    <nic><net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/></nic>\n'
                    "  </cpu>\n</system>\n")
    result = topolint.check([dump], select="SITE001", rule_dirs=[FIXTURES / "site-rules"], isolated=True)
    (finding,) = result.findings
    assert finding.code == "SITE001" and finding.suppressed and finding.justification == "lab NIC"
    assert result.summary == topolint.Summary(suppressed=1) and result.exit_code() == 0


def test_importing_topolint_loads_neither_the_api_nor_pydantic():
    code = ("import sys, topolint; heavy = [m for m in ('pydantic', 'topolint.api', 'topolint.engine') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
