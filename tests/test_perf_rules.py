"""PERF rules on real runs: the corpus tables judged against a topology, the expectation's sources,
the plateau against nccl-tests' average, and the topology findings a gap names."""

from __future__ import annotations

import json
import re

from conftest import FIXTURES, run_cli

H200 = "fixtures/estimate/hgx-h200-8gpu-8x400g.xml"  # documented HGX H200 hardware (bandwidth's fixture)


def _findings(*args):
    result = run_cli("check", *args, "--format", "json")
    assert "Traceback" not in result.stderr
    return result, json.loads(result.stdout)["findings"]


def test_h200_vm_run_is_below_a_third_of_the_estimate_for_its_shape(corpus):
    bad = corpus / "nccl-tests" / "h200-2node-kvm-vm-passthrough-bad-27GBps_nccl-tests-issue-256.txt"
    result, findings = _findings(bad, "--topology", H200, "--select", "PERF")
    assert [(f["code"], f["line"]) for f in findings] == [("PERF001", 29)]
    finding = findings[0]
    # The plateau is the best of the largest sizes (57.78 at 2.7 GB), never the 27.5 average.
    verdict = re.search(r"57.78 GB/s at 2592 MiB is (\d+)% of the ([\d.]+) GB/s expected", finding["message"])
    assert verdict and int(verdict.group(1)) < 33
    # No NVLS channels in the output: judged against the best algorithm without NVLink SHARP.
    assert "(topolint estimate (ring) on fixtures/estimate/hgx-h200-8gpu-8x400g.xml)" in finding["message"]
    assert any(re.search(r"with NVLS the estimate is [\d.]+ GB/s", e) for e in finding["evidence"])
    assert any("2 x 8 ranks, allreduce of 2717908992 B" in e for e in finding["evidence"])
    assert any("'Avg bus bandwidth' 27.5091 averages every size" in e for e in finding["evidence"])
    assert result.exit_code == 1


def test_h200_bare_metal_run_meets_the_estimate(corpus):
    good = corpus / "nccl-tests" / "h200-2node-baremetal-good-475GBps_nccl-tests-issue-256.txt"
    result = run_cli("check", good, "--topology", H200, "--select", "PERF", "--format", "concise", "-v")
    assert result.exit_code == 0 and "All checks passed." in result.stdout
    verdict = re.search(r"plateau 488.81 GB/s at 9 GiB is (\d+)% of [\d.]+ GB/s \(topolint estimate", result.stderr)
    assert verdict and int(verdict.group(1)) >= 80


def test_launcher_line_gives_the_shape_when_the_device_list_is_missing(corpus):
    run = corpus / "nccl-tests" / "h200-2node-kvm-vm-with-topo-file-52GBps_nccl-tests-issue-256.txt"
    _, findings = _findings(run, "--topology", H200, "--select", "PERF001")
    assert [(f["code"], f["line"]) for f in findings] == [("PERF001", 10)]
    assert any("the launcher line starts 16 ranks on 2 host(s)" in e for e in findings[0]["evidence"])


def test_without_a_topology_multi_node_runs_get_figures_not_verdicts(corpus):
    for name in ("h200-2node-kvm-vm-passthrough-bad-27GBps_nccl-tests-issue-256.txt",
                 "gcp-a3-mega-2x8xH100-allreduce-8B-8G_a3mega-ztan-fork.txt"):
        result = run_cli("check", corpus / "nccl-tests" / name, "--select", "PERF", "--format", "concise", "-v")
        assert result.exit_code == 0, result.stdout
        assert "no verdict: a multi-node run (2 hosts) whose NICs' rates are unknown" in result.stderr
        assert result.stderr.count("no verdict") == 1  # said once, not by PERF001 and PERF002 each


def test_single_node_expectation_from_the_gpu_model():
    _, findings = _findings(FIXTURES / "rules" / "PERF001" / "bad.txt", "--select", "PERF")
    (finding,) = findings
    assert finding["code"] == "PERF001" and "91.4 GB/s at 8 GiB is 25% of the 370.8 GB/s" in finding["message"]
    assert "H100 SXM5 NVSwitch board from the GPU model in the output" in finding["message"]
    assert any("no topology or configuration finding of this run explains the gap" in e for e in finding["evidence"])


