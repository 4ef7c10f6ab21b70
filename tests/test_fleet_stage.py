"""The cluster stage (docs/fleet.md): node inventories (schema, file round trip, positions), how
inventory files become nodes, inventories from worker processes and from the result cache, and
the stage that runs cross-node checks on them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, load_benchmark, run_cli

from topolint.commands.check import CheckOptions, run_check
from topolint.engine import parallel
from topolint.engine.finding import Hit
from topolint.engine.rule import load_rules
from topolint.fleet.inventory import (
    Inventory,
    InventoryError,
    Sourced,
    inventory_from_plain,
    inventory_json,
    inventory_plain,
    read_inventory,
    schema,
)

scale = load_benchmark("scale")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet") / "cluster"
    scale.generate(root, 4)
    return root


def _inventories(paths, **options) -> dict:
    return run_check(CheckOptions(paths=[str(p) for p in paths], inventory=Path("unused"), cache=False,
                                  **options)).inventories


def _sourced(inventory: Inventory) -> list[Sourced]:
    found = [inventory.gpu_count, inventory.numa_nodes, inventory.nic_ports]
    for part in inventory.gpus + inventory.nics + [inventory.software]:
        found += [getattr(part, name) for name in type(part).model_fields]
    found += list(inventory.nccl_env.values())
    return [s for s in found if isinstance(s, Sourced)]


def test_the_schema_in_docs_is_current():
    written = json.loads((ROOT / "docs" / "inventory.schema.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(schema())), \
        "docs/inventory.schema.json is stale: run `python -m topolint.fleet.inventory > docs/inventory.schema.json`"


def test_an_inventory_round_trips_through_its_file_and_fits_the_schema(cluster):
    import jsonschema

    inventory = _inventories([cluster / "node0000"])["node0000"]
    assert inventory.gpu_count.value == 8 and len(inventory.gpus) == 8 and inventory.nic_ports.value == 8
    text = inventory_json(inventory)
    jsonschema.validate(json.loads(text), schema())
    back = read_inventory(text, "inv.json")
    assert back.model_dump() == inventory.model_dump()
    assert inventory_json(back) == text  # deterministic
    assert inventory_from_plain(inventory_plain(inventory)).model_dump() == inventory.model_dump()


def test_values_read_back_point_at_their_line_and_keep_the_raw_input(cluster, tmp_path):
    inventory = _inventories([cluster / "node0001"])["node0001"]
    text = inventory_json(inventory)
    # Re-indented by another tool, keys in another order: each value still finds its own line.
    reordered = json.dumps(dict(reversed(list(json.loads(text).items()))), indent=4)
    for body in (text, reordered):
        back = read_inventory(body, "inv.json")
        lines = body.splitlines()
        values = _sourced(back)
        assert len(values) > 40
        for value in values:
            assert value.where.path == "inv.json"
            assert json.dumps(value.path) in lines[value.where.line - 1] or json.dumps(value.value) in \
                lines[value.where.line - 1]
            assert value.origin.rsplit(":", 1)[0].endswith((".xml", ".txt"))  # the raw input, kept
    raw = [s.where for s in _sourced(inventory)]
    assert all(loc.path.endswith((".xml", ".txt")) for loc in raw)  # built from the bundle: the raw lines


@pytest.mark.parametrize("mutation, line, message", [
    (lambda t: t.replace('"value": 8,', '"value": [8],', 1), 5, "gpu_count.value"),
    (lambda t: t.replace('"topolint_inventory": 1', '"topolint_inventory": 7'), 1, "topolint_inventory"),
    (lambda t: t.replace('"bus_id": "0000:18:00.0"', '"bus_id": "nowhere"'), 0, "gpus.0.bus_id"),
    (lambda t: t[: len(t) // 2], 0, "malformed inventory"),
])
def test_a_damaged_inventory_is_tl001_at_its_line(cluster, tmp_path, mutation, line, message):
    text = mutation(inventory_json(_inventories([cluster / "node0002"])["node0002"]))
    with pytest.raises(InventoryError) as caught:
        read_inventory(text, "inv.json")
    assert message in caught.value.message
    if line:
        assert caught.value.line == line
    (tmp_path / "node0002.json").write_text(text, encoding="utf-8")
    result = run_cli("check", tmp_path / "node0002.json", "--format", "concise")
    assert result.exit_code == 2 and "TL001" in result.stdout and "Traceback" not in result.stderr
    assert f"node0002.json:{caught.value.line}:" in result.stdout


def test_a_folder_of_inventories_is_a_cluster_named_as_the_inventories_say(cluster, tmp_path):
    written = run_cli("check", cluster, "--inventory", tmp_path / "inv", "--format", "concise")
    assert "wrote 4 inventories" in written.stderr
    (tmp_path / "inv" / "node0003.json").rename(tmp_path / "inv" / "renamed.json")
    shown = run_cli("check", tmp_path / "inv", "--show-files").stdout.splitlines()
    assert [line.split("\t")[2] for line in shown] == ["node0000", "node0001", "node0002", "node0003"]
    assert all(line.split("\t")[1] == "topolint-inventory" for line in shown)
    # An inventory beside the files of the node it describes: the files win, a note says so.
    (tmp_path / "inv" / "node0000.json").rename(tmp_path / "inv" / "x.json")
    both = run_cli("check", cluster, tmp_path / "inv" / "x.json", "--verbose", "--format", "concise")
    assert "x.json: inventory of node node0000 not used: the run reads that node from its own files" in both.stderr
    assert run_cli("check", cluster, tmp_path / "inv" / "x.json", "--show-files").stdout.count("\tnode0000\n") == 8


def test_one_node_writes_one_file_and_nothing_else_changes(cluster, tmp_path):
    target = tmp_path / "node.json"
    with_inventory = run_cli("check", cluster / "node0000", "--inventory", target, "--format", "json")
    without = run_cli("check", cluster / "node0000", "--format", "json")
    assert with_inventory.stdout == without.stdout and with_inventory.exit_code == without.exit_code
    assert read_inventory(target.read_text(encoding="utf-8"), "x").node == "node0000"


def test_inventories_from_workers_and_from_the_cache_are_the_ones_built_here(cluster, monkeypatch, tmp_path):
    monkeypatch.setattr(parallel, "MIN_NODES_PER_JOB", 2)
    here = {name: inventory_json(inv) for name, inv in _inventories([cluster], jobs=1).items()}
    assert sorted(here) == ["node0000", "node0001", "node0002", "node0003"]
    from_workers = {name: inventory_json(inv) for name, inv in _inventories([cluster], jobs=2).items()}
    assert from_workers == here
    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)
    for _ in range(2):  # cold, then warm: the second run parses nothing
        cached = run_check(CheckOptions(paths=[str(cluster)], inventory=Path("x"), cache_dir=tmp_path / "cache"))
        assert {name: inventory_json(inv) for name, inv in cached.inventories.items()} == here


def test_the_cluster_stage_runs_cross_node_checks_on_the_inventories(cluster):
    from topolint.engine.runner import RunOptions, RunResult, run_cluster_checks
    from topolint.inputs.collect import collect
    from topolint.model.nccl_version import NEWEST, NcclVersion

    seen = []

    def check(context, params):
        seen.append(sorted(context.cluster.inventories))
        assert context.node is None
        yield Hit(entity="node0002/system#gpu_count", location=context.cluster.inventories["node0002"].gpu_count.where,
                  fields={"subject": "node0002", "value": 8, "majority_count": 3, "total": 4, "group": "g",
                          "verb": "have", "majority": 7})

    rule = next(r for r in load_rules() if r.code == "NUMA001").model_copy(
        update={"messages": {"default": "{subject}: {value} GPUs"}, "fixes": {"default": "look"}})
    module = SimpleNamespace(NEEDS=("cluster", "inventories"), check=check)
    collection = collect([str(cluster)])
    result = RunResult(inventories=_inventories([cluster]))
    run_cluster_checks([(rule, module, None)], collection, RunOptions(nccl_version=NcclVersion.parse(NEWEST)), result)
    assert seen == [["node0000", "node0001", "node0002", "node0003"]]
    (finding,) = result.findings
    assert finding.node == "node0002" and finding.path.endswith("node0002/nccl-topo-dump.xml") and finding.line == 1
    assert all("NUMA001" in result.ran[name] for name in seen[0])
    alone = RunResult(inventories={"node0000": result.inventories["node0000"]})
    run_cluster_checks([(rule, module, None)], collection, RunOptions(nccl_version=NcclVersion.parse(NEWEST)), alone)
    assert alone.findings == [] and len(seen) == 1  # one node: nothing to compare, the stage does not run


def test_inventory_files_are_compared_without_worker_processes(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_NODES_PER_JOB", 2)
    run_cli("check", cluster, "--inventory", tmp_path / "inv", "--format", "json")
    started = []
    outcomes = parallel.outcomes

    def spy(nodes, check_node, workers):
        started.append(len(nodes))
        return outcomes(nodes, check_node, workers)

    monkeypatch.setattr(parallel, "outcomes", spy)
    one = run_cli("check", tmp_path / "inv", "--jobs", "1", "--format", "json", "--verbose")
    three = run_cli("check", tmp_path / "inv", "--jobs", "3", "--format", "json", "--verbose")
    assert started == [] and one.stdout == three.stdout  # nothing to parse: the workers would only copy
    assert "not run on node" not in three.stderr  # no node rule has anything to read on an inventory


def test_a_warm_run_compares_the_nodes_the_cache_answers(tmp_path, monkeypatch):
    """Cold, then warm (every node answered by the result cache, nothing parsed): the cross-node
    findings are the same, from the inventories the cache entries keep."""
    import shutil

    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)
    shutil.copytree(ROOT / "fixtures" / "rules" / "FLEET001" / "bad_port_rate", tmp_path / "cluster")
    cache = tmp_path / "cache"
    runs = [run_cli("check", "cluster", "--cache-dir", cache, "--format", "concise", cwd=tmp_path) for _ in range(2)]
    assert "FLEET001" in runs[0].stdout and runs[0].exit_code == 1
    assert runs[1].stdout == runs[0].stdout and runs[1].exit_code == runs[0].exit_code
    entries = [json.loads(p.read_text(encoding="utf-8")) for p in cache.rglob("*.json")]
    assert sorted(e["inventory"]["node"] for e in entries if e.get("inventory")) == \
        ["gpu001", "gpu002", "gpu003", "gpu004"]
    # One node changed: it is parsed again, the other three come from the cache; still compared.
    ibstat = tmp_path / "cluster" / "gpu003" / "ibstat.txt"
    original = ibstat.read_text(encoding="utf-8")
    ibstat.write_text(original.replace("Rate: 200", "Rate: 400"), encoding="utf-8")
    healed = run_cli("check", "cluster", "--cache-dir", cache, "--format", "concise", cwd=tmp_path)
    assert healed.exit_code == 0 and "FLEET001" not in healed.stdout
    ibstat.write_text(original.replace("Rate: 200", "Rate: 100"), encoding="utf-8")
    again = run_cli("check", "cluster", "--cache-dir", cache, "--format", "concise", cwd=tmp_path)
    assert "gpu003 mlx5_1: 100 Gb/s; 3 of 4 nodes in group" in again.stdout


def test_inventory_names_a_json_file_for_one_node_and_a_folder_otherwise(cluster, tmp_path):
    """``--inventory`` is unambiguous: a path ending in .json is one node's file; any other path
    (with or without its trailing slash, existing or not) is a folder of NODE.json files."""
    node = cluster / "node0001"
    for given in (f"{tmp_path / 'slash'}/", str(tmp_path / "plain"), str(tmp_path / "new" / "deeper")):
        result = run_cli("check", node, "--inventory", given, "--format", "concise")
        folder = Path(given.rstrip("/"))
        assert folder.is_dir() and [p.name for p in folder.iterdir()] == ["node0001.json"], result.stderr
        assert f"wrote 1 inventory to {folder}/" in result.stderr
    one = run_cli("check", node, "--inventory", tmp_path / "node.json", "--format", "concise")
    assert (tmp_path / "node.json").is_file() and "wrote the inventory of node node0001 to" in one.stderr
    many = run_cli("check", cluster, "--inventory", tmp_path / "all.json", "--format", "concise")
    assert many.exit_code == 2 and not (tmp_path / "all.json").exists()
    assert "--inventory" in many.stderr and "4 nodes" in many.stderr and "folder" in many.stderr
    (tmp_path / "taken").write_text("not a folder\n", encoding="utf-8")
    taken = run_cli("check", node, "--inventory", tmp_path / "taken", "--format", "concise")
    assert taken.exit_code == 2 and "not a folder" in taken.stderr
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "not a folder\n"


def test_a_folder_with_one_inventory_says_there_is_nothing_to_compare(cluster, tmp_path):
    run_cli("check", cluster / "node0002", "--inventory", tmp_path / "inv", "--format", "concise")
    alone = run_cli("check", tmp_path / "inv", "--format", "concise")
    assert alone.exit_code == 0 and "All checks passed." in alone.stdout
    assert "the inventory of node node0002 and no other node to compare it with" in alone.stderr, alone.stderr
    verbose = run_cli("check", tmp_path / "inv", "--format", "concise", "--verbose")
    assert "FLEET001 not run: the run has one node, nothing to compare it with" in verbose.stderr
    assert "nothing to compare" not in run_cli("check", tmp_path / "inv", "--quiet").stderr
    # A second node, from its own files: compared (the inventory's node among them).
    both = run_cli("check", tmp_path / "inv", cluster / "node0003", "--format", "concise", "--verbose")
    assert "nothing to compare" not in both.stderr and "FLEET001 not run" not in both.stderr


# Issue 26, item 1: what an inventory holds (each port's name is required: always there).
ITEM_ONE = ["gpu_count", "gpus.model", "gpus.nvlinks", "nics.model", "nics.rate_gbps", "nics.firmware",
            "gpus.pcie_gen", "gpus.pcie_width", "nics.pcie_gen", "nics.pcie_width", "numa_nodes", "gpus.numa_node",
            "nics.numa_node", "nics.mtu", "nics.netdev_mtu", "nics.gid_index", "software.driver", "software.cuda",
            "software.ofed", "software.kernel", "software.nvidia_peermem", "nccl_env"]


def _stated(document: dict, field: str) -> bool:
    part, _, name = field.partition(".")
    if not name:
        return bool(document.get(part))
    found = document.get(part) or ({} if part == "software" else [])
    return bool(found.get(name)) if part == "software" else bool(found) and all(name in item for item in found)


@pytest.mark.parametrize("node", ["node0000", "fleet"])
def test_every_field_of_an_inventory_is_stated_or_said_unknown_with_why(cluster, tmp_path, node):
    """Each value the issue lists is in the inventory, or its ``unknown`` says which parts lack it
    and which input would state it (never a silent gap)."""
    if node == "fleet":  # the fleet benchmark's bundle: ibstat without ibv_devinfo, ibdev2netdev or ip
        fleet = load_benchmark("fleet")
        fleet.generate(tmp_path / "f", 30)
        path, node = tmp_path / "f" / "gpu0002", "gpu0002"
    else:
        path = cluster / node
    run_cli("check", path, "--inventory", tmp_path / "inv.json")
    document = json.loads((tmp_path / "inv.json").read_text(encoding="utf-8"))
    for field in ITEM_ONE:
        assert _stated(document, field) or field in document.get("unknown", {}), field
    for field, reason in document.get("unknown", {}).items():
        assert not _stated(document, field) or "not stated for" in reason or "not applicable" in reason
        assert reason.split(": ", 1)[1], field
    if node == "gpu0002":
        assert document["unknown"]["nics.mtu"] == "not stated for 8 of 8 ports (every one): ibv_devinfo states " \
                                                  "the active MTU"
        assert document["unknown"]["nics.gid_index"] == "not applicable: an InfiniBand port has no RoCE GID index"
        assert set(document["unknown"]) == {"nics.mtu", "nics.netdev", "nics.netdev_mtu", "nics.gid_index",
                                            "gpus.fabric_state", "nvlink_domain"}
        assert document["unknown"]["nvlink_domain"] == "not stated: nvidia-smi -q states the GPUs' Fabric " \
                                                       "ClusterUUID and CliqueId"
