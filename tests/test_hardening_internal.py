"""Internal errors (issue 7, item 7): a bug in a parser or a check costs that input's result for
that parser or rule, not the run. Exit 2, one line naming the input and the rule, SARIF
executionSuccessful false with a toolExecutionNotifications entry, and every other input's
findings still written in every format. The landed version ended in a traceback, exit 1 and no
output at all for a cluster of one bad and one good node."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES, run_cli

BAD = FIXTURES / "rules" / "NUMA001" / "bad.xml"
MATRIX = FIXTURES / "rules" / "NUMA005" / "bad_matrix_numa_column.txt"


@pytest.fixture
def cluster(tmp_path):
    for name, source in (("good", BAD), ("broken", MATRIX)):
        (tmp_path / "cluster" / name).mkdir(parents=True)
        shutil.copyfile(source, tmp_path / "cluster" / name / source.name)
    return tmp_path


def _all_formats(tmp_path):
    result = run_cli("check", "cluster", "--no-cache", "--format", "json", "--format", "sarif", "--format", "full",
                     "--format", "concise", "--format", "github", "-o", "out.json", "-o", "out.sarif", "-o", "out.txt",
                     "-o", "out.concise", "-o", "out.github", cwd=tmp_path)
    outputs = {ext: (tmp_path / f"out.{ext}").read_text(encoding="utf-8")
               for ext in ("json", "sarif", "txt", "concise", "github")}
    return result, outputs


def _assert_other_node_reported(outputs):
    assert any(f["code"] == "NUMA001" for f in json.loads(outputs["json"])["findings"])
    assert "NUMA001" in outputs["txt"] and "NUMA001" in outputs["concise"] and "NUMA001" in outputs["github"]
    assert json.loads(outputs["sarif"])["runs"][0]["results"]


def test_a_check_that_raises(cluster, monkeypatch):
    from topolint.checks import cpu_affinity_overlap

    def broken(context, params):
        raise KeyError("gpu")

    monkeypatch.setattr(cpu_affinity_overlap, "check", broken)
    result, outputs = _all_formats(cluster)
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if "internal error" in line]
    assert len(lines) == 2  # one per node it ran on, each naming input and rule
    assert all("NUMA005" in line and "KeyError" in line and "report" in line for line in lines)
    assert any("cluster/broken/bad_matrix_numa_column.txt" in line for line in lines)
    _assert_other_node_reported(outputs)
    invocation = json.loads(outputs["sarif"])["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert {n["descriptor"]["id"] for n in invocation["toolExecutionNotifications"]} == {"NUMA005"}
    assert json.loads(outputs["json"])["internal_errors"][0]["rule"] == "NUMA005"


def test_a_parser_that_raises(cluster, monkeypatch):
    from topolint.parsers import nvidia_smi_topo

    def broken(source):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(nvidia_smi_topo, "parse_matrix", broken)
    result, outputs = _all_formats(cluster)
    assert result.exit_code == 2
    (line,) = [line for line in result.stderr.splitlines() if "internal error" in line]
    assert "parser nvidia-smi-topo" in line and "cluster/broken/bad_matrix_numa_column.txt" in line
    _assert_other_node_reported(outputs)
    assert json.loads(outputs["sarif"])["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_a_clean_run_says_nothing_of_internal_errors(cluster):
    result, outputs = _all_formats(cluster)
    assert result.exit_code == 1 and "internal error" not in result.stderr
    assert "internal_errors" not in json.loads(outputs["json"])
    invocation = json.loads(outputs["sarif"])["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True and "toolExecutionNotifications" not in invocation


def test_a_bug_outside_any_input_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from topolint.reporters import full

    monkeypatch.setattr(full, "render_full", lambda report: 1 / 0)
    shutil.copyfile(BAD, tmp_path / "topo.xml")
    result = run_cli("check", "topo.xml", "--no-cache", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "internal error" in result.stderr
