"""--add-noqa: topolint's directive on its own line, where it changes nothing else; idempotent."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES, run_cli

FIXES = FIXTURES / "fixes"


def _add(tmp_path, *names: str):
    return run_cli("check", *names, "--isolated", "--no-cache", "--add-noqa", cwd=tmp_path)


def _active(tmp_path, *names: str):
    result = run_cli("check", *names, "--isolated", "--no-cache", "--format", "json", cwd=tmp_path)
    return [(f["code"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"] if not f["suppressed"]]


def test_dockerfile_directive_goes_above_the_instruction(tmp_path):
    shutil.copy(FIXES / "Dockerfile", tmp_path / "Dockerfile")
    result = _add(tmp_path, "Dockerfile")
    assert (tmp_path / "Dockerfile").read_text().splitlines() == [
        "FROM nvcr.io/nvidia/pytorch:24.05-py3",
        "# topolint: ignore[ENV001,ENV002]",  # a trailing "# ..." would be part of the ENV value
        "ENV NCCL_IB_GDR_LEVEL=PHB \\",
        "    NCCL_SOCKET_IFNAM=eth0",
        "# topolint: ignore[ENV003]",
        "ENV NCCL_P2P_LEVEL=node",
        "# topolint: ignore[ENV003]",
        'ENV NCCL_SOCKET_FAMILY "af_inet6"']
    assert "added 3 suppression directives in 1 files" in result.stderr
    assert _active(tmp_path, "Dockerfile") == []


def test_every_config_format_is_clean_afterwards_and_a_second_run_adds_nothing(tmp_path):
    names = ["train.sbatch", "Dockerfile", "job.yaml", "docker-compose.yml", ".env", "nccl.conf", "launch.py"]
    for name in names:
        shutil.copy(FIXES / name, tmp_path / name)
    assert _active(tmp_path, *names)
    _add(tmp_path, *names)
    assert _active(tmp_path, *names) == []
    before = {name: (tmp_path / name).read_bytes() for name in names}
    assert "added 0 suppression directives" in _add(tmp_path, *names).stderr
    assert {name: (tmp_path / name).read_bytes() for name in names} == before


def test_shell_continuation_and_crlf_are_kept(tmp_path):
    (tmp_path / "run.sh").write_bytes(b"export A=1 \\\r\n  NCCL_SOCKET_IFNAM=eth0\r\n")
    _add(tmp_path, "run.sh")
    assert (tmp_path / "run.sh").read_bytes() == (
        b"# topolint: ignore[ENV001]\r\nexport A=1 \\\r\n  NCCL_SOCKET_IFNAM=eth0\r\n")


def test_a_line_inside_a_multi_line_value_is_listed_not_written(tmp_path):
    text = 'export A="first\nsecond" NCCL_SOCKET_IFNAM=eth0\n'
    (tmp_path / "run.sh").write_text(text)
    result = _add(tmp_path, "run.sh")
    assert (tmp_path / "run.sh").read_text() == text
    assert "run.sh:2: no line above it can hold a directive without changing what the file means" in result.stderr
    assert _active(tmp_path, "run.sh") == [("ENV001", "run.sh", 2)]


def test_xml_is_listed_not_written(tmp_path):
    shutil.copy(FIXES / "topo.xml", tmp_path / "topo.xml")
    before = (tmp_path / "topo.xml").read_bytes()
    result = _add(tmp_path, "topo.xml")
    assert (tmp_path / "topo.xml").read_bytes() == before
    assert "topo.xml: nccl-topo-xml file: add suppressions by hand" in result.stderr
