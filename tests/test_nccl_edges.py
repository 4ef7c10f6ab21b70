"""Issue 22, NCCL fidelity at the edges: NCCL's refusal text, PXN on older NCCL for matrices,
findings on files NCCL refuses, lspci's own "(downgraded)" verdict.

Each test fails on the code before the issue and cites the NCCL (or pciutils) file it follows.
The refusal texts are NCCL's own, as tests/oracle/answers.json.gz holds them.
"""

from __future__ import annotations

import json
import sys

from conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT / "tests" / "oracle"))

from compare import load_answers, model_answer  # noqa: E402
from generate import generate  # noqa: E402

from topolint.model.nccl_version import NcclVersion  # noqa: E402

GOOD = ('<system version="1">\n<cpu numaid="0" affinity="ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" '
        'modelid="143">\n<pci busid="0000:11:00.0" class="0x030200" vendor="0x10de" device="0x2330" '
        'link_speed="32.0 GT/s PCIe" link_width="16">\n<gpu dev="0" sm="90" rank="0" gdr="1"/>\n</pci>\n</cpu>\n'
        '</system>\n')


def findings(tmp_path, text: str, *args: str, name: str = "topo.xml") -> list[dict]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = run_cli("check", str(path), "--format", "json", "--isolated", "--no-cache", *args)
    return json.loads(result.stdout)["findings"]


def answer(path: str, tag: str, env: str = "default") -> dict:
    """NCCL's own answer for a fixture or generated file at a tag (tests/oracle/answers.json.gz)."""
    answers = _ANSWERS()
    for digest, entry in answers["topologies"].items():
        name = entry.get("path") or f"gen-{entry['seed']}-{entry['index']}.xml"
        if name == path:
            return answers["distinct"][answers["answers"][digest][tag][env]]
    raise KeyError(path)


def _ANSWERS(cache: list = []) -> dict:  # noqa: B006 - loaded once per session
    if not cache:
        cache.append(load_answers())
    return cache[0]


def port(path: str, tag: str, env: dict | None = None) -> dict:
    if path.startswith("gen-"):
        seed, index = path[4:-4].split("-")
        text, _ = generate(int(seed), int(index))
    else:
        text = (ROOT / path).read_text(encoding="utf-8")
    return model_answer(text, path, NcclVersion.parse(tag), env or {})


# ---- 1. NCCL's refusal text -------------------------------------------------------------------
# src/graph/xml.cc xmlLoadSub: an element no handler takes keeps no slot (xml->maxIndex is not
# advanced), so its children are read into its own slot after a memset. A closing tag below it is
# compared with itself, and at the end of the file its name is the one the memset left: none.
def test_a_declaration_with_a_space_before_the_end_swallows_the_file(tmp_path):
    found = findings(tmp_path, '<?xml version="1.0" ?>\n' + GOOD, "--select", "TOPO001")
    assert [f["code"] for f in found] == ["TOPO001"]
    assert 'stops at line 8 with "XML Parse : unterminated "; communicator init fails' in found[0]["message"]
    assert "expected >, got '?'" not in found[0]["message"]


def test_a_declaration_without_the_space_stops_at_the_question_mark(tmp_path):
    found = findings(tmp_path, '<?xml version="1.0"?>\n' + GOOD, "--select", "TOPO001")
    assert "NCCL 2.30.7's parser stops with \"XML Parse : expected >, got '?'\"" in found[0]["message"]


def test_doctype_text_is_nccls_empty_name(tmp_path):
    found = findings(tmp_path, (ROOT / "fixtures/rules/TOPO001/bad_doctype.xml").read_text(), "--select", "TOPO001")
    assert 'stops at line 8 with "XML Parse : unterminated "' in found[0]["message"]
    assert "!DOCTYPE\"" not in found[0]["message"]
    expected = answer("fixtures/rules/TOPO001/bad_doctype.xml", "v2.30.7-1")
    assert expected["message"] == "XML Parse : unterminated "


def test_any_closing_tag_closes_an_ignored_element(tmp_path):
    """NCCL accepts <foo></bar> below a kept element: the ignored element's slot holds the closing
    tag too, so xmlLoadSub compares the name with itself."""
    from topolint.model.nccl_xml import read_nccl_xml

    text = GOOD.replace('<gpu dev="0"', '<foo>\n</bar>\n<gpu dev="0"')
    tree = read_nccl_xml(text.encode(), "t.xml", NcclVersion.parse("2.30.7"))
    assert [g.name for g in tree.descendants("gpu")] == ["gpu"]  # the <gpu> after it is kept


