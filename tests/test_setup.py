"""The setup the README and docs/ promise, run as written: the quick start, the Python API, shell
completion, the composite GitHub Action's steps and the documented workflow's commands.
The pre-commit snippets are run in tests/test_precommit.py."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, run_cli
from readme_snippets import blocks

yaml = pytest.importorskip("yaml")


def test_quick_start_output_is_what_the_readme_shows():
    (command,) = blocks("Quick start", "bash")[:1]
    assert command.strip() == "pip install . && topolint check fixtures/samples/dgx-like-2socket-dump.xml"
    shown = blocks("Quick start", "text")[0]
    result = run_cli("check", "fixtures/samples/dgx-like-2socket-dump.xml")
    assert result.exit_code == 1
    first, _, _ = shown.partition("\n\n")  # the first finding, then "..." for the three others
    assert result.stdout.startswith(first + "\n\n")
    assert result.stdout.rstrip().endswith(shown.rstrip().splitlines()[-1])
    assert sum(" NUMA001 [warning] " in line for line in result.stdout.splitlines()) == 4


def test_healthy_sample_passes_as_the_quick_start_says():
    result = run_cli("check", "fixtures/samples/healthy-8gpu-dump.xml")
    assert (result.exit_code, result.stdout) == (0, "All checks passed.\n")


def test_python_api_snippet_runs_as_written(monkeypatch):
    (snippet,) = blocks("Python API", "python")
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
    (snippet,) = blocks("Usage conventions", "bash")
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
    (workflow,) = blocks("GitHub Actions: upload SARIF to code scanning", "yaml")
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
    import json

    sarif = json.loads((work / inputs["sarif-file"]).read_text())
    assert sarif["version"] == "2.1.0" and len(sarif["runs"][0]["results"]) == 4
    inputs["args"] = "--exit-zero --select TL"
    assert _run_step("Check", inputs, work, [env_dir / "bin"]).returncode == 0


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
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1))
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
    (snippet,) = [b for b in blocks("Quick start", "bash") if "pipx" in b]
    assert snippet.strip() == "pipx install ."
    env = {**os.environ, "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin")}
    done = subprocess.run(["pipx", "install", "."], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    run = subprocess.run([str(tmp_path / "bin" / "topolint"), "check", str(FIXTURES / "samples" / "healthy-8gpu-dump.xml")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout == "All checks passed.\n", run.stdout + run.stderr


# --- every topolint command line in the README ------------------------------------------------

def _readme_command_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if re.match(r"^(cat \S+ \| )?topolint (check|rules|rule)\b", command):
                lines.append(command)
    return lines


@pytest.fixture
def placeholders(tmp_path) -> Path:
    """The files and folders the README's examples name, made of fixtures."""
    work = tmp_path / "work"
    (work / "node17").mkdir(parents=True)
    shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", work / "topo.xml")
    shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", work / "node17" / "topo.xml")
    shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", work / "node17-topo.xml")
    for host in ("node01", "node02"):
        (work / "cluster" / host).mkdir(parents=True)
        shutil.copy(FIXTURES / "samples" / "healthy-8gpu-dump.xml", work / "cluster" / host / "topo.xml")
    shutil.copytree(FIXTURES / "infra-repo", work / "infra")
    shutil.copy(FIXTURES / "rules" / "NET003" / "good.txt", work / "ibstat.txt")
    shutil.copy(FIXTURES / "rules" / "PERF001" / "good.txt", work / "all_reduce.txt")
    shutil.copy(FIXTURES / "samples" / "healthy-8gpu-dump.xml", work / "node-topo.xml")
    return work


def test_readme_command_lines_run(placeholders, tmp_path):
    """Each README command line whose files the placeholders (or a fixture of the same name) can
    stand in for: no usage error, no traceback."""
    commands = _readme_command_lines()
    env = {**os.environ, "PATH": f"{_shim(tmp_path)}{os.pathsep}{os.environ['PATH']}", "TOPOLINT_NO_CACHE": "1"}
    ran = 0
    for command in commands:
        words = command.split()
        named = [w for before, w in zip(words, words[1:])
                 if not before.startswith("--") and re.fullmatch(r"[\w.-]+\.(txt|xml|json|env)", w)]
        for word in named:
            found = sorted(FIXTURES.rglob(word))
            if not (placeholders / word).exists() and found:
                shutil.copy(found[0], placeholders / word)
        for word in words:  # a fixture named by its path from the repository root, as shipped
            if word.startswith("fixtures/") and (ROOT / word).exists() and not (placeholders / word).exists():
                (placeholders / word).parent.mkdir(parents=True, exist_ok=True)
                copy = shutil.copytree if (ROOT / word).is_dir() else shutil.copy
                copy(ROOT / word, placeholders / word)
        if not all((placeholders / w).exists() for w in named):
            continue  # names a file no fixture stands in for
        done = subprocess.run(["bash", "-c", command], cwd=placeholders, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, f"{command}: {done.stderr}"
        written = [placeholders / w for before, w in zip(words, words[1:]) if before in ("-o", "--output", ">")
                   and w != "-"]
        said = done.stdout or done.stderr or (written and all(f.stat().st_size for f in written))
        assert said, command  # it said something, or wrote what it was asked to
        ran += 1
    assert ran >= 12, commands
