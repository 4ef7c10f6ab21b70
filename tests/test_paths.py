"""NCCL path classification over hand-built topologies: one small XML per path type."""

from __future__ import annotations

from pathlib import Path

import pytest

from topolint.inputs.source import SourceFile
from topolint.model.nccl_version import NcclVersion
from topolint.model.system import System, gpu_id
from topolint.parsers.nccl_topo_xml import parse_topology

CPU = '<cpu numaid="{numa}" affinity="{mask}" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">'
ROOT = Path(__file__).resolve().parent.parent
GRACE = '<cpu numaid="{numa}" affinity="{mask}" arch="arm64" vendor="ARM">'


def gpu(bus, dev, links="", extra=""):
    return (f'<pci busid="{bus}" class="0x030200" vendor="0x10de" device="0x2330" '
            f'link_speed="32.0 GT/s PCIe" link_width="16"><gpu dev="{dev}" sm="90" rank="{dev}" gdr="1">'
            f'{links}{extra}</gpu></pci>')


def nic(bus, name, gdr=1):
    return (f'<pci busid="{bus}" class="0x020700" vendor="0x15b3" device="0x1021" '
            f'link_speed="32.0 GT/s PCIe" link_width="16"><nic><net name="{name}" dev="0" '
            f'speed="400000" port="1" gdr="{gdr}"/></nic></pci>')


def bridge(bus, *children):
    return (f'<pci busid="{bus}" class="0x060400" vendor="0x1000" device="0xc030" '
            f'link_speed="32.0 GT/s PCIe" link_width="16">{"".join(children)}</pci>')


def nvs(count=18):
    return f'<nvlink target="0000:ff:00.0" count="{count}" tclass="0x068000"/>'


def to_gpu(bus, count=12):
    return f'<nvlink target="{bus}" count="{count}" tclass="0x030200"/>'


def system(*cpus, version="2.30.7", cpu_template=CPU):
    body = "".join(cpu_template.format(numa=i, mask="0000ffff" if i == 0 else "ffff0000") + "".join(c) + "</cpu>"
                   for i, c in enumerate(cpus))
    topology = parse_topology(SourceFile("t.xml", f'<system version="1">{body}</system>'))
    return System(topology, NcclVersion.parse(version))


def net_path(sys_, gpu_bus, name):
    for net, (_, fact) in sys_.nets.items():
        if fact.name == name:
            return sys_.gpu_net_paths[gpu_bus][net]
    raise AssertionError(name)


def gpu_path(sys_, a, b):
    return sys_.path_between(gpu_id(a), gpu_id(b)).type


def test_pix_same_switch():
    s = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0), nic("0000:12:00.0", "mlx5_0"))])
    assert net_path(s, "0000:11:00.0", "mlx5_0").type == "PIX"


def test_pxb_two_level_switch():
    s = system([bridge("0000:10:00.0", bridge("0000:11:00.0", gpu("0000:12:00.0", 0)),
                       bridge("0000:13:00.0", nic("0000:14:00.0", "mlx5_0")))])
    assert net_path(s, "0000:12:00.0", "mlx5_0").type == "PXB"


def test_phb_through_host_bridge_and_no_gdr():
    s = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0)), bridge("0000:20:00.0", nic("0000:21:00.0", "mlx5_0"))])
    assert net_path(s, "0000:11:00.0", "mlx5_0").type == "PHB"
    net = next(iter(s.nets))
    assert not s.gdr_enabled(s.gpus["0000:11:00.0"], net)
    assert s.gdr_enabled(s.gpus["0000:11:00.0"], net, level="PHB")


def test_sys_across_sockets():
    s = system([nic("0000:12:00.0", "mlx5_0")], [gpu("0000:91:00.0", 0)])
    assert net_path(s, "0000:91:00.0", "mlx5_0").type == "SYS"


def test_nvl_through_nvswitch_and_pxn_to_peer_nic():
    s = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0, nvs()), nic("0000:12:00.0", "mlx5_0"))],
               [gpu("0000:91:00.0", 1, nvs())])
    assert gpu_path(s, "0000:11:00.0", "0000:91:00.0") == "NVL"
    path = net_path(s, "0000:91:00.0", "mlx5_0")
    assert path.type == "PXN" and path.proxy_gpu == "0000:11:00.0"
    assert s.raw_paths["0000:91:00.0"][next(iter(s.nets))].type == "SYS"
    # GDR is judged on the proxy's distance (PIX).
    assert s.gdr_enabled(s.gpus["0000:91:00.0"], next(iter(s.nets)))


def test_no_pxn_before_nccl_2_12():
    s = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0, nvs()), nic("0000:12:00.0", "mlx5_0"))],
               [gpu("0000:91:00.0", 1, nvs())], version="2.11.4")
    assert net_path(s, "0000:91:00.0", "mlx5_0").type == "SYS"


