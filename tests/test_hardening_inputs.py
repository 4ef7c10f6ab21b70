"""Reading inputs never hangs, never reads past its bounds and never loses a recognised file
silently (issue 7, "Hangs" and "Silent loss"). Each case ran forever, grew without bound or was
skipped with exit 1 in the landed version.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.inputs.source import read_bounded

GOOD = FIXTURES / "rules" / "NUMA001" / "good.xml"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def check(*args, cwd):
    return run_cli("check", *map(str, args), "--format", "json", "--no-cache", cwd=cwd)


def codes(result) -> list[tuple[str, str]]:
    return [(f["code"], f["path"]) for f in json.loads(result.stdout)["findings"]]


def run_subprocess(args, cwd, timeout=60, **kwargs):
    """The real CLI in a child, so a hang is a timeout here instead of a stuck test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOPOLINT_NO_CACHE": "1"}
    return subprocess.run([sys.executable, "-m", "topolint", "check", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kwargs)


@needs_fifo
def test_fifo_named_on_the_command_line_is_tl001_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "topo.xml")
    result = run_subprocess(["topo.xml", "--format", "concise"], tmp_path, timeout=30)
    assert result.returncode == 2
    assert "TL001" in result.stdout and "a FIFO, not a regular file" in result.stdout


@needs_fifo
def test_fifo_in_a_folder_is_skipped_and_listed_with_verbose(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(GOOD, tmp_path / "node" / "topo.xml")
    os.mkfifo(tmp_path / "node" / "pipe.xml")
    result = run_subprocess(["node", "--verbose", "--format", "concise"], tmp_path, timeout=30)
    assert result.returncode == 0, result.stdout
    assert "node/pipe.xml: skipped, a FIFO, not a regular file" in result.stderr


def test_dev_zero_as_stdin_reads_only_up_to_the_limit(tmp_path):
    with open("/dev/zero", "rb") as zero:
        result = run_subprocess(["-", "--format", "concise"], tmp_path, timeout=60, stdin=zero)
    assert result.returncode == 2
    assert "TL001" in result.stdout and "limit" in result.stdout


def test_bounded_read_stops_at_limit_plus_one():
    calls = []

    def endless(size):
        calls.append(size)
        return b"x" * size

    assert len(read_bounded(endless, limit=10_000_000)) == 10_000_001
    assert max(calls) <= 1024 * 1024


def test_a_character_device_is_tl001(tmp_path):
    result = check("/dev/null", cwd=tmp_path)
    assert result.exit_code == 2
    assert "a character device" in json.loads(result.stdout)["findings"][0]["message"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_folder_on_the_command_line_is_tl001(tmp_path):
    locked = tmp_path / "node"
    locked.mkdir()
    shutil.copyfile(GOOD, locked / "topo.xml")
    locked.chmod(0)
    try:
        result = check("node", cwd=tmp_path)
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2
    assert ("TL001", "node") in codes(result)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_dump_in_a_folder_walk_is_tl001(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(GOOD, tmp_path / "node" / "a-topo.xml")
    shutil.copyfile(GOOD, tmp_path / "node" / "b-topo.xml")
    (tmp_path / "node" / "b-topo.xml").chmod(0)
    result = check("node", cwd=tmp_path)
    assert result.exit_code == 2
    assert ("TL001", "node/b-topo.xml") in codes(result)


@pytest.mark.parametrize("damage", [b"\x00", b"\xff\xfe"])
def test_recognised_dump_with_bad_bytes_in_a_walk_is_tl001(tmp_path, damage):
    (tmp_path / "node").mkdir()
    data = GOOD.read_bytes()
    cut = len(data) // 2
    (tmp_path / "node" / "topo.xml").write_bytes(data[:cut] + damage + data[cut:])
    result = check("node", cwd=tmp_path)
    assert result.exit_code == 2
    assert ("TL001", "node/topo.xml") in codes(result)


def test_binary_file_in_a_walk_that_is_nothing_known_is_still_skipped(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(GOOD, tmp_path / "node" / "topo.xml")
    (tmp_path / "node" / "core").write_bytes(b"\x7fELF\x00\x00")
    assert check("node", cwd=tmp_path).exit_code == 0


def test_symlink_loop_is_tl001_naming_it(tmp_path):
    os.symlink("b.xml", tmp_path / "a.xml")
    os.symlink("a.xml", tmp_path / "b.xml")
    result = check("a.xml", cwd=tmp_path)
    assert result.exit_code == 2
    assert "symbolic links" in json.loads(result.stdout)["findings"][0]["message"]


def test_symlinked_folder_loop_in_a_walk_ends(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(GOOD, tmp_path / "node" / "topo.xml")
    os.symlink("..", tmp_path / "node" / "up")
    result = run_subprocess(["node", "--format", "concise"], tmp_path, timeout=60)
    assert result.returncode == 0, result.stdout


def test_total_input_limit_gives_one_clear_tl001(tmp_path):
    cluster = tmp_path / "cluster"
    for name in ("n1", "n2", "n3"):
        (cluster / name).mkdir(parents=True)
        shutil.copyfile(GOOD, cluster / name / "topo.xml")
    size = len(GOOD.read_text(encoding="utf-8"))
    result = run_cli("check", "cluster", "--format", "json", "--no-cache", "--max-total-input", str(size + 10),
                     cwd=tmp_path)
    assert result.exit_code == 2
    tl001 = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]
    assert len(tl001) == 1 and "--max-total-input" in tl001[0]["message"]
    assert run_cli("check", "cluster", "--no-cache", "--max-total-input", "1M", cwd=tmp_path).exit_code == 0
    assert run_cli("check", "cluster", "--max-total-input", "lots", cwd=tmp_path).exit_code == 2


def test_stdin_is_read_through_the_bounded_reader(tmp_path, monkeypatch):
    import topolint.inputs.source as source

    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 1000)
    stdin = io.BytesIO(b"<system " + b" " * 5000)
    from topolint.inputs.collect import collect

    problems = collect(["-"], stdin=stdin).problems
    assert problems and "over the 1000-byte limit" in problems[0].message


def test_permission_errors_without_root(tmp_path, monkeypatch):
    # The same two cases as above where the tests run as root: the OS errors are simulated.
    (tmp_path / "node").mkdir()
    shutil.copyfile(GOOD, tmp_path / "node" / "a-topo.xml")
    shutil.copyfile(GOOD, tmp_path / "node" / "b-topo.xml")
    real_open, real_scandir = os.open, os.scandir

    def denied_open(path, *args, **kwargs):
        if str(path).endswith("b-topo.xml"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied_open)
    result = check("node", cwd=tmp_path)
    assert result.exit_code == 2 and ("TL001", "node/b-topo.xml") in codes(result)
    monkeypatch.setattr(os, "open", real_open)

    def denied_scandir(path="."):
        if str(path).endswith("node"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denied_scandir)
    result = check("node", cwd=tmp_path)
    assert result.exit_code == 2 and ("TL001", "node") in codes(result)


# ---- YAML and Python launchers: bounded nesting and alias expansion (TL001, not RecursionError) ----
def _laughs(depth: int, width: int = 9) -> str:
    text = "a0: &a0 [NCCL_DEBUG]\n"
    for i in range(1, depth):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]\n"
    return text


@pytest.mark.parametrize(("text", "problem"), [
    ("env: &x [*x]\n", "an alias refers to a node that contains it"),
    ("spec: &s {containers: [{name: c, env: *s}]}\n", "an alias refers to a node that contains it"),
    (_laughs(9), "aliases expand to more than"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper than"),  # crashed the process (libyaml recursion)
    ("a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 150)), "nested deeper than"),
], ids=["self-alias", "alias-in-own-map", "laughs", "flow-nesting", "block-nesting"])
def test_hostile_yaml_is_tl001(tmp_path, text, problem):
    (tmp_path / "job.yaml").write_text("# NCCL_DEBUG\n" + text, encoding="utf-8")
    result = run_subprocess(["job.yaml", "--format", "json"], tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]
    assert problem in finding["message"]


def test_yaml_aliases_used_a_few_times_still_read(tmp_path):
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: a\n    image: x\n    env: &env\n    - {name: NCCL_IB_HCA, value: mlx5_0}\n"
            "  - name: b\n    image: x\n    env: *env\n")
    (tmp_path / "pod.yaml").write_text(text, encoding="utf-8")
    result = check("pod.yaml", "--verbose", cwd=tmp_path)
    assert result.exit_code in (0, 1)
    assert "2 NCCL settings" in result.stderr


@pytest.mark.parametrize("expression", ["a+" * 200_000 + "a", "-" * 100_000 + "1", "(" * 300 + ")" * 300])
def test_deeply_nested_python_launcher_is_tl001(tmp_path, expression):
    (tmp_path / "launch.py").write_text(f"import os\nos.environ['NCCL_DEBUG'] = {expression}\n", encoding="utf-8")
    result = check("launch.py", cwd=tmp_path)
    assert result.exit_code == 2
    assert json.loads(result.stdout)["findings"][0]["message"].startswith("cannot read launch.py: Python syntax error")


def test_a_lazy_run_holds_one_node_of_facts_at_a_time(tmp_path, monkeypatch):
    # A 2,000-node cluster needed 0.9 GB with every node's facts in memory at once (issue 7).
    from topolint.engine import runner

    cluster = tmp_path / "cluster"
    for name in ("n1", "n2", "n3"):
        (cluster / name).mkdir(parents=True)
        shutil.copyfile(GOOD, cluster / name / "topo.xml")
    nodes, parsed_while_checking = [], []
    check_node, run = runner._check_node, runner.run

    def spy_check(node, *args):
        parsed_while_checking.append(sum(1 for n in nodes if n.topologies))
        return check_node(node, *args)

    def spy_run(rules, collection, *args, **kwargs):
        nodes.extend(collection.nodes)
        return run(rules, collection, *args, **kwargs)

    monkeypatch.setattr(runner, "_check_node", spy_check)
    monkeypatch.setattr(runner, "run", spy_run)
    assert check("cluster", cwd=tmp_path).exit_code == 0
    assert parsed_while_checking == [1, 1, 1]
    assert not any(n.topologies for n in nodes)  # dropped once checked
