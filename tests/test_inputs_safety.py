"""Untrusted inputs: unreadable, hostile and unrecognised files, and what the parser makes of
the odd-but-valid ones. Nothing here may crash, hang, expand entities or read other files.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.inputs.sniff import NCCL_GRAPH_XML, NCCL_TOPO_XML, sniff
from topolint.inputs.source import SourceFile
from topolint.model.facts import GraphFile, TopologyFile
from topolint.parsers.nccl_graph_xml import parse_graph
from topolint.parsers.nccl_topo_xml import parse_topology

BAD = FIXTURES / "rules" / "NUMA001" / "bad.xml"
GOOD = FIXTURES / "rules" / "NUMA001" / "good.xml"
GRAPH = FIXTURES / "samples" / "nccl-graph.xml"

TRUNCATED = (
    '<system version="1">\n'
    '  <cpu numaid="0" affinity="0000ffff" arch="x86_64">\n'
    '    <pci busid="0000:0c:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">\n'
)

BILLION_LAUGHS = """<!DOCTYPE system [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64">&lol9;</cpu>
  <cpu numaid="1" affinity="ffff0000" arch="&lol9;"/>
</system>
"""


def concise(*args, cwd: Path = ROOT):
    return run_cli("check", *args, "--format", "concise", cwd=cwd)


def json_findings(*args, cwd: Path = ROOT) -> tuple[int, list[dict], str]:
    result = run_cli("check", *args, "--format", "json", cwd=cwd)
    return result.exit_code, json.loads(result.stdout)["findings"], result.stderr


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def only_tl001(findings: list[dict]) -> dict:
    tl001 = [f for f in findings if f["code"] == "TL001"]
    assert len(tl001) == 1, findings
    return tl001[0]


# --- unreadable inputs: TL001, exit 2, no traceback -------------------------------------------

def test_malformed_xml(tmp_path):
    write(tmp_path, "broken.xml", '<system version="1">\n  <cpu numaid="0">\n  </pci>\n</system>\n')
    code, findings, stderr = json_findings("broken.xml", cwd=tmp_path)
    assert code == 2
    finding = only_tl001(findings)
    assert finding["line"] == 3
    assert finding["path"] == "broken.xml"
    assert "malformed XML" in finding["message"]
    assert "Traceback" not in stderr


def test_truncated_xml_names_the_last_line(tmp_path):
    write(tmp_path, "cut.xml", TRUNCATED)
    result = concise("cut.xml", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stdout.startswith("cut.xml:3:")
    assert "TL001 [error] cannot read cut.xml: malformed XML: Premature end of data" in result.stdout
    assert result.stderr == ""


def test_truncated_inside_a_start_tag(tmp_path):
    write(tmp_path, "cut.xml", '<system version="1">\n  <cpu numaid="0"\n')
    code, findings, stderr = json_findings("cut.xml", cwd=tmp_path)
    assert code == 2
    assert only_tl001(findings)["line"] == 2
    assert stderr == ""


def test_tl001_exits_2_whatever_the_selection(tmp_path):
    write(tmp_path, "cut.xml", TRUNCATED)
    result = concise("cut.xml", "--select", "NUMA001", cwd=tmp_path)
    assert result.exit_code == 2
    assert "TL001" not in result.stdout  # not selected, so not shown, but the run still failed
    assert concise("cut.xml", "--exit-zero", cwd=tmp_path).exit_code == 2


def test_binary_file(tmp_path):
    write(tmp_path, "topo.xml", b'<system version="1">\n  <cpu>\x00\x01\x02</cpu>\n</system>\n')
    code, findings, stderr = json_findings("topo.xml", cwd=tmp_path)
    assert code == 2
    finding = only_tl001(findings)
    assert finding["line"] == 2
    assert "binary content (NUL byte)" in finding["message"]
    assert "Traceback" not in stderr


def test_invalid_utf8(tmp_path):
    write(tmp_path, "topo.xml", b'<system version="1">\n  <cpu vendor="Genu\xffine"/>\n</system>\n')
    code, findings, _ = json_findings("topo.xml", cwd=tmp_path)
    assert code == 2
    finding = only_tl001(findings)
    assert (finding["line"], finding["column"]) == (2, 20)  # the byte after `  <cpu vendor="Genu`
    assert "not valid UTF-8 (byte 0xff)" in finding["message"]


def test_utf8_bom_is_accepted(tmp_path):
    write(tmp_path, "topo.xml", b"\xef\xbb\xbf" + BAD.read_bytes())
    result = concise("topo.xml", "--select", "NUMA001", cwd=tmp_path)
    assert result.exit_code == 1
    assert "NUMA001" in result.stdout


def test_oversized_file(tmp_path, monkeypatch):
    import topolint.inputs.source as source

    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 100)
    shutil.copyfile(BAD, tmp_path / "big.xml")
    code, findings, stderr = json_findings("big.xml", cwd=tmp_path)
    assert code == 2
    assert "over the 100-byte limit" in only_tl001(findings)["message"]
    assert "Traceback" not in stderr


def test_oversized_dump_in_a_folder_is_tl001(tmp_path, monkeypatch):
    # A walk recognises the dump by its start: losing it silently would hide a node (issue 7).
    import topolint.inputs.source as source

    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 100)
    (tmp_path / "node").mkdir()
    shutil.copyfile(BAD, tmp_path / "node" / "big.xml")
    result = run_cli("check", "node", "--verbose", "--format", "concise", cwd=tmp_path)
    assert result.exit_code == 2
    assert "node/big.xml:1: TL001" in result.stdout and "over the 100-byte limit" in result.stdout


def test_missing_path(tmp_path):
    result = concise("no-such-file.xml", cwd=tmp_path)
    assert result.exit_code == 2
    assert "no-such-file.xml:1: TL001 [error] cannot read no-such-file.xml: no such file or directory" \
        in result.stdout
    assert "Traceback" not in result.stderr


def test_other_inputs_are_still_checked(tmp_path):
    write(tmp_path, "cut.xml", TRUNCATED)
    (tmp_path / "bundle").mkdir()
    shutil.copyfile(BAD, tmp_path / "bundle" / "topo.xml")
    code, findings, _ = json_findings("cut.xml", "bundle", cwd=tmp_path)
    assert code == 2
    assert {f["code"] for f in findings} >= {"TL001", "NUMA001"}
    assert next(f for f in findings if f["code"] == "NUMA001")["node"] == "bundle"


def test_unreadable_file_inside_a_folder(tmp_path):
    """Recognised but malformed files in a folder walk are TL001 too, and the rest is checked."""
    (tmp_path / "node").mkdir()
    write(tmp_path / "node", "cut.xml", TRUNCATED)
    shutil.copyfile(BAD, tmp_path / "node" / "topo.xml")
    code, findings, _ = json_findings("node", cwd=tmp_path)
    assert code == 2
    assert {f["code"] for f in findings} >= {"TL001", "NUMA001"}


# --- hostile XML --------------------------------------------------------------------------------

def _limit_memory():  # pragma: no cover - runs in the child
    one_gib = 1024 ** 3
    resource.setrlimit(resource.RLIMIT_AS, (2 * one_gib, 2 * one_gib))


@pytest.mark.skipif(sys.platform != "linux", reason="address-space limit is Linux-specific")
def test_billion_laughs_does_not_expand(tmp_path):
    path = write(tmp_path, "bomb.xml", BILLION_LAUGHS)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "topolint", "check", str(path), "--format", "json"],
                          cwd=ROOT, capture_output=True, timeout=60, preexec_fn=_limit_memory)
    elapsed = time.monotonic() - started
    assert elapsed < 30
    assert proc.returncode in (0, 1, 2), proc.stderr
    assert b"Traceback" not in proc.stderr
    assert b"MemoryError" not in proc.stderr
    assert b"lollollol" not in proc.stdout
    findings = json.loads(proc.stdout)["findings"]
    assert {f["code"] for f in findings} <= {"TL001", "TOPO001"}, findings
    assert len(proc.stdout) < 100_000


def test_billion_laughs_in_process(tmp_path):
    write(tmp_path, "bomb.xml", BILLION_LAUGHS)
    started = time.monotonic()
    result = concise("bomb.xml", cwd=tmp_path)
    assert time.monotonic() - started < 30
    assert result.exit_code in (1, 2)
    assert "TL002" not in result.stdout  # a DOCTYPE with an internal subset is still recognised
    assert "lollollol" not in result.stdout


def test_external_entity_is_not_read(tmp_path):
    write(tmp_path, "xxe.xml", (
        '<!DOCTYPE system [\n'
        '  <!ENTITY xxe SYSTEM "file:///etc/passwd">\n'
        ']>\n'
        '<system version="1">\n'
        '  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="&xxe;">&xxe;</cpu>\n'
        '</system>\n'
    ))
    for fmt in ("full", "json", "concise"):
        result = run_cli("check", "xxe.xml", "--format", fmt, "--verbose", "--preview", cwd=tmp_path)
        assert result.exit_code in (0, 1, 2)
        assert "root:" not in result.stdout + result.stderr
        assert "/bin/" not in result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        assert "TL002" not in result.stdout


def test_external_entity_parser_level():
    source = SourceFile("xxe.xml", (
        '<!DOCTYPE system [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
        '<system version="1"><cpu numaid="0" arch="x86_64">&xxe;</cpu></system>\n'
    ))
    try:
        topology = parse_topology(source)
    except Exception as exc:  # an InputError is acceptable; reading the file is not
        assert "root:" not in str(exc)
        return
    assert "root:" not in topology.model_dump_json()
    assert topology.doctype is not None and topology.doctype.line == 1


# --- recognition -------------------------------------------------------------------------------

def test_unrecognised_file_named_explicitly_is_tl002(tmp_path):
    write(tmp_path, "notes.txt", "GPU0 is on NUMA node 0, mlx5_0 on NUMA node 1\n")
    result = concise("notes.txt", cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith("notes.txt:1: TL002 [warning] notes.txt matches no known input format")


def test_unrecognised_xml_root_is_tl002(tmp_path):
    write(tmp_path, "other.xml", '<config><item/></config>\n')
    result = concise("other.xml", cwd=tmp_path)
    assert result.exit_code == 1
    assert "TL002" in result.stdout


def test_unrecognised_file_in_folder_is_skipped_silently(tmp_path):
    (tmp_path / "node").mkdir()
    write(tmp_path / "node", "notes.txt", "not a dump\n")
    shutil.copyfile(GOOD, tmp_path / "node" / "topo.xml")
    quiet = concise("node", cwd=tmp_path)
    assert quiet.exit_code == 0
    assert "TL002" not in quiet.stdout and "notes.txt" not in quiet.stderr
    verbose = concise("node", "--verbose", cwd=tmp_path)
    assert "topolint: node/notes.txt: skipped, not a recognised format" in verbose.stderr


def test_graph_xml_is_recognised_and_summarised():
    result = run_cli("check", GRAPH.relative_to(ROOT), "--format", "json", "--verbose")
    assert result.exit_code == 0
    findings = json.loads(result.stdout)["findings"]
    assert not {f["code"] for f in findings} & {"TL001", "TL002"}
    assert ("fixtures/samples/nccl-graph.xml: NCCL graph XML (ring: 2 channels, intra NVL inter PXB; "
            "tree: 1 channels, intra NVL inter PXB)") in result.stderr


def test_graph_xml_in_a_folder_with_a_topology(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(GRAPH, tmp_path / "node" / "graph.xml")
    shutil.copyfile(BAD, tmp_path / "node" / "topo.xml")
    result = run_cli("check", "node", "--format", "concise", "--verbose", "--select", "NUMA001", cwd=tmp_path)
    assert result.exit_code == 1
    assert "TL00" not in result.stdout
    assert "node/graph.xml: NCCL graph XML" in result.stderr


def test_sniff():
    assert sniff('\n\n  <!-- dumped by NCCL -->\n<system version="1">') == NCCL_TOPO_XML
    assert sniff('<?xml version="1.0"?>\n<!DOCTYPE system>\n<system>') == NCCL_TOPO_XML
    assert sniff('<!DOCTYPE system [<!ENTITY a "b>c">]>\n<system version="1">') == NCCL_TOPO_XML
    assert sniff('<graphs version="1">') == NCCL_GRAPH_XML
    assert sniff("<systemd/>") is None
    assert sniff("GPU0 X NV18") is None
    assert sniff("") is None


# --- parser units ------------------------------------------------------------------------------

def _parse(text: str, path: str = "t.xml") -> TopologyFile:
    topology = parse_topology(SourceFile(path, text))
    # The parser builds facts with model_construct; prove they still match the schema.
    TopologyFile.model_validate(topology.model_dump())
    return topology


def test_pci_class_alone_says_what_a_device_is():
    topology = _parse(
        '<system version="1">\n'
        '  <cpu numaid="0" affinity="0000ffff">\n'
        '    <pci busid="0000:10:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16"/>\n'
        '    <pci busid="0000:11:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>\n'
        '    <pci busid="0000:12:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16"/>\n'
        '    <pci busid="0000:13:00.0" class="0x068000"/>\n'
        '    <pci busid="0000:14:00.0" class="0x010802"/>\n'
        '    <pci busid="0000:15:00.0"/>\n'
        '  </cpu>\n'
        '</system>\n'
    )
    kinds = {p.bus_id: p.kind for p in topology.pci}
    assert kinds == {
        "0000:10:00.0": "bridge", "0000:11:00.0": "gpu", "0000:12:00.0": "nic",
        "0000:13:00.0": "nvswitch", "0000:14:00.0": "other", "0000:15:00.0": "unknown",
    }
    assert [g.bus_id for g in topology.gpus] == ["0000:11:00.0"]
    assert topology.gpus[0].loc.line == 4
    assert [n.bus_id for n in topology.nics] == ["0000:12:00.0"]
    assert topology.nics[0].nets == []
    assert topology.kind == "static"


def test_children_decide_before_the_class():
    topology = _parse(
        '<system version="1"><cpu numaid="0">'
        '<pci busid="0000:11:00.0" class="0x060400"><gpu dev="0" sm="90" rank="0"/></pci>'
        '<pci busid="0000:0A:00.0"><pci busid="0000:0b:00.0"/></pci>'
        '</cpu></system>'
    )
    kinds = {p.bus_id: p.kind for p in topology.pci}
    assert kinds == {"0000:11:00.0": "gpu", "0000:0a:00.0": "bridge", "0000:0b:00.0": "unknown"}
    assert topology.pci_by_bus()["0000:0b:00.0"].parent_bus_id == "0000:0a:00.0"


def test_comments_and_leading_blank_lines():
    text = "\n\n<!-- NCCL topology, collected 2024-05-01 -->\n\n" + BAD.read_text(encoding="utf-8")
    topology = _parse(text)
    assert topology.system_loc.line == 5
    assert [g.loc.line for g in topology.gpus] == [13]
    assert len(topology.cpus) == 2
    commented = _parse(
        '<system version="1">\n'
        '  <!-- <cpu numaid="9"> -->\n'
        '  <cpu numaid="0"> <!-- a <pci> in a comment is not an element -->\n'
        '    <pci busid="0000:11:00.0" class="0x030200"/>\n'
        '  </cpu>\n'
        '</system>\n'
    )
    assert [(c.numa_id, c.loc.line, c.loc.column) for c in commented.cpus] == [(0, 3, 3)]
    assert commented.pci[0].loc.line == 4 and commented.pci[0].loc.column == 5


def test_rccl_version_2_is_parsed():
    topology = _parse('<system version="2">\n  <cpu numaid="0" affinity="ff" arch="x86_64" vendor="AuthenticAMD"'
                      ' familyid="175" modelid="1"/>\n</system>\n')
    assert topology.version == "2"
    assert topology.cpus[0].vendor == "AuthenticAMD"
    assert topology.cpus[0].family_id == 175


@pytest.mark.parametrize("affinity", [
    "0000ffff",
    "ffffffff,00000000",
    "00000000,00000000,00000000,00000000,0000ffff,ffffffff",
    "ffffffffffffffff,0000000000000000",
    "f",
])
def test_affinity_words_of_any_width(affinity):
    topology = _parse(f'<system version="1"><cpu numaid="0" affinity="{affinity}"/></system>')
    assert topology.cpus[0].affinity == affinity


def test_affinity_width_does_not_change_findings(tmp_path):
    text = BAD.read_text(encoding="utf-8")
    wide = (text.replace('affinity="0000ffff"', 'affinity="0000000000000000,000000000000ffff"')
                .replace('affinity="ffff0000"', 'affinity="0000000000000000,00000000ffff0000"'))
    write(tmp_path, "wide.xml", wide)
    result = concise("wide.xml", "--select", "NUMA001", cwd=tmp_path)
    assert result.exit_code == 1
    assert "wide.xml:9:7: NUMA001 [error]" in result.stdout


def test_start_positions_of_multi_line_start_tags():
    topology = _parse(
        '<system\n'
        '    version="1">\n'
        '  <cpu numaid="0"\n'
        '       affinity="0000ffff">\n'
        '      <pci\n'
        '         busid="0000:11:00.0"\n'
        '         class="0x030200">\n'
        '        <gpu dev="0"\n'
        '             sm="90" rank="0" gdr="1"><nvlink\n'
        '           target="fffffff:ffff:ff" count="18" tclass="0x068000"/></gpu>\n'
        '    </pci>\n'
        '  </cpu>\n'
        '</system>\n'
    )
    assert (topology.system_loc.line, topology.system_loc.column) == (1, 1)
    assert (topology.cpus[0].loc.line, topology.cpus[0].loc.column) == (3, 3)
    assert (topology.pci[0].loc.line, topology.pci[0].loc.column) == (5, 7)
    gpu = topology.gpus[0]
    assert (gpu.loc.line, gpu.loc.column) == (8, 9)
    assert (gpu.nvlinks[0].loc.line, gpu.nvlinks[0].loc.column) == (9, 39)
    assert gpu.nvlinks[0].count == 18 and gpu.nvlinks[0].tclass == "0x068000"
    assert [(e.tag, e.loc.line) for e in topology.elements] == [
        ("system", 1), ("cpu", 3), ("pci", 5), ("gpu", 8), ("nvlink", 9)]


def test_declaration_and_tabs_are_located():
    topology = _parse('<?xml version="1.0"?>\n<system version="1">\n\t<cpu numaid="0"/>\n</system>\n')
    assert topology.xml_declaration is not None and topology.xml_declaration.line == 1
    assert [loc.line for loc in topology.tabs_between_elements] == [3]
    assert topology.cpus[0].loc.line == 3 and topology.cpus[0].loc.column == 2


@pytest.mark.parametrize("sample", sorted((FIXTURES / "samples").glob("*dump.xml"))
                         + sorted((FIXTURES / "rules").glob("*/*.xml")), ids=lambda p: p.name)
def test_fixture_facts_match_the_schema(sample):
    text = sample.read_text(encoding="utf-8")
    if sniff(text) != NCCL_TOPO_XML:
        pytest.skip("not a topology XML")
    try:
        topology = parse_topology(SourceFile(sample.name, text))
    except Exception:
        pytest.skip("fixture is deliberately unreadable")
    TopologyFile.model_validate(topology.model_dump())


def test_sample_dumps_parse_as_dumps():
    for name, nics in (("healthy-8gpu-dump.xml", 8), ("dgx-like-2socket-dump.xml", 4)):
        topology = _parse((FIXTURES / "samples" / name).read_text(encoding="utf-8"), name)
        assert topology.kind == "dump"
        assert len(topology.gpus) == 8
        assert len(topology.nics) == nics
        assert {c.numa_id for c in topology.cpus} == {0, 1}
        assert all(n.count == 18 for g in topology.gpus for n in g.nvlinks)


def test_graph_parser_matches_the_schema():
    graph = parse_graph(SourceFile("g.xml", GRAPH.read_text(encoding="utf-8")))
    GraphFile.model_validate(graph.model_dump())
    assert [g.nchannels for g in graph.graphs] == [2, 1]
    assert graph.graphs[0].channels[1].gpus == [3, 2, 1, 0]
    assert graph.graphs[0].type_intra == "NVL"


def test_full_format_shows_the_line_an_unreadable_file_stopped_at(tmp_path):
    cut = tmp_path / "cut.xml"
    cut.write_text('<system version="1">\n  <cpu numaid="0" affinity="ff">\n    <pci busid="0000:01:00.0"\n')
    result = run_cli("check", cut, "--format", "full")
    assert result.exit_code == 2
    assert '3 |     <pci busid="0000:01:00.0"' in result.stdout
