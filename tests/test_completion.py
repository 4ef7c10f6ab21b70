"""The completed node (model/completion.py, model/node_join.py): vendor static topology files
completed from the node's own outputs or the estimate's options, as NCCL completes them at run
time (src/graph/topo.cc, xml.cc at v2.30.7-1). Issue 21's "Why" cases come first."""

from __future__ import annotations

import json
import shutil

import pytest

from topolint.estimate import Options, estimate
from topolint.inputs.collect import collect
from topolint.inputs.source import SourceFile
from topolint.model.completion import Overrides, complete
from topolint.parsers.nccl_topo_xml import parse_topology

NDV5 = "nccl-topo/azure-ndv5-8xH100-8NDR-2numa_OLD-affinity-swapped_azhpc-images.xml"
IBSTAT_NDR = "ibstat/h100-ib-ndr-400g-three-eth-ports-down-disabled_gpud-testdata.txt"  # 8 IB 400 + Eth
HGX_MATRIX = "nvidia-smi-topo/hgx-h100-nv18-10nic-tabs-partial_nccl-issue-1264.txt"
HGX_LSPCI = "lspci/dell-hgx-h100-8gpu-pex890xx-cx7-full-lspci-vvv_gpud-testdata.txt"
P5_FULL = "nccl-topo/aws-p5-48xlarge-8xH100-32EFA-2numa-full_2026_aws-ofi-nccl.xml"
FLAGS = Options(nvlinks=18, gpu_sm=90, nic_gbps=400)


def node_of(tmp_path, corpus, names: list[str], extra: dict[str, str] | None = None, folder="node"):
    """One node folder assembled from corpus files (copied to tmp at run time) and written text."""
    where = tmp_path / folder
    where.mkdir()
    for name in names:
        shutil.copy(corpus / name, where / name.split("/")[-1])
    for name, text in (extra or {}).items():
        (where / name).write_text(text)
    collection = collect([str(where)])
    assert not collection.problems, collection.problems
    [node] = collection.nodes
    return node


def ibstat(ports: list[tuple[str, str, int, str]]) -> str:
    """ibstat blocks: (hca, state, rate, link layer)."""
    out = []
    for i, (hca, state, rate, layer) in enumerate(ports):
        out += [f"CA '{hca}'", "\tCA type: MT4129", "\tNumber of ports: 1", f"\tSystem image GUID: 0x{i + 1:016x}",
                "\tPort 1:", f"\t\tState: {state}", "\t\tPhysical state: LinkUp", f"\t\tRate: {rate}",
                f"\t\tLink layer: {layer}"]
    return "\n".join(out) + "\n"


# ---- Why: static vendor files ----------------------------------------------------------------------
def test_ndv5_flags_fill_class_only_nics_and_gpus(corpus):
    """--nic-gbps reaches NICs that are <pci> devices of a network class with no <net> (it gave
    18.75 GB/s at 2 nodes: every NIC at NCCL's 10 Gb/s default); published 440.6-470 GB/s."""
    [node] = collect([str(corpus / NDV5)]).nodes
    est = estimate([node], nodes=2, size=8 << 30, options=FLAGS)
    selected = est.selected_estimate
    assert est.selected == "nvls_tree"
    assert 440.6 * 0.9 <= selected.busbw_GBps <= 470 * 1.1
    text = "\n".join(est.assumptions)
    assert "10 Gb/s" not in text and "without a speed" not in text  # no default claimed with --nic-gbps given
    assert "--nic-gbps 400" in text and "--nvlinks 18" in text and "--gpu-sm 90" in text


def test_ndv5_beside_its_ibstat_takes_the_port_rate(tmp_path, corpus):
    """The ibstat the estimate's note asks for (8 InfiniBand ports Active at Rate 400) fills the
    file's 8 InfiniBand NICs; the Active Ethernet frontend port (Rate 100) does not count."""
    node = node_of(tmp_path, corpus, [NDV5, IBSTAT_NDR])
    done = complete(node, node.topologies[0])
    speeds = [n.speed_mbps for nic in done.topology.nics for n in nic.nets]
    assert speeds == [400000] * 8
    [net] = {a.fact.text for a in done.assumed(field_name="net")}
    assert "8 Active InfiniBand ports" in net and "400 Gb/s" in net
    with_facts = estimate([node], nodes=2, size=8 << 30, options=Options(nvlinks=18, gpu_sm=90))
    by_flags = estimate(collect([str(corpus / NDV5)]).nodes, nodes=2, size=8 << 30, options=FLAGS)
    assert with_facts.selected_estimate.busbw_GBps == pytest.approx(by_flags.selected_estimate.busbw_GBps)
    assert any("ibstat" in a and "400 Gb/s" in a for a in with_facts.assumptions)