def test_a_gap_names_the_topology_findings_of_the_run(tmp_path):
    """A node folder with the run and its topology dump: the gap lists the dump's findings."""
    node = tmp_path / "hgx01"
    node.mkdir()
    (node / "run.txt").write_text((FIXTURES / "rules" / "PERF001" / "bad.txt").read_text(encoding="utf-8"))
    (node / "topo.xml").write_text((FIXTURES / "samples" / "dgx-like-2socket-dump.xml").read_text(encoding="utf-8"))
    _, findings = _findings(node)
    perf = [f for f in findings if f["code"] == "PERF001"]
    assert len(perf) == 1, [f["code"] for f in findings]
    numa = {f["entity"] for f in findings if f["code"] == "NUMA001"}
    assert numa and {r["entity"] for r in perf[0]["related"]} >= numa
    assert all(r["message"].startswith("may explain the gap: NUMA001") for r in perf[0]["related"])


def test_non_mpi_build_under_a_launcher_is_reported_as_such():
    _, findings = _findings(FIXTURES / "rules" / "PERF002" / "bad_non_mpi_copies.txt")
    assert [(f["code"], f["severity"]) for f in findings] == [("PERF002", "info")]
    assert findings[0]["message"].startswith("4 copies of a 1-rank all_reduce_perf run on 2 host(s)")


def test_socket_fallback_needs_traffic_and_an_rdma_expectation(corpus):
    _, findings = _findings(FIXTURES / "rules" / "PERF003" / "bad.log", "--select", "PERF003")
    assert [(f["code"], f["entity"], f["line"]) for f in findings] == [("PERF003", "bad/netdev/eth0", 6)]
    one_node = corpus / "nccl-log" / "aws-p4d-24xlarge-ec2-4rank-ofi-topofile-p2p_nccl2.27.7_training-on-eks.log"
    result = run_cli("check", one_node, "--select", "PERF003", "--format", "concise", "-v")
    assert result.exit_code == 0 and "nothing shows the run spans nodes: no PERF003" in result.stderr


def test_gdr_is_judged_per_direction_from_the_topology():
    topology = FIXTURES / "rules" / "PERF004" / "topology"
    _, findings = _findings(FIXTURES / "rules" / "PERF004" / "bad.log", "--topology", topology, "--select", "PERF004")
    assert sorted((f["entity"], f["message"].split(" via ")[0].split()[-1]) for f in findings) == [
        ("node-a/gpu/0000:18:00.0", "receives"), ("node-a/gpu/0000:18:00.0", "sends"),
        ("node-b/gpu/0000:18:00.0", "receives"), ("node-b/gpu/0000:18:00.0", "sends")]
    assert len({f["fingerprint"] for f in findings}) == 4
    _, read_off = _findings(FIXTURES / "rules" / "PERF004" / "good_gdr_read_off.log", "--topology", topology,
                            "--select", "PERF004")
    assert read_off == []  # sends without GDR are NCCL_NET_GDR_READ=0 at work; receives use GDR


def test_p2p_not_used_names_the_setting_that_turned_it_off(corpus):
    _, findings = _findings(FIXTURES / "rules" / "PERF005" / "bad_p2p_disabled.log", "--select", "PERF005")
    (finding,) = findings
    assert finding["message"].endswith("NCCL_P2P_DISABLE=1 turns P2P off")
    assert finding["fix"] == "Remove NCCL_P2P_DISABLE=1: NCCL would use NVLink P2P between these GPUs."
    l40s = corpus / "nccl-log" / "aws-g6e-48xlarge-4xL40S-1node-shm-fallback_nccl2.27.3_training-on-eks.log"
    result = run_cli("check", l40s, "--select", "PERF005", "--format", "concise", "-v")
    assert result.exit_code == 0 and "nothing shows NVLink between those GPUs" in result.stderr


def test_wrong_results_and_na():
    _, findings = _findings(FIXTURES / "rules" / "PERF006" / "bad.txt")
    assert [(f["code"], f["line"]) for f in findings] == [("PERF006", 21)]
    _, old = _findings(FIXTURES / "rules" / "PERF006" / "bad_old_out_of_bounds.txt")
    assert [f["code"] for f in old] == ["PERF006"] and "3 out-of-bounds values" in old[0]["message"]
    assert _findings(FIXTURES / "rules" / "PERF006" / "good_check_off.txt")[1] == []
