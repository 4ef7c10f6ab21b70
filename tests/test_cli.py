"""The command line: exit codes, output, selection, output files, stdin and input grouping.

Snapshots under tests/snapshots/cli/ keep exit code, stdout and stderr together
(TOPOLINT_UPDATE_SNAPSHOTS=1 rewrites them). Tests that select more than NUMA001 assert on
parsed JSON instead, so that rules added later do not churn the snapshots.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, assert_snapshot, run_cli

from topolint.engine.rule import load_rules

BAD = "fixtures/rules/NUMA001/bad.xml"
BAD_PXN = "fixtures/rules/NUMA001/bad_pxn.xml"
GOOD = "fixtures/rules/NUMA001/good.xml"
HEALTHY = "fixtures/samples/healthy-8gpu-dump.xml"
DGX = "fixtures/samples/dgx-like-2socket-dump.xml"
GRAPH = "fixtures/samples/nccl-graph.xml"


def snap(name: str, *args: str, cwd: Path = ROOT):
    result = run_cli(*args, cwd=cwd)
    assert_snapshot(f"cli/{name}.txt", result.snapshot())
    return result


def json_report(*args: str, cwd: Path = ROOT) -> tuple[int, dict]:
    result = run_cli(*args, "--format", "json", cwd=cwd)
    assert "Traceback" not in result.stderr
    return result.exit_code, json.loads(result.stdout)


def codes_of(report: dict) -> set[str]:
    return {f["code"] for f in report["findings"]}


def run_module(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "topolint", *args], input=stdin, cwd=ROOT,
                          capture_output=True, timeout=120)


# --- check: exit codes and reporters ---------------------------------------------------------

def test_healthy_sample_is_clean():
    result = snap("check_healthy", "check", HEALTHY)
    assert result.exit_code == 0
    assert result.stdout == "All checks passed.\n"


def test_good_fixture_is_clean():
    result = snap("check_good", "check", GOOD, "--select", "NUMA001")
    assert result.exit_code == 0


def test_bad_fixture_full_format():
    result = snap("check_bad_full", "check", BAD, "--select", "NUMA001")
    assert result.exit_code == 1
    assert "NUMA001 [error]" in result.stdout
    assert "= fix:" in result.stdout


def test_bad_fixture_concise():
    result = snap("check_bad_concise", "check", BAD, "--select", "NUMA001", "--format", "concise")
    assert result.exit_code == 1


def test_dgx_like_sample_concise():
    result = snap("check_dgx_like", "check", DGX, "--select", "NUMA001", "--format", "concise")
    assert result.exit_code == 1
    assert result.stdout.count("NUMA001 [warning]") == 4


def test_exit_zero():
    result = snap("check_bad_exit_zero", "check", BAD, "--select", "NUMA001", "--format", "concise",
                  "--exit-zero")
    assert result.exit_code == 0
    assert "NUMA001" in result.stdout


def test_fail_level_error_with_only_warnings():
    result = snap("check_pxn_fail_level_error", "check", BAD_PXN, "--select", "NUMA001",
                  "--format", "concise", "--fail-level", "error")
    assert result.exit_code == 0
    assert "NUMA001 [warning]" in result.stdout


def test_fail_level_error_with_an_error():
    result = run_cli("check", BAD, "--select", "NUMA001", "--format", "concise", "--fail-level", "error")
    assert result.exit_code == 1


def test_json_output_shape():
    code, report = json_report("check", BAD, "--select", "NUMA001")
    assert code == 1
    assert report["version"] == 1
    assert report["tool"]["name"] == "topolint"
    assert report["summary"]["total"] == 1
    assert report["summary"]["by_severity"] == {"error": 1, "warning": 0, "info": 0}
    (finding,) = report["findings"]
    assert finding["code"] == "NUMA001"
    assert finding["slug"] == "gpu-nic-cross-socket"
    assert (finding["path"], finding["line"], finding["column"]) == (BAD, 9, 7)
    assert finding["entity"] == "bad/gpu/0000:87:00.0"


# --- selection --------------------------------------------------------------------------------

def test_select_by_code():
    snap("select_code", "check", BAD, "--select", "NUMA001", "--format", "concise")


def test_select_by_slug():
    result = snap("select_slug", "check", BAD, "--select", "gpu-nic-cross-socket", "--format", "concise")
    assert result.exit_code == 1


def test_select_code_is_case_insensitive():
    assert run_cli("check", BAD, "--select", "numa001", "--format", "concise").exit_code == 1


@pytest.mark.parametrize("selector", ["NUMA", "numa", "ALL", "all", "NUMA001,TL001"])
def test_select_prefix_category_all(selector):
    code, report = json_report("check", BAD, "--select", selector)
    assert code == 1
    assert "NUMA001" in codes_of(report)
    if selector.upper() == "NUMA":
        assert all(f["category"] == "numa" for f in report["findings"])


@pytest.mark.parametrize("ignore", ["NUMA001", "gpu-nic-cross-socket", "NUMA", "numa", "ALL"])
def test_ignore(ignore):
    code, report = json_report("check", BAD, "--select", "NUMA001", "--ignore", ignore)
    assert code == 0
    assert report["findings"] == []


def test_ignore_on_top_of_default_selection():
    code, report = json_report("check", BAD, "--ignore", "numa")
    assert not any(f["category"] == "numa" for f in report["findings"])


def test_select_then_ignore_snapshot():
    result = snap("select_ignore", "check", BAD, "--select", "NUMA001", "--ignore", "gpu-nic-cross-socket",
                  "--format", "concise")
    assert result.exit_code == 0


def test_extend_select():
    code, report = json_report("check", BAD, "--select", "TL001", "--extend-select", "NUMA001")
    assert code == 1
    assert codes_of(report) == {"NUMA001"}
    code, report = json_report("check", BAD, "--select", "TL001")
    assert code == 0 and report["findings"] == []


def test_extend_select_by_category_and_slug():
    for token in ("numa", "gpu-nic-cross-socket"):
        code, report = json_report("check", BAD, "--select", "TL", "--extend-select", token)
        assert "NUMA001" in codes_of(report), token


def test_unknown_selector():
    result = snap("select_unknown", "check", BAD, "--select", "NOSUCH999")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "unknown rule selector 'NOSUCH999'" in result.stderr


@pytest.mark.parametrize("option", ["--ignore", "--extend-select"])
def test_unknown_selector_in_ignore_and_extend(option):
    result = run_cli("check", BAD, option, "bogus-slug")
    assert result.exit_code == 2
    assert "unknown rule selector" in result.stderr


# --- output files -----------------------------------------------------------------------------

def test_two_formats_to_two_files(tmp_path):
    concise, report = tmp_path / "a.txt", tmp_path / "b.json"
    result = run_cli("check", BAD, "--select", "NUMA001", "--format", "concise", "--format", "json",
                     "-o", concise, "-o", report)
    assert result.exit_code == 1
    assert result.stdout == "" and result.stderr == ""
    expected = run_cli("check", BAD, "--select", "NUMA001", "--format", "concise").stdout
    assert concise.read_text(encoding="utf-8") == expected
    document = json.loads(report.read_text(encoding="utf-8"))
    assert codes_of(document) == {"NUMA001"}


def test_output_dash_is_stdout(tmp_path):
    target = tmp_path / "out.json"
    result = run_cli("check", BAD, "--select", "NUMA001", "--format", "concise", "--format", "json",
                     "-o", "-", "-o", target)
    assert result.stdout.startswith(f"{BAD}:9:7: NUMA001")
    assert json.loads(target.read_text(encoding="utf-8"))["summary"]["total"] == 1


def test_format_output_count_mismatch(tmp_path):
    result = run_cli("check", BAD, "--format", "concise", "--format", "json", "-o", tmp_path / "a")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "2 --format but 1 --output" in result.stderr
    assert not (tmp_path / "a").exists()


def test_unwritable_output(tmp_path):
    result = run_cli("check", BAD, "--format", "concise", "-o", tmp_path / "missing" / "out.txt")
    assert result.exit_code == 2
    assert "cannot write" in result.stderr


# --- stdin ------------------------------------------------------------------------------------

def test_stdin_with_filename():
    proc = run_module("check", "-", "--stdin-filename", "host1-topo.xml", "--select", "NUMA001",
                      "--format", "concise", stdin=(ROOT / BAD).read_bytes())
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.decode().startswith("host1-topo.xml:9:7: NUMA001 [error]")
    assert proc.stderr == b""


def test_stdin_json_names_the_node_after_the_filename():
    proc = run_module("check", "-", "--stdin-filename", "host1-topo.xml", "--select", "NUMA001",
                      "--format", "json", stdin=(ROOT / BAD).read_bytes())
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["node"] == "host1-topo"
    assert finding["entity"] == "host1-topo/gpu/0000:87:00.0"


def test_stdin_without_filename():
    proc = run_module("check", "-", "--select", "NUMA001", "--format", "concise",
                      stdin=(ROOT / BAD).read_bytes())
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("-:9:7: NUMA001")


def test_stdin_good_and_garbage():
    proc = run_module("check", "-", "--select", "NUMA001", "--format", "concise",
                      stdin=(ROOT / GOOD).read_bytes())
    assert proc.returncode == 0 and proc.stdout == b"All checks passed.\n"
    proc = run_module("check", "-", "--stdin-filename", "broken.xml", "--format", "concise",
                      stdin=b"<system version=\"1\">\n  <cpu>\n")
    assert proc.returncode == 2
    assert b"broken.xml:" in proc.stdout and b"TL001" in proc.stdout
    assert b"Traceback" not in proc.stderr


def test_stdin_named_twice():
    result = run_cli("check", "-", "-")
    assert result.exit_code == 2
    assert "stdin (-) can be named only once" in result.stderr


# --- rules and rule ---------------------------------------------------------------------------

def test_rules_text():
    result = run_cli("rules")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    rules = load_rules()
    assert len(lines) == len(rules)
    for line, rule in zip(lines, rules):
        assert line.split()[:3] == [rule.code, rule.slug, rule.severity]
        assert line.endswith(" (preview)") == rule.is_preview
    assert any(line.startswith("NUMA001  gpu-nic-cross-socket") for line in lines)


def test_rules_json():
    result = run_cli("rules", "--format", "json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["code"] for r in rows] == [r.code for r in load_rules()]
    numa = next(r for r in rows if r["code"] == "NUMA001")
    assert numa == {
        "code": "NUMA001", "slug": "gpu-nic-cross-socket", "category": "numa", "severity": "error",
        "status": "stable", "check": "gpu_nic_cross_socket",
        "summary": "A GPU's nearest fabric NIC is reachable only across the CPU interconnect",
    }


def test_rules_markdown():
    from topolint.docs import rules_index_markdown

    result = run_cli("rules", "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout == rules_index_markdown(load_rules())
    assert "| [NUMA001](NUMA001.md) | gpu-nic-cross-socket |" in result.stdout


def test_rule_by_code():
    result = snap("rule_NUMA001", "rule", "NUMA001")
    assert result.exit_code == 0
    assert result.stdout.startswith("# NUMA001 gpu-nic-cross-socket\n")


@pytest.mark.parametrize("name", ["gpu-nic-cross-socket", "numa001", "GPU-NIC-CROSS-SOCKET"])
def test_rule_by_slug_or_lowercase(name):
    result = run_cli("rule", name)
    assert result.exit_code == 0
    assert result.stdout == run_cli("rule", "NUMA001").stdout


def test_rule_unknown():
    result = snap("rule_unknown", "rule", "NOPE123")
    assert result.exit_code == 2
    assert result.stdout == ""


# --- top-level usage --------------------------------------------------------------------------

def test_version():
    from topolint import __version__

    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"topolint {__version__}\n"


def test_no_arguments():
    result = run_cli()
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("usage: topolint")


def test_check_without_paths_checks_the_working_directory(tmp_path):
    shutil.copy(ROOT / BAD, tmp_path / "node.xml")
    result = run_cli("check", "--isolated", "--format", "concise", cwd=tmp_path)
    assert result.exit_code == 1, result.stderr
    assert result.stdout.startswith("node.xml:") and "NUMA001" in result.stdout


def test_nccl_version_garbage():
    result = snap("nccl_version_garbage", "check", BAD, "--nccl-version", "garbage")
    assert result.exit_code == 2
    assert "invalid NCCL version 'garbage'" in result.stderr


def test_nccl_version_accepted():
    result = run_cli("check", BAD, "--select", "NUMA001", "--nccl-version", "2.21.5", "--format", "concise",
                     "--verbose")
    assert result.exit_code == 1
    assert "assumed NCCL 2.21.5" in result.stderr


def test_verbose_graph_summary():
    result = run_cli("check", GRAPH, "--verbose", "--select", "NUMA001")
    assert result.exit_code == 0
    assert result.stdout == "All checks passed.\n"
    lines = result.stderr.splitlines()
    assert lines[0] == ("topolint: fixtures/samples/nccl-graph.xml: NCCL graph XML (ring: 2 channels, "
                        "intra NVL inter PXB; tree: 1 channels, intra NVL inter PXB)")
    assert "topolint: NUMA001 not run on node nccl-graph: no topology or matrix input" in lines
    assert lines[-1].startswith("topolint: assumed NCCL ")


# --- input grouping ---------------------------------------------------------------------------

NUMA_FIXTURES = FIXTURES / "rules" / "NUMA001"


def _copy(name: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(NUMA_FIXTURES / name, target)


def test_files_named_together_form_one_node():
    code, report = json_report("check", BAD, BAD_PXN, "--select", "NUMA001")
    assert code == 1
    assert {f["node"] for f in report["findings"]} == {"bad"}  # named after the first file
    assert {f["path"] for f in report["findings"]} == {BAD, BAD_PXN}


def test_node_option_names_the_node():
    code, report = json_report("check", BAD, BAD_PXN, "--node", "gpu-node-17", "--select", "NUMA001")
    assert code == 1
    entities = sorted(f["entity"] for f in report["findings"])
    assert entities == ["gpu-node-17/gpu/0000:87:00.0", "gpu-node-17/gpu/0000:91:00.0"]
    assert {f["node"] for f in report["findings"]} == {"gpu-node-17"}
    for f in report["findings"]:
        assert all(r["entity"].startswith("gpu-node-17/") for r in f["related"])


def test_folder_with_files_is_one_node(tmp_path):
    _copy("bad.xml", tmp_path / "host-a" / "topo.xml")
    _copy("bad_pxn.xml", tmp_path / "host-a" / "nested" / "other.xml")
    _copy("good.xml", tmp_path / "host-a" / "good.xml")
    code, report = json_report("check", tmp_path / "host-a", "--select", "NUMA001")
    assert code == 1
    assert len(report["findings"]) == 2
    assert {f["node"] for f in report["findings"]} == {"host-a"}
    assert all(f["entity"].startswith("host-a/gpu/") for f in report["findings"])


def test_folder_of_subfolders_is_a_cluster(tmp_path):
    cluster = tmp_path / "cluster"
    _copy("bad.xml", cluster / "node01" / "topo.xml")
    _copy("bad_pxn.xml", cluster / "node02" / "topo.xml")
    _copy("good.xml", cluster / "node03" / "topo.xml")
    (cluster / "README.txt").write_text("three nodes\n", encoding="utf-8")
    code, report = json_report("check", cluster, "--select", "NUMA001")
    assert code == 1
    by_node = {f["node"]: f for f in report["findings"]}
    assert set(by_node) == {"node01", "node02"}
    assert by_node["node01"]["entity"] == "node01/gpu/0000:87:00.0"
    assert by_node["node02"]["entity"] == "node02/gpu/0000:91:00.0"


def test_cluster_paths_relative_to_cwd_and_verbose_notes(tmp_path):
    cluster = tmp_path / "cluster"
    _copy("bad.xml", cluster / "node01" / "topo.xml")
    _copy("good.xml", cluster / "node02" / "topo.xml")
    (cluster / "README.txt").write_text("notes\n", encoding="utf-8")
    (cluster / "node02" / "lspci.txt").write_text("00:00.0 Host bridge\n", encoding="utf-8")
    result = run_cli("check", "cluster", "--select", "NUMA001", "--format", "concise", "--verbose", cwd=tmp_path)
    # stdout is stable; stderr also lists rules that did not run, which grows with the rule set
    assert_snapshot("cli/cluster_verbose_stdout.txt", f"exit code: {result.exit_code}\n{result.stdout}")
    assert result.exit_code == 1
    assert result.stdout.startswith("cluster/node01/topo.xml:9:7: NUMA001")
    assert "cluster/README.txt: skipped, not a recognised format" in result.stderr
    assert "cluster/node02/lspci.txt: skipped, not a recognised format" in result.stderr


def test_files_and_folders_together(tmp_path):
    _copy("bad.xml", tmp_path / "cluster" / "node01" / "topo.xml")
    _copy("bad_pxn.xml", tmp_path / "cluster" / "node02" / "topo.xml")
    shutil.copyfile(NUMA_FIXTURES / "bad.xml", tmp_path / "loose.xml")
    code, report = json_report("check", "loose.xml", "cluster", "--node", "standalone", "--select", "NUMA001",
                               cwd=tmp_path)
    assert code == 1
    assert sorted(f["node"] for f in report["findings"]) == ["node01", "node02", "standalone"]


@pytest.mark.parametrize("fmt", ["full", "concise", "json"])
def test_an_ascii_terminal_gets_escapes_not_an_internal_error(tmp_path, fmt):
    """A C locale's ASCII stdout and a value from the input that is not ASCII: the report is written
    (text formats with \\x escapes, JSON with its own \\u ones) and the exit code is the findings'."""
    script = tmp_path / "run.sh"
    script.write_bytes("export NCCL_SOCKET_IFNAME=\u00e9th0\n".encode())
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    result = subprocess.run([sys.executable, "-m", "topolint", "check", str(script), "--format", fmt, "--no-cache"],
                            capture_output=True, cwd=ROOT, env=env)
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    assert b"internal error" not in result.stderr
    out = result.stdout.decode("ascii")
    if fmt == "json":
        assert json.loads(out)["findings"][0]["message"].startswith("NCCL_SOCKET_IFNAME=\u00e9th0")
    else:
        assert "NCCL_SOCKET_IFNAME=\\xe9th0" in out
