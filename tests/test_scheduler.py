"""The scheduler's inputs end to end (docs/fleet-topology.md): parsers' TL001 lines, a cluster
folder whose top holds the scheduler's files, FLEET002 and FLEET004 on what they read, FLEET004's
fabric comparisons against a stand-in of the fabric graph's API (fleet/fabric_graph.py's
FabricGraph: leaf_group, hosts, where, connected_switches), and a generated cluster with planted
faults where exactly those are found."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from topolint.checks import scheduler_topology_wrong as fleet004
from topolint.checks import rank_order_crosses_switches as fleet002
from topolint.fleet import rank_order
from topolint.fleet.cluster import ClusterModel
from topolint.inputs.collect import collect
from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.registry import parse


@pytest.mark.parametrize("fmt, text, line, says", [
    ("slurm-topology-conf", "SwitchName=s1 Nodes=a[1-2]\nSwitchName=s2 Nodes=b[3-1]\n", 2, "backwards"),
    ("slurm-topology-conf", "SwitchName=s1 Nodes=a1\nBlockName=b1 Switches=s1\n", 2, "not a parameter"),
    ("slurm-topology-conf", "# c\nBlockSizes=18,x\n", 2, "node counts"),
    ("slurm-topology-conf", "SwitchName=s1 \\\n  Nodes=a[1-\n", 1, "without ']'"),
    ("slurm-topology-yaml", "- topology: t\n  tree:\n    switches:\n      - switch: s\n        nodes: n[2-1]\n", 5,
     "backwards"),
    ("slurm-topology-yaml", "- topology: t\n  tree: {}\n  block: {}\n", 1, "exactly one"),
    ("mpi-hostfile", "a slots=8\nb slots=eight\n", 2, "not a count"),
    ("mpi-hostfile", "a slots=8\nb c d\n", 2, "key=value"),
    ("slurm-env", "SLURM_JOB_ID=1\nSLURM_JOB_NODELIST=gpu[1-3\n", 2, "without ']'"),
    ("slurm-env", "SLURM_JOB_NODELIST=a,b\nSLURM_TASKS_PER_NODE=8(x)\n", 2, "SLURM_TASKS_PER_NODE"),
    ("k8s-nodes", "Name: n1\nLabels:  a/b=c\n         not a label\nAnnotations: x\n", 3, "key=value"),
])
def test_bad_input_is_tl001_at_its_line(fmt, text, line, says):
    with pytest.raises(InputError) as caught:
        parse(fmt, SourceFile(path="f", text=text))
    assert caught.value.line == line
    assert says in caught.value.message


def test_slurm_env_reads_tasks_per_node_as_slots():
    order = parse("slurm-env", SourceFile(path="env", text="SLURM_JOB_NODELIST=n[1-3]\nSLURM_TASKS_PER_NODE=8(x2),4\n"))
    assert [(h.name, h.slots) for h in order.hosts] == [("n1", 8), ("n2", 8), ("n3", 4)]


def test_a_malformed_topology_at_a_clusters_top_is_tl001_with_its_line(tmp_path):
    for node in ("gpu01", "gpu02"):
        (tmp_path / node).mkdir()
    (tmp_path / "topology.conf").write_text("SwitchName=s1 Nodes=gpu[01-02]\nSwitchName=s2 Nodes=gpu[02-\n")
    result = run_cli("check", str(tmp_path), "--format", "json")
    assert "Traceback" not in result.stderr
    problems = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]
    assert [(p["path"].rsplit("/", 1)[-1], p["line"]) for p in problems] == [("topology.conf", 2)]


def test_a_clusters_top_files_go_to_the_cluster_not_a_node(tmp_path):
    for node in ("gpu01", "gpu02"):
        (tmp_path / node).mkdir()
    (tmp_path / "topology.yaml").write_text("- topology: t\n  cluster_default: true\n  tree:\n    switches:\n"
                                            "      - switch: s\n        nodes: gpu[01-02]\n")
    (tmp_path / "hostfile").write_text("gpu02\ngpu01\n")  # hosts alone: known by its name
    found = collect([str(tmp_path)])
    assert [n.name for n in found.nodes] == ["gpu01", "gpu02"]
    assert sorted(type(f.facts).__name__ for f in found.cluster_files) == ["HostOrder", "TopologyFile"]


def test_ring_and_tree_counts_follow_nccl():
    assert rank_order.ring_changes(["a", "b", "a", "b"]) == 4  # closing back to the first counts
    assert rank_order.ring_changes(["a", "a", "b", "b"]) == 2
    assert rank_order.fewest_changes(["a", "a", "a"]) == 0
    # trees.cc's illustration for 14 ranks: 13's parent is 12 (14 is out of bounds), 12's is 8, 8's is 0
    parents = dict(rank_order.tree_edges(14)[:13])
    assert (parents[13], parents[12], parents[8], parents[1], parents[3]) == (12, 8, 0, 2, 2)
    assert rank_order.grouped(["a1", "b1", "a2", "b2"], ["A", "B", "A", "B"]) == ["a1", "a2", "b1", "b2"]


class StandInFabric:
    """The API i27a's FabricGraph offers (docs/fleet-topology.md), over a dict host -> leaves."""

    def __init__(self, leaves: dict[str, set[str]], components: list[set[str]]):
        self.leaves, self.components = leaves, components

    def leaf_group(self, host):
        return frozenset(self.leaves[host]) if host in self.leaves else None

    def hosts(self):
        return list(self.leaves)

    def where(self, host):
        return "ibnetdiscover.txt", 10 + list(self.leaves).index(host)

    def connected_switches(self):
        return self.components


