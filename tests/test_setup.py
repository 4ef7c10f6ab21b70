"""The setup the README and docs/ promise, run as written: the Python API, shell completion, pipx,
the composite GitHub Action's steps (a first run without a baseline too) and the documented
workflow's commands: the snippets marked tested-by one of these tests. The other snippets run
in tests/test_snippets.py, the pre-commit ones in tests/test_precommit.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, run_cli
from readme_snippets import snippets_for

yaml = pytest.importorskip("yaml")


def test_healthy_sample_passes_as_the_quick_start_says():
    result = run_cli("check", "fixtures/samples/healthy-8gpu-dump.xml")
    assert (result.exit_code, result.stdout) == (0, "All checks passed.\n")


def test_python_api_snippet_runs_as_written(monkeypatch):
    (snippet,) = snippets_for("tests/test_setup.py::test_python_api_snippet_runs_as_written")
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        namespace: dict = {}
        exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - the README's own snippet
    result = namespace["result"]
    documented = re.search(r"result\.summary\s+# (Summary\(.*\))", snippet).group(1)
    assert repr(result.summary) == documented
    assert out.getvalue().splitlines()[0] == "NUMA001 fixtures/samples/dgx-like-2socket-dump.xml 53 " \
                                             "dgx-like-2socket-dump/gpu/0000:9a:00.0"


def test_bash_completion_snippet(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    (snippet,) = snippets_for("tests/test_setup.py::test_bash_completion_snippet")
    line = next(s for s in snippet.splitlines() if "completion bash" in s).split("#")[0].strip()
    shim = tmp_path / "topolint"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m topolint \"$@\"\n")
    shim.chmod(0o755)
    done = subprocess.run(["bash", "-c", f"{line}\ncomplete -p topolint"], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0 and "_topolint" in done.stdout, done.stderr


# --- the composite action -------------------------------------------------------------------

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def _expand(text: str, inputs: dict, action_path: Path) -> str:
    """What the runner does to `${{ ... }}` in a step: inputs and github.action_path only."""
    def value(match):
        expression = match.group(1).strip()
        if expression == "github.action_path":
            return str(action_path)
        name = expression.removeprefix("inputs.")
        assert name in ACTION["inputs"], f"action.yml uses an undeclared {expression}"
        return str(inputs[name])
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def test_action_declares_what_the_readme_passes():
    (workflow,) = snippets_for("tests/test_setup.py::test_action_declares_what_the_readme_passes")
    steps = yaml.safe_load(workflow)["jobs"]["topolint"]["steps"]
    (uses,) = [s for s in steps if s.get("uses", "").startswith("topolint/topolint@")]
    from topolint import __version__

    assert uses["uses"] == f"topolint/topolint@v{__version__}"  # the tag test_precommit looks up
    assert set(uses["with"]) <= set(ACTION["inputs"])
    assert ACTION["runs"]["using"] == "composite"
    upload = ACTION["runs"]["steps"][-1]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@") and "always()" in upload["if"]
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), "inputs must reach the shell as env, not pasted into it"


def _run_step(name: str, inputs: dict, cwd: Path, path_dirs: list[Path]) -> subprocess.CompletedProcess:
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("name") == name]
    env = {**os.environ, **{k: _expand(v, inputs, ROOT) for k, v in step.get("env", {}).items()}}
    env["PATH"] = os.pathsep.join([*map(str, path_dirs), env["PATH"]])
    return subprocess.run([step["shell"], "-e", "-c", step["run"]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow
def test_action_steps_install_check_and_write_sarif(tmp_path):
    """The Install and Check steps as the runner would run them, in a fresh virtualenv (pip
    builds topolint from this checkout, the action's own path)."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    work = tmp_path / "repo"
    (work / "topologies").mkdir(parents=True)
    shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", work / "topologies" / "node1.xml")
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    inputs["paths"] = "topologies/"
    install = _run_step("Install topolint", inputs, work, [env_dir / "bin"])
    assert install.returncode == 0, install.stdout + install.stderr
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c", "import topolint; print(topolint.__file__)"],
                           cwd=work, capture_output=True, text=True)
    assert str(env_dir) in where.stdout, "the step did not install topolint into the runner's Python"
    check = _run_step("Check", inputs, work, [env_dir / "bin"])
    assert check.returncode == 1, check.stdout + check.stderr  # findings fail the step
    assert check.stdout.count("::warning file=topologies/node1.xml,") == 4
    sarif = json.loads((work / inputs["sarif-file"]).read_text())
    assert sarif["version"] == "2.1.0" and len(sarif["runs"][0]["results"]) == 4
    inputs["args"] = "--exit-zero --select TL"
    assert _run_step("Check", inputs, work, [env_dir / "bin"]).returncode == 0


