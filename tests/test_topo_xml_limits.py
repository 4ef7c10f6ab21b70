"""TOPO004 depends on --nccl-version, which rule fixtures (run with the newest) cannot express."""

from __future__ import annotations

import re

from conftest import run_cli


def _topology(children: int) -> str:
    pcis = "\n".join(
        f'    <pci busid="0000:{i + 1:02x}:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="16"/>'
        for i in range(children)
    )
    return (f'<system version="1">\n  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" '
            f'familyid="6" modelid="143">\n{pcis}\n  </cpu>\n</system>\n')


def _check(path, version: str):
    return run_cli("check", path, "--select", "TOPO004", "--format", "concise", "--nccl-version", version)


def test_children_limit_depends_on_nccl_version(tmp_path):
    path = tmp_path / "topo.xml"
    path.write_text(_topology(33))
    old = _check(path, "2.20.5")
    assert old.exit_code == 1
    assert "topo.xml:2:3: TOPO004 [error] cpu numaid=0 has 33 child elements: NCCL 2.20.5 accepts at most 32" in old.stdout
    assert _check(path, "2.21.5").exit_code == 0


def test_node_limit_is_reached_at_the_maximum(tmp_path):
    path = tmp_path / "topo.xml"
    path.write_text(_topology(125))  # 127 nodes: within 2.21-2.28's 128 children, under 256 nodes
    assert _check(path, "2.27.7").exit_code == 0
    path.write_text(_topology(254))  # 256 nodes with system and cpu: NCCL 2.21+ is already full
    result = _check(path, "2.29.7")
    assert "256 XML nodes: NCCL 2.29.7 loads at most 255" in result.stdout
    assert "child elements" not in result.stdout  # 254 children are within 2.29.7's 640
    assert "child elements" in _check(path, "2.28.9").stdout  # but not within 128
    assert _check(path, "2.20.5").stdout.count("TOPO004") == 1  # 1024 nodes, but 32 children


def _shared(cpus: int) -> str:
    """``cpus`` cpu elements claiming one affinity: NUMA005 (and, past the limit, TOPO001) material."""
    return '<system version="1">\n' + "".join(
        f'  <cpu numaid="{i}" affinity="ffffffff,ffffffff" arch="x86_64"/>\n' for i in range(cpus)) + "</system>\n"


def _codes(stdout: str) -> set[str]:
    """The codes of the findings in concise output."""
    return set(re.findall(r": ([A-Z]+\d{3}) \[", stdout))


def test_a_file_past_the_limits_is_refused_before_the_other_rules(tmp_path):
    path = tmp_path / "topo.xml"
    path.write_text(_shared(100))  # within the limits: the shared affinities are NUMA005's
    within = run_cli("check", path, "--format", "concise", "--isolated")
    assert "NUMA005" in _codes(within.stdout), within.stdout
    path.write_text(_shared(300))  # 301 nodes: NCCL 2.21+ would not load it
    past = run_cli("check", path, "--format", "concise", "--isolated", "--verbose")
    assert _codes(past.stdout) == {"TOPO004"}, past.stdout
    assert past.stdout.count("TOPO004") == 1
    assert "NUMA005 not run on node topo: " in past.stderr, past.stderr
    assert "topo.xml is past NCCL's XML limits (301 XML nodes, NCCL " in past.stderr
    assert "TOPO001 not run on node topo:" in past.stderr
    assert "NCCL would not load it (TOPO004)" in past.stderr


def test_a_file_past_the_children_limit_is_refused_too(tmp_path):
    path = tmp_path / "topo.xml"
    path.write_text(_topology(33))  # 33 children of one cpu: past NCCL 2.20's 32
    result = run_cli("check", path, "--format", "concise", "--isolated", "--verbose", "--nccl-version", "2.20.5")
    assert _codes(result.stdout) == {"TOPO004"}, result.stdout
    assert "<cpu> on line 2 has 33 child elements, NCCL 2.20.5 holds 32): NCCL would not load it (TOPO004)" \
        in result.stderr
    within = run_cli("check", path, "--format", "concise", "--isolated", "--verbose", "--nccl-version", "2.21.5")
    assert "would not load it" not in within.stderr  # 2.21 holds 128 children: the rules run


def test_a_file_past_the_limits_is_left_out_of_the_inventory(tmp_path):
    """The node's inventory (what the cluster stage compares) and drawing use only the topology
    files NCCL would load: the refused 130-GPU dump is not the node's GPUs, the 2-GPU one is."""
    import json

    from growers import _past_nccl_limits

    node = tmp_path / "n1"
    node.mkdir()
    dump = lambda n: _past_nccl_limits(n).replace("<cpu numaid", '<cpu host_hash="0xabc" numaid')  # noqa: E731
    (node / "topo-big.xml").write_text(dump(130))  # 130 children of one cpu: past NCCL 2.27's 128
    (node / "topo.xml").write_text(dump(2))
    result = run_cli("check", node, "--isolated", "--inventory", tmp_path / "inv", "--format", "concise",
                     "--nccl-version", "2.27.7")
    assert _codes(result.stdout) == {"TOPO004"}, result.stdout
    inventory = json.loads((tmp_path / "inv" / "n1.json").read_text())
    assert inventory["gpu_count"]["value"] == 2 and inventory["gpu_count"]["path"].endswith("topo.xml")
    assert len(inventory["gpus"]) == 2
    import topolint

    drawn = topolint.check([str(node)], isolated=True, nccl_version="2.27.7", drawings=True).views["n1"]
    assert drawn.diagram.source.endswith("/n1/topo.xml"), drawn.diagram.source
