"""nvidia-smi -q / -a and --query-gpu CSV (parsers/nvidia_smi_q.py): identity and Fabric fields
with their lines, refusals with theirs (TL001), and the corpus samples of the Fabric section
against the committed table tests/nvidia_smi_q_corpus_expectations.tsv (healthy, N/A, faulty).
The corpus is third-party material, read in place; without it those tests skip."""

from __future__ import annotations

import csv
import json
import re

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.model.gpu_query import GpuQueryFile
from topolint.parsers.nvidia_smi_q import parse_gpu_query, parse_gpu_query_csv

TABLE = ROOT / "tests" / "nvidia_smi_q_corpus_expectations.tsv"
SMI_KINDS = ("nvidia-smi-q", "nvidia-smi --query-gpu")

QUERY = """$ nvidia-smi -q

==============NVSMI LOG==============

Timestamp                                 : Mon Mar 16 09:12:44 2026
Driver Version                            : 570.124.06
CUDA Version                              : 12.8

Attached GPUs                             : 2
GPU 00000009:01:00.0
    Product Name                          : NVIDIA GB200
    Serial Number                         : 1652324000001
    GPU UUID                              : GPU-3a1b2c4d-5e6f-4a0b-9c8d-7e6f5a4b0001
    Module ID                             : 1
    MIG Mode
        Current                           : N/A
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 32766
        ClusterUUID                       : 7F3E9A21-4C5B-4D6E-9F80-1A2B3C4D5E6F
        Health
            Bandwidth                     : Full
            Summary                       : Healthy
    Processes                             : None
GPU 00000009:02:00.0
    Product Name                          : NVIDIA GB200
    Clocks Event Reasons
        Summary                           : Not Active
    Fabric
        State                             : In Progress
        Status                            : N/A
"""


def parse(text: str) -> GpuQueryFile:
    result = parse_gpu_query(SourceFile("q.txt", text))
    GpuQueryFile.model_validate(result.model_dump())  # build() output fits the schema
    return result


def refused(text: str, parser=parse_gpu_query) -> InputError:
    with pytest.raises(InputError) as caught:
        parser(SourceFile("q.txt", text))
    assert caught.value.message.startswith("malformed nvidia-smi")
    return caught.value


def test_query_fields_keep_their_lines_and_sections():
    assert sniff(QUERY) == "nvidia-smi-q"
    result = parse(QUERY)
    assert (result.kind, result.driver.text, result.attached) == ("query", "570.124.06", 2)
    first, second = result.gpus
    assert (first.index, first.bus_id, first.name.text, first.module_id.text) == (0, "0009:01:00.0", "NVIDIA GB200", "1")
    assert first.uuid.text.endswith("0001") and first.uuid.loc.line == 13
    fabric = first.fabric
    assert (fabric.loc.line, fabric.state.loc.line, fabric.state.loc.column) == (17, 18, 45)
    assert fabric.health_summary.text == "Healthy" and fabric.health_summary.loc.line == 24
    assert fabric.domain == "7f3e9a21-4c5b-4d6e-9f80-1a2b3c4d5e6f/32766"
    # "Clocks Event Reasons / Summary" is not the fabric's health summary.
    assert second.fabric.health_summary is None
    assert (second.fabric.state.value, second.fabric.status.value) == ("In Progress", None)
    assert second.fabric.stated and second.fabric.domain is None


def test_an_all_zero_cluster_uuid_and_all_na_fields_state_no_domain():
    text = QUERY.replace("7F3E9A21-4C5B-4D6E-9F80-1A2B3C4D5E6F", "00000000-0000-0000-0000-000000000000")
    assert parse(text).gpus[0].fabric.domain is None
    na = "\n".join(line if " : " not in line or "Fabric" in line else line.split(":")[0] + ": N/A"
                   for line in QUERY.splitlines()[18:23])
    fabric = parse("GPU 00000000:18:00.0\n    Fabric\n" + na + "\n").gpus[0].fabric
    assert not fabric.stated


@pytest.mark.parametrize("text, line, words", [
    (QUERY.replace("GPU 00000009:02:00.0", "GPU 00000009:01:00.0"), 26, "appears twice (first on line 10)"),
    (QUERY.replace("            Summary                       : Healthy",
                   "            Summary                       : Healthy\n            Summary : Healthy"), 25,
     "states Fabric / Health / Summary twice"),
    (QUERY.replace("    Processes                             : None", "    <<< cut here >>>"), 25, "expected"),
    ("hello\n", 1, "no 'GPU 00000000:BB:DD.F' block"),
])
def test_unreadable_query_is_refused_with_its_line(text, line, words):
    error = refused(text)
    assert error.line == line and words in error.message


