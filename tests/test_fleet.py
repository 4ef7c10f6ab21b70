"""The fleet view (issue 26, docs/fleet.md): generated fleets with planted differences, where every
planted fault is found and nothing else fires, from node bundles and from inventories; groups and
majorities; one finding for many nodes; a real driver drift from the corpus.

Fleets here are small (benchmarks/fleet.py writes them); TOPOLINT_LONG=1 adds a 256-node one.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import FIXTURES, load_benchmark, run_cli

from topolint.engine import parallel

fleet = load_benchmark("fleet")
LONG = os.environ.get("TOPOLINT_LONG", "") not in ("", "0")


def _findings(result) -> set[tuple[str, str]]:
    return {(f["code"], f["entity"]) for f in json.loads(result.stdout)["findings"]}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    faults = fleet.generate(root / "fleet", 30)
    return root, faults


def test_every_planted_fault_is_found_and_nothing_else_fires(planted):
    root, faults = planted
    assert len(faults) == len(fleet.FAULTS)
    result = run_cli("check", "fleet", "--format", "json", cwd=root)
    assert result.exit_code == 1, result.stderr
    assert _findings(result) == fleet.expected_findings(faults)


def test_the_odd_nodes_name_the_majority_as_evidence(planted):
    root, faults = planted
    result = run_cli("check", "fleet", "--format", "json", "--select", "FLEET", cwd=root)
    by_entity = {f["entity"]: f for f in json.loads(result.stdout)["findings"]}
    slow = next(node for node, fault in faults.items() if fault == "slow_port")
    finding = by_entity[f"{slow}/nic/mlx5_3:1#rate_gbps"]
    assert finding["message"] == f"{slow} mlx5_3: 200 Gb/s; 29 of 30 nodes in group 8xH100-SXM5+MT4129 run 400 Gb/s"
    assert finding["path"] == f"fleet/{slow}/ibstat.txt" and finding["severity"] == "warning"
    assert "Rate: 200" in (root / finding["path"]).read_text().splitlines()[finding["line"] - 1]
    assert any(e.startswith("29 of 30 nodes: 400 Gb/s") for e in finding["evidence"])
    missing = next(node for node, fault in faults.items() if fault == "gpu_missing")
    gpus = by_entity[f"{missing}/system#gpu_count"]
    assert gpus["message"].startswith(f"{missing}: 7 GPUs; 29 of 30 nodes") and \
        any("lacks 0000:5a:00.0" in e for e in gpus["evidence"])
    assert any("own signature is 7xH100-SXM5+MT4129" in e for e in gpus["evidence"])  # an odd node out, compared


def test_inventories_alone_give_the_same_findings_pointing_at_their_lines(planted, tmp_path):
    root, faults = planted
    written = run_cli("check", "fleet", "--inventory", tmp_path / "inv", "--format", "json", cwd=root)
    from_bundles = _findings(written)
    result = run_cli("check", tmp_path / "inv", "--format", "json")
    fleet_findings = {f for f in from_bundles if f[0].startswith("FLEET")}
    assert _findings(result) == fleet_findings  # per-node rules need the raw files; the cross-node ones do not
    for finding in json.loads(result.stdout)["findings"]:
        line = (tmp_path / "inv" / os.path.basename(finding["path"])).read_text().splitlines()[finding["line"] - 1]
        assert '"value"' in line and f"fleet/{finding['node']}/" in line  # the value, with the raw input it came from
        assert any(f"fleet/{finding['node']}/" in e and "kept in" in e for e in finding["evidence"])


def test_workers_give_byte_identical_output(planted, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_NODES_PER_JOB", 2)
    root, _ = planted
    one = run_cli("check", "fleet", "--format", "full", "--jobs", "1", cwd=root)
    assert "FLEET001" in one.stdout and run_cli("check", "fleet", "--format", "full", "--jobs", "3", cwd=root).stdout \
        == one.stdout


@pytest.mark.skipif(not LONG, reason="a 256-node fleet: TOPOLINT_LONG=1")
def test_a_larger_fleet_gives_exactly_the_planted_faults(tmp_path):
    faults = fleet.generate(tmp_path / "fleet", 256)
    result = run_cli("check", "fleet", "--format", "json", cwd=tmp_path)
    assert _findings(result) == fleet.expected_findings(faults)


# ---- one finding for many nodes --------------------------------------------------------------------
@pytest.fixture(scope="module")
def identical(tmp_path_factory):
    """50 nodes with the same dump: four NUMA001 warnings each (the README's sample)."""
    root = tmp_path_factory.mktemp("identical")
    for index in range(50):
        (root / "cluster" / f"node{index:02d}").mkdir(parents=True)
        shutil.copy(FIXTURES / "samples" / "dgx-like-2socket-dump.xml", root / "cluster" / f"node{index:02d}" / "topo.xml")
    return root


def test_repeated_findings_print_once_with_their_nodes(identical):
    full = run_cli("check", "cluster", cwd=identical)
    assert full.stdout.count("NUMA001 [warning]") == 4  # not 200
    assert full.stdout.count("  = group: 50 nodes: node00, node01, node02") == 4
    assert "and 30 more (group " in full.stdout
    assert full.stdout.rstrip().endswith("Found 200 findings (0 error, 200 warning, 0 info), 4 printed: the same "
                                         "finding on several nodes is printed once, with its nodes.")
    concise = run_cli("check", "cluster", "--format", "concise", cwd=identical).stdout.splitlines()
    assert len(concise) == 5 and all(line.endswith("[group of 50 nodes]") for line in concise[:4])


def test_json_and_sarif_keep_one_result_per_node_sharing_the_group(identical):
    import jsonschema
    from conftest import ROOT

    document = json.loads(run_cli("check", "cluster", "--format", "json", cwd=identical).stdout)
    jsonschema.validate(document, json.loads((ROOT / "docs" / "json-output.schema.json").read_text()))
    findings = document["findings"]
    assert len(findings) == 200 and len({f["fingerprint"] for f in findings}) == 200  # baselines stay per node
    groups = {}
    for f in findings:
        assert f["group"]["kind"] == "nodes" and f["group"]["total"] == 50
        groups.setdefault(f["group"]["id"], set()).add(f["node"])
    assert len(groups) == 4 and all(len(nodes) == 50 for nodes in groups.values())
    sarif = json.loads(run_cli("check", "cluster", "--format", "sarif", cwd=identical).stdout)
    results = sarif["runs"][0]["results"]
    assert len(results) == 200 and {r["properties"]["group"]["id"] for r in results} == set(groups)


def test_html_and_markdown_show_a_repeated_finding_once_with_its_nodes(identical):
    import re

    page = run_cli("check", "cluster", "--format", "html", cwd=identical).stdout
    rows = re.findall(r'<tr id="(f-\d+)" data-severity="warning">', page)
    assert len(rows) == 4 and page.count("group: 50 nodes: node00, node01, node02") == 4
    assert "and 30 more (group " in page and "Findings (200)" in page
    assert "200 findings, 4 rows: the same finding on several nodes is shown once, with its nodes" in page
    links = set(re.findall(r'<a href="#(f-\d+)">', page))
    assert links and links <= set(rows)  # a drawn node's findings link to the row that stands for them
    summary = run_cli("check", "cluster", "--format", "markdown", cwd=identical).stdout
    table = [line for line in summary.splitlines() if line.startswith("| warning | NUMA001 |")]
    assert len(table) == 4 and all("group: 50 nodes: node00, node01" in line for line in table)
    assert "200 findings, 4 rows: the same finding on several nodes is shown once, with its nodes" in summary


def test_a_baseline_of_one_node_still_reports_the_others(identical, tmp_path):
    baseline = tmp_path / "baseline.json"
    run_cli("check", "cluster/node00", "--baseline", baseline, "--update-baseline", cwd=identical)
    result = run_cli("check", "cluster", "--baseline", baseline, "--format", "json", cwd=identical)
    active = [f for f in json.loads(result.stdout)["findings"] if not f.get("suppressed")]
    assert len(active) == 196 and all(f["node"] != "node00" for f in active)


# ---- groups and majorities ----------------------------------------------------------------------------
def _bundles(root, rates: list[int]) -> None:
    for index, rate in enumerate(rates):
        folder = root / f"n{index}"
        folder.mkdir(parents=True)
        (folder / "ibstat.txt").write_text(fleet.ibstat(index, None).replace("Rate: 400", f"Rate: {rate}"))


def test_an_even_split_has_no_majority_and_says_so(tmp_path):
    _bundles(tmp_path / "c", [400, 400, 200, 200])
    result = run_cli("check", "c", "--select", "FLEET001", "--format", "json", cwd=tmp_path)
    findings = json.loads(result.stdout)["findings"]
    rates = [f for f in findings if f["entity"].endswith("#rate_gbps")]
    assert rates and all(f["severity"] == "info" and "no majority in group MT4129 (4 nodes: 2 with 200 Gb/s; 2 with "
                                                      "400 Gb/s)" in f["message"] for f in rates)
    assert {f["node"] for f in rates} == {"n0", "n1", "n2", "n3"} and result.exit_code == 0


def test_the_same_value_everywhere_and_unknown_values_are_silent(tmp_path):
    _bundles(tmp_path / "c", [400, 400, 400])
    (tmp_path / "c" / "n3").mkdir()
    (tmp_path / "c" / "n3" / "topo.xml").write_text((FIXTURES / "samples" / "healthy-8gpu-dump.xml").read_text())
    result = run_cli("check", "c", "--select", "FLEET", "--format", "json", cwd=tmp_path)
    assert json.loads(result.stdout)["findings"] == []


def test_two_common_kinds_of_node_are_compared_apart(tmp_path):
    fleet.generate(tmp_path / "a", 4, faults=False)
    for index in range(4):  # four more nodes of another kind: 200 Gb/s everywhere
        folder = tmp_path / "a" / f"slow{index}"
        shutil.copytree(tmp_path / "a" / "gpu0001", folder)
        (folder / "topolint-bundle.json").write_text(fleet.manifest(f"slow{index}"))
        ibstat = (folder / "ibstat.txt").read_text().replace("Rate: 400", "Rate: 200")
        (folder / "ibstat.txt").write_text(ibstat.replace("CA type: MT4129", "CA type: MT4123"))
    result = run_cli("check", "a", "--select", "FLEET", "--format", "json", cwd=tmp_path)
    assert json.loads(result.stdout)["findings"] == []


def test_a_run_of_one_node_has_no_cross_node_findings(planted):
    root, faults = planted
    slow = next(node for node, fault in faults.items() if fault == "slow_port")
    result = run_cli("check", f"fleet/{slow}", "--select", "FLEET", "--format", "json", "--verbose", cwd=root)
    assert json.loads(result.stdout)["findings"] == []


# ---- version outputs and a real drift --------------------------------------------------------------
def test_a_real_kernel_module_and_userspace_mismatch_is_found(corpus, tmp_path):
    sample = corpus / "node-inventory-drift" / \
        "g4dn-node-kernel-module-470.103.01-vs-userspace-470.129.06-nvml-mismatch_aws-parallelcluster-issue-4127.txt"
    (tmp_path / "c" / "ip-10-0-2-5").mkdir(parents=True)
    shutil.copy(sample, tmp_path / "c" / "ip-10-0-2-5" / "driver.txt")  # read in place of a bundle's file, not kept
    for index in range(3):
        (tmp_path / "c" / f"peer{index}").mkdir()
        (tmp_path / "c" / f"peer{index}" / "driver.txt").write_text(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.129.06  Thu May 12 22:42:45 UTC 2022\n")
    result = run_cli("check", "c", "--format", "json", cwd=tmp_path)
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["code"] == "FLEET003" and finding["node"] == "ip-10-0-2-5" and finding["line"] == 2
    assert finding["message"] == "ip-10-0-2-5: driver 470.103.01; 3 of 4 nodes in group unknown-hardware run " \
                                 "driver 470.129.06"


@pytest.mark.parametrize("text, fmt, component, version", [
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)\n",
     "nvidia-driver-version", "driver", "550.54.15"),
    ("NVIDIA-SMI version  : 570.86.15\nNVML version        : 570.86\nDRIVER version      : 570.86.15\n"
     "CUDA Version        : 12.8\n", "nvidia-smi-version", "cuda", "12.8"),
    ("Tue Dec  1 09:00:00 2026\n+---------------+\n| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   "
     "CUDA Version: 12.2     |\n", "nvidia-smi-version", "driver", "535.104.05"),
    ("MLNX_OFED_LINUX-23.10-1.1.9.0:\n", "ofed-info", "ofed", "MLNX_OFED_LINUX-23.10-1.1.9.0"),
    ("OFED-internal-24.10-1.1.4:\n", "ofed-info", "ofed", "OFED-internal-24.10-1.1.4"),
    ("Linux gpu017 6.8.0-45-generic #45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024 x86_64 GNU/Linux\n",
     "kernel-version", "kernel", "6.8.0-45-generic"),
])
def test_version_outputs_are_recognised_and_keep_their_line(text, fmt, component, version):
    from topolint.inputs.sniff import sniff
    from topolint.inputs.source import SourceFile
    from topolint.parsers.registry import parse

    assert sniff(text) == fmt
    facts = parse(fmt, SourceFile(path="v.txt", text=text))
    found = facts.version(component)
    assert found.version == version
    assert version in text.splitlines()[found.loc.line - 1][found.loc.column - 1:]