def test_nvb_through_intermediate_gpu():
    s = system([gpu("0000:11:00.0", 0, to_gpu("0000:12:00.0")),
                gpu("0000:12:00.0", 1, to_gpu("0000:11:00.0") + to_gpu("0000:13:00.0")),
                gpu("0000:13:00.0", 2, to_gpu("0000:12:00.0"))])
    assert gpu_path(s, "0000:11:00.0", "0000:12:00.0") == "NVL"
    assert gpu_path(s, "0000:11:00.0", "0000:13:00.0") == "NVB"


def test_self_targeting_nvlink_is_not_a_peer_link():
    s = system([gpu("0000:11:00.0", 0, to_gpu("0000:11:00.0"))], [gpu("0000:91:00.0", 1)])
    assert gpu_path(s, "0000:11:00.0", "0000:91:00.0") == "SYS"


def test_disconnected_hosts_are_dis():
    xml = ('<system version="1"><cpu numaid="0" host_hash="0x1" affinity="ff">' + gpu("0000:11:00.0", 0) +
           '</cpu><cpu numaid="0" host_hash="0x2" affinity="ff">' + gpu("0000:91:00.0", 1) + "</cpu></system>")
    s = System(parse_topology(SourceFile("t.xml", xml)), NcclVersion.parse("2.30.7"))
    assert gpu_path(s, "0000:11:00.0", "0000:91:00.0") == "DIS"


C2C = '<c2c bw="56376" count="7"/>'


@pytest.mark.parametrize("version,expected,gdr", [("2.27.7", "P2C", True), ("2.26.6", "PHB", False)])
def test_grace_c2c_nic_is_p2c_from_2_27(version, expected, gdr):
    s = system([gpu("0009:01:00.0", 0, extra=C2C), nic("0000:01:00.0", "mlx5_0")],
               [gpu("0019:01:00.0", 1, extra=C2C)], version=version, cpu_template=GRACE)
    assert s.gpu_cpu_path(s.gpus["0009:01:00.0"]).type == "C2C"
    assert net_path(s, "0009:01:00.0", "mlx5_0").type == expected
    assert s.gdr_enabled(s.gpus["0009:01:00.0"], next(iter(s.nets))) is gdr
    # The other Grace's GPU reaches that NIC across the CPU interconnect.
    assert net_path(s, "0019:01:00.0", "mlx5_0").type == "SYS"


def test_path_order_only_2_27_3_has_pxn_before_p2c():
    # include/graph.h: PATH_P2C is 7 after PATH_PXN 6 in v2.27.3-1 only; v2.27.5-1 swapped them.
    assert NcclVersion.parse("2.27.3").rank("P2C") > NcclVersion.parse("2.27.3").rank("PXN")
    assert NcclVersion.parse("2.27.5").rank("P2C") < NcclVersion.parse("2.27.5").rank("PXN")
    assert NcclVersion.parse("2.27.7").rank("P2C") < NcclVersion.parse("2.27.7").rank("PXN")
    assert NcclVersion.parse("2.28.9").rank("P2C") < NcclVersion.parse("2.28.9").rank("PXN")
    assert NcclVersion.parse("2.30.7").rank("NODE") == NcclVersion.parse("2.30.7").rank("PHB")


def test_nic_directly_under_cpu_is_phb():
    xml_nic = '<nic><net name="eth0" dev="0" speed="100000" port="0" gdr="0" maxconn="65536"/></nic>'
    s = system([gpu("0001:00:00.0", 0), xml_nic])
    assert net_path(s, "0001:00:00.0", "eth0").type == "PHB"
    assert not s.is_fabric(next(iter(s.nets)))


def test_paths_are_shared_between_identical_nodes_only():
    one = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0), nic("0000:12:00.0", "mlx5_0"))])
    twin = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0), nic("0000:12:00.0", "mlx5_9"))])
    other = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0)), nic("0000:12:00.0", "mlx5_0")])
    assert twin.raw_paths is one.raw_paths  # names do not change paths
    assert other.raw_paths is not one.raw_paths
    assert net_path(other, "0000:11:00.0", "mlx5_0").type == "PHB"
    assert net_path(twin, "0000:11:00.0", "mlx5_9").type == "PIX"


def test_graph_is_available_as_networkx_for_node_and_cluster():
    import networkx as nx

    from topolint.model.cluster import cluster_graph
    from topolint.model.node import NodeModel

    s = system([bridge("0000:10:00.0", gpu("0000:11:00.0", 0, nvs()), nic("0000:12:00.0", "mlx5_0"))])
    graph = s.graph
    assert isinstance(graph, nx.DiGraph)
    assert graph.edges[gpu_id("0000:11:00.0"), ("nvs", 0)]["type"] == "NVL"
    assert graph.nodes[("pci", "0000:10:00.0")]["kind"] == "pci"
    nodes = [NodeModel(name=host, topologies=[s.topology]) for host in ("a", "b")]
    cluster = cluster_graph(nodes, s.version)
    assert cluster.number_of_nodes() == 2 * graph.number_of_nodes()
    assert cluster.nodes[("b", "gpu", "0000:11:00.0")]["host"] == "b"