def test_a_bom_before_a_declaration_quotes_the_bom_stop(tmp_path):
    """NCCL stops at the BOM's first byte (xmlGetNode "expecting '<'"); the declaration finding
    says NCCL stops before it instead of quoting a text NCCL never prints for this file."""
    path = tmp_path / "bom.xml"
    path.write_bytes(b"\xef\xbb\xbf" + ('<?xml version="1.0"?>\n' + GOOD).encode())
    result = run_cli("check", str(path), "--format", "json", "--isolated", "--no-cache", "--select", "TOPO001")
    messages = [f["message"] for f in json.loads(result.stdout)["findings"]]
    assert any("expecting '<', got '\u00ef'" in m for m in messages)
    before = "<?xml ...?> declaration on line 1: NCCL stops before reaching it (line 1"
    assert any(m.startswith(before) for m in messages)


def test_reverse_path_text_names_type_id_and_links():
    """src/graph/paths.cc ncclTopoSetPaths: "Failed to find reverse path from remNode %d/%lx
    nlinks %d to node %d/%lx"; from 2.30.7 a GPU is linked through its DEV node, type 8."""
    for path, tag in (("gen-8-987.xml", "v2.22.3-1"), ("fixtures/rules/TOPO002/bad_empty_attributes.xml", "v2.30.7-1")):
        expected, got = answer(path, tag), port(path, tag)
        assert expected["message"].startswith("Failed to find reverse path from remNode ")
        assert (got["stage"], got["message"]) == (expected["stage"], expected["message"]), path


def test_nvlink_without_its_gpu_names_the_parent_bus_as_each_version_prints_it():
    """src/graph/topo.cc ncclTopoAddNvLinks: "could not find GPU %lx" (the int), "could not find
    DEV for GPU %lx" at 2.30.3, "... %s" (the busid as written) at 2.30.7."""
    path = "fixtures/rules/TL003/bad_static_file_info/topo.xml"
    for tag in ("v2.29.7-1", "v2.30.3-1", "v2.30.7-1"):
        assert port(path, tag)["message"] == answer(path, tag)["message"], tag


def test_net_mask_warn_keeps_its_newline_and_nccls_empty_refusal_is_empty():
    """topo.cc ncclTopoGetLocalGpu (2.18.1) ends its format in "\\n"; ncclTopoFlattenBcmSwitches
    fails through ncclTopoIdToIndex, which warns about nothing."""
    got = port("gen-8-888.xml", "v2.18.1-1")
    assert got["message"] == answer("gen-8-888.xml", "v2.18.1-1")["message"] and got["message"].endswith("\n")
    empty = port("gen-8-236.xml", "v2.30.7-1")
    assert answer("gen-8-236.xml", "v2.30.7-1")["message"] == "" and empty["message"] == ""
    assert empty["stage"] != "crash" and "ncclTopoIdToIndex" in empty["detail"]


def test_a_file_without_system_crashes_nccl_before_2_30_7():
    """topo.cc ncclTopoGetSystemFromXml dereferences a NULL topNode until 2.30.7 checks it: the
    answers mark a crash, which the port reports as one (not as a refusal)."""
    path = "fixtures/samples/nccl-graph.xml"
    assert answer(path, "v2.30.3-1")["stage"] == "crash" and port(path, "v2.30.3-1")["stage"] == "crash"
    assert port(path, "v2.30.7-1")["message"] == answer(path, "v2.30.7-1")["message"]


# ---- 2. PXN by version for nvidia-smi topo -m -------------------------------------------------
# src/graph/paths.cc ncclTopoComputePaths: 2.12-2.17 take an NVLink peer at PXB from the NIC
# (v2.12.10: the first whose own NET it is; v2.12.12, v2.14.3: any, preferably that one); 2.18
# takes only the NIC's local GPU (ncclTopoGetLocalGpu). On a DGX-1V GPU 7's only such peer is GPU 3,
# and mlx5_0's local GPU is GPU 2 (2.19+) or GPU 0 (2.18.5: ncclTopoGetLocalGpu looks at every GPU).
DGX1V = "fixtures/samples/dgx1v-like-cube-mesh-1nic.xml"
PXN_TAGS = {"v2.11.4-1": None, "v2.12.10-1": "GPU3", "v2.12.12-1": "GPU3", "v2.14.3-1": "GPU3", "v2.17.1-1": "GPU3",
            "v2.18.1-1": None, "v2.18.5-1": None, "v2.19.4-1": None, "v2.27.7-1": None, "v2.30.7-1": None}


