"""The cluster's fabric files (issue 27): ibnetdiscover (plain and -p), iblinkinfo and lldpctl
are parsed with their lines, handed to the cluster stage wherever they are found, and built into
the fabric graph (fleet/fabric_graph.py) that the cluster checks read. Corpus samples are read
from ../shared/corpus (skipped when absent); the generated ones come from tests/growers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from growers import _ibnetdiscover, _iblinkinfo

from topolint.engine.runner import RunResult, cluster_model
from topolint.fleet.fabric_graph import fabric_graph
from topolint.inputs.collect import collect
from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.registry import parse

SUPERPOD = "ibnetdiscover/dgx-h100-superpod-40-quantum2-switches-582-cas-4xndr-unset-nodedesc_topograph-testdata.txt"
ISOLATED = "ibnetdiscover/gb200-single-isolated-hca-no-links-truncated_topograph-testdata.txt"
PORTS = ("ibnetdiscover/ports-p-osc-edr-owens-pitzer-ca-sw-lines-plus-unlinked-4x-qqq-and-4x-SDR-ports_"
         "infiniband-exporter-fixture.txt")
EDR = "iblinkinfo/edr-sb7700-36port-2-hosts-plus-mgt-switch-listing-cut-at-port-18-partial_824380210-linpack.txt"
QDR = ("iblinkinfo/qdr-infiniscale-iv-18port-9-hosts-dual-port-hca-both-ports-same-switch-8-down-polling_"
       "tsinghua-madsys-ddbms-readme.txt")


def _parsed(path: Path):
    text = path.read_text(encoding="utf-8")
    fmt = sniff(text)
    return fmt, parse(fmt, SourceFile(path=str(path), text=text))


@pytest.fixture
def superpod(corpus):
    return _parsed(corpus / SUPERPOD)[1]


def test_superpod_fabric_parses_every_switch_and_cable(superpod):
    kinds = [node.kind for node in superpod.nodes.values()]
    assert kinds.count("switch") == 40
    # Each cable is printed from both ends; it is one link (2,228 "4xNDR" ends in the file).
    assert len(superpod.links) == 1114
    assert {(link.width, link.speed) for link in superpod.links} == {(4, "NDR")}
    first = superpod.links[0]
    assert first.loc.line == 11 and first.b_port == 1 and superpod.nodes[first.b].description == "a08-p1-dgx-04-c01 mlx5_5"


def test_superpod_graph_has_leaves_spines_and_rail_groups(superpod):
    graph = fabric_graph([superpod])
    roles = [s.role for s in graph.switches()]
    assert roles.count("leaf") == 31 and roles.count("spine") == 9  # as the file's switch names say
    assert all(("IBLEAF" in s.name) == (s.role == "leaf") for s in graph.switches())
    assert graph.connected_switches() == [{s.name for s in graph.switches()}]
    host = "a08-p1-dgx-04-c01"
    assert graph.leaf_group(host) == {"A09-P1-IBLEAF-01-04", "A09-P1-IBLEAF-02-04", "A09-P1-IBLEAF-03-04",
                                      "A09-P1-IBLEAF-04-04"}
    assert graph.where(host) == (str(Path(superpod.path)), 11)
    assert graph.where("A09-P1-IBLEAF-04-04") == (superpod.path, 10)
    assert graph.switch("S-2c5eab0300b87b40").name == "A09-P1-IBLEAF-04-04"  # ibnetdiscover's own id
    # Hosts of one rack share their leaves: the rail group; the adapters still showing the default
    # description name no host and stay unnamed (joined by GUID when a node's ibstat lists them).
    assert graph.leaf_group("a08-p1-dgx-04-c02") == graph.leaf_group(host)
    assert all("Mellanox" in adapter.description for adapter in graph.unnamed)
    assert "Mellanox Technologies Aggregation Node" not in graph.hosts()


def test_hop_counts_and_components_agree_with_networkx(superpod):
    nx = pytest.importorskip("networkx")
    graph = fabric_graph([superpod])
    exported = graph.graph
    assert nx.number_connected_components(exported) == len(graph.connected_switches())
    hosts = graph.hosts()
    for a, b in [(hosts[0], hosts[1]), (hosts[0], hosts[-1]), (hosts[5], "B10-P1-IBSPINE-09")]:
        assert graph.hops(a, b) == nx.shortest_path_length(exported, a, b)
    assert graph.hops(hosts[0], hosts[0]) == 0 and graph.hops(hosts[0], "no-such-host") is None


def test_isolated_adapter_and_ports_listing(corpus):
    fmt, isolated = _parsed(corpus / ISOLATED)
    assert fmt == "ibnetdiscover" and list(isolated.nodes) == ["b8e92403009ca838"] and not isolated.links
    assert fabric_graph([isolated]).hosts() == []  # no cable: nothing to join
    fmt, ports = _parsed(corpus / PORTS)
    assert fmt == "ibnetdiscover" and ports.tool == "ibnetdiscover -p"
    assert [(link.loc.line, link.a_port, link.b_port) for link in ports.links] == [(1, 1, 10), (2, 1, 11), (3, 1, 35), (6, 1, 1)]
    # The "4x ???" and the stale "4x SDR" lines have no peer: unlinked ports, not slow links.
    assert [(port.loc.line, port.port, port.cabled) for port in ports.ports] == [(8, 37, False), (9, 80, False)]
    graph = fabric_graph([ports])
    assert graph.leaf_group("o0001") == {"ib-i1l1s01"} and graph.hops("o0001", "o0002") == 2


def test_iblinkinfo_cut_listing_names_the_peer_by_lid(corpus):
    fmt, edr = _parsed(corpus / EDR)
    assert fmt == "iblinkinfo"
    assert {(link.width, link.speed, link.state) for link in edr.links} == {(4, "EDR", "active")}
    # n01 has no block of its own: it is named by its LID and description; port 36's mgt link is
    # printed only from the CA side (the switch listing ends at port 18).
    graph = fabric_graph([edr])
    assert sorted(graph.hosts()) == ["mgt", "n01", "n02"]
    assert {p.switch_port for h in graph.hosts() for p in graph.host_ports(h)} == {"17", "18", "36"}
    assert len(edr.ports) == 16 and not any(port.cabled for port in edr.ports)  # Down/ Polling: nothing cabled
    fmt, qdr = _parsed(corpus / QDR)
    # An unmanaged switch keeps its shipped description, which names no switch: ibnetdiscover's id does.
    assert fabric_graph([qdr]).leaf_group("teaker-9") == {"S-0002c902004b2678"}
    assert [p.switch_port for p in fabric_graph([qdr]).host_ports("teaker-9")] == ["3", "14"]


@pytest.mark.parametrize("text, line", [
    ('#\n# Topology file: generated on x\n\nSwitch\t3 "S-01"\t# "sw"\n[1]\tnot a peer\n', 5),
    ('Switch\t3 "S-01"\t# "sw"\n[1]\t"H-02"[1](02) \t# "h1 mlx5_0" lid 3 4xHDR\nCa 1 broken\n', 3),
    ("CA  1  1 0x01 4x EDR - SW  2 3 0x02 ( 'h1 HCA-1' - 'sw' )\nCA  1  1 0x01 4x EDR - nonsense\n", 2),
    ('Switch: 0x0b leaf:\n   1    1[  ] ==( 4X  99.9 Gbps Active/  LinkUp)==>  2  1[  ] "h HCA-1" ( )\n', 2),
])
def test_malformed_fabric_files_are_refused_at_their_line(text, line):
    fmt = sniff(text)
    assert fmt in ("ibnetdiscover", "iblinkinfo")
    with pytest.raises(InputError) as refused:
        parse(fmt, SourceFile(path="f.txt", text=text))
    assert refused.value.line == line and refused.value.message.startswith(f"malformed {fmt}")


def _cluster(tmp_path: Path, fabric_text: str) -> Path:
    """Two node folders (ibstat each) and the subnet's fabric file at the cluster's top."""
    ibstat = Path(__file__).resolve().parent.parent / "fixtures/rules/FLEET001/bad_port_rate/gpu001/ibstat.txt"
    for name in ("node0-1", "node0-2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ibstat.txt").write_text(ibstat.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "fabric.txt").write_text(fabric_text, encoding="utf-8")
    return tmp_path


def test_a_cluster_folder_hands_its_top_fabric_file_to_the_cluster_stage(tmp_path):
    folder = _cluster(tmp_path, _ibnetdiscover(3))
    collection = collect([str(folder)])
    assert [node.name for node in collection.nodes] == ["node0-1", "node0-2"]  # the fabric file is no node
    assert [(f.format, f.host) for f in collection.cluster_files] == [("ibnetdiscover", None)]
    result = RunResult()
    result.inventories = {}
    cluster = cluster_model(collection, result)
    assert "fabric" in cluster.available()
    assert cluster.fabric.leaf_group("node0-1") == {"leaf-0"} and cluster.fabric.hops("node0-1", "node2-2") == 4


def test_the_same_fabric_file_in_every_bundle_is_read_once(tmp_path):
    for name in ("node0-1", "node0-2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "iblinkinfo.txt").write_text(_iblinkinfo(4), encoding="utf-8")
    collection = collect([str(tmp_path)])
    assert len(collection.cluster_files) == 1
    assert any("not read again, the same iblinkinfo output" in note for note in collection.notes)


def test_a_damaged_fabric_file_at_a_cluster_top_is_tl001_with_its_line(tmp_path):
    folder = _cluster(tmp_path, "#\n# Topology file: generated on x\n\nSwitch\t3 \"S-01\"\t# \"sw\"\n[1]\tno peer\n")
    result = run_cli("check", str(folder), "--format", "concise", "--isolated")
    assert result.exit_code == 2
    assert f"{folder / 'fabric.txt'}:5:1: TL001" in result.stdout
