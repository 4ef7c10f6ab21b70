"""nvidia-smi topo -m / -p2p parsing: every era's quirks, the cell locations, the XML join."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, run_cli

from topolint.checks import nvlink_missing
from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import TopoMatrix
from topolint.model.matrix import MatrixView, join_gpus, path_name
from topolint.model.nccl_version import NcclVersion
from topolint.parsers.nvidia_smi_topo import parse_matrix


def parse(text: str) -> TopoMatrix:
    assert sniff(text) == "nvidia-smi-topo"
    return parse_matrix(SourceFile("m.txt", text))


GLUED = (
    "\tGPU0\tGPU1\tNIC0\tNIC8NIC9\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\tPIX\tNODENODE\t0-55\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tNODE\tNODEPXB\t0-55\t0\t\tN/A\n"
)


def test_glued_header_and_cells_are_split_against_the_header():
    matrix = parse(GLUED)
    assert matrix.columns == ["GPU0", "GPU1", "NIC0", "NIC8", "NIC9"]
    assert matrix.rows[0].cells == ["X", "NV18", "PIX", "NODE", "NODE"]
    assert matrix.rows[1].cells[3:] == ["NODE", "PXB"]
    assert [(loc.line, loc.column) for loc in matrix.repaired] == [(2, 19), (3, 20)]
    # the second half of a glued token points inside it
    assert matrix.cell_loc(matrix.rows[1], 4).column == 24
    assert matrix.rows[0].numa_affinity == "0" and matrix.rows[0].gpu_numa_id == "N/A"
    assert matrix.missing_rows == ["NIC0", "NIC8", "NIC9"]


def test_old_soc_legend_and_unsorted_direct_nic_columns():
    text = ("        GPU0    GPU1    mlx5_2  mlx5_0  CPU Affinity\n"
            "GPU0     X      SOC     SOC     PIX     0-9\n"
            "GPU1    SOC      X      PIX     SOC     10-19\n"
            "mlx5_2  SOC     PIX      X      SOC\n"
            "mlx5_0  PIX     SOC     SOC      X\n\nLegend:\n\n  X   = Self\n"
            "  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)\n")
    matrix = parse(text)
    view = MatrixView(matrix)
    assert matrix.legend == "soc" and not matrix.partial
    assert view.rel("GPU0", "mlx5_0") == "PIX" and path_name(view.rel("GPU1", "mlx5_0")) == "SYS"
    assert matrix.rows[3].index == 1  # mlx5_0 is the second NIC column


def test_blank_affinity_cells_are_placed_by_column():
    text = ("        GPU0    CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
            "GPU0     X                                      N/A\n")
    row = parse(text).rows[0]
    assert (row.cpu_affinity, row.numa_affinity, row.gpu_numa_id) == (None, None, "N/A")


def test_p2p_matrix():
    matrix = parse(" \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n")
    assert matrix.kind == "p2p" and matrix.rows[1].cells == ["GNS", "X"]


def test_wrapper_lines_before_the_header_are_skipped():
    matrix = parse("GPU Topology:\n        GPU0    GPU1\nGPU0     X      NV2\nGPU1    NV2      X\n")
    assert matrix.header_loc.line == 2 and len(matrix.rows) == 2


def test_row_cut_at_the_end_is_partial_but_a_broken_row_inside_is_unreadable():
    head = "        GPU0    GPU1    GPU2\nGPU0     X      NV2     SYS\nGPU1    NV2      X      SYS\n"
    matrix = parse(head + "GPU2    SYS     SY")
    assert matrix.cut_line == 4 and matrix.missing_rows == ["GPU2"] and matrix.gpu_rows_missing
    with pytest.raises(InputError) as error:
        parse(head.replace("GPU1    NV2      X      SYS", "GPU1    NV2      X") + "GPU2    SYS     SYS      X\n")
    assert error.value.line == 3


def test_join_by_dev_else_by_sorted_bus_id():
    from topolint.parsers.nccl_topo_xml import parse_topology

    xml = ('<system version="1"><cpu numaid="0"><pci busid="0000:b0:00.0" class="0x030200">'
           '<gpu dev="0" rank="0"/></pci><pci busid="0000:20:00.0" class="0x030200"><gpu dev="1" rank="1"/>'
           '</pci></cpu></system>\n')
    topology = parse_topology(SourceFile("t.xml", xml))
    matrix = parse("        GPU0    GPU1\nGPU0     X      PHB\nGPU1    PHB      X\n")
    assert {i: g.bus_id for i, g in join_gpus(topology, matrix).items()} == {0: "0000:b0:00.0", 1: "0000:20:00.0"}
    for gpu in topology.gpus:
        gpu.dev = None
    assert {i: g.bus_id for i, g in join_gpus(topology, matrix).items()} == {0: "0000:20:00.0", 1: "0000:b0:00.0"}


def test_node_compares_as_phb():
    version = NcclVersion.parse("2.28")
    assert version.rank(path_name("NODE")) == version.rank("PHB")
    assert path_name("NV12") == "NVL" and path_name("SOC") == "SYS"


def test_nvlink_model_check_is_a_parameter(tmp_path):
    """An H100 SXM dump with no nvlink fires by default; a site can turn the model check off."""
    from topolint.engine.runner import CheckContext, RunOptions
    from topolint.inputs.collect import collect

    node = collect([str(FIXTURES / "rules" / "TOPO001" / "good.xml")]).nodes[0]
    context = CheckContext(node, RunOptions(nccl_version=NcclVersion.parse("2.28")))
    hits = list(nvlink_missing.check(context, nvlink_missing.Parameters()))
    assert [h.variant for h in hits] == ["model"]
    assert list(nvlink_missing.check(context, nvlink_missing.Parameters(model_check=False))) == []


def test_matrix_and_xml_of_one_node_share_gpu_entities():
    result = run_cli("check", "fixtures/rules/TL003/bad_numa_nvlink", "--select", "TL003", "--format", "json")
    import json

    entities = {f["entity"] for f in json.loads(result.stdout)["findings"]}
    assert entities == {"bad_numa_nvlink/gpu/0000:17:00.0", "bad_numa_nvlink/gpu/0000:9a:00.0"}
