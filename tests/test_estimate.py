"""The bandwidth model (topolint.estimate) on real topologies: what NCCL's tuning model gives,
which link bounds it, and how the estimate reacts to the hardware."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from topolint.commands.estimate import parse_sizes, EstimateUsageError
from topolint.estimate import Options, estimate
from topolint.inputs.collect import collect

OCI_H100 = "nccl-topo/oci-bm-gpu-h100-8-8xH100-16x200G-roce-2numa_oci-hpc.xml"
P5 = "nccl-topo/aws-p5-48xlarge-8xH100-32EFA-2numa-full_2026_aws-ofi-nccl.xml"


def nodes_of(path):
    collection = collect([str(path)])
    assert not collection.problems
    return collection.nodes


def test_h100_one_node_ring_is_six_channels_of_60_doubled(corpus):
    """18 NVLinks x 20.6 GB/s = 370.8 per GPU: six 60 GB/s rings fit, duplicated to 12 x 30
    (src/graph/search.cc ncclTopoDupChannels); ring Simple busbw = 12 x 30 = 360."""
    est = estimate(nodes_of(corpus / OCI_H100), collective="allreduce", size=8 << 30)
    ring = est.algorithm("ring")
    assert ring.channels == 12
    assert ring.busbw_GBps == pytest.approx(360, rel=0.005)
    assert ring.bottleneck.link == "NVLink"
    assert ring.bottleneck.entity.endswith("/gpu/" + ring.bottleneck.entity.rsplit("/", 1)[1])
    assert ring.bottleneck.line and ring.bottleneck.path.endswith(".xml")


def test_h100_one_node_selects_nvls(corpus):
    """NVLS: 8 heads, (8 + 1) x 40 <= 370.8; 40 x 0.85 x 7/8 x 2 per channel x 8 = 476 (tuning.cc)."""
    est = estimate(nodes_of(corpus / OCI_H100))
    assert est.selected == "nvls"
    assert est.algorithm("nvls").busbw_GBps == pytest.approx(476, rel=0.005)
    no_nvls = estimate(nodes_of(corpus / OCI_H100), options=Options(nvls=False))
    assert no_nvls.selected == "ring"
    assert "nvls" not in [a.name for a in no_nvls.algorithms]


def test_small_messages_are_latency_bound(corpus):
    small = estimate(nodes_of(corpus / OCI_H100), nodes=4, size=4096)
    large = estimate(nodes_of(corpus / OCI_H100), nodes=4, size=8 << 30)
    assert small.selected_estimate.protocol == "LL"
    assert small.selected_estimate.busbw_GBps < 1
    assert large.selected_estimate.protocol == "Simple"


def test_static_file_without_nvlinks_is_pcie_bound_until_told(corpus):
    """The p5 static file has no <nvlink>: NCCL adds them at run time; the estimate says so."""
    bare = estimate(nodes_of(corpus / P5))
    assert bare.algorithm("ring").bottleneck.link == "PCIe"
    assert any("--nvlinks" in a for a in bare.assumptions)
    told = estimate(nodes_of(corpus / P5), options=Options(nvlinks=18))
    assert told.selected == "nvls"
    assert told.algorithm("ring").busbw_GBps > 10 * bare.algorithm("ring").busbw_GBps


def test_parse_sizes():
    assert parse_sizes("8G", None) == [8 << 30]
    assert parse_sizes(None, "1M..8M") == [1 << 20, 2 << 20, 4 << 20, 8 << 20]
    with pytest.raises(EstimateUsageError):
        parse_sizes("8X", None)
    with pytest.raises(EstimateUsageError):
        parse_sizes(None, "8G..1M")


def test_cli_json(corpus):
    result = run_cli("estimate", corpus / OCI_H100, "--nodes", "2", "--format", "json")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    est = body["estimates"][0]
    assert est["selected"] == "nvls_tree"
    names = [a["name"] for a in est["algorithms"]]
    assert {"ring", "tree", "nvls_tree", "hierarchical", "parameter_server"} <= set(names)
    assert all(a["bottleneck"]["entity"] for a in est["algorithms"])


def test_cli_unreadable_input_exits_2(tmp_path):
    bad = tmp_path / "topo.xml"
    bad.write_text("<system version=\"1\"><cpu", encoding="utf-8")
    result = run_cli("estimate", bad)
    assert result.exit_code == 2
    assert "TL001" in result.stderr


def test_json_output_matches_its_schema(corpus):
    jsonschema = pytest.importorskip("jsonschema")
    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "estimate.schema.json").read_text(encoding="utf-8"))
    result = run_cli("estimate", corpus / OCI_H100, "--nodes", "4", "--sizes", "1M..4M", "--format", "json")
    jsonschema.validate(json.loads(result.stdout), schema)
    alltoall = run_cli("estimate", corpus / OCI_H100, "--nodes", "2", "--collective", "alltoall", "--format", "json")
    jsonschema.validate(json.loads(alltoall.stdout), schema)


def test_output_is_deterministic(corpus):
    first = run_cli("estimate", corpus / OCI_H100, "--nodes", "2", "--format", "markdown")
    second = run_cli("estimate", corpus / OCI_H100, "--nodes", "2", "--format", "markdown")
    assert first.exit_code == 0 and first.stdout == second.stdout
    assert "| nvls_tree (NCCL) |" in first.stdout


def _node_dir(tmp_path, extra: dict[str, str]):
    from tests.conftest import FIXTURES

    folder = tmp_path / "node17"
    folder.mkdir(parents=True)
    (folder / "topo.xml").write_text((FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml").read_text(encoding="utf-8"),
                                     encoding="utf-8")
    for name, text in extra.items():
        (folder / name).write_text(text, encoding="utf-8")
    return collect([str(folder)]).nodes


IBSTAT = ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Down\n"
          "\t\tPhysical state: Polling\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
          "CA 'mlx5_1'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
          "\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n")


def test_port_down_and_slow_rail_lower_the_ring_and_name_the_rail(tmp_path):
    """ibstat beside the dump: one port down, one at 200 of 400 Gb/s. The ring loses those rails'
    channels (8 x 45 -> 13 x 24) and names the slow rail, with the ibstat line in the assumptions."""
    healthy = estimate(_node_dir(tmp_path / "a", {}), nodes=4)
    degraded = estimate(_node_dir(tmp_path / "b", {"ibstat.txt": IBSTAT}), nodes=4)
    ring, before = degraded.algorithm("ring"), healthy.algorithm("ring")
    assert ring.busbw_GBps < before.busbw_GBps * 0.9
    assert ring.bottleneck.entity.endswith("/nic/mlx5_1:1")
    assert any("mlx5_0 port 1: down" in a and "ibstat.txt:5" in a for a in degraded.assumptions)
    assert any("mlx5_1: runs at 200000 Mb/s" in a for a in degraded.assumptions)


def test_inactive_nvlinks_lower_the_one_node_ring(tmp_path):
    links = "".join(f"\t Link {i}: {'<inactive>' if i < 6 else '26.562 GB/s'}\n" for i in range(18))
    status = f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n{links}"
    est = estimate(_node_dir(tmp_path, {"nvlink.txt": status}))
    ring = est.algorithm("ring")
    assert ring.busbw_GBps == pytest.approx(240, rel=0.01)  # 12 links x 20.6 = 247: four 60 GB/s rings
    assert ring.bottleneck.entity.endswith("/gpu/0000:12:00.0")
    assert any("6 NVLinks inactive" in a for a in est.assumptions)


def test_findings_on_the_bottleneck_qualify_the_estimate(corpus):
    """The OCI dump gives each GPU switch's upstream port at 5.0 GT/s (TOPO003): the parameter
    server stages through it, so that link is its bottleneck and the finding is marked so."""
    result = run_cli("estimate", corpus / OCI_H100, "--nodes", "8", "--size", "1G", "--format", "json")
    body = json.loads(result.stdout)
    ps = next(a for a in body["estimates"][0]["algorithms"] if a["name"] == "parameter_server")
    marked = [f for f in body["findings"] if "parameter_server" in f["on_bottleneck_of"]]
    assert ps["bottleneck"]["link"] == "PCIe"
    assert [f["code"] for f in marked] == ["TOPO003"] and marked[0]["entity"] == ps["bottleneck"]["entity"]
    assert "[bottleneck of parameter_server]" in run_cli("estimate", corpus / OCI_H100, "--nodes", "8").stdout


@pytest.mark.parametrize("version, nvls_one_node, nvls_tree_two_nodes", [
    # 2.28+: 40 x 0.85 x 7/8 x 2 = 59.5 per channel x 8 (tuning.cc nvlsEfficiency); on two nodes the
    # per-channel NVLSTree cap 57.7 binds (perChMaxNVLSTreeBws).
    ("2.30.7", 476.0, 461.6), ("2.28.9", 476.0, 461.6),
    # before 2.28: min(bwIntra, bwInter) = 40 per channel x 8 x 5/6 = 266.7 algbw, i.e. busbw x 14/8
    # on one node and x 30/16 on two (tuning.cc at v2.27.7-1).
    ("2.27.7", 466.7, 500.0), ("2.21.5", 466.7, 500.0),
])
def test_nvls_model_follows_the_nccl_version(version, nvls_one_node, nvls_tree_two_nodes):
    from tests.conftest import FIXTURES

    h100 = collect([str(FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml")]).nodes
    assert estimate(h100, version=version).algorithm("nvls").busbw_GBps == pytest.approx(nvls_one_node, rel=0.003)
    two = estimate(h100, nodes=2, version=version)
    assert two.algorithm("nvls_tree").busbw_GBps == pytest.approx(nvls_tree_two_nodes, rel=0.003)


def test_algorithms_by_version():
    from tests.conftest import FIXTURES

    h100 = collect([str(FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml")]).nodes
    assert "nvls" not in [a.name for a in estimate(h100, version="2.16.5").algorithms]  # NVLS from 2.17
    assert "nvls_tree" not in [a.name for a in estimate(h100, nodes=2, version="2.17.1").algorithms]
    one_gpu = estimate(h100, nodes=4, gpus_per_node=1, collective="allgather", size=1 << 30, version="2.23.4")
    assert "pat" in [a.name for a in one_gpu.algorithms]
    older = estimate(h100, nodes=4, gpus_per_node=1, collective="allgather", size=1 << 30, version="2.22.3")
    assert "pat" not in [a.name for a in older.algorithms]


A100_MATRIX = "nvidia-smi-topo/a100-8gpu-nv12-compacted-spacing_ml-engineering.txt"
DGX1V_MATRIX = "nvidia-smi-topo/dgx1v-style-8xv100-nv1-nv2-cube-mesh-single-edr-nic_oneflow-benchmark.txt"


def test_matrix_input_nvswitch(corpus):
    """NV12 between every pair of 8 GPUs is NVSwitch (84 > 18 links): the ring is the XML's 240."""
    est = estimate(nodes_of(corpus / A100_MATRIX), options=Options(gpu_sm=80))
    ring = est.algorithm("ring")
    assert est.selected == "ring" and ring.busbw_GBps == pytest.approx(240, rel=0.005)
    assert ring.bottleneck.entity.endswith("/gpu/0") and ring.bottleneck.line == 2
    assert any("nvidia-smi topo -m matrix" in a and "Gen4 x16 assumed" in a for a in est.assumptions)


