"""The fleet's work is linear in the nodes (issue 26, item 5): counted as tests/test_linear_cost.py
counts it (Python calls under a profiler hook, deterministic), a fleet of 4x the nodes, with 4x
the planted faults, costs at most 4.4x. Small sizes here (TOPOLINT_LONG=1: 120 and 480 bundles);
benchmarks/fleet.py measures 1,024 and 4,096 nodes.
"""

from __future__ import annotations

import os

import pytest
from conftest import load_benchmark, run_cli

fleet = load_benchmark("fleet")
LONG = os.environ.get("TOPOLINT_LONG", "") not in ("", "0")
LIMIT = 4.4


@pytest.fixture(scope="module")
def inventories(tmp_path_factory):
    """15 inventories of the planted fleet (its 10 faulty nodes and 5 others), and 4 copies of
    them under other node names."""
    root = tmp_path_factory.mktemp("fleet_scale")
    faults = fleet.generate(root / "fleet", 30)
    run_cli("check", "fleet", "--inventory", root / "inv", "--format", "json", cwd=root)
    healthy = [p for p in sorted((root / "inv").iterdir()) if p.stem not in faults][:5]
    chosen = sorted([root / "inv" / f"{node}.json" for node in faults] + healthy)
    for copies in (1, 4):
        folder = root / f"x{copies}"
        folder.mkdir()
        for path in chosen:
            for copy in range(copies):
                name = f"{path.stem}r{copy}"
                text = path.read_text(encoding="utf-8").replace(f'"node": "{path.stem}"', f'"node": "{name}"', 1)
                (folder / f"{name}.json").write_text(text, encoding="utf-8")
    fleet.counted_work([str(root / "x1")])  # imports and tables built once: not the run's work
    return root


def test_inventories_cost_linear_work(inventories):
    small, _ = fleet.counted_work([str(inventories / "x1")])
    large, _ = fleet.counted_work([str(inventories / "x4")])
    assert large <= LIMIT * small, f"4x the nodes cost {large / small:.2f}x the work ({small} -> {large} calls)"


def test_the_findings_grow_with_the_faults(inventories):
    one = run_cli("check", inventories / "x1", "--format", "concise", "--select", "FLEET")
    four = run_cli("check", inventories / "x4", "--format", "concise", "--select", "FLEET")
    count = len(one.stdout.splitlines()) - 1
    assert count == 10  # the planted faults the inventories can show
    assert four.stdout.rstrip().endswith(f"Found {4 * count} findings (0 error, {4 * count} warning, 0 info), "
                                         f"{count} printed: the same finding on several nodes is printed once, "
                                         "with its nodes.")


class _CountedSettings(list):
    """A config file's settings that count how often a rule walks them."""

    walks = 0

    def __iter__(self):
        _CountedSettings.walks += 1
        return super().__iter__()


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet_bundles")
    small_nodes = 120 if LONG else 30
    fleet.generate(root / "small", small_nodes)
    fleet.generate(root / "large", 4 * small_nodes)
    fleet.counted_work([str(root / "small")])  # imports and tables built once: not the run's work
    return root


def test_config_files_on_every_node_are_read_once_per_run(bundles, monkeypatch):
    """Each bundle has an nccl.conf: rules on one node read that node's settings from an index, not
    every node's files (which made 4,096 bundles cost 6.4x the CPU of 1,024)."""
    from topolint.inputs.collect import _Collector

    config = _Collector.config

    def counted(self, parsed, *args):
        parsed.settings = _CountedSettings(parsed.settings)
        return config(self, parsed, *args)

    monkeypatch.setattr(_Collector, "config", counted)
    walks = {}
    for size in ("small", "large"):
        _CountedSettings.walks = 0
        result = run_cli("check", size, "--format", "json", cwd=bundles)
        assert "FLEET003" in result.stdout
        walks[size] = _CountedSettings.walks
    assert walks["large"] <= LIMIT * walks["small"], walks


@pytest.mark.skipif(not LONG, reason="profiles two runs of node bundles: TOPOLINT_LONG=1")
def test_bundles_cost_linear_work(bundles):
    """The whole run on bundles, and the fleet's share of it."""
    tmp_path = bundles
    small, small_fleet = fleet.counted_work([str(tmp_path / "small")])
    large, large_fleet = fleet.counted_work([str(tmp_path / "large")])
    assert large <= LIMIT * small, f"4x the nodes cost {large / small:.2f}x the work"
    assert large_fleet <= LIMIT * small_fleet, f"4x the nodes cost {large_fleet / small_fleet:.2f}x the fleet's work"
