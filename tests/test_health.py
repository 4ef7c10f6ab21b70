"""`topolint health` (commands/health.py, docs/health-checks.md): the drain path against a
stand-in `scontrol` on PATH that records its arguments, the exit codes of each mode, the
node-problem-detector contract (exit 0 OK, 1 problem, other unknown; stdout one line, capped),
the time budget against a hanging command, and the inventory each mode writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, run_cli, stand_in

BAD = FIXTURES / "rules" / "NVL004" / "bad.txt"  # GPU 0000:03:00.0: Status Insufficient Resources
GOOD = FIXTURES / "rules" / "NVL004" / "good.txt"
RECORD = "scontrol-calls.json"


def _nvidia_smi(bin_dir: Path, sample: Path, otherwise: str) -> None:
    """A stand-in nvidia-smi: ``-q`` prints ``sample``; any other command runs ``otherwise``."""
    stand_in(bin_dir, "nvidia-smi", f"if sys.argv[1:] == ['-q']:\n    sys.stdout.write(open({str(sample)!r}).read())\n"
                                    f"else:\n    {otherwise}")


@pytest.fixture
def bin_dir(tmp_path, monkeypatch) -> Path:
    """A PATH of stand-ins only: `scontrol` appends its argv to scontrol-calls.json (exit from
    SCONTROL_EXIT); every other tool is missing unless a test adds it."""
    folder = tmp_path / "bin"
    folder.mkdir()
    stand_in(folder, "scontrol", f"""
record = {str(tmp_path / RECORD)!r}
calls = json.load(open(record)) if os.path.exists(record) else []
calls.append(sys.argv[1:])
json.dump(calls, open(record, "w"))
code = int(os.environ.get("SCONTROL_EXIT", "0"))
if code:
    print("slurm_update error: Invalid node name specified", file=sys.stderr)
