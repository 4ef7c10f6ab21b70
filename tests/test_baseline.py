"""Baselines: written by --update-baseline, matched by rule and entity (never the line), shown
in SARIF as accepted external suppressions, pruned on update with the count in the summary."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

DUP_BUSID = FIXTURES / "rules" / "TOPO005" / "bad_duplicate_busid.xml"  # three TOPO005 findings
BAD_NUMA = FIXTURES / "rules" / "NUMA001" / "bad.xml"


@pytest.fixture
def project(tmp_path) -> Path:
    """A cluster folder: one subfolder per node, so node names (part of every entity) are stable
    whichever part of it a run names."""
    for node, source in (("dup", DUP_BUSID), ("numa", BAD_NUMA)):
        (tmp_path / node).mkdir()
        shutil.copy(source, tmp_path / node / "topo.xml")
    return tmp_path


def check(project: Path, *args: str):
    # Pin the rules, so rules added later do not change the counts.
    selection = () if "--select" in args else ("--select", "TOPO005,NUMA001")
    return run_cli("check", *args, *selection, "--isolated", cwd=project)


def entries(project: Path) -> list[dict]:
    return json.loads((project / "baseline.json").read_text(encoding="utf-8"))["entries"]


def test_update_writes_a_sorted_line_free_baseline(project):
    result = check(project, "dup", "numa", "--baseline", "baseline.json", "--update-baseline")
    assert result.exit_code == 0, result.stdout  # everything current is now baselined
    assert "baseline baseline.json updated: 4 entries (4 added, 0 removed)" in result.stderr
    assert result.stdout.endswith("All checks passed (4 baselined).\n")
    document = json.loads((project / "baseline.json").read_text(encoding="utf-8"))
    assert document["version"] == 1
    rows = document["entries"]
    assert rows == sorted(rows, key=lambda e: (e["code"], e["entity"], e["fingerprint"], e["path"]))
    assert {tuple(sorted(e)) for e in rows} == {("code", "entity", "fingerprint", "path")}
    assert {e["path"] for e in rows} == {"dup/topo.xml", "numa/topo.xml"}
    assert "dup/pci/0000:9a:00.0" in {e["entity"] for e in rows}
    first = (project / "baseline.json").read_text(encoding="utf-8")
    check(project, "dup", "numa", "--baseline", "baseline.json", "--update-baseline")
    assert (project / "baseline.json").read_text(encoding="utf-8") == first  # deterministic


def test_baselined_findings_survive_edits_and_new_ones_fail(project):
    check(project, "dup", "--baseline", "baseline.json", "--update-baseline")
    text = (project / "dup" / "topo.xml").read_text(encoding="utf-8")
    # Move every element down three lines: line numbers change, entities do not.
    moved = text.replace('<system version="1">', '<system version="1">\n  <!-- a -->\n  <!-- b -->\n  <!-- c -->', 1)
    (project / "dup" / "topo.xml").write_text(moved, encoding="utf-8")
    result = check(project, "dup", "--baseline", "baseline.json")
    assert result.exit_code == 0, result.stdout
    assert "3 findings baselined" in result.stderr
    # A new duplicate is a new finding.
    extra = moved.replace("</system>", '  <cpu numaid="2" affinity="ff"><pci busid="0000:42:00.0" class="0x030200"/>'
                                       '<pci busid="0000:42:00.0" class="0x030200"/></cpu>\n</system>')
    (project / "dup" / "topo.xml").write_text(extra, encoding="utf-8")
    result = check(project, "dup", "--baseline", "baseline.json", "--format", "json")
    assert result.exit_code == 1
    active = [f for f in json.loads(result.stdout)["findings"] if not f["suppressed"]]
    assert [f["entity"] for f in active] == ["dup/pci/0000:42:00.0"]


def test_sarif_marks_baselined_results_unchanged_and_accepted(project):
    check(project, "numa", "--baseline", "baseline.json", "--update-baseline")
    sarif = json.loads(check(project, "numa", "--baseline", "baseline.json", "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert results and all(r["baselineState"] == "unchanged" for r in results)
    assert all(r["suppressions"] == [{"kind": "external", "status": "accepted",
                                      "justification": "accepted in the topolint baseline"}] for r in results)


def test_fixed_findings_are_counted_then_dropped_on_update(project):
    check(project, "dup", "numa", "--baseline", "baseline.json", "--update-baseline")
    shutil.copy(FIXTURES / "rules" / "TOPO005" / "good.xml", project / "dup" / "topo.xml")  # all three fixed
    result = check(project, "dup", "numa", "--baseline", "baseline.json")
    assert result.exit_code == 0
    assert "3 entries no longer match (--update-baseline drops them)" in result.stderr
    result = check(project, "dup", "numa", "--baseline", "baseline.json", "--update-baseline")
    assert "updated: 1 entry (0 added, 3 removed)" in result.stderr
    assert {e["code"] for e in entries(project)} == {"NUMA001"}


def test_partial_runs_keep_other_files_and_rules(project):
    check(project, "dup", "numa", "--baseline", "baseline.json", "--update-baseline")
    before = entries(project)
    result = check(project, "numa", "--baseline", "baseline.json", "--update-baseline")  # dup not checked
    assert "(0 added, 0 removed)" in result.stderr
    result = check(project, "dup", "numa", "--select", "NUMA001", "--baseline", "baseline.json",
                   "--update-baseline")
    assert "(0 added, 0 removed)" in result.stderr
    assert entries(project) == before


def test_inline_suppressions_are_not_baselined(project):
    text = BAD_NUMA.read_text(encoding="utf-8")
    (project / "numa" / "topo.xml").write_text(text.replace("<system", "<!-- topolint: file-ignore[NUMA001] known -->\n<system", 1),
                                      encoding="utf-8")
    check(project, "numa", "--baseline", "baseline.json", "--update-baseline")
    assert entries(project) == []


@pytest.mark.parametrize("args, needle", [
    (["--update-baseline"], "--update-baseline needs --baseline FILE"),
    (["--baseline", "missing.json"], "no such file"),
    (["--baseline", "bad.json"], "not a topolint baseline"),
    (["--baseline", "broken.json"], "cannot read"),
])
def test_baseline_usage_errors(project, args, needle):
    (project / "bad.json").write_text('{"version": 7}', encoding="utf-8")
    (project / "broken.json").write_text("{", encoding="utf-8")
    result = check(project, "numa", *args)
    assert result.exit_code == 2 and needle in result.stderr