def test_an_excerpt_numbers_each_fabric_section_as_a_gpu():
    block = "    Fabric\n        State                             : Completed\n        Status : Success\n"
    text = "# nvidia-smi -q | grep -A2 Fabric\n" + block + "--\n" + block.replace("Success", "Insufficient Resources")
    assert sniff(text) == "nvidia-smi-q"
    result = parse(text)
    assert result.kind == "excerpt"
    assert [(g.index, g.bus_id, g.fabric.status.text, g.fabric.loc.line) for g in result.gpus] == [
        (0, None, "Success", 2), (1, None, "Insufficient Resources", 6)]


CSV = """index, name, pci.bus_id, fabric.state, fabric.status, fabric.cliqueId, fabric.clusterUuid, memory.total [MiB]
0, NVIDIA GB200, 00000009:01:00.0, Completed, Success, 32766, 7f3e9a21-4c5b-4d6e-9f80-1a2b3c4d5e6f, 189471 MiB
1, NVIDIA GB200, 00000009:02:00.0, Not Started, [N/A], [N/A], [N/A], 189471 MiB
"""


def test_query_gpu_csv_rows_with_columns():
    assert sniff(CSV) == "nvidia-smi-query-csv"
    result = parse_gpu_query_csv(SourceFile("c.csv", CSV))
    GpuQueryFile.model_validate(result.model_dump())
    first, second = result.gpus
    assert (first.index, first.index_stated, first.bus_id, first.fabric.clique_id.text) == (
        0, True, "0009:01:00.0", "32766")
    assert (second.fabric.state.text, second.fabric.state.loc.line, second.fabric.state.loc.column) == (
        "Not Started", 3, 36)
    assert second.fabric.status.value is None and second.fabric.domain is None


@pytest.mark.parametrize("text, line, words", [
    ("index, name, fabric.state\n0, GB200\n", 2, "2 values for the header's 3 fields"),
    ("index, fabric.state\n0, Completed\n0, Completed\n", 3, "GPU 0 appears twice"),
    ("index, fabric.state\nx, Completed\n", 2, "is not a GPU number"),
    ("index, fabric.state\n", 1, "no GPU row"),
    ("index, pci.bus_id, fabric.state\n0, 00:zz.0, Completed\n", 2, "is no PCI address"),
])
def test_unreadable_csv_is_refused_with_its_line(text, line, words):
    error = refused(text, parse_gpu_query_csv)
    assert error.line == line and words in error.message


def test_sniffing_leaves_other_outputs_alone():
    assert sniff("index, name\n0, NVIDIA H100\n") is None  # no fabric.* or bus id column
    assert sniff("GPU 0: NVIDIA A100 (UUID: GPU-1)\n\t Link 0: 25 GB/s\n") == "nvidia-smi-nvlink"
    assert sniff("Fabric\nis a word\n") is None
    assert sniff("hpc-1: 5e797fc6-0f46-421a-8724-0e102c0f723c\n") is None


def test_a_malformed_query_in_a_folder_is_tl001_with_its_line(tmp_path):
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "smi.txt").write_text(QUERY.replace("GPU 00000009:02:00.0", "GPU 00000009:01:00.0"))
    result = run_cli("check", "node1", "--format", "json", cwd=tmp_path)
    assert result.exit_code == 2
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]
    assert [(f["path"], f["line"]) for f in found] == [("node1/smi.txt", 26)]


def test_the_node_join_gives_each_dump_gpu_its_fabric(tmp_path):
    """An NCCL dump and nvidia-smi -q of one node: the join ties each -q block to the dump's GPU by bus id."""
    node = tmp_path / "node1"
    node.mkdir()
    dump = (FIXTURES / "samples" / "healthy-8gpu-dump.xml").read_text()
    (node / "topo.xml").write_text(dump)
    buses = sorted(set(re.findall(r'<pci busid="(0000:[0-9a-f]{2}:00\.0)" class="0x0302', dump)))
    assert buses, "the sample dump names its GPUs' addresses"
    blocks = "".join(f"GPU 0000{bus}\n    Product Name : NVIDIA H100 80GB HBM3\n    Fabric\n        State : "
                     f"{'In Progress' if i == 2 else 'Completed'}\n        Status : Success\n"
                     for i, bus in enumerate(buses))
    (node / "smi-q.txt").write_text("==============NVSMI LOG==============\n\n" + blocks)
    result = run_cli("check", "node1", "--select", "NVL004", "--format", "json", cwd=tmp_path)
    findings = json.loads(result.stdout)["findings"]
    assert [f["entity"] for f in findings] == [f"node1/gpu/{buses[2]}"]


def _rows() -> dict[str, tuple[int, list[int], set[str]]]:
    rows = {}
    with TABLE.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if row:
                lines = [int(n) for n in row[2].split(",") if n != "-"]
                rows[row[0]] = (int(row[1]), lines, {c for c in row[3].split(",") if c and c != "-"})
    return rows


EXPECTATIONS = _rows()


