"""TL003 joins with host facts: numactl's CPU lists against a topology file's affinity masks, and
lspci's NUMA nodes against the XML (by PCI address) and the matrix (by GPU index)."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

SWAPPED = "nccl-topo/azure-ndv5-8xH100-8NDR-2numa_OLD-affinity-swapped_azhpc-images.xml"


def _numactl(nodes: list[str]) -> str:
    lines = [f"available: {len(nodes)} nodes (0-{len(nodes) - 1})"]
    for index, cpus in enumerate(nodes):
        lines += [f"node {index} cpus: {cpus}", f"node {index} size: 967000 MB", f"node {index} free: 900000 MB"]
    return "\n".join(lines) + "\n"


def _tl003(*paths, cwd=None) -> list[dict]:
    result = run_cli("check", *paths, "--select", "TL003", "--format", "json", **({"cwd": cwd} if cwd else {}))
    return [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL003"]


def test_the_swapped_affinity_static_file_becomes_findable_with_numactl(corpus, tmp_path):
    """The Azure NDv5 file NCCL was given puts CPUs 48-95 on NUMA node 0; the machine (96 CPUs,
    two sockets) has 0-47 there. Alone the file gives nothing (its masks do not overlap)."""
    assert _tl003(corpus / SWAPPED) == []
    numactl = tmp_path / "numactl-H.txt"
    numactl.write_text(_numactl([" ".join(map(str, range(48))), " ".join(map(str, range(48, 96)))]))
    findings = _tl003(corpus / SWAPPED, numactl)
    assert [(f["line"], f["severity"]) for f in findings] == [(2, "info"), (20, "info")]
    assert "CPUs 48-95, but numactl -H lists 0-47" in findings[0]["message"]
    assert any("numactl: node 0 cpus: 0-47" in e for e in findings[0]["evidence"])


def test_matching_numactl_is_silent(tmp_path):
    good = FIXTURES / "rules" / "TL003" / "good_numactl_lspci"
    assert _tl003(good) == []


def test_lspci_numa_against_the_matrix_by_gpu_index(tmp_path):
    matrix = (FIXTURES / "rules" / "TL003" / "good" / "topo.txt").read_text()
    lspci = (FIXTURES / "rules" / "TL003" / "bad_lspci_numa" / "lspci-vvv.txt").read_text()
    (tmp_path / "topo.txt").write_text(matrix)
    (tmp_path / "lspci-vvv.txt").write_text(lspci)
    findings = _tl003(tmp_path)
    assert [f["entity"].split("/", 1)[1] for f in findings] == ["gpu/0000:9a:00.0"]
    assert "nvidia-smi topo -m" in findings[0]["message"]


def test_a_job_cpuset_in_the_matrix_is_not_a_contradiction(tmp_path):
    (tmp_path / "numactl-H.txt").write_text(_numactl(["0 1 2 3 4 5 6 7", "8 9 10 11 12 13 14 15"]))
    (tmp_path / "topo.txt").write_text("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                                       "GPU0\t X \tNV12\t0-3\t0\t\tN/A\nGPU1\tNV12\t X \t8-11\t1\t\tN/A\n")
    assert _tl003(tmp_path) == []
    (tmp_path / "topo.txt").write_text("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                                       "GPU0\t X \tNV12\t8-11\t0\t\tN/A\nGPU1\tNV12\t X \t8-11\t1\t\tN/A\n")
    assert [f["line"] for f in _tl003(tmp_path)] == [2]
