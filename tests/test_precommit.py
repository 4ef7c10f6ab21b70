"""The pre-commit hooks, run for real by `pre-commit run` (and `pre-commit try-repo`, as the README
says) in temporary git repositories.

Slow (pre-commit builds a virtualenv and pip-installs topolint into it, which needs the package
index for the build backend and dependencies); marked slow and run in CI. The hook repository is
a fresh git repository holding this working tree's files, so uncommitted and untracked changes
(a new hook definition) are what gets tested. It is made once a session and tagged with the
version, and every test but the try-repo one names it at that tag, so pre-commit installs the
hooks' environment once for them all (try-repo builds its own): 2 installs where there were 9.
"""

from __future__ import annotations

import os
import re
import shlex
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


def _shared_folder(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session shares (pre-commit locks its own store)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> Path:
    """This working tree committed in a git repository of its own and tagged v<version>: built once
    per session (all workers share it, so pre-commit installs the hooks' environment once)."""
    import fcntl
    import hashlib

    from topolint import __version__

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    files = sorted(name for name in filter(None, listed) if (ROOT / name).is_file())
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    shared = _shared_folder(tmp_path_factory)
    repo = shared / f"hook-repo-{digest.hexdigest()[:16]}"
    with open(shared / "hook-repo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (repo / ".git").is_dir():
            for name in files:
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, repo / name)
            _git(repo, "init", "-q")
            _git(repo, "add", "-A")
            _git(repo, "commit", "-q", "-m", "hooks under test")
            _git(repo, "tag", f"v{__version__}")
    return repo


def _home(tmp_path_factory) -> str:
    return str(_shared_folder(tmp_path_factory) / "pre-commit-home")


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


@pytest.fixture
def run_hook(hook_repo, tmp_path, tmp_path_factory):
    """``run_hook(target, hook)``: the hook of this working tree (the tagged hook repository) run on
    every file of ``target`` by ``pre-commit run``, from a configuration outside ``target``. Every
    call shares one installed environment (``pre-commit try-repo`` would build one per call)."""
    from topolint import __version__

    def run(target: Path, hook: str) -> subprocess.CompletedProcess:
        config = tmp_path / f"pre-commit-{hook}.yaml"
        config.write_text(f"repos:\n  - repo: {hook_repo}\n    rev: v{__version__}\n    hooks:\n      - id: {hook}\n",
                          encoding="utf-8")
        env = {**os.environ, "PRE_COMMIT_HOME": _home(tmp_path_factory)}
        return subprocess.run([*_pre_commit(), "run", hook, "--all-files", "--verbose", "-c", str(config)],
                              cwd=target, env=env, capture_output=True, text=True, timeout=900)

    return run


def test_try_repo_as_the_readme_says(hook_repo, target, tmp_path_factory):
    """README: `pre-commit try-repo /path/to/topolint topolint --all-files`, the path being a clone."""
    from readme_snippets import snippets_for

    (snippet,) = snippets_for("tests/test_precommit.py::test_try_repo_as_the_readme_says")
    command = shlex.split(snippet.replace("/path/to/topolint", str(hook_repo)))
    assert command[:2] == ["pre-commit", "try-repo"]
    env = {**os.environ, "PRE_COMMIT_HOME": _home(tmp_path_factory)}
    result = subprocess.run([*_pre_commit(), *command[1:]], cwd=target, env=env, capture_output=True, text=True,
                            timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "topo/node1.xml" in output and "NUMA001" in output


def test_per_file_hook(run_hook, target):
    result = run_hook(target, "topolint")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "topo/node1.xml" in output and "NUMA001" in output
    assert "TL002" not in output  # job.sbatch has no NCCL content: not an error in a hook
    # The config's excludes apply to the files pre-commit names (--force-exclude).
    (target / ".topolint.toml").write_text('extend-exclude = ["topo"]\n', encoding="utf-8")
    _git(target, "add", "-A")
    result = run_hook(target, "topolint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_project_hook_reports_only_cross_file_findings(run_hook, target):
    # topo/node1.xml alone: a per-file finding (NUMA001), which is the per-file hook's.
    result = run_hook(target, "topolint-project")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NUMA001" not in result.stdout + result.stderr
    shutil.copytree(DISAGREE, target / "node2")
    _git(target, "add", "-A")
    result = run_hook(target, "topolint-project")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert {code for code, _, _ in _reported(output)} == {"TL003"}, output


def test_both_hooks_never_report_a_finding_twice(run_hook, target):
    shutil.copytree(DISAGREE, target / "node2")
    _git(target, "add", "-A")
    per_file = run_hook(target, "topolint")
    project = run_hook(target, "topolint-project")
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


def test_infra_repo_through_pre_commit_gives_exactly_the_table(run_hook, infra_repo):
    from test_config_lint import _expected

    expected, _ = _expected()
    result = run_hook(infra_repo, "topolint")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert _reported(output) == expected, output
    # No setting there is judged against a topology: the project hook has nothing to add.
    project = run_hook(infra_repo, "topolint-project")
    assert project.returncode == 0 and not _reported(project.stdout), project.stdout + project.stderr


# --- the README's snippets, as written ---------------------------------------------------------

REMOTE = "tests/test_precommit.py::test_readme_remote_snippet_with_the_project_hook"
LOCAL = "tests/test_precommit.py::test_readme_local_snippet"


def _readme_configs() -> tuple[str, dict, str, str, dict]:
    """The README's remote configuration (text and parsed), the project hook's lines, the local one."""
    yaml = pytest.importorskip("yaml")
    from readme_snippets import snippets_for

    remote, project = snippets_for(REMOTE)
    (local,) = snippets_for(LOCAL)
    return remote, yaml.safe_load(remote), project, local, yaml.safe_load(local)


def test_readme_rev_names_a_ref_of_this_repository():
    _, remote, _, _, _ = _readme_configs()
    (repo,) = remote["repos"]
    from topolint import __version__

    assert repo["rev"] == f"v{__version__}", "the README pins the current version's tag"
    if shutil.which("git") is None or subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT,
                                                     capture_output=True).returncode != 0:
        pytest.skip("not a git checkout: cannot look the tag up")
    if not subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True).stdout.strip():
        pytest.skip("this clone carries no tags (a CI checkout of one branch): the tag cannot be looked up")
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/tags/{repo['rev']}^{{commit}}"],
                           cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 0, f"tag {repo['rev']} does not exist: create it (git tag {repo['rev']} COMMIT)"
    tagged = subprocess.run(["git", "show", f"{repo['rev']}:.pre-commit-hooks.yaml"], cwd=ROOT,
                            capture_output=True, text=True)
    assert tagged.returncode == 0 and "id: topolint" in tagged.stdout, "the tagged commit has no hooks"


def test_readme_local_hook_is_the_packaged_hook():
    """Why: the documented local hook matched fewer files than the packaged one (no nccl.conf, no *.dockerfile)."""
    yaml = pytest.importorskip("yaml")
    _, _, _, _, local = _readme_configs()
    (hook,) = local["repos"][0]["hooks"]
    packaged = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert hook["files"] == packaged["topolint"]["files"]
    assert hook["entry"] == packaged["topolint"]["entry"]
    pattern = re.compile(hook["files"])
    assert pattern.search("etc/nccl.conf") and pattern.search("docker/train.dockerfile")


def _run_config(target: Path, config: str, tmp_path_factory, env: dict | None = None) -> subprocess.CompletedProcess:
    (target / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    _git(target, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": _home(tmp_path_factory), **(env or {})}
    return subprocess.run([*_pre_commit(), "run", "--all-files"], cwd=target, env=env, capture_output=True,
                          text=True, timeout=900)


def test_readme_remote_snippet_with_the_project_hook(hook_repo, target, tmp_path_factory):
    """The snippet as written, but for its URL (the public network): the hook repository is this
    working tree, tagged with the snippet's rev (the environment the other tests installed)."""
    text, remote, project, _, _ = _readme_configs()
    (repo,) = remote["repos"]
    config = (text + project).replace(repo["repo"], str(hook_repo))
    shutil.copytree(DISAGREE, target / "cluster" / "node2")  # the snippet's args: ["cluster/"]
    result = _run_config(target, config, tmp_path_factory)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    reported = [line for line in output.splitlines() if re.match(r"^\S+:\d+(:\d+)?: [A-Z]+\d{3} ", line)]
    assert any(" NUMA001 " in line for line in reported) and any(" TL003 " in line for line in reported), output
    assert len(reported) == len(set(reported)), "a finding was reported twice"


def test_readme_local_snippet(target, tmp_path, tmp_path_factory):
    """`repo: local` runs the installed topolint; here a shim runs this working tree's."""
    _, _, _, snippet, local = _readme_configs()
    assert local["repos"][0]["hooks"][0]["language"] == "system"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "topolint").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m topolint \"$@\"\n")
    (shim / "topolint").chmod(0o755)
    result = _run_config(target, snippet, tmp_path_factory, {"PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"})
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "topo/node1.xml" in output and "NUMA001" in output, output
    assert "TL002" not in output