def test_every_nvidia_smi_q_corpus_sample_has_a_row(corpus):
    manifest = (corpus / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    named = {line.split("\t")[0] for line in manifest[1:] if "\t" in line
             and line.split("\t")[1].startswith(SMI_KINDS)}
    folder = {f"nvidia-smi-q-fabric/{p.name}" for p in (corpus / "nvidia-smi-q-fabric").iterdir() if p.is_file()}
    assert named and not (named | folder) - set(EXPECTATIONS), "add rows to tests/nvidia_smi_q_corpus_expectations.tsv"


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_nvidia_smi_q_corpus_file(name, corpus):
    path = corpus / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    count, lines, must_not = EXPECTATIONS[name]
    result = run_cli("check", path, "--select", "ALL", "--preview", "--format", "json")
    assert "Traceback" not in result.stderr
    findings = json.loads(result.stdout)["findings"]
    fabric = [f for f in findings if f["code"] == "NVL004"]
    assert len(fabric) == count, [f["message"] for f in fabric]
    assert [f["line"] for f in fabric] == lines
    assert all(f["severity"] == "error" for f in fabric)
    assert not must_not & {f["code"] for f in findings}, [f["message"] for f in findings]


def test_the_inventory_records_the_nvlink_domain_and_each_gpus_fabric(tmp_path):
    (tmp_path / "q.txt").write_text(QUERY, encoding="utf-8")
    run_cli("check", "q.txt", "--node", "gb1", "--inventory", "gb1.json", cwd=tmp_path)
    document = json.loads((tmp_path / "gb1.json").read_text(encoding="utf-8"))
    assert document["nvlink_domain"] == {"value": "7f3e9a21-4c5b-4d6e-9f80-1a2b3c4d5e6f/32766", "path": "q.txt",
                                         "line": 21}
    gpus = {g["bus_id"]: g for g in document["gpus"]}
    assert gpus["0009:01:00.0"]["model"]["value"] == "GB200"
    assert gpus["0009:01:00.0"]["fabric_health"] == {"value": "Healthy", "path": "q.txt", "line": 24}
    assert gpus["0009:02:00.0"]["fabric_state"]["value"] == "In Progress"
    assert "fabric_health" not in gpus["0009:02:00.0"]
    assert "nvlink_domain" not in document["unknown"]


@pytest.mark.parametrize("uuid, reason", [
    ("00000000-0000-0000-0000-000000000000", "not applicable: the GPUs' Fabric sections name no ClusterUUID"),
    ("N/A", "not applicable: the GPUs' Fabric sections name no ClusterUUID"),
])
def test_an_all_zero_or_na_cluster_uuid_is_no_domain_in_the_inventory(tmp_path, uuid, reason):
    (tmp_path / "q.txt").write_text(QUERY.replace("7F3E9A21-4C5B-4D6E-9F80-1A2B3C4D5E6F", uuid), encoding="utf-8")
    run_cli("check", "q.txt", "--inventory", "n.json", cwd=tmp_path)
    document = json.loads((tmp_path / "n.json").read_text(encoding="utf-8"))
    assert "nvlink_domain" not in document
    assert document["unknown"]["nvlink_domain"].startswith(reason)


def test_an_inventory_with_fabric_values_reads_back(tmp_path):
    """The new values fit the schema the reader validates (docs/inventory.schema.json)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "q.txt").write_text(QUERY, encoding="utf-8")
    run_cli("check", "a", "--inventory", "inv", cwd=tmp_path)
    (tmp_path / "inv" / "b.json").write_text((tmp_path / "inv" / "a.json").read_text().replace('"node": "a"', '"node": "b"'))
    result = run_cli("check", "inv", "--format", "json", cwd=tmp_path)
    assert result.exit_code in (0, 1) and not [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]


def test_the_join_gives_the_topologys_gpus_their_fabric_and_model():
    """model/node_join.py: a -q block joins the dump's GPU at its bus id (GpuFacts.fabric); a block
    at an address the dump does not have joins nothing."""
    from topolint.model.node import NodeModel
    from topolint.model.node_join import NodeJoin
    from topolint.parsers.registry import parse as parse_format

    dump = FIXTURES / "samples" / "healthy-8gpu-dump.xml"
    topology = parse_format("nccl-topo-xml", SourceFile(str(dump), dump.read_text()))
    bus = topology.gpus[3].bus_id
    query = parse(f"GPU {bus}\n    Product Name : NVIDIA H100 80GB HBM3\n    Fabric\n        State : Completed\n"
                  "GPU 0000:ee:00.0\n    Fabric\n        State : In Progress\n")
    node = NodeModel("n")
    node.add(topology)
    node.add(query)
    assert "nvidia-smi-q" in node.available()
    join = NodeJoin(node)
    facts = join.gpus(topology)
    assert facts[bus].fabric.value is query.gpus[0].fabric and facts[bus].fabric.loc.line == 3
    assert facts[bus].fabric.join == "PCI address (its GPU header)"
    assert [g.bus_id for g in facts.values() if g.fabric is not None] == [bus]
    assert [(j.key, j.bus_id) for j in join.queried] == [(bus, bus), ("0000:ee:00.0", "0000:ee:00.0")]