sys.exit(code)
""")
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    return folder


def _calls(tmp_path: Path) -> list[list[str]]:
    record = tmp_path / RECORD
    return json.loads(record.read_text()) if record.exists() else []


def _node(tmp_path: Path, sample: Path, name: str = "gpu17") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "nvidia-smi-q.txt").write_text(sample.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def test_drain_runs_scontrol_itself_for_an_unfit_node(bin_dir, tmp_path):
    node = _node(tmp_path, BAD)
    result = run_cli("health", "--mode", "slurm", "--drain", "--node", "gpu17", node)
    assert result.exit_code == 1
    (call,) = _calls(tmp_path)
    assert call[:3] == ["update", "NodeName=gpu17", "State=DRAIN"]
    assert call[3] == ("Reason=topolint: NVL004 GPU 0000:03:00.0 (NVIDIA GB200): NVLink fabric registration failed: "
                       "Status Insufficient Resources (not Success)")
    assert len(call) == 4, "the reason is one argument (no shell splits it)"
    assert "drained gpu17" in result.stderr
    assert f"{node.name}/nvidia-smi-q.txt:74: NVL004 [error]" in result.stdout


def test_drain_names_the_node_slurmd_names_and_leaves_a_fit_node_alone(bin_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "gb-rack4-07")
    result = run_cli("health", "--mode", "slurm", "--drain", _node(tmp_path, GOOD))
    assert result.exit_code == 0 and _calls(tmp_path) == []
    node = _node(tmp_path, BAD, "bad")
    run_cli("health", "--mode", "prolog", "--drain", node)
    assert [c[1] for c in _calls(tmp_path)] == ["NodeName=gb-rack4-07"]


def test_a_failing_scontrol_is_said_and_the_exit_code_stays_unfit(bin_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SCONTROL_EXIT", "1")
    result = run_cli("health", "--mode", "slurm", "--drain", "--node", "x", _node(tmp_path, BAD))
    assert result.exit_code == 1 and len(_calls(tmp_path)) == 1
    assert "scontrol exited 1: slurm_update error: Invalid node name specified: the node may not be drained" \
        in result.stderr


def test_the_drain_reason_is_one_line_with_input_values_escaped(bin_dir, tmp_path):
    node = _node(tmp_path, BAD)
    sample = node / "nvidia-smi-q.txt"
    sample.write_text(sample.read_text().replace("Insufficient Resources", "Insufficient\x1b[2J Resources"))
    run_cli("health", "--mode", "slurm", "--drain", "--node", "n", node)
    (call,) = _calls(tmp_path)
    assert "\x1b" not in call[3] and "\\x1b[2J" in call[3] and "\n" not in call[3]


@pytest.mark.parametrize("sample, mode, code", [
    (BAD, "slurm", 1), (GOOD, "slurm", 0), (BAD, "prolog", 1), (GOOD, "prolog", 0), (BAD, "npd", 1), (GOOD, "npd", 0),
])
def test_exit_codes_of_each_mode(bin_dir, tmp_path, sample, mode, code):
    assert run_cli("health", "--mode", mode, _node(tmp_path, sample)).exit_code == code


def test_a_node_that_cannot_be_judged(bin_dir, tmp_path):
    """Unreadable input: unknown. slurm and npd say so with exit 2; a prolog lets the job run (exit 0)."""
    node = _node(tmp_path, BAD)
    (node / "nvidia-smi-q.txt").write_text(BAD.read_text().replace("GPU 00000000:02:00.0", "GPU 00000000:01:00.0"))
    npd = run_cli("health", "--mode", "npd", node)
    assert npd.exit_code == 2
    assert npd.stdout.startswith("topolint: could not judge node ") and npd.stdout.count("\n") == 1
    prolog = run_cli("health", "--mode", "prolog", "--drain", node)
    assert prolog.exit_code == 0 and "lets the job run" in prolog.stderr
    assert run_cli("health", "--mode", "slurm", "--drain", node).exit_code == 2
    assert _calls(tmp_path) == [], "a node that could not be judged is not drained"


def test_npd_contract_stdout_is_one_capped_line_and_nothing_else(bin_dir, tmp_path):
    """As node-problem-detector runs it: a process, its exit code and its stdout."""
    node = _node(tmp_path, BAD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for cap, sample, code in ((80, BAD, 1), (40, BAD, 1), (80, GOOD, 0)):
        (node / "nvidia-smi-q.txt").write_text(sample.read_text())
        done = subprocess.run([sys.executable, "-m", "topolint", "health", "--mode", "npd", "--max-output", str(cap),
                               str(node)], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == code, done.stderr
        assert done.stdout.endswith("\n") and done.stdout.count("\n") == 1
        assert len(done.stdout) - 1 <= cap and done.stderr == ""
    assert done.stdout.startswith("topolint: node gpu17 fit")


def test_npd_mode_refuses_drain(bin_dir, tmp_path):
    result = run_cli("health", "--mode", "npd", "--drain", _node(tmp_path, BAD))
    assert result.exit_code == 2 and "--drain is for Slurm" in result.stderr


def test_the_collection_keeps_to_the_budget(bin_dir, tmp_path):
    """A command that hangs (dmesg here) is cut at the budget and every one after it is skipped:
    the run ends within the budget, and a node whose outputs are all missing is not judged fit."""
    stand_in(bin_dir, "dmesg", "time.sleep(60)")
    start = time.monotonic()
    result = run_cli("health", "--mode", "slurm", "--budget", "3", "--bundle", tmp_path / "b", "--node", "n1")
    took = time.monotonic() - start
    assert took < 3 + 2, f"took {took:.1f} s for a budget of 3 s"
    manifest = json.loads((tmp_path / "b" / "topolint-bundle.json").read_text())
    status = [c["status"] for c in manifest["commands"]]
    hung = [c["file"] for c in manifest["commands"]].index("dmesg.txt")
    assert status[hung] == "timeout" and set(status[hung + 1:]) == {"skipped"}
    assert result.exit_code == 2 and "could not judge node n1: no machine facts" in result.stdout


def test_what_was_collected_before_the_budget_ran_out_is_judged(bin_dir, tmp_path):
    from topolint.commands.collect import load_table
    from topolint.commands.health import judge

    _nvidia_smi(bin_dir, BAD, "time.sleep(60)")
    rows = {c.file: c for c in load_table()}
    table = [rows["nvidia-smi-q.txt"], rows["nvidia-smi-topo.txt"], rows["nvidia-smi-nvlink.txt"]]
    start = time.monotonic()
    verdict = judge(node="n1", budget=3, bundle=tmp_path / "b", table=table)
    assert time.monotonic() - start < 3 + 2
    assert verdict.state == "unfit" and [f.code for f in verdict.failing] == ["NVL004"]
    assert verdict.why == "the time budget ended the collection: 1 commands not run (nvidia-smi-nvlink.txt)"


def test_collected_now_judged_and_the_inventory_written_for_the_fleet_step(bin_dir, tmp_path):
    _nvidia_smi(bin_dir, GOOD, "sys.exit(3)")
    result = run_cli("health", "--mode", "npd", "--inventory", tmp_path / "inventories", cwd=tmp_path)
    assert result.exit_code == 0, result.stdout
    (written,) = (tmp_path / "inventories").glob("*.json")
    document = json.loads(written.read_text())
    assert document["nvlink_domain"]["value"] == "7f3e9a21-4c5b-4d6e-9f80-1a2b3c4d5e6f/32766"
    assert not list(tmp_path.glob("topolint-health-*")), "the temporary bundle is removed"


@pytest.mark.parametrize("mode", ["slurm", "prolog", "npd"])
def test_every_mode_writes_the_nodes_inventory(bin_dir, tmp_path, mode):
    node = _node(tmp_path, BAD)
    run_cli("health", "--mode", mode, "--inventory", tmp_path / "gpu17.json", node)
    document = json.loads((tmp_path / "gpu17.json").read_text())
    assert document["node"] == "gpu17" and document["gpus"][2]["fabric_status"]["value"] == "Insufficient Resources"


def _recipes():
    from readme_snippets import snippets_of

    return [s for s in snippets_of(ROOT / "docs" / "health-checks.md") if s.lang in ("bash", "yaml", "json")]


def test_the_recipes_cover_each_caller():
    sections = {s.section for s in _recipes()}
    for recipe in ("HealthCheckProgram", "Prolog", "srun", "array job", "custom plugin", "DaemonSet", "Indexed Job"):
        assert any(recipe in section for section in sections), recipe
    bodies = "\n".join(s.body for s in _recipes())
    assert "--mode slurm --drain" in bodies and "--mode prolog" in bodies and "--mode npd" in bodies
    assert '"max_output_length": 80' in bodies and "completionMode: Indexed" in bodies


@pytest.mark.parametrize("snippet", [s for s in _recipes() if s.lang in ("bash", "yaml")], ids=lambda s: s.id)
def test_the_recipes_pass_topolints_own_lint_with_every_rule(snippet, tmp_path):
    """The scripts and manifests of docs/health-checks.md, extracted and checked with every rule
    (preview ones too): a recipe the docs give must not be one topolint warns about."""
    name = "recipe.sh" if snippet.lang == "bash" else "recipe.yaml"
    (tmp_path / name).write_text(snippet.body, encoding="utf-8")
    result = run_cli("check", name, "--isolated", "--select", "ALL", "--preview", "--format", "concise", cwd=tmp_path)
    assert result.exit_code == 0, f"{snippet.id}:\n{result.stdout}{result.stderr}"
    assert "All checks passed." in result.stdout
