"""NVLinks from hwloc's NVLinkBandwidth matrix (issue 9): the parser keeps what hwloc wrote
(hwloc/topology-xml.c hwloc__xml_import_distances reads it, hwloc__xml_v2export_distances writes
it), model/hwloc_nvlink.py turns it into NCCL-dump nvlinks (hwloc/topology-nvml.c
hwloc_nvml_discover: per-link bandwidth by NVLink version, summed per peer), and NVL001/NVL002
judge an hwloc-only node with it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

from topolint.inputs.source import InputError, SourceFile
from topolint.model.hwloc_nvlink import CPU_CLASS, GPU_CLASS, NVSWITCH_CLASS, generation, link_unit
from topolint.model.hwloc_topology import derived_topology
from topolint.model.numbers import hwloc_u64
from topolint.parsers.hwloc_xml import parse_hwloc

sys.path.insert(0, str(FIXTURES / "hwloc"))
from make_nvlink_fixtures import HEALTHY, NO_SWITCH_LINKS, ONE_LINK_DOWN, export  # noqa: E402

POWER8 = "hwloc/power8-4xp100-nvlink-distances-lstopo-xml_hwloc-tests.xml"
DGX2 = "hwloc/dgx2-16xv100-12-nvswitch-lstopo-xml_hwloc-tests.xml"


def _read(text: str, path: str = "lstopo.xml"):
    return parse_hwloc(SourceFile(path=path, text=text))


def _corpus(corpus, name: str):
    return _read((corpus / name).read_text(encoding="utf-8"), name)


def test_power8_matrix_names_gpus_and_the_packages_of_their_npu_links(corpus):
    (matrix,) = _corpus(corpus, POWER8).nvlink_matrices
    assert [(o.kind, o.gp_index) for o in matrix.objects] == [
        ("OSDev", 332), ("OSDev", 333), ("OSDev", 334), ("OSDev", 335), ("Package", 3), ("Package", 134)]
    assert [o.bus_id for o in matrix.objects[:4]] == ["0002:01:00.0", "0003:01:00.0", "000a:01:00.0", "000b:01:00.0"]
    assert [o.numa_nodes for o in matrix.objects[4:]] == [[0], [1]]
    # 36 values, the diagonal (hwloc's artificial 1000000) and zeros left out: 12 remain
    assert len(matrix.values) == 12 and {v.mbps for v in matrix.values} == {40000}
    first = matrix.values[0]
    assert (first.source, first.target, first.loc.line, first.loc.column) == (0, 1, 196, 36)
    assert [loc.line for loc in matrix.row_locs] == [196, 196, 197, 197, 198, 199]


def test_power8_p100_pairs_and_cpu_links_as_nccl_would_dump_them(corpus):
    topology = derived_topology(_corpus(corpus, POWER8))
    links = {g.bus_id: sorted((n.tclass, n.target, n.count, n.bw_mbps) for n in g.nvlinks) for g in topology.gpus}
    # 40000 MB/s = 2 NVLink1 links of 20000 (P100 SXM2, 10de:15f9): 2 to the pair peer, 2 to the CPU
    assert links["0002:01:00.0"] == [(GPU_CLASS, "0003:01:00.0", 2, 40000), (CPU_CLASS, None, 2, 40000)]
    assert links["000b:01:00.0"] == [(GPU_CLASS, "000a:01:00.0", 2, 40000), (CPU_CLASS, None, 2, 40000)]


def test_dgx2_every_v100_has_one_link_to_each_of_six_nvswitches(corpus):
    hwloc = _corpus(corpus, DGX2)
    (matrix,) = hwloc.nvlink_matrices
    assert len(matrix.objects) == 28 and sum(o.subtype == "NVSwitch" for o in matrix.objects) == 12
    topology = derived_topology(hwloc)
    assert len(topology.gpus) == 16
    for gpu in topology.gpus:
        assert sorted((n.tclass, n.count, n.bw_mbps) for n in gpu.nvlinks) == [(NVSWITCH_CLASS, 1, 25000)] * 6
        assert all(n.loc.path == DGX2 and 350 <= n.loc.line <= 428 for n in gpu.nvlinks)


@pytest.mark.parametrize("name", [POWER8, DGX2])
def test_corpus_nvlink_samples_are_healthy(name, corpus):
    """DGX-2: 16 GPUs on the NVSwitches with equal counts; POWER8: bridged pairs plus CPU links
    (no all-to-all pattern). Neither fires."""
    result = run_cli("check", corpus / name, "--select", "NVL001,NVL002", "--preview", "--format", "json")
    assert json.loads(result.stdout)["findings"] == [] and result.exit_code == 0


def _codes(path: Path, *extra: str) -> tuple[list[dict], str]:
    result = run_cli("check", path, "--select", "NVL001,NVL002", "--preview", "--format", "json", *extra)
    return json.loads(result.stdout)["findings"], result.stderr


def test_nvl001_evidence_points_at_the_matrix_row_and_says_it_is_hwloc(tmp_path):
    path = tmp_path / "node.xml"
    path.write_text(export(NO_SWITCH_LINKS), encoding="utf-8")
    (finding,) = _codes(path)[0]
    assert finding["code"] == "NVL001" and finding["entity"].endswith("/gpu/0000:4e:00.0")
    row = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("    <u64values")) + 3
    assert any(e.startswith(f"{path}:{row}: GPU 3's row of hwloc's NVLinkBandwidth matrix") for e in finding["evidence"])
    assert any("from an hwloc export" in e for e in finding["evidence"])


def test_nvl002_counts_links_at_hwlocs_per_link_bandwidth(tmp_path):
    path = tmp_path / "node.xml"
    path.write_text(export(ONE_LINK_DOWN), encoding="utf-8")
    (finding,) = _codes(path)[0]
    assert finding["code"] == "NVL002" and "GPU 2 has 11 NVLinks to the NVSwitches" in finding["message"]
    assert any("275000 MB/s to 6 peers (11 NVLinks)" in e for e in finding["evidence"])


def test_unknown_generation_keeps_bandwidth_nvl001_still_judges_presence_nvl002_says_why_not(tmp_path):
    path = tmp_path / "node.xml"
    path.write_text(export(ONE_LINK_DOWN, device="2bff", model=None), encoding="utf-8")
    topology = derived_topology(_read(path.read_text()))
    assert {(n.count, n.bw_mbps) for g in topology.gpus for n in g.nvlinks} == {(None, 50000), (None, 25000)}
    findings, stderr = _codes(path, "--verbose")
    assert findings == [] and "NVLink counts unknown" in stderr
    path.write_text(export(NO_SWITCH_LINKS, device="2bff", model=None), encoding="utf-8")
    (finding,) = _codes(path)[0]
    assert finding["code"] == "NVL001" and "300000 MB/s of NVLink" in finding["message"]


def test_a_gpu_hidden_from_nvml_is_unknown_not_missing(tmp_path):
    """NVML gives every GPU it sees a row (zeros when its links are down); a GPU PCI device that
    is no row was hidden from it (a cgroup): NVL001 must not call its links missing."""
    hidden = export(HEALTHY)
    # drop GPU 3's NVML device from the matrix: a 9x9 matrix without row/column 3
    lines = hidden.splitlines()
    start = next(i for i, line in enumerate(lines) if "<distances2hetero" in line)
    rows = [line.split(">")[1].split("<")[0].split() for line in lines[start + 2:start + 12]]
    kept = [[v for j, v in enumerate(row) if j != 3] for i, row in enumerate(rows) if i != 3]
    words = [w for row in kept for w in row]
    names = "OSDev:20 OSDev:21 OSDev:22 PCIDev:30 PCIDev:31 PCIDev:32 PCIDev:33 PCIDev:34 PCIDev:35 "
    matrix = (['  <distances2hetero nbobjs="9" kind="25" name="NVLinkBandwidth">',
               f'    <indexes length="{len(names)}">{names}</indexes>']
              + [f'    <u64values length="0">{" ".join(words[k:k + 10])} </u64values>' for k in range(0, 81, 10)]
              + ["  </distances2hetero>"])
    path = tmp_path / "node.xml"
    path.write_text("\n".join(lines[:start] + matrix + lines[start + 13:]) + "\n", encoding="utf-8")
    assert len(_read(path.read_text()).nvlink_matrices[0].objects) == 9
    assert _codes(path)[0] == []


def test_gpu_only_matrix_is_distances2_with_plain_gp_indexes():
    """hwloc writes ``distances2 type="OSDev" indexing="gp"`` when every peer is a GPU
    (hwloc_backend_distances_add_values: one type, no different_types)."""
    text = export(HEALTHY)
    start = text.index("  <distances2hetero")
    gpus_only = ('  <distances2 type="OSDev" nbobjs="2" kind="9" name="NVLinkBandwidth" indexing="gp">\n'
                 '    <indexes length="6">20 21 </indexes>\n'
                 '    <u64values length="30">1000000 300000 300000 1000000 </u64values>\n  </distances2>\n')
    hwloc = _read(text[:start] + gpus_only + "</topology>\n")
    links = {g.bus_id: [(n.tclass, n.target, n.count) for n in g.nvlinks] for g in derived_topology(hwloc).gpus}
    assert links["0000:07:00.0"] == [(GPU_CLASS, "0000:0f:00.0", 12)]
    assert links["0000:47:00.0"] == []  # no row: not in the matrix


BAD = [
    ("u64values length=\"50\">0 1000000", "u64values length=\"50\">x 1000000", "value 'x' is not a number", 28),
    ("u64values length=\"50\">0 1000000", "u64values length=\"50\">-1 1000000", "value '-1' is not a number", 28),
    ("OSDev:21 ", "OSDev:99 ", "names 'OSDev:99', which is no object", 35),
    ("OSDev:21 ", "PCIDev:21 ", "names 'PCIDev:21', which is no object", 35),
    ('nbobjs="10"', 'nbobjs="11"', "has 10 indexes and 100 values; nbobjs=11 needs 11 and 121", 0),
    ('nbobjs="10"', 'nbobjs="9"', "has more than nbobjs=9 indexes", 0),
    ('nbobjs="10"', 'nbobjs="ten"', "nbobjs='ten'", 0),
    ('nbobjs="10"', 'nbobjs="257"', "nbobjs=257: more than the 256 objects", 0),
]


@pytest.mark.parametrize("old,new,message,column", BAD, ids=[b[2][:30] for b in BAD])
def test_a_bad_matrix_is_an_input_error_at_its_line(old, new, message, column):
    text = export(HEALTHY).replace(old, new, 1)
    with pytest.raises(InputError) as error:
        _read(text)
    assert message in error.value.message and error.value.message.startswith("malformed hwloc XML")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if new in row)
    assert error.value.line == line or "nbobjs" in message  # counts are judged at the matrix's line
    if column:
        assert error.value.column == column


def test_nonzero_values_are_bounded_across_the_files_matrices(monkeypatch):
    import topolint.parsers.hwloc_xml as hwloc_xml

    text = export(HEALTHY)
    start, end = text.index("  <distances2hetero"), text.index("</topology>")
    twice = text[:end] + text[start:end] + "</topology>\n"
    assert len(_read(twice).nvlink_matrices) == 2  # 48 nonzero values each
    monkeypatch.setattr(hwloc_xml, "MAX_NVLINK_VALUES", 60)
    with pytest.raises(InputError) as error:
        _read(twice)
    assert "more than 60 nonzero" in error.value.message and error.value.line > text.count("\n")


def test_a_bad_matrix_named_on_the_command_line_is_tl001(tmp_path):
    path = tmp_path / "node.xml"
    path.write_text(export(HEALTHY).replace("OSDev:21 ", "OSDev:99 ", 1), encoding="utf-8")
    result = run_cli("check", path, "--format", "json")
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]
    line = next(i for i, row in enumerate(path.read_text().splitlines(), 1) if "OSDev:99" in row)
    assert result.exit_code == 2 and (finding["line"], finding["column"]) == (line, 35)
    assert "OSDev:99" in finding["message"]


def test_a_bad_matrix_in_a_folder_walk_is_tl001_too(tmp_path):
    """A walk reports malformed content of a format it recognised (inputs/collect.py)."""
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "lstopo.xml").write_text(export(HEALTHY).replace("OSDev:21 ", "OSDev:99 ", 1), encoding="utf-8")
    result = run_cli("check", tmp_path, "--format", "json")
    assert result.exit_code == 2
    assert [f["code"] for f in json.loads(result.stdout)["findings"]] == ["TL001"]


def test_words_on_lines_of_their_own_keep_their_line_and_column():
    text = export(HEALTHY).replace('length="50">0 1000000 0 0', 'length="50">0\n  1000000 0\n0', 1)
    matrix = _read(text).nvlink_matrices[0]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("0 50000 50000 50000 50000 50000 50000 <"))
    value = next(v for v in matrix.values if v.source == 1 and v.target == 4)
    assert (value.loc.line, value.loc.column) == (line, 3)


def test_a_gpu_matrix_not_indexed_by_gp_is_ignored_as_hwloc_ignores_it():
    text = export(HEALTHY)
    start = text.index("  <distances2hetero")
    by_os = ('  <distances2 type="OSDev" nbobjs="2" kind="9" name="NVLinkBandwidth" indexing="os">\n'
             '    <indexes length="4">0 1 </indexes>\n    <u64values length="8">0 1 1 0 </u64values>\n  </distances2>\n')
    assert _read(text[:start] + by_os + "</topology>\n").nvlink_matrices == []


def test_the_release_is_read_from_the_hwlocversion_info():
    """50000 MB/s from an H100 to each NVSwitch: 2 links at 25000, or 1 at 50000 from hwloc 2.9.0."""
    text = export(HEALTHY, device="2330", model="NVIDIA H100 80GB HBM3")
    tagged = text.replace('<topology version="3.0">\n', '<topology version="3.0">\n  <info name="hwlocVersion" '
                          'value="2.9.0"/>\n', 1)
    assert _read(tagged).release == "2.9.0" and _read(text).release is None
    counts = [{n.count for g in derived_topology(_read(t)).gpus for n in g.nvlinks} for t in (text, tagged)]
    assert counts == [{2}, {1}]


def test_a_one_object_matrix_is_ignored_as_hwloc_ignores_it():
    text = export(HEALTHY)
    start = text.index("  <distances2hetero")
    single = ('  <distances2hetero nbobjs="1" kind="25" name="NVLinkBandwidth">\n    <indexes length="9">OSDev:20 '
              '</indexes>\n    <u64values length="8">1000000 </u64values>\n  </distances2hetero>\n</topology>\n')
    assert _read(text[:start] + single).nvlink_matrices == []


def test_hwloc_u64_reads_what_strtoull_base_0_reads():
    assert [hwloc_u64(w) for w in ("25000", "0", "0x10", "010", "18446744073709551616")] == [
        25000, 0, 16, 8, 18446744073709551615]
    assert [hwloc_u64(w) for w in ("-1", "12a", "", "1.5")] == [None, None, None, None]


@pytest.mark.parametrize("pci_id,model,gen", [
    ("0x10de:0x15f9", None, 1), ("0x10de:0x1db8", None, 2), ("0x10de:0x20b2", None, 3), ("0x10de:0x2330", None, 4),
    ("0x10de:0x2901", None, 5), ("0x10de:0x2bff", "NVIDIA H100 80GB HBM3", 4), ("0x10de:0x2bff", "Tesla V100-SXM2-16GB", 2),
    ("0x10de:0x2bff", None, None)])
def test_nvlink_generation_by_pci_id_then_gpu_model(pci_id, model, gen):
    assert generation(pci_id, model) == gen


def test_per_link_bandwidth_follows_hwlocs_table_by_release():
    # A100: 25000 per link from hwloc 2.9.1 on, 50000 in 2.9.0 (352348a1d, undone by 01fee4021)
    assert link_unit([50000] * 6, 3, None) == 25000
    assert link_unit([100000] * 6, 3, "2.9.0") == link_unit([100000] * 6, 3, "2.9.0rc2") == 50000
    assert link_unit([50000] * 6, 4, "2.9.0") == 50000 and link_unit([50000] * 6, 4, "2.10.0") == 25000
    assert link_unit([100000] * 6, 3, None) == 50000  # 24 links at 25000 exceed an A100's 12
    # B200: 50000 per link (NVLink 5.0 since 8d00b43df), 25000 where NVML reports an older version
    assert link_unit([450000] * 2, 5, None) == 50000
    assert link_unit([225000] * 2, 5, None) == 25000
    assert link_unit([30000], 2, None) is None  # no V100 link count gives 30000 MB/s


def test_hwloc_and_a_matrix_that_agree_give_one_finding_per_gpu(tmp_path):
    """The matrix names GPUs by index on an hwloc-only node; the hwloc finding (bus id, matrix
    row) stands for both."""
    from make_nvlink_fixtures import topo_matrix

    (tmp_path / "lstopo.xml").write_text(export(NO_SWITCH_LINKS), encoding="utf-8")
    (tmp_path / "topo.txt").write_text(topo_matrix(12, unlinked=3), encoding="utf-8")
    alone = run_cli("check", tmp_path / "topo.txt", "--select", "NVL001", "--format", "json")
    assert [f["entity"] for f in json.loads(alone.stdout)["findings"]] == ["topo/gpu/3"]  # the matrix alone fires
    findings, _ = _codes(tmp_path)
    assert [(f["code"], f["entity"].rsplit("/", 1)[1]) for f in findings] == [("NVL001", "0000:4e:00.0")]
    assert findings[0]["path"].endswith("lstopo.xml")


def test_tl003_compares_hwloc_nvlink_units_with_the_matrix_only_for_gpus_nvml_listed():
    result = run_cli("check", FIXTURES / "rules" / "TL003" / "bad_hwloc_nvlink", "--select", "TL003",
                     "--format", "json")
    (finding,) = json.loads(result.stdout)["findings"]
    assert "11 NVLinks in hwloc's NVLinkBandwidth matrix, 12 in nvidia-smi topo -m" in finding["message"]
    assert any("row of hwloc's NVLinkBandwidth matrix" in e for e in finding["evidence"])


def test_target_classes_are_the_ones_nccl_maps_to_nvswitch_and_cpu():
    """src/graph/topo.cc kvDictPciClass: 0x068000 is NVS, 0x068001 is CPU (ncclTopoAddNvLinks then
    links the GPU to its local CPU, whatever the target); model/system.py builds NCCL's graph so."""
    from topolint.model.system import CPU_CLASS as SYSTEM_CPU
    from topolint.model.system import NVSWITCH_CLASS as SYSTEM_NVSWITCH

    assert (NVSWITCH_CLASS, CPU_CLASS) == (SYSTEM_NVSWITCH, SYSTEM_CPU) == ("0x068000", "0x068001")