def test_ndv5_from_an_assembled_hgx_h100_bundle_needs_no_flags(tmp_path, corpus):
    node = node_of(tmp_path, corpus, [NDV5, IBSTAT_NDR, HGX_MATRIX, HGX_LSPCI])
    done = complete(node, node.topologies[0])
    assert {g.sm for g in done.topology.gpus} == {90}
    assert {(link.count, link.tclass) for g in done.topology.gpus for link in g.nvlinks} == {(18, "0x068000")}
    fields = {a.field for a in done.assumptions}
    assert fields == {"sm", "nvlinks", "gpu", "net"}
    assert all(a.fact.loc is not None for a in done.assumptions if a.field != "gpu")
    est = estimate([node], nodes=2, size=8 << 30)
    assert abs(est.selected_estimate.busbw_GBps - 440.6) / 440.6 <= 0.10


# ---- the rate rule and the joins ---------------------------------------------------------------------
def test_differing_rates_without_addresses_join_nothing(tmp_path, corpus):
    ports = [(f"mlx5_{i}", "Active", 400 if i else 200, "InfiniBand") for i in range(8)]
    node = node_of(tmp_path, corpus, [NDV5], {"ibstat.txt": ibstat(ports)})
    done = complete(node, node.topologies[0])
    assert not done.assumed(field_name="net")
    assert any("different rates (200, 400 Gb/s)" in note for note in done.unresolved)
    est = estimate([node], nodes=2, options=Options(nvlinks=18, gpu_sm=90))
    assert any("not joined" in a for a in est.assumptions)


def test_a_count_that_differs_joins_nothing(tmp_path, corpus):
    ports = [(f"mlx5_{i}", "Active" if i < 7 else "Down", 400, "InfiniBand") for i in range(8)]
    node = node_of(tmp_path, corpus, [NDV5], {"ibstat.txt": ibstat(ports)})
    done = complete(node, node.topologies[0])
    assert not done.assumed(field_name="net")
    assert any("7 Active InfiniBand ports, but 8" in note for note in done.unresolved)


def test_pci_address_joins_each_nic_to_its_hca(tmp_path, corpus):
    """ibdev2netdev -v names the HCA at each NIC's address: each NIC gets its own port's rate
    and name, even when the rates differ."""
    buses = ["0101", "0102", "0103", "0104", "0105", "0106", "0107", "0108"]
    ports = [(f"mlx5_{i}", "Active", 200 if i == 3 else 400, "InfiniBand") for i in range(8)]
    mapping = "".join(f"{bus}:00:00.0 mlx5_{i} (MT4129 - MCX75310AAS-NEAT) fw 28.39.1002 port 1 (ACTIVE) ==> "
                      f"ib{i} (Up)\n" for i, bus in enumerate(buses))
    node = node_of(tmp_path, corpus, [NDV5], {"ibstat.txt": ibstat(ports), "ibdev2netdev.txt": mapping})
    done = complete(node, node.topologies[0])
    nets = {nic.bus_id: (n.name, n.speed_mbps) for nic in done.topology.nics for n in nic.nets}
    assert nets["0104:00:00.0"] == ("mlx5_3", 200000)
    assert nets["0101:00:00.0"] == ("mlx5_0", 400000)
    joins = {a.fact.join for a in done.assumed(field_name="net")}
    assert all("PCI address" in j and "ibdev2netdev -v" in j for j in joins)


def test_a_net_by_name_takes_its_ports_rate(tmp_path, corpus):
    """A <net name=mlx5_0> without speed is ibstat's mlx5_0 (the HCA name is the join)."""
    xml = ('<system version="1">\n  <cpu numaid="0" affinity="ffff" arch="x86_64" vendor="GenuineIntel" '
           'familyid="6" modelid="143">\n    <pci busid="0000:17:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" '
           'link_width="16">\n      <nic>\n        <net name="mlx5_0" dev="0" port="1" gdr="1"/>\n      </nic>\n'
           '    </pci>\n    <pci busid="0000:18:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">\n'
           '      <gpu dev="0" sm="90" rank="0" gdr="1"/>\n    </pci>\n  </cpu>\n</system>\n')
    node = node_of(tmp_path, corpus, [], {"topo.xml": xml, "ibstat.txt": ibstat([("mlx5_0", "Active", 200,
                                                                                    "InfiniBand")])})
    done = complete(node, node.topologies[0])
    [net] = done.topology.nics[0].nets
    assert net.speed_mbps == 200000
    [speed] = done.assumed(field_name="speed")
    assert speed.fact.join == "HCA name mlx5_0" and speed.fact.loc.line == 8
    assert 'speed="200000"' in done.topology.text.splitlines()[4]


