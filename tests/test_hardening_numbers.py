"""Numbers from inputs never end in a traceback (issue 7, "Tracebacks"): every numeric attribute,
cell and setting that crashed the landed version, run through the whole CLI, plus what NCCL
reads from them (TOPO002) where NCCL reads the value.

Each case is a hand-written mutation of a fixture: the value that used to crash, in the place
it crashed.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES, run_cli

from topolint.inputs.source import SourceFile
from topolint.model.numbers import c_int, cpumask, strtol_prefix
from topolint.parsers.nccl_topo_xml import parse_topology

TOPOLOGY = FIXTURES / "topologies" / "4gpu-2numa-nvlink.xml"
MATRIX = FIXTURES / "rules" / "NUMA005" / "bad_matrix_numa_column.txt"
GRAPH = FIXTURES / "samples" / "nccl-graph.xml"

# What a careless copy or an attacker puts where a number belongs.
HOSTILE_NUMBERS = ["9" * 5000, "-" + "9" * 5000, "inf", "-inf", "nan", "1e999", "²", "٣", "0x", "", "1.5",
                   "0x" + "f" * 5000, "010"]


def json_run(*args) -> tuple[int, dict]:
    result = run_cli("check", *map(str, args), "--format", "json", "--no-cache")
    return result.exit_code, json.loads(result.stdout)


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("attribute", ["count", "numaid", "dev", "sm", "rank", "speed", "port", "link_width",
                                       "familyid", "gdr"])
@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
def test_numeric_xml_attributes_never_crash(tmp_path, attribute, value):
    text = re.sub(rf'\b{attribute}="[^"]*"', f'{attribute}="{value}"', TOPOLOGY.read_text(encoding="utf-8"))
    code, report = json_run(_write(tmp_path, "topo.xml", text))
    assert code in (0, 1)  # read and judged, not TL001: NCCL reads every one of these somehow
    assert all(f["code"] != "TL001" for f in report["findings"])


def test_affinity_masks_of_any_width_are_linear_and_bounded(tmp_path):
    words = ",".join(["ffffffff"] * 100_000)  # used to take a minute (quadratic shifts)
    text = TOPOLOGY.read_text(encoding="utf-8").replace('affinity="0000ffff"', f'affinity="{words}"')
    code, _ = json_run(_write(tmp_path, "topo.xml", text))
    assert code in (0, 1)
    assert cpumask(words) is None  # wider than any machine: no CPU set at all
    assert cpumask("0000000000000000,00000000ffffffff").text() == "0-31"  # 64-bit words keep their width


def test_what_nccl_reads_from_odd_integers():
    # src/graph/xml.h xmlGetAttrInt: int = strtol(str, NULL, 0)
    assert strtol_prefix("010") == 8
    assert strtol_prefix("1.5") == 1
    assert strtol_prefix("inf") is None
    assert strtol_prefix("9" * 5000) == 2**63 - 1
    assert c_int(2**32 + 1) == 1
    text = TOPOLOGY.read_text(encoding="utf-8").replace('count="18"', 'count="022"', 1)
    topology = parse_topology(SourceFile("t.xml", text))
    assert topology.gpus[0].nvlinks[0].count == 18  # octal 022, as NCCL reads it


def test_system_version_is_read_as_a_c_int(tmp_path):
    text = TOPOLOGY.read_text(encoding="utf-8").replace('<system version="1">', '<system version="4294967297">')
    _, report = json_run(_write(tmp_path, "topo.xml", text))
    assert not [f for f in report["findings"] if f["code"] == "TOPO001"]  # NCCL's int holds 1


@pytest.mark.parametrize("cell", ["0-100000000", "0-" + "9" * 5000, "²-3", "inf"])
def test_matrix_cpu_ranges_are_bounded(tmp_path, cell):
    text = MATRIX.read_text(encoding="utf-8").replace("0-55,112-167", cell)
    code, _ = json_run(_write(tmp_path, "topo.txt", text))
    assert code in (0, 1, 2)


@pytest.mark.parametrize("cell", ["NV" + "9" * 5000, "NV²"])
def test_matrix_nvlink_counts_are_bounded(tmp_path, cell):
    text = MATRIX.read_text(encoding="utf-8").replace("NV18", cell)
    code, _ = json_run(_write(tmp_path, "topo.txt", text))
    assert code in (0, 1, 2)


@pytest.mark.parametrize("numa", ["9" * 5000, "²", "٣"])
def test_matrix_numa_cells(tmp_path, numa):
    text = re.sub(r"(167 +)0 ", rf"\g<1>{numa} ", MATRIX.read_text(encoding="utf-8"), count=1)
    code, _ = json_run(_write(tmp_path, "topo.txt", text))
    assert code in (0, 1, 2)


@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
def test_graph_xml_numbers(tmp_path, value):
    text = GRAPH.read_text(encoding="utf-8")
    text = re.sub(r'speedintra="[^"]*"', f'speedintra="{value}"', text)
    text = re.sub(r'dev="[^"]*"', f'dev="{value}"', text)
    code, _ = json_run(_write(tmp_path, "graph.xml", text))
    assert code in (0, 1, 2)


@pytest.mark.parametrize("value", HOSTILE_NUMBERS + ["²", "3²"])
@pytest.mark.parametrize("name", ["NCCL_NET_GDR_LEVEL", "NCCL_MIN_NCHANNELS", "NCCL_IB_HCA", "NCCL_P2P_LEVEL"])
def test_env_values(tmp_path, name, value):
    env = _write(tmp_path, "job.env", f"{name}=mlx5_0:{value}\n" if name == "NCCL_IB_HCA" else f"{name}={value}\n")
    code, _ = json_run(env, "--topology", TOPOLOGY)
    assert code in (0, 1, 2)


@pytest.mark.parametrize("value", ["0*100000000", "0*" + "9" * 5000, "٣,1"])
def test_rank_maps_are_bounded(tmp_path, value):
    script = _write(tmp_path, "train.sbatch", "#!/bin/bash\n#SBATCH --nodes=1\n"
                    f"export CUDA_VISIBLE_DEVICES={value}\n"
                    f"srun --gpu-bind=map_gpu:{value} taskset -c 0-3 python train.py\n")
    code, _ = json_run(script, "--topology", TOPOLOGY)
    assert code in (0, 1, 2)


def test_kubernetes_replica_counts(tmp_path):
    manifest = _write(tmp_path, "job.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                      "  replicas: " + "9" * 5000 + "\n  containers:\n  - name: c\n    image: x\n"
                      "    env:\n    - {name: NCCL_IB_HCA, value: mlx5_0}\n")
    code, _ = json_run(manifest)
    assert code in (0, 1, 2)


# --- values the checks read (issue 7 follow-up: no bare int()/float() on input text) -----------

def test_pci_id_reads_hostile_vendor_ids_without_raising():
    from types import SimpleNamespace

    from topolint.checks._topology import pci_id

    assert pci_id(SimpleNamespace(vendor="0x10DE", device="2330")) == "0x10de:0x2330"
    read = {value: pci_id(SimpleNamespace(vendor=value, device="0x2330")) for value in HOSTILE_NUMBERS + ["1_0de", None]}
    assert read["010"] == "0x0010:0x2330" and read["1e999"] == "0x1e999:0x2330"  # both are hex digits
    assert [v for v, got in read.items() if got is None] == [
        "9" * 5000, "-" + "9" * 5000, "inf", "-inf", "nan", "²", "٣", "0x", "", "1.5", "0x" + "f" * 5000, "1_0de", None]


def test_link_width_is_read_as_ncclTopoAddPci_reads_it():
    """src/graph/topo.cc ncclTopoAddPci: xmlGetAttrInt (strtol(str, NULL, 0) into an int), then
    ``if (width == 0) width = 16``. int() read ``010`` as 10 and refused ``16x`` and ``1.5``."""
    from topolint.model.pcie import nccl_width, read_width

    assert [nccl_width(v) for v in ("16", "010", "0x10", "16x", "1.5", "x16", None)] == [16, 8, 16, 16, 1, None, None]
    assert [read_width(v) for v in ("8", "0", "x16", "-4", "9" * 5000)] == [8, 16, 16, 16, 16]


def test_integer_parameters_are_read_as_ncclLoadParam_reads_them():
    """src/misc/param.cc ncclLoadParam: strtoll(str, nullptr, 0), errno checked, the tail not."""
    from topolint.model.nccl_env import param_int, param_read

    assert [param_read(v) for v in ("1", "1 ", "1abc", "abc", "010", "0x10", "", None, "9" * 5000)] == \
        [1, 1, 1, 0, 8, 16, None, None, None]
    assert [param_int(v) for v in ("1", "1 ", "010", "1_0")] == [1, None, 8, None]


def test_nccl_ib_disable_010_disables_ib_as_ncclLoadParam_reads_it(tmp_path):
    """NCCL reads NCCL_IB_DISABLE=010 as 8 (strtoll base 0): IB is off. int("010", 0) raised, and
    the contradiction with NCCL_NET=IB was missed (NET007 reports it now: NCCL fails at init)."""
    script = _write(tmp_path, "train.sh", "export NCCL_IB_DISABLE=010\nexport NCCL_NET=IB\ntorchrun train.py\n")
    code, report = json_run(script, "--select", "NET007,ENV007")
    assert code == 1, report
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("NET007", 1)]


def test_a_version_of_thousands_of_digits_is_a_version_error():
    from topolint.model.nccl_version import NcclVersion, VersionError

    assert NcclVersion.parse("2.27.3") == NcclVersion(2, 27, 3)
    with pytest.raises(VersionError):
        NcclVersion.parse("2." + "9" * 5000)
