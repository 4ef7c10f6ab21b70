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