# ---- what is filled is an assumption, never file content ------------------------------------------------
def test_completed_text_reads_back_to_the_completed_facts_on_the_same_lines(tmp_path, corpus):
    node = node_of(tmp_path, corpus, [NDV5, IBSTAT_NDR, HGX_MATRIX, HGX_LSPCI])
    done = complete(node, node.topologies[0])
    stated, text = done.stated, done.topology.text
    assert len(text.splitlines()) == len(stated.text.splitlines())
    again = parse_topology(SourceFile(stated.path, text))

    def facts(topology):
        return ([(g.bus_id, g.dev, g.sm, g.loc.line, [(n.target, n.count, n.tclass) for n in g.nvlinks])
                 for g in topology.gpus],
                [(nic.bus_id, [(n.name, n.dev, n.speed_mbps, n.port, n.gdr, n.loc.line) for n in nic.nets])
                 for nic in topology.nics])

    assert facts(again) == facts(done.topology)
    assert done.stated is node.topologies[0] and not any(n.nets for n in stated.nics)


def test_nccl_graph_of_the_completed_file_has_the_nvlinks(corpus):
    """NCCL's own graph (model/nccl_graph.py) reads the completed text: GPUs of a static file
    with --nvlinks are NVLink peers there, not PHB (it read the file as written before)."""
    from topolint.estimate.topology import completed
    from topolint.model.nccl_version import NcclVersion
    from topolint.model.system import System, gpu_id

    [node] = collect([str(corpus / P5_FULL)]).nodes
    topology = completed(node, node.topologies[0], Options(nvlinks=18), [])
    system = System(topology, NcclVersion.parse("2.30.7"))
    a, b = (g.bus_id for g in topology.gpus[:2])
    assert system.nccl() is not None
    assert system.raw_paths[a][gpu_id(b)].type == "NVL"


def test_a_dump_is_never_completed(tmp_path, corpus):
    from tests.conftest import FIXTURES

    sample = FIXTURES / "samples" / "healthy-8gpu-dump.xml"
    node = node_of(tmp_path, corpus, [], {"topo.xml": sample.read_text(), "ibstat.txt": ibstat(
        [("mlx5_0", "Active", 100, "InfiniBand")])})
    done = complete(node, node.topologies[0], Overrides(nic_gbps=1, nvlinks=2, gpu_sm=70))
    assert done.topology is done.stated and not done.assumptions


def test_an_option_that_a_node_fact_contradicts_is_noted(tmp_path, corpus):
    node = node_of(tmp_path, corpus, [NDV5, HGX_LSPCI])
    done = complete(node, node.topologies[0], Overrides(gpu_sm=80))
    assert {g.sm for g in done.topology.gpus} == {80}
    assert any("--gpu-sm 80 given; the node's facts say SM90" in note for note in done.unresolved)


def test_what_no_fact_gives_stays_unstated_and_says_what_would(corpus):
    [node] = collect([str(corpus / NDV5)]).nodes
    done = complete(node, node.topologies[0])
    assert not done.assumptions and done.topology is done.stated
    text = "\n".join(done.unresolved)
    assert "8 devices" in text and "--gpu-sm" in text and "--nvlinks N" in text


# ---- every vendor file of the corpus completes sensibly -----------------------------------------------
def _facts(topology):
    return ([(g.bus_id, g.dev, g.sm, g.loc.line, sorted((n.target or "", n.count or 0, n.tclass or "")
                                                         for n in g.nvlinks)) for g in topology.gpus],
            [(nic.bus_id, [(n.name, n.dev, n.speed_mbps, n.port, n.loc.line) for n in nic.nets]) for nic in topology.nics])


def test_every_vendor_file_completes_by_flags_and_states_it(corpus):
    """Each static NCCL topology file of the corpus with the flags: every value it states is kept,
    every GPU gets an SM and NVLinks, every NIC a speed, each fill is an assumption naming its option,
    the completed text reads back to the same facts, and the estimate says which options it used and
    never that it took NCCL's 10 Gb/s default. Files with no GPU say what would give one."""
    from topolint.estimate import EstimateError

    flags = Options(nvlinks=18, gpu_sm=90, nic_gbps=100)
    judged = 0
    for path in sorted((corpus / "nccl-topo").glob("*.xml")):
        collection = collect([str(path)])
        topologies = [t for n in collection.nodes for t in n.topologies if t.kind == "static"]
        if collection.problems or not topologies:
            continue
        [node] = collection.nodes
        stated = topologies[0]
        done = complete(node, stated, Overrides(nvlinks=18, gpu_sm=90, nic_gbps=100))
        assert all(a.fact.join.startswith("an option") or a.field == "gpu" for a in done.assumptions), path.name
        for gpu, before in zip(done.topology.gpus, stated.gpus):
            assert gpu.sm == (before.sm or 90) and gpu.nvlinks, path.name
            assert not before.nvlinks or gpu.nvlinks == before.nvlinks, path.name
        speeds = [n.speed_mbps for nic in done.topology.nics for n in nic.nets]
        stated_speeds = [n.speed_mbps for nic in stated.nics for n in nic.nets]
        assert all(speeds) and all(s in speeds for s in stated_speeds if s), path.name
        if done.changed:
            again = parse_topology(SourceFile(stated.path, done.topology.text))
            assert _facts(again) == _facts(done.topology), path.name
        try:
            est = estimate([node], nodes=2, size=1 << 30, options=flags)
        except EstimateError as exc:
            assert not stated.gpus and "lspci -nn" in str(exc), path.name
            continue
        text = "\n".join(est.assumptions)
        assert "--nvlinks 18" in text or all(g.nvlinks for g in stated.gpus), path.name
        assert "NCCL's 10 Gb/s default" not in text, path.name
        judged += 1
    assert judged >= 6


