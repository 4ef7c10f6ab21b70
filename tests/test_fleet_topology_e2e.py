"""Issue 27's "done when", end to end: one cluster folder with the fabric as cabled (an
`ibnetdiscover` file), the scheduler's topology (Slurm topology.conf) and a job's hostfile gives
the mis-described scheduler topology (FLEET004), the degraded link (FLEET005) and the rank
order's spine crossings (FLEET002), each with evidence from the files involved, and nothing else.

fixtures/fleet-topology/cluster: two leaves under one spine; node04 is cabled to leaf-2 but
written under leaf-1, node07 is cabled and written nowhere, one spine-leaf cable trained at EDR
on an HDR fabric, and the hostfile alternates between the leaves."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

CLUSTER = FIXTURES / "fleet-topology" / "cluster"


def _findings():
    result = run_cli("check", CLUSTER, "--isolated", "--format", "json")
    assert result.exit_code == 1, result.stderr
    return json.loads(result.stdout)["findings"]


def test_a_cluster_folder_gives_the_scheduler_fabric_and_rank_order_faults():
    found = sorted((f["code"], f["path"].rsplit("/", 1)[-1], f["line"]) for f in _findings())
    assert found == [("FLEET002", "hostfile", 4), ("FLEET004", "topology.conf", 2),
                     ("FLEET004", "topology.conf", 2), ("FLEET005", "fabric.ibnetdiscover", 12)]


def test_each_finding_cites_the_files_involved():
    by_code: dict[str, list] = {}
    for f in _findings():
        by_code.setdefault(f["code"], []).append(" | ".join([f["message"], *f["evidence"]]))
    misplaced, missing = sorted(by_code["FLEET004"], key=lambda text: "node07" in text)
    assert "node04 under switch leaf-1" in misplaced and "fabric.ibnetdiscover:32: node04 is cabled to leaf-2" in misplaced
    assert "node07" in missing and "fabric.ibnetdiscover:35" in missing
    (slow,) = by_code["FLEET005"]
    assert "4x EDR" in slow and "hosts behind it: node01, node02, node03" in slow
    (ring,) = by_code["FLEET002"]
    assert "leaf groups from the fabric files" in ring and "6 hops change leaf group, 2 would do" in ring


def test_the_same_cluster_cabled_as_written_is_clean(tmp_path):
    """Written as cabled, in an order grouped by leaf, with the slow cable replaced: nothing fires."""
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    fabric = (CLUSTER / "fabric.ibnetdiscover").read_text().replace("4xEDR", "4xHDR")
    (cluster / "fabric.ibnetdiscover").write_text(fabric)
    (cluster / "topology.conf").write_text("SwitchName=leaf-1 Nodes=node[01-03]\nSwitchName=leaf-2 Nodes=node[04-07]\n"
                                           "SwitchName=spine-1 Switches=leaf-[1-2]\n")
    (cluster / "hostfile").write_text("".join(f"node0{n} slots=8\n" for n in (1, 2, 3, 5, 6, 7)))
    result = run_cli("check", cluster, "--isolated", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["findings"] == [], result.stdout


def _ibstat(guid: str) -> str:
    return (f"CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tNode GUID: 0x{guid}\n"
            f"\tSystem image GUID: 0x{guid}\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            f"\t\tRate: 200\n\t\tBase lid: 11\n\t\tPort GUID: 0x{guid}\n\t\tLink layer: InfiniBand\n")


def test_adapters_with_the_shipped_description_are_joined_to_their_nodes_by_port_guid(tmp_path):
    """A fabric whose adapters still carry the description they shipped with names no host: the
    nodes' own ibstat Port GUIDs join them (docs/fleet-topology.md), and the same faults are found."""
    import re

    cluster = tmp_path / "cluster"
    cluster.mkdir()
    fabric = (CLUSTER / "fabric.ibnetdiscover").read_text()
    guids = dict(re.findall(r'"H-([0-9a-f]{16})"\s+# "(node0\d) mlx5_0"', fabric))
    assert len(set(guids.values())) == 7
    (cluster / "fabric.ibnetdiscover").write_text(re.sub(r'node0\d mlx5_0', "MT4123 ConnectX6 Mellanox Technologies", fabric))
    for name in ("topology.conf", "hostfile"):
        (cluster / name).write_text((CLUSTER / name).read_text())
    for guid, node in guids.items():
        (cluster / node).mkdir()
        (cluster / node / "ibstat.txt").write_text(_ibstat(guid))
    result = run_cli("check", cluster, "--isolated", "--format", "json", "--select", "FLEET002,FLEET004,FLEET005")
    found = sorted((f["code"], f["path"].rsplit("/", 1)[-1]) for f in json.loads(result.stdout)["findings"])
    assert found == [("FLEET002", "hostfile"), ("FLEET004", "topology.conf"), ("FLEET004", "topology.conf"),
                     ("FLEET005", "fabric.ibnetdiscover")], result.stdout + result.stderr
    without_guids = tmp_path / "unjoined"
    without_guids.mkdir()
    for name in ("fabric.ibnetdiscover", "topology.conf", "hostfile"):
        (without_guids / name).write_text((cluster / name).read_text())
    result = run_cli("check", without_guids, "--isolated", "--format", "json", "--select", "FLEET004")
    assert not any("cabled to leaf-2" in f["message"] for f in json.loads(result.stdout)["findings"])
