"""`# noqa: CODES` as ruff users write it: topolint's own codes only, on its own line."""

from __future__ import annotations

import json

from conftest import run_cli


def _findings(tmp_path, text: str, name: str = "run.sh"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    result = run_cli("check", name, "--isolated", "--no-cache", "--format", "json", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    return [(f["code"], f["line"], f["suppressed"]) for f in json.loads(result.stdout)["findings"]]


def test_noqa_with_a_topolint_code_suppresses_its_line(tmp_path):
    # Before: "# noqa: ENV001" was silently ignored and the finding stayed active.
    text = "export NCCL_SOCKET_IFNAM=eth0  # noqa: ENV001\nexport NCCL_SOCKET_IFNAMS=eth1\n"
    assert _findings(tmp_path, text) == [("ENV001", 1, True), ("ENV001", 2, False)]


def test_other_tools_codes_and_bare_noqa_are_ignored_never_tl004(tmp_path):
    text = ("export NCCL_SOCKET_IFNAM=eth0  # noqa: SC2086, E501\n"
            "export NCCL_SOCKET_IFNAMS=eth1  # noqa\n"
            "export NCCL_SOCKET_IFNAMES=eth2  # noqa: E501,ENV001\n")
    assert _findings(tmp_path, text) == [("ENV001", 1, False), ("ENV001", 2, False), ("ENV001", 3, True)]


def test_noqa_naming_a_code_that_matched_nothing_is_tl004(tmp_path):
    text = "export NCCL_DEBUG=WARN  # noqa: ENV001\n"
    assert _findings(tmp_path, text) == [("TL004", 1, False)]


def test_noqa_in_yaml_and_env_files(tmp_path):
    assert _findings(tmp_path, "NCCL_SOCKET_IFNAM=eth0 # noqa: ENV001\n", ".env") == [("ENV001", 1, True)]
    yaml = ("services:\n  t:\n    image: x\n    environment:\n      NCCL_SOCKET_IFNAM: eth0  # noqa: ENV001\n")
    assert _findings(tmp_path, yaml, "docker-compose.yml") == [("ENV001", 5, True)]
