"""nvidia-smi nvlink -s / --status parsing: indentation, rates, states, positions, malformed input."""

from __future__ import annotations

import pytest
from conftest import run_cli

from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import NvlinkStatus
from topolint.parsers.nvidia_smi_nvlink import parse_nvlink_status

H100 = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0f2d6c1e-1111-2222-3333-444444444444)\n"


def parse(text: str) -> NvlinkStatus:
    assert sniff(text) == "nvidia-smi-nvlink"
    status = parse_nvlink_status(SourceFile("s.txt", text))
    NvlinkStatus.model_validate(status.model_dump())  # build() output fits the schema
    return status


def error(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_nvlink_status(SourceFile("s.txt", text))
    return caught.value


def test_native_tab_space_indent_rates_and_positions():
    status = parse(H100 + "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n")
    gpu = status.gpus[0]
    assert (gpu.index, gpu.name, gpu.uuid) == (0, "NVIDIA H100 80GB HBM3", "GPU-0f2d6c1e-1111-2222-3333-444444444444")
    assert (gpu.loc.line, gpu.loc.column) == (1, 1)
    assert [(link.index, link.state, link.speed_gbps) for link in gpu.links] == [(0, "active", 26.562), (1, "inactive", None)]
    # a link's location is its rate or state
    assert [(link.loc.line, link.loc.column) for link in gpu.links] == [(2, 11), (3, 11)]
    assert [link.index for link in gpu.inactive] == [1] and [link.index for link in gpu.active] == [0]


def test_pasted_spaces_redacted_uuid_elision_and_command_echo():
    text = ("$ nvidia-smi nvlink -s\n"
            "GPU 3: Tesla V100-SXM2-32GB (UUID: ...)\n"
            "         Link 0: 25.781 GB/s\n"
            "         Link 5: <inactive>\n"
            "....\n"
            "GPU 4: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)\n"
            "         Link 0: 25 GB/s")  # no trailing newline
    status = parse(text)
    assert [g.index for g in status.gpus] == [3, 4]
    assert status.gpus[0].uuid is None and status.gpus[0].loc.line == 2
    assert status.gpus[0].links[1].loc.line == 4 and status.gpus[0].links[1].loc.column == 18
    assert status.gpus[1].links[0].speed_gbps == 25.0


def test_nvml_all_links_inactive_is_a_gpu_without_link_lines():
    status = parse(H100 + "NVML: Unable to retrieve NVLink information as all links are inActive\n"
                   "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n         Link 0: 26.562 GB/s\n")
    assert status.gpus[0].all_inactive and status.gpus[0].links == []
    assert not status.gpus[1].all_inactive


def test_other_nvlink_subcommands_and_gpu_lists_are_not_status():
    assert sniff(H100 + "\t Link 0: Replay Errors: 0\n") is None  # nvidia-smi nvlink -e
    assert sniff(H100 + "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n") is None  # nvidia-smi -L


@pytest.mark.parametrize("text, line, column, words", [
    (H100 + "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n", 1, 1, "GPU 0 has no Link lines"),
    (H100 + "\t Link 0: 26.562 GB/s\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n", 3, 1, "GPU 1 has no Link lines"),
    (H100 + "\t Link 0: fast\n", 2, 11, "neither a rate"),
    (H100 + "\t Link 0: 26.562 GB/s\n\t garbage here\n", 3, 3, "garbage here"),
    (H100 + "\t Link 0: 26.562 GB/s\n\t Link 0: <inactive>\n", 3, 3, "Link 0 twice"),
    (H100 + "\t Link 0: 26.562 GB/s\n" + H100 + "\t Link 0: 26.562 GB/s\n", 3, 1, "GPU 0 appears twice (first on line 1)"),
    ("hello\n" + H100 + "\t Link 0: 26.562 GB/s\n", 1, 1, "before the first GPU line"),
])
def test_malformed_input_names_line_and_column(text, line, column, words):
    exc = error(text)
    assert (exc.path, exc.line, exc.column) == ("s.txt", line, column)
    assert exc.message.startswith("malformed nvidia-smi nvlink output") and words in exc.message


def test_malformed_file_is_tl001_without_traceback(tmp_path):
    (tmp_path / "nvlink.txt").write_text(H100 + "\t Link 0: 26.562 GB/s\nGPU 1: X (UUID: GPU-1)\n", encoding="utf-8")
    for target in ("nvlink.txt", "."):  # named, and found by walking a folder
        result = run_cli("check", target, "--format", "concise", cwd=tmp_path)
        assert "Traceback" not in result.stderr
        assert result.exit_code == 2
        assert "nvlink.txt:3:1: TL001" in result.stdout, result.stdout
