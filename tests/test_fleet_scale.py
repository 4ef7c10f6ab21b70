"""The fleet's work is linear in the nodes (issue 26, item 5): counted as tests/test_linear_cost.py
counts it (Python calls under a profiler hook, deterministic), a fleet of 4x the nodes, with 4x
the planted faults, costs at most 4.4x. Small sizes here; benchmarks/fleet.py measures 1,024 and
4,096 nodes. TOPOLINT_LONG=1 adds the run on node bundles (it parses every node).
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
    return root


def test_inventories_cost_linear_work(inventories):
    small = fleet.counted_work([str(inventories / "x1")], fleet_only=False)
    large = fleet.counted_work([str(inventories / "x4")], fleet_only=False)
    assert large <= LIMIT * small, f"4x the nodes cost {large / small:.2f}x the work ({small} -> {large} calls)"


def test_the_findings_grow_with_the_faults(inventories):
    one = run_cli("check", inventories / "x1", "--format", "concise", "--select", "FLEET")
    four = run_cli("check", inventories / "x4", "--format", "concise", "--select", "FLEET")
    count = len(one.stdout.splitlines()) - 1
    assert count == 10  # the planted faults the inventories can show
    assert four.stdout.rstrip().endswith(f"Found {4 * count} findings (0 error, {4 * count} warning, 0 info), "
                                         f"{count} printed: the same finding on several nodes is printed once, "
                                         "with its nodes.")


@pytest.mark.skipif(not LONG, reason="parses 150 node bundles under a profiler: TOPOLINT_LONG=1")
def test_bundles_cost_linear_fleet_work(tmp_path):
    fleet.generate(tmp_path / "small", 30)
    fleet.generate(tmp_path / "large", 120)
    small = fleet.counted_work([str(tmp_path / "small")], fleet_only=True)
    large = fleet.counted_work([str(tmp_path / "large")], fleet_only=True)
    assert large <= LIMIT * small, f"4x the nodes cost {large / small:.2f}x the fleet's work"