def test_matrix_input_cube_mesh_packs_six_rings(corpus):
    """DGX-1V hybrid cube-mesh: NV1/NV2 to four peers, 6 links x 20 GB/s: six 20 GB/s rings fit
    (two over each doubled link, one over each single one); a greedy order finds only two."""
    est = estimate(nodes_of(corpus / DGX1V_MATRIX), options=Options(gpu_sm=70))
    assert est.algorithm("ring").channels == 6
    assert est.algorithm("ring").busbw_GBps == pytest.approx(120, rel=0.005)


def test_matrix_nic_speed_from_option(corpus):
    bare = estimate(nodes_of(corpus / DGX1V_MATRIX), nodes=2, options=Options(gpu_sm=70))
    told = estimate(nodes_of(corpus / DGX1V_MATRIX), nodes=2, options=Options(gpu_sm=70, nic_gbps=100))
    assert told.algorithm("ring").busbw_GBps == pytest.approx(12, rel=0.01)  # one EDR port: 12 GB/s channels
    assert bare.algorithm("ring").busbw_GBps < 2
    assert told.algorithm("ring").bottleneck.entity.endswith("/nic/mlx5_0:1")


def test_cluster_is_min_combined_and_names_the_slow_node(tmp_path):
    """Two hosts, one with a port down and a slow rail. NCCL aligns the ranks' graphs element by
    element (src/init.cc: the fewest channels, the least bwIntra and bwInter): the healthy host's
    8 channels at the degraded host's 24 GB/s, below either host alone; the bottleneck is on b."""
    from tests.conftest import FIXTURES

    cluster = tmp_path / "cluster"
    for name in ("a", "b"):
        (cluster / name).mkdir(parents=True)
        (cluster / name / "topo.xml").write_text(
            (FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml").read_text(encoding="utf-8"), encoding="utf-8")
    (cluster / "b" / "ibstat.txt").write_text(IBSTAT, encoding="utf-8")
    both = estimate(collect([str(cluster)]).nodes, nodes=4)
    degraded = estimate(_node_dir(tmp_path / "single", {"ibstat.txt": IBSTAT}), nodes=4)
    ring = both.algorithm("ring")
    assert ring.channels == 8 and degraded.algorithm("ring").channels == 13
    assert ring.busbw_GBps == pytest.approx(8 * 24, rel=0.01)
    assert ring.busbw_GBps < degraded.algorithm("ring").busbw_GBps
    assert ring.bottleneck.entity == "b/nic/mlx5_1:1"


def test_oversubscription_applies_beyond_one_leaf():
    from tests.conftest import FIXTURES

    h100 = collect([str(FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml")]).nodes
    fabric = Options(oversubscription=4, nodes_per_leaf=8)
    within = estimate(h100, nodes=8, options=fabric)
    across = estimate(h100, nodes=16, options=fabric)
    blocking = estimate(h100, nodes=16, options=Options(oversubscription=4))
    assert within.algorithm("ring").busbw_GBps == pytest.approx(estimate(h100, nodes=8).algorithm("ring").busbw_GBps)
    assert across.algorithm("ring").busbw_GBps == pytest.approx(blocking.algorithm("ring").busbw_GBps)
    assert across.algorithm("ring").busbw_GBps < within.algorithm("ring").busbw_GBps / 3.5
    assert any("4:1 oversubscription" in a for a in across.assumptions)


def test_one_rank_and_too_many_gpus(corpus):
    one = run_cli("estimate", corpus / OCI_H100, "--gpus-per-node", "1")
    assert one.exit_code == 0 and "one rank: nothing to communicate" in one.stdout
    too_many = run_cli("estimate", corpus / OCI_H100, "--gpus-per-node", "12")
    assert too_many.exit_code == 2 and "has 8 GPUs" in too_many.stderr and "Traceback" not in too_many.stderr


def test_values_from_inputs_are_escaped(tmp_path):
    from tests.conftest import FIXTURES

    text = (FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml").read_text(encoding="utf-8")
    hostile = tmp_path / "topo.xml"
    hostile.write_text(text.replace('name="mlx5_0" dev="0" speed="400000"',
                                    'name="mlx5_0&#10;FAKE|x&#x85;" dev="0" speed="100000"'), encoding="utf-8")
    for fmt in ("text", "markdown"):
        out = run_cli("estimate", hostile, "--nodes", "4", "--format", fmt).stdout
        assert "\nFAKE" not in out and "\x85" not in out
        assert "mlx5_0\\nFAKE" in out
    assert "mlx5_0\\nFAKE\\|x" in run_cli("estimate", hostile, "--nodes", "4", "--format", "markdown").stdout
    body = json.loads(run_cli("estimate", hostile, "--nodes", "4", "--format", "json").stdout)
    assert body["estimates"][0]["algorithms"][1]["bottleneck"]["entity"].endswith("mlx5_0\nFAKE|x\x85:1")


def test_estimate_escapes_input_values_with_the_parsers_printable():
    """One escape of control characters (parsers/nccl_log.py printable), not a copy per command."""
    from pathlib import Path

    import topolint
    from topolint.commands.estimate import shown
    from topolint.parsers.nccl_log import printable

    root = Path(topolint.__file__).parent
    copies = [str(p.relative_to(root)) for p in root.rglob("*.py") if 'encode("unicode_escape")' in p.read_text()]
    assert copies == ["parsers/nccl_log.py"]
    assert shown("gpu\x1b[2J0") == printable("gpu\x1b[2J0") == "gpu\\x1b[2J0" and shown(7) == "7"
