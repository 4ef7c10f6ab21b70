"""The pre-commit hooks, run for real with `pre-commit try-repo` in a temporary git repository.

Slow (pre-commit builds a virtualenv and pip-installs topolint into it, which needs the package
index for the build backend and dependencies); marked slow and run in CI. The hook repository is
a fresh git repository holding this working tree's files, so uncommitted and untracked changes
(a new hook definition) are what gets tested.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow

BAD = FIXTURES / "rules" / "NUMA001" / "bad.xml"
GOOD = FIXTURES / "rules" / "NUMA001" / "good.xml"


def test_hook_definitions():
    yaml = pytest.importorskip("yaml")
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"topolint", "topolint-project"}
    per_file, project = hooks["topolint"], hooks["topolint-project"]
    assert "--force-exclude" in per_file["entry"] and per_file.get("pass_filenames", True)
    assert project["pass_filenames"] is False and project["require_serial"] is True
    pattern = re.compile(per_file["files"])
    for name in ("job.sh", "a/run.bash", "train.sbatch", "x.slurm", "Dockerfile", "docker/Dockerfile.cu12",
                 "k8s/pod.yaml", "compose.yml", ".env", "prod.env", "etc/nccl.conf", "topo/n1.xml", "train.py"):
        assert pattern.search(name), name
    for name in ("README.md", "notes.txt", "nccl.conf.bak"):
        assert not pattern.search(name), name


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"})


def _pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("hook-repo")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "hooks under test")
    return repo


@pytest.fixture
def target(tmp_path) -> Path:
    repo = tmp_path / "infra"
    (repo / "topo").mkdir(parents=True)
    shutil.copy(BAD, repo / "topo" / "node1.xml")
    (repo / "README.md").write_text("infra\n", encoding="utf-8")
    (repo / "job.sbatch").write_text("#!/bin/bash\nsrun python train.py\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "bad topology")
    return repo


def try_repo(hook_repo: Path, target: Path, hook: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path.parent / "pre-commit-home")}
    return subprocess.run([*_pre_commit(), "try-repo", str(hook_repo), hook, "--all-files", "--verbose"],
                          cwd=target, env=env, capture_output=True, text=True, timeout=900)


def test_per_file_hook(hook_repo, target, tmp_path):
    result = try_repo(hook_repo, target, "topolint", tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "topo/node1.xml" in output and "NUMA001" in output
    assert "TL002" not in output  # job.sbatch has no NCCL content: not an error in a hook
    # The config's excludes apply to the files pre-commit names (--force-exclude).
    (target / ".topolint.toml").write_text('extend-exclude = ["topo"]\n', encoding="utf-8")
    _git(target, "add", "-A")
    result = try_repo(hook_repo, target, "topolint", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_project_hook(hook_repo, target, tmp_path):
    result = try_repo(hook_repo, target, "topolint-project", tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "NUMA001" in output
    shutil.copy(GOOD, target / "topo" / "node1.xml")
    _git(target, "add", "-A")
    result = try_repo(hook_repo, target, "topolint-project", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def infra_repo(tmp_path) -> Path:
    """fixtures/infra-repo as its own git repository, as a platform team would have it."""
    repo = tmp_path / "infra-repo"
    shutil.copytree(FIXTURES / "infra-repo", repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "infra")
    return repo


def _reported(output: str) -> set[tuple[str, str, int]]:
    """(code, path, line) of each concise finding line pre-commit shows."""
    found = set()
    for match in re.finditer(r"^(?P<path>[^\s:]+):(?P<line>\d+)(?::\d+)?: (?P<code>[A-Z]+\d{3}) ", output, re.M):
        found.add((match["code"], match["path"], int(match["line"])))
    return found


@pytest.mark.parametrize("hook", ["topolint", "topolint-project"])
def test_infra_repo_through_pre_commit_gives_exactly_the_table(hook_repo, infra_repo, tmp_path, hook):
    from test_config_lint import _expected

    expected, _ = _expected()
    result = try_repo(hook_repo, infra_repo, hook, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert _reported(output) == expected, output