def _dgx1v_matrix(version: NcclVersion):
    from types import SimpleNamespace

    from compare import matrix_of

    from topolint.checks._matrix import MatrixContext
    from topolint.inputs.source import SourceFile
    from topolint.model.nccl_graph import NcclSystem
    from topolint.parsers.nvidia_smi_topo import parse_matrix

    system = NcclSystem(SimpleNamespace(path=DGX1V, text=(ROOT / DGX1V).read_text(), bom=False), version)
    matrix = parse_matrix(SourceFile("topo-m.txt", matrix_of(system)))
    return system, MatrixContext(SimpleNamespace(name="n", topologies=[], matrices=[matrix]), matrix)


def test_matrix_of_a_dgx1v_follows_each_pxn_row_as_the_file_does():
    """The matrix the file shows gives the PXN relays NCCL's port gives the file, at every row."""
    for tag, gpu7 in PXN_TAGS.items():
        version = NcclVersion.parse(tag)
        system, context = _dgx1v_matrix(version)
        for g in range(8):
            pxn = system.type_name(system.nodes["GPU"][g].paths["NET"][0].type) == "PXN"
            relay = system.intermediate(g, 0) if pxn else None
            want = (None, None) if relay is None else (f"GPU{relay}", "mlx5_0")
            assert context.pxn_proxy(f"GPU{g}", version)[:2] == want, (tag, g)
        assert context.pxn_proxy("GPU7", version)[0] == gpu7, tag


def _numa001(path: str, version: str) -> dict:
    result = run_cli("check", path, "--format", "json", "--isolated", "--no-cache", "--select", "NUMA001",
                     "--nccl-version", version)
    return {f["message"].split(" (")[0]: f for f in json.loads(result.stdout)["findings"]}


def test_dgx1v_matrix_gives_gpu7_pxn_via_gpu3_on_2_14(corpus):
    path = str(corpus / "nvidia-smi-topo" / "dgx1v-style-8xv100-nv1-nv2-cube-mesh-single-edr-nic_oneflow-benchmark.txt")
    old = _numa001(path, "2.14.3")
    assert old["GPU 7"]["severity"] == "warning" and "through GPU 3" in old["GPU 7"]["message"]
    new = _numa001(path, "2.18.5")
    assert new["GPU 7"]["severity"] == "error" and new["GPU 6"]["severity"] == "error"  # relay GPU 0: PHB
    assert _numa001(path, "2.30.7")["GPU 6"]["severity"] == "warning"  # relay GPU 2 (2.19+)


# ---- 3. Findings on files NCCL refuses --------------------------------------------------------
# What NCCL's reader refuses (src/graph/xml.cc xmlGetNode/xmlGetToken: a start tag split over
# lines, spaces around '=', a BOM, text between elements) and an <nvlink> without tclass (topo.cc
# ncclTopoAddNvLinks): the path and link rules say they describe the file as written; PCIE005,
# which judges the traffic NCCL's channels would put on an uplink, says nothing.
AS_WRITTEN = "NCCL will not load this file; as written, "
ODDITIES = {
    "split": lambda t: t.replace('" class=', '"\n      class=', 1),
    "space_eq": lambda t: t.replace(' class="', ' class = "', 1),
    "text": lambda t: t.replace("<cpu ", "stray text\n<cpu ", 1),
    "bom": lambda t: "\ufeff" + t,
}


def _refused(tmp_path, fixture: str, oddity: str, code: str) -> tuple[list[dict], list[dict]]:
    text = (ROOT / "fixtures" / "rules" / fixture).read_text(encoding="utf-8")
    before = findings(tmp_path, text, "--select", code, name="before.xml")
    after = findings(tmp_path, ODDITIES[oddity](text), "--select", f"{code},TOPO001", name="after.xml")
    assert [f["code"] for f in after].count("TOPO001") == 1, after
    return before, [f for f in after if f["code"] == code]


def test_path_rules_describe_a_refused_file_as_written(tmp_path):
    cases = [("NUMA001/bad.xml", "bom", "NUMA001"), ("NUMA002/bad.xml", "split", "NUMA002"),
             ("NUMA001/bad_pxn.xml", "space_eq", "NUMA001"),
             ("NVL001/bad_dump_no_nvswitch_link.xml", "space_eq", "NVL001"),
             ("NVL002/bad_dump_nvswitch_sum.xml", "text", "NVL002"),
             ("TOPO003/bad_gen2_switch.xml", "split", "TOPO003"), ("PCIE004/bad.xml", "bom", "PCIE004")]
    for fixture, oddity, code in cases:
        before, after = _refused(tmp_path, fixture, oddity, code)
        assert before and not any(f["message"].startswith(AS_WRITTEN) for f in before), fixture
        assert len(after) == len(before), fixture
        for old, new in zip(before, after):
            assert new["message"] == AS_WRITTEN + old["message"], fixture
            assert new["severity"] == old["severity"]