@pytest.mark.parametrize("version, sm, read_default", [("2.18.6", 90, False), ("2.30.7", 90, True), ("2.30.7", 70, False)])
def test_gdr_read_and_write_are_decided_apart(version, sm, read_default):
    """ncclTopoCheckGdr (src/graph/paths.cc) with read=1: NCCL_NET_GDR_READ unset keeps reads off
    for a GPU without an NVLink peer that is not alone (before sm80 from 2.19, on every GPU
    before that); NCCL_NET_GDR_READ=1 turns them on, =0 off. Writes ignore all of it."""
    gpus = [gpu(f"0000:1{i}:00.0", i).replace('sm="90"', f'sm="{sm}"') for i in (1, 2)]
    s = system([bridge("0000:10:00.0", *gpus, nic("0000:13:00.0", "mlx5_0"))], version=version)
    g, net = s.gpus["0000:11:00.0"], next(iter(s.nets))
    assert s.gdr_enabled(g, net) is True
    assert s.gdr_enabled(g, net, read=True) is read_default
    assert s.gdr_enabled(g, net, read=True, gdr_read="1") is True
    assert s.gdr_enabled(g, net, read=True, gdr_read="0") is False


def test_raw_paths_are_ncclTopoSetPaths_searched_from_each_base():
    """src/graph/paths.cc ncclTopoSetPaths searches from the base (here CPU 1) outwards, and a
    GPU forwards one NVLink hop: GPU 0 reaches CPU 1 as PHB through its NVLink peer GPU 1. A
    search from the GPU (the model before) cannot leave GPU 1 that way and said SYS."""
    s = system([gpu("0000:11:00.0", 0, to_gpu("0000:91:00.0"))], [gpu("0000:91:00.0", 1, to_gpu("0000:11:00.0"))])
    to_cpu1 = s.raw_paths["0000:11:00.0"][("cpu", 1)]
    assert (to_cpu1.type, to_cpu1.hops) == ("PHB", 2)
    assert s.paths_from(gpu_id("0000:11:00.0"))[("cpu", 1)].type == "SYS"  # the graph's own search


@pytest.mark.parametrize("version", ["2.29.7", "2.30.7"])
def test_raw_gpu_nic_paths_see_broadcom_switches_flattened(version):
    """src/graph/topo.cc ncclTopoFlattenBcmSwitches merges a Broadcom switch's sub-switches, so
    a GPU and a NIC below two of them are PIX to NCCL (rules judge this path before PXN)."""
    path = "fixtures/rules/TOPO003/bad_gen2_switch.xml"
    topology = parse_topology(SourceFile(path, (ROOT / path).read_text(encoding="utf-8")))
    s = System(topology, NcclVersion.parse(version))
    (net,) = [key for key, (_, fact) in s.nets.items() if fact.name == "mlx5_0"]
    assert s.raw_paths["0000:0f:00.0"][net].type == "PIX"
    assert s.paths_from(gpu_id("0000:0f:00.0"))[net].type == "PXB"  # the graph keeps the sub-switches


def test_a_numaid_two_hosts_share_reads_ncclTopoSetPaths_shared_slot():
    """getPath gives nodes of one type and id one slot: the second host's CPU (numaid 0 again) is
    judged by the path NCCL stores there, and no GPU loses the path to its own CPU."""
    xml = ('<system version="1"><cpu numaid="0" host_hash="0x1" affinity="ff" arch="x86_64" vendor="GenuineIntel" '
           'familyid="6" modelid="143">' + gpu("0000:11:00.0", 0) + '</cpu><cpu numaid="0" host_hash="0x2" '
           'affinity="ff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">' + gpu("0000:91:00.0", 1)
           + "</cpu></system>")
    s = System(parse_topology(SourceFile("t.xml", xml)), NcclVersion.parse("2.30.7"))
    assert s.nccl() is not None
    for bus in s.gpus:
        own = s.gpu_cpu_path(s.gpus[bus])
        assert own is not None and own.type == "PHB"


def test_gdr_read_setting_is_read_as_ncclLoadParam_reads_it_without_nccls_graph():
    """src/misc/param.cc ncclLoadParam: strtoll(value, NULL, 0), so "00" is 0 (reads off), and a
    negative value is the default's rule (paths.cc ncclTopoCheckGdr: gdrReadParam < 0)."""
    s = system([gpu("0000:11:00.0", 0), gpu("0000:12:00.0", 1)], version="2.18.6")
    first = s.gpus["0000:11:00.0"]
    assert s._gdr_read_allowed(first, "00") is False
    assert s._gdr_read_allowed(first, "0x1") is True
    assert s._gdr_read_allowed(first, "-1") == s._gdr_read_allowed(first, None)