def test_lsmod_and_proc_modules_say_whether_peermem_is_loaded(tmp_path):
    lsmod = "Module                  Size  Used by\nnv_peer_mem            16384  0\nnvidia              54362112  1 nv_peer_mem\n"
    for index, text in enumerate([lsmod] * 3 + ["nvidia 54362112 12 - Live 0x0000000000000000 (POE)\n"]):
        (tmp_path / "c" / f"n{index}").mkdir(parents=True)
        (tmp_path / "c" / f"n{index}" / "modules.txt").write_text(text)
    result = run_cli("check", "c", "--format", "concise", cwd=tmp_path)
    assert "n3: nvidia_peermem not loaded; 3 of 4 nodes in group unknown-hardware have nvidia_peermem loaded as " \
           "nv_peer_mem" in result.stdout


def test_unreadable_version_outputs_are_tl001_with_a_line(tmp_path):
    (tmp_path / "ofed.txt").write_text("MLNX_OFED_LINUX-5.8-1.0.1.1:\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "modules.txt").write_text("nvidia 54362112 12 - Live 0x0 (POE)\nthis is not a module line\n")
    result = run_cli("check", "b/modules.txt", "--format", "concise", cwd=tmp_path)
    assert result.exit_code == 2 and "b/modules.txt:2:" in result.stdout and "TL001" in result.stdout


def _example_files(text: str) -> dict[str, str]:
    """A rule's inventories example: each ``// NAME.json ...`` header names the files that hold the
    document below it, each with its own node name."""
    import re

    files, names, body = {}, [], []

    def flush():
        for name in names:
            files[name] = "\n".join(body).replace('"gpu001"', json.dumps(name[:-5])) + "\n"

    for line in text.strip().splitlines():
        if line.startswith("//"):
            flush()
            names, body = re.findall(r"\S+\.json", line), []
        else:
            body.append(line)
    flush()
    return files


@pytest.mark.parametrize("code", ["FLEET001", "FLEET003"])
def test_documented_examples_run(code, tmp_path):
    from topolint.engine.rule import load_rules

    rule = next(r for r in load_rules() if r.code == code)
    assert rule.docs.example_format == "inventories"
    for kind in ("bad", "good"):
        for name, text in _example_files(getattr(rule.docs, kind)).items():
            (tmp_path / kind / name).parent.mkdir(exist_ok=True)
            (tmp_path / kind / name).write_text(text, encoding="utf-8")
    bad = run_cli("check", "bad", "--select", code, "--format", "concise", cwd=tmp_path)
    assert f" {code} [warning]" in bad.stdout and len(list((tmp_path / "bad").iterdir())) == 4, bad.stdout
    good = run_cli("check", "good", "--select", code, "--format", "concise", cwd=tmp_path)
    assert good.exit_code == 0 and code not in good.stdout and len(list((tmp_path / "good").iterdir())) == 4


# ---- the progress line ----------------------------------------------------------------------------
class _Terminal:
    def __init__(self):
        self.written = []

    def isatty(self):
        return True

    def write(self, text):
        self.written.append(text)

    def flush(self):
        pass


def test_a_terminal_gets_a_progress_line_once_a_run_takes_over_a_second(tmp_path):
    from topolint.commands.check import CheckOptions, run_check
    from topolint.commands.progress import RunProgress

    fleet.generate(tmp_path / "fleet", 6, faults=False)
    root = tmp_path
    now = [0.0]

    def clock():
        now[0] += 0.15  # each look at the clock: 0.15 s later
        return now[0]

    terminal = _Terminal()
    progress = RunProgress(terminal, clock=clock)
    run_check(CheckOptions(paths=[str(root / "fleet")], cache=False, progress=progress))
    progress.close()
    text = "".join(terminal.written)
    assert "\r\x1b[Ktopolint: checked " in text and "/6 nodes" in text
    assert "topolint: checked 6/6 nodes" in text and "topolint: comparing 6 nodes" in text
    assert "checked 0/6" not in text  # nothing in the first second
    assert text.endswith("\r\x1b[K")  # erased before the report
    quick = _Terminal()
    fast = RunProgress(quick, clock=lambda: 0.0)  # a run under a second prints nothing
    run_check(CheckOptions(paths=[str(root / "fleet")], cache=False, progress=fast))
    fast.close()
    assert quick.written == []


def test_no_progress_line_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    from topolint.commands import progress

    fleet.generate(tmp_path / "fleet", 3, faults=False)
    monkeypatch.setattr(progress, "DELAY", 0.0)  # even a slow run: a pipe or a file never gets it
    result = run_cli("check", "fleet", "--format", "concise", cwd=tmp_path)
    assert "\r" not in result.stderr and "checked" not in result.stderr
    assert progress.terminal_run_progress(_Terminal()) is not None


def test_a_roce_port_whose_gid_index_differs_is_found(tmp_path):
    gids = (FIXTURES / "rules" / "ROCE004" / "topology" / "show_gids.txt").read_text()
    for index in range(4):
        folder = tmp_path / "c" / f"roce{index}"
        folder.mkdir(parents=True)
        ibstat = fleet.ibstat(index, None).replace("Link layer: InfiniBand", "Link layer: Ethernet")
        (folder / "ibstat.txt").write_text(ibstat.split("CA 'mlx5_2'")[0])
        # roce3: the IPv4 GIDs of mlx5_1 sit at indices 4 and 5 (another GID was added before them)
        table = gids if index < 3 else gids.replace("mlx5_1\t1\t2\t0000", "mlx5_1\t1\t4\t0000").replace(
            "mlx5_1\t1\t3\t0000", "mlx5_1\t1\t5\t0000")
        (folder / "show_gids.txt").write_text(table)
    result = run_cli("check", "c", "--select", "FLEET", "--format", "concise", cwd=tmp_path)
    assert result.stdout.splitlines()[0].endswith(
        "FLEET003 [warning] roce3 mlx5_1: GID index 5; 3 of 4 nodes in group MT4129 use GID index 3")
    assert result.stdout.count("FLEET") == 1


def test_a_direct_nvlink_mesh_counts_every_link_of_a_gpu(tmp_path):
    """``nvidia-smi topo -m`` of a DGX-1V cube mesh (NV1/NV2 to four peers: 6 links a GPU, as the
    join of node facts reads it): a node where GPU0's link to GPU1 is down has 5 on both, and
    FLEET001 says so; the largest bonded set alone (2 on every GPU) would not show it."""
    matrix = (FIXTURES / "rules" / "NVL002" / "good_cube_mesh.txt").read_text(encoding="utf-8")
    lines = matrix.splitlines(keepends=True)
    for index in range(4):
        text = matrix
        if index == 2:  # the GPU0 <-> GPU1 cell, on both rows
            gpu0, gpu1 = lines[1].replace("NV1 ", "SYS ", 1), lines[2].replace("NV1 ", "SYS ", 1)
            text = "".join([lines[0], gpu0, gpu1] + lines[3:])
        (tmp_path / "c" / f"dgx{index}").mkdir(parents=True)
        (tmp_path / "c" / f"dgx{index}" / "nvidia-smi-topo.txt").write_text(text, encoding="utf-8")
    inventory = run_cli("check", "c/dgx0", "--inventory", "dgx0.json", cwd=tmp_path)
    assert inventory.exit_code == 0, inventory.stderr
    gpus = json.loads((tmp_path / "dgx0.json").read_text(encoding="utf-8"))["gpus"]
    assert [g["nvlinks"]["value"] for g in gpus] == [6] * 8
    result = run_cli("check", "c", "--select", "FLEET001", "--format", "json", cwd=tmp_path)
    found = {(f["entity"], f["message"]) for f in json.loads(result.stdout)["findings"]}
    assert found == {("dgx2/gpu/#0#nvlinks", "dgx2 GPU #0: 5 NVLinks; 3 of 4 nodes in group 8xGPU have 6 NVLinks"),
                     ("dgx2/gpu/#1#nvlinks", "dgx2 GPU #1: 5 NVLinks; 3 of 4 nodes in group 8xGPU have 6 NVLinks")}