def test_a_partial_file_of_bare_pci_devices_completes_from_lspci(tmp_path, corpus):
    """The 2025 AWS p5 file lists GPUs and EFA NICs as <pci> elements with no class (NCCL reads
    it from sysfs): lspci -nn at the same addresses gives the classes and the GPU model."""
    import re

    name = "nccl-topo/aws-p5-48xlarge-8xH100-32EFA-2numa-partial_2025_aws-ofi-nccl.xml"
    buses = re.findall(r'<pci busid="([^"]+)" link_speed', (corpus / name).read_text())
    lines = [f"{bus} 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)"
             if i % 4 == 0 else f"{bus} Ethernet controller [0200]: Amazon.com, Inc. Elastic Fabric Adapter (EFA) "
                                "[1d0f:efa1]" for i, bus in enumerate(buses)]
    node = node_of(tmp_path, corpus, [name], {"lspci.txt": "\n".join(lines) + "\n"})
    done = complete(node, node.topologies[0], Overrides(nvlinks=18, nic_gbps=100))
    assert len(done.topology.gpus) == 8 and {g.sm for g in done.topology.gpus} == {90}
    assert {a.field for a in done.assumptions} == {"class", "gpu", "sm", "nvlinks", "net"}
    est = estimate([node], nodes=2, size=2 << 30, options=Options(nvlinks=18, nic_gbps=100))
    assert abs(est.selected_estimate.busbw_GBps - 438.85) / 438.85 <= 0.10


def test_a_rule_about_the_node_reads_the_completed_node_and_names_the_fact(tmp_path, corpus):
    """PCIE005 on a static file whose nets state no speed: silent alone (no rate to judge), a
    finding beside the node's ibstat, whose evidence names the ibstat line that gave the rate."""
    from tests.conftest import FIXTURES, run_cli

    dump = (FIXTURES / "rules" / "PCIE005" / "bad.xml").read_text()
    static = dump.replace(' host_hash="0x4e5f6a7b8c9d0e1f"', "").replace(' speed="400000"', "")
    static = static.replace(' rank="0"', "").replace(' rank="1"', "")
    alone = node_of(tmp_path, corpus, [], {"topo.xml": static}, folder="alone")
    assert alone.topologies[0].kind == "static"
    quiet = run_cli("check", tmp_path / "alone", "--select", "PCIE005", "--format", "json")
    assert json.loads(quiet.stdout)["findings"] == []
    ports = ibstat([("mlx5_0", "Active", 400, "InfiniBand"), ("mlx5_1", "Active", 400, "InfiniBand")])
    node_of(tmp_path, corpus, [], {"topo.xml": static, "ibstat.txt": ports}, folder="with-ibstat")
    found = json.loads(run_cli("check", tmp_path / "with-ibstat", "--select", "PCIE005", "--format",
                               "json").stdout)["findings"]
    [finding] = found
    assert finding["code"] == "PCIE005" and "768" in finding["message"]
    assert any("not in the file" in e and "ibstat.txt:" in e and "HCA name mlx5_0" in e for e in finding["evidence"])


def test_rules_about_the_file_as_written_see_only_what_it_states(tmp_path, corpus):
    """TOPO rules judge the file as written: the node's facts beside it change none of them, and
    check --verbose lists what the completion filled."""
    from tests.conftest import run_cli

    node_of(tmp_path, corpus, [NDV5], folder="alone")
    node_of(tmp_path, corpus, [NDV5, IBSTAT_NDR, HGX_MATRIX, HGX_LSPCI], folder="bundle")

    def file_findings(folder):
        result = run_cli("check", tmp_path / folder, "--format", "json", "--verbose")
        found = json.loads(result.stdout)["findings"]
        return sorted((f["code"], f["line"], f["message"]) for f in found
                      if f["code"].startswith("TOPO") and f["path"].endswith(".xml")), result.stderr

    alone, _ = file_findings("alone")
    bundle, notes = file_findings("bundle")
    assert alone == bundle
    assert "completion: " in notes and "assumed from" in notes and "ibstat" in notes