def test_a_missing_tclass_makes_nvl001_speak_of_the_file_as_written(tmp_path):
    text = (ROOT / "fixtures/rules/NVL001/bad_dump_no_nvswitch_link.xml").read_text()
    refused = text.replace(' tclass="0x068000"', "", 1)
    assert refused != text
    found = findings(tmp_path, refused, "--select", "NVL001,TOPO001")
    assert any(f["code"] == "TOPO001" and "Attribute tclass of node nvlink not found" in f["message"] for f in found)
    assert [f["message"].startswith(AS_WRITTEN) for f in found if f["code"] == "NVL001"] == [True]


def test_pcie005_is_silent_on_a_refused_file_and_says_why(tmp_path):
    before, after = _refused(tmp_path, "PCIE005/bad.xml", "split", "PCIE005")
    assert before and after == []
    path = tmp_path / "after.xml"
    result = run_cli("check", str(path), "--isolated", "--no-cache", "--select", "PCIE005", "--verbose")
    assert "PCIE005 says nothing about a file NCCL will not load as written (TOPO001)" in result.stdout + result.stderr


# ---- 4. lspci's own "(downgraded)" without the LnkCap line ------------------------------------
# pciutils ls-caps.c cap_express_link/link_compare: lspci marks a LnkSta value "(downgraded)" when
# it is below the device's own LnkCap (3.6-3.7: "(ok)" or "(downgraded)" after both values of
# every device; 3.8+: " (downgraded)" only, not for root ports, downstream ports, PCIe bridges).
def _pcie001(tmp_path, text: str) -> list[dict]:
    return findings(tmp_path, text, "--select", "PCIE001", name="lspci.txt")


def test_lnksta_marked_downgraded_without_lnkcap_is_info_naming_speed_and_width(tmp_path):
    both = _pcie001(tmp_path, "\t\tLnkSta:\tSpeed 5GT/s (downgraded), Width x1 (downgraded)\n"
                              "\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-\n")
    assert [(f["severity"], f["line"]) for f in both] == [("info", 1)]
    assert "lspci marks both the speed 5GT/s and the width x1 downgraded" in both[0]["message"]
    assert both[0]["message"].endswith("its LnkCap line and the other end of the link are not in the input")
    assert any("ls-caps.c link_compare" in e for e in both[0]["evidence"])


def test_one_marked_value_is_named_alone(tmp_path):
    header = "17:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n" \
             "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
    speed = _pcie001(tmp_path, header + "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16 (ok)\n")
    assert "marks the speed 16GT/s downgraded" in speed[0]["message"] and "width" not in speed[0]["message"]
    assert speed[0]["message"].endswith("GPUs lower the link speed when idle") and speed[0]["severity"] == "info"
    width = _pcie001(tmp_path, header + "\t\tLnkSta:\tSpeed 32GT/s, Width x8 (downgraded)\n")
    assert "marks the width x8 downgraded" in width[0]["message"] and "idle" not in width[0]["message"]
    assert not _pcie001(tmp_path, header + "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n")


def test_a_matrix_nccl_2_18_1_would_fail_on_gives_no_pxn_answer():
    """topo.cc ncclTopoGetLocalGpu (2.18.1-2.18.3) fails when two GPUs at a NIC's best type have
    different masks of best NICs; the matrix path then rules no PXN route out (no traceback)."""
    from types import SimpleNamespace

    from topolint.checks._matrix import MatrixContext
    from topolint.inputs.source import SourceFile
    from topolint.parsers.nvidia_smi_topo import parse_matrix

    text = ("\tGPU0\tGPU1\tmlx5_0\tmlx5_1\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\tX\tNV2\tPIX\tPIX\t0-1\t0\nGPU1\tNV2\tX\tPXB\tPIX\t0-1\t0\n"
            "mlx5_0\tPIX\tPXB\tX\tPIX\nmlx5_1\tPIX\tPIX\tPIX\tX\n")
    matrix = parse_matrix(SourceFile("topo-m.txt", text))
    context = MatrixContext(SimpleNamespace(name="n", topologies=[], matrices=[matrix]), matrix)
    assert context.pxn_proxy("GPU1", NcclVersion.parse("2.18.1")) == (None, None, False)
    assert context.pxn_proxy("GPU1", NcclVersion.parse("2.18.5"))[2] is True