def test_action_first_run_without_the_baseline(tmp_path):
    """Why: the README's workflow (`args: --baseline .topolint-baseline.json`) exited 2 on its first
    run, before the baseline exists, and wrote no SARIF, so the upload step failed too."""
    (workflow,) = snippets_for("tests/test_setup.py::test_action_declares_what_the_readme_passes")
    steps = yaml.safe_load(workflow)["jobs"]["topolint"]["steps"]
    (uses,) = [s for s in steps if s.get("uses", "").startswith("topolint/topolint@")]
    work = tmp_path / "repo"
    (work / "topologies").mkdir(parents=True)
    shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", work / "topologies" / "node1.xml")
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    inputs.update({"paths": "topologies/", "args": uses["with"]["args"]})
    check = _run_step("Check", inputs, work, [_shim(tmp_path)])
    assert check.returncode == 1, check.stdout + check.stderr  # the findings, all new
    assert "baseline .topolint-baseline.json does not exist: treated as empty" in check.stderr
    assert check.stdout.count("::warning file=topologies/node1.xml,") == 4
    assert len(json.loads((work / inputs["sarif-file"]).read_text())["runs"][0]["results"]) == 4
    # On the command line a missing baseline stays a usage error unless asked otherwise.
    plain = run_cli("check", "topologies", "--baseline", ".topolint-baseline.json", cwd=work)
    assert plain.exit_code == 2 and "--baseline-missing=empty" in plain.stderr


# --- docs/github-actions.md ---------------------------------------------------------------

def _shim(tmp_path: Path) -> Path:
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "topolint").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m topolint \"$@\"\n")
    (shim / "topolint").chmod(0o755)
    return shim


def test_documented_workflow_commands_run(tmp_path):
    text = (ROOT / "docs" / "github-actions.md").read_text(encoding="utf-8")
    assert "pip install topolint " not in text and "pip install topolint\n" not in text  # not published
    (snippet,) = snippets_for("tests/test_setup.py::test_documented_workflow_commands_run")
    workflow = yaml.safe_load(snippet)
    runs = [s["run"] for s in workflow["jobs"]["topolint"]["steps"] if "run" in s]
    check = next(r for r in runs if r.startswith("topolint check"))
    create = re.search(r"`(topolint check \. --baseline \.topolint-baseline\.json\s+--update-baseline)`", text)
    work = tmp_path / "repo"
    work.mkdir()
    shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", work / "node1.xml")
    env = {**os.environ, "PATH": f"{_shim(tmp_path)}{os.pathsep}{os.environ['PATH']}", "TOPOLINT_NO_CACHE": "1"}
    first = subprocess.run(["bash", "-c", " ".join(create.group(1).split())], cwd=work, env=env,
                           capture_output=True, text=True)
    assert first.returncode == 0 and "updated" in first.stderr, first.stderr
    (work / "node2.xml").write_text((FIXTURES / "rules" / "NUMA001" / "bad.xml").read_text())
    done = subprocess.run(["bash", "-c", check], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # the new node's finding fails the step
    assert "::error file=node2.xml" in done.stdout and "node1.xml" not in done.stdout  # node1 is baselined
    assert (work / "topolint.sarif").is_file()


@pytest.mark.slow
def test_pipx_install_as_the_readme_says(tmp_path):
    if shutil.which("pipx") is None:
        pytest.skip("pipx is not installed here (the README's `pipx install .` needs it)")
    (snippet,) = snippets_for("tests/test_setup.py::test_pipx_install_as_the_readme_says")
    assert snippet.strip() == "pipx install ."
    env = {**os.environ, "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin")}
    done = subprocess.run(["pipx", "install", "."], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    run = subprocess.run([str(tmp_path / "bin" / "topolint"), "check", str(FIXTURES / "samples" / "healthy-8gpu-dump.xml")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout == "All checks passed.\n", run.stdout + run.stderr