class Context:
    def __init__(self, cluster):
        self.cluster, self.configs, self.notes = cluster, [], []


def _cluster(topology: str, fabric, hostfile: str | None = None) -> ClusterModel:
    inputs = [(parse("slurm-topology-conf", SourceFile(path="topology.conf", text=topology)), None)]
    if hostfile:
        inputs.append((parse("mpi-hostfile", SourceFile(path="hostfile", text=hostfile)), None))
    cluster = ClusterModel(inputs=inputs)
    cluster.fabric = fabric
    return cluster


TREE = "SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\nSwitchName=top Switches=s[1-2]\n"
CABLED = {f"n{i}": {"L1" if i <= 4 else "L2"} for i in range(1, 9)}


def test_fleet004_against_the_fabric_names_exactly_the_misplaced_and_missing_nodes():
    leaves = {**CABLED, "n4": {"L2"}, "n9": {"L2"}}  # n4 is cabled to the other leaf; n9 is not in the file
    hits = list(fleet004.check(Context(_cluster(TREE, StandInFabric(leaves, [{"L1", "L2", "S"}]))), None))
    assert sorted(h.entity for h in hits) == ["n4/slurm:topology.conf#switch", "n9/slurm:topology.conf#placed"]
    misplaced = next(h for h in hits if h.entity.startswith("n4"))
    assert misplaced.location.line == 1 and "ibnetdiscover.txt:13" in " ".join(misplaced.evidence)


def test_fleet004_a_tree_split_where_the_fabric_is_whole():
    split = "SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\n"
    whole = list(fleet004.check(Context(_cluster(split, StandInFabric(CABLED, [{"L1", "L2"}]))), None))
    apart = list(fleet004.check(Context(_cluster(split, StandInFabric(CABLED, [{"L1"}, {"L2"}]))), None))
    assert [h.entity for h in whole] == ["s2/slurm:topology.conf#path"]
    assert apart == []  # the cabling is split too: the file says what the fabric is


def test_fleet002_takes_leaves_from_the_fabric_first():
    # the file says one leaf for all; the fabric says two: the fabric's word counts
    one_leaf = "SwitchName=s1 Nodes=n[1-8]\n"
    hostfile = "".join(f"n{i} slots=8\n" for i in (1, 5, 2, 6, 3, 7, 4, 8))
    hits = list(fleet002.check(Context(_cluster(one_leaf, StandInFabric(CABLED, [{"L1", "L2"}]), hostfile)), None))
    assert [(h.fields["changes"], h.fields["fewest"], h.fields["source"]) for h in hits] == [(8, 2, "the fabric files")]
    assert "n1, n2, n3, n4, n5, n6, n7, n8" in " ".join(hits[0].evidence)
    alone = list(fleet002.check(Context(_cluster(one_leaf, None, hostfile)), None))
    assert alone == []  # the file alone puts all under one leaf: nothing crosses


IBSTAT = """CA 'mlx5_0'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: 28.39.1002
\tSystem image GUID: 0xa088c2030000{index:04x}
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 400
\t\tLink layer: InfiniBand
"""


def test_a_generated_cluster_gives_exactly_the_planted_faults(tmp_path):
    """12 bundles under 3 leaves; planted: gpu12 left out of topology.conf, a hostfile that
    interleaves two leaves, a block of 3 where BlockSizes says 4. Nothing else fires."""
    names = [f"gpu{i:02d}" for i in range(1, 13)]
    for index, name in enumerate(names):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ibstat.txt").write_text(IBSTAT.format(index=index))
    (tmp_path / "topology.yaml").write_text(
        "- topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n"
        "      - switch: spine\n        children: leaf[1-3]\n"
        "      - switch: leaf1\n        nodes: gpu[01-04]\n"
        "      - switch: leaf2\n        nodes: gpu[05-08]\n"
        "      - switch: leaf3\n        nodes: gpu[09-11]\n"  # planted: gpu12 missing
        "- topology: racks\n  block:\n    block_sizes: [4]\n    blocks:\n"
        "      - block: r1\n        nodes: gpu[01-04]\n"
        "      - block: r2\n        nodes: gpu[05-08]\n"
        "      - block: r3\n        nodes: gpu[09-11]\n")  # planted: 3 < 4 (gpu12 in no block too)
    (tmp_path / "hostfile").write_text("".join(f"{n} slots=8\n" for n in
                                               ["gpu01", "gpu05", "gpu02", "gpu06", "gpu03", "gpu04", "gpu07", "gpu08"]))
    result = run_cli("check", str(tmp_path), "--select", "ALL", "--preview", "--format", "json")
    assert "Traceback" not in result.stderr
    found = sorted((f["code"], f["entity"], f["path"].rsplit("/", 1)[-1], f["line"])
                   for f in json.loads(result.stdout)["findings"])
    assert found == [
        ("FLEET002", "gpu02/job#rank_order", "hostfile", 3),
        ("FLEET004", "gpu12/slurm:fabric#placed", "topology.yaml", 1),
        ("FLEET004", "gpu12/slurm:racks#placed", "topology.yaml", 13),
        ("FLEET004", "r3/slurm:racks#block_size", "topology.yaml", 21),
    ]
