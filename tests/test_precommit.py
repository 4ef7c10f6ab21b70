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
DISAGREE = FIXTURES / "rules" / "TL003" / "bad_numa_nvlink"  # a dump and a matrix that disagree: TL003


def test_hook_definitions():
    yaml = pytest.importorskip("yaml")
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"topolint", "topolint-project"}
    per_file, project = hooks["topolint"], hooks["topolint-project"]
    assert "--force-exclude" in per_file["entry"] and per_file.get("pass_filenames", True)
    # Nothing twice: the per-file hook leaves out what the project hook alone reports.
    assert "--cross-file exclude" in per_file["entry"] and "--cross-file only" in project["entry"]
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


def test_project_hook_reports_only_cross_file_findings(hook_repo, target, tmp_path):
    # topo/node1.xml alone: a per-file finding (NUMA001), which is the per-file hook's.
    result = try_repo(hook_repo, target, "topolint-project", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NUMA001" not in result.stdout + result.stderr
    shutil.copytree(DISAGREE, target / "node2")
    _git(target, "add", "-A")
    result = try_repo(hook_repo, target, "topolint-project", tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert {code for code, _, _ in _reported(output)} == {"TL003"}, output


def test_both_hooks_never_report_a_finding_twice(hook_repo, target, tmp_path):
    shutil.copytree(DISAGREE, target / "node2")
    _git(target, "add", "-A")
    per_file = try_repo(hook_repo, target, "topolint", tmp_path)
    project = try_repo(hook_repo, target, "topolint-project", tmp_path)
    from_file, from_project = _reported(per_file.stdout), _reported(project.stdout)
    assert {c for c, _, _ in from_file} >= {"NUMA001"} and {c for c, _, _ in from_project} == {"TL003"}
    assert not from_file & from_project, (per_file.stdout, project.stdout)


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


def test_infra_repo_through_pre_commit_gives_exactly_the_table(hook_repo, infra_repo, tmp_path):
    from test_config_lint import _expected

    expected, _ = _expected()
    result = try_repo(hook_repo, infra_repo, "topolint", tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert _reported(output) == expected, output
    # No setting there is judged against a topology: the project hook has nothing to add.
    project = try_repo(hook_repo, infra_repo, "topolint-project", tmp_path)
    assert project.returncode == 0 and not _reported(project.stdout), project.stdout + project.stderr


# --- the README's snippets, as written ---------------------------------------------------------

def _readme_configs() -> tuple[dict, str, dict]:
    yaml = pytest.importorskip("yaml")
    from readme_snippets import blocks

    remote, project, local = blocks("pre-commit", "yaml")
    return yaml.safe_load(remote), project, yaml.safe_load(local)


def test_readme_rev_names_a_ref_of_this_repository():
    remote, _, _ = _readme_configs()
    (repo,) = remote["repos"]
    from topolint import __version__

    assert repo["rev"] == f"v{__version__}", "the README pins the current version's tag"
    if shutil.which("git") is None or subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT,
                                                     capture_output=True).returncode != 0:
        pytest.skip("not a git checkout: cannot look the tag up")
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/tags/{repo['rev']}^{{commit}}"],
                           cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 0, f"tag {repo['rev']} does not exist: create it (git tag {repo['rev']} COMMIT)"
    tagged = subprocess.run(["git", "show", f"{repo['rev']}:.pre-commit-hooks.yaml"], cwd=ROOT,
                            capture_output=True, text=True)
    assert tagged.returncode == 0 and "id: topolint" in tagged.stdout, "the tagged commit has no hooks"


def _run_config(target: Path, config: str, tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    (target / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    _git(target, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path.parent / "pre-commit-home"), **(env or {})}
    return subprocess.run([*_pre_commit(), "run", "--all-files"], cwd=target, env=env, capture_output=True,
                          text=True, timeout=900)


def test_readme_remote_snippet_with_the_project_hook(hook_repo, target, tmp_path):
    """The snippet as written, but for its URL (the public network): the hook repository is this
    working tree, tagged with the snippet's rev."""
    remote, project, _ = _readme_configs()
    (repo,) = remote["repos"]
    _git(hook_repo, "tag", "-f", repo["rev"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = readme[readme.index("# .pre-commit-config.yaml\nrepos:\n  - repo: https://"):]
    snippet = snippet[:snippet.index("```")] + project
    config = snippet.replace(repo["repo"], str(hook_repo))
    shutil.copytree(DISAGREE, target / "cluster" / "node2")  # the snippet's args: ["cluster/"]
    result = _run_config(target, config, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    reported = [line for line in output.splitlines() if re.match(r"^\S+:\d+(:\d+)?: [A-Z]+\d{3} ", line)]
    assert any(" NUMA001 " in line for line in reported) and any(" TL003 " in line for line in reported), output
    assert len(reported) == len(set(reported)), "a finding was reported twice"


def test_readme_local_snippet(target, tmp_path):
    """`repo: local` runs the installed topolint; here a shim runs this working tree's."""
    _, _, local = _readme_configs()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = readme[readme.index("# .pre-commit-config.yaml\nrepos:\n  - repo: local"):]
    snippet = snippet[:snippet.index("```")]
    assert local["repos"][0]["hooks"][0]["language"] == "system"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "topolint").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m topolint \"$@\"\n")
    (shim / "topolint").chmod(0o755)
    result = _run_config(target, snippet, tmp_path, {"PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"})
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "topo/node1.xml" in output and "NUMA001" in output, output
    assert "TL002" not in output
