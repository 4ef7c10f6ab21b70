"""``--jobs``: nodes checked in worker processes give byte-identical output to one process, with
the result cache, with unreadable inputs and parser bugs, in every format (engine/parallel.py)."""

from __future__ import annotations

import json

import pytest
from conftest import load_benchmark, run_cli

from topolint.engine import parallel

scale = load_benchmark("scale")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("parallel") / "cluster"
    scale.generate(root, 12)  # node 5 lacks an NVLink, node 3 has a narrow GPU link, ...
    (root / "node0002" / "lspci-vvv.txt").write_text("this is not lspci output\n", encoding="utf-8")  # TL001
    (root / "node0004" / "notes.txt").write_text("not listed in the manifest\n", encoding="utf-8")
    (root / "node0007" / "nvidia-smi-topo.txt").write_text("\tGPU0\tGPU1\nGPU0\t X \tNV18\n", encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def small_runs_use_workers(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_NODES_PER_JOB", 2)


def _check(cluster, jobs: int, *args: str):
    return run_cli("check", "cluster", "--select", "ALL", "--preview", "--verbose", "--jobs", str(jobs), *args,
                   cwd=cluster.parent)


@pytest.mark.parametrize("fmt", ["json", "sarif", "full", "concise"])
def test_any_job_count_gives_the_same_output(cluster, fmt):
    one = _check(cluster, 1, "--format", fmt)
    assert one.exit_code == 2 and "TL001" in one.stdout  # the unreadable lspci output
    for jobs in (2, 3, 0):
        assert _check(cluster, jobs, "--format", fmt).snapshot() == one.snapshot(), jobs


def test_workers_really_ran(cluster, monkeypatch):
    started = []
    outcomes = parallel.outcomes

    def spy(nodes, check_node, workers):
        started.append((len(nodes), workers))
        return outcomes(nodes, check_node, workers)

    monkeypatch.setattr(parallel, "outcomes", spy)
    _check(cluster, 3, "--format", "json")
    assert started == [(12, 3)]
    started.clear()
    _check(cluster, 1, "--format", "json")
    assert started == []


def test_a_parser_bug_in_a_worker_is_the_same_internal_error(cluster, monkeypatch):
    from topolint.parsers import numactl

    real = numactl.parse_numactl

    def buggy(source):
        if "node0009" in source.path:
            raise KeyError("boom")
        return real(source)

    monkeypatch.setattr(numactl, "parse_numactl", buggy)  # the registry looks it up by name
    one, three = _check(cluster, 1, "--format", "json"), _check(cluster, 3, "--format", "json")
    assert three.snapshot() == one.snapshot()
    errors = json.loads(one.stdout).get("internal_errors", [])
    assert any("KeyError: 'boom'" in e["error"] and "node0009" in e["input"] for e in errors), errors


def test_a_warm_cache_after_a_parallel_run_answers_the_same(cluster, tmp_path, monkeypatch):
    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)
    cache = tmp_path / "cache"
    one = _check(cluster, 1, "--format", "json", "--no-cache")
    cold = _check(cluster, 3, "--format", "json", "--cache-dir", str(cache))
    warm = _check(cluster, 3, "--format", "json", "--cache-dir", str(cache))
    assert cold.snapshot() == one.snapshot() == warm.snapshot()
    assert len(list(cache.rglob("*.json"))) == 11  # every node but the one with unreadable input


def test_job_counts():
    assert parallel.job_count(3) == 3 and parallel.job_count(0) >= 1
    assert parallel.usable(1, 1000) == 0 and parallel.usable(4, 3) == 0  # one job, or too few nodes
    assert parallel.usable(4, 1000) == 4
    result = run_cli("check", ".", "--jobs", "-1")
    assert result.exit_code == 2 and "expected a number of processes" in result.stderr


def test_the_default_starts_workers_only_for_large_runs_on_linux(monkeypatch):
    monkeypatch.setattr(parallel, "job_count", lambda requested: 16 if requested == 0 else requested)
    monkeypatch.setattr(parallel.sys, "platform", "linux")
    assert parallel.usable(parallel.AUTO, 255) == 0  # two workers need 2 * 128 nodes
    assert parallel.usable(parallel.AUTO, 256) == 2
    assert parallel.usable(parallel.AUTO, 100_000) == parallel.AUTO_MAX_JOBS  # memory: never one per CPU
    # A 2,000-node run: ~270 MB in one process, ~190 MB more per worker (benchmarks/scale.py --memory);
    # the default's summed peak stays under 1 GB with two workers, not with four (issue 20).
    assert parallel.AUTO_MAX_JOBS == 2
    monkeypatch.setattr(parallel.sys, "platform", "darwin")
    assert parallel.usable(parallel.AUTO, 100_000) == 0
    assert parallel.usable(4, 100_000) == 4  # asked for: wherever fork exists


def test_the_command_line_default_is_auto_and_the_api_default_one_process():
    from topolint.cli import build_parser
    from topolint.commands.check import CheckOptions

    assert build_parser().parse_args(["check", "."]).jobs == parallel.AUTO
    assert CheckOptions(paths=["."]).jobs == 1
