"""`.env` files read as their consumer reads them: docker compose (the default), docker run
--env-file (literal), NCCL's nccl.conf (literal)."""

from __future__ import annotations

import json

from conftest import run_cli

from topolint.inputs.source import SourceFile
from topolint.parsers.envfile import parse_docker_env_file, parse_envfile, parse_nccl_conf


def _compose(text: str):
    config = parse_envfile(SourceFile(".env", text))
    return [(s.name, s.value, s.loc.line, s.loc.column) for s in config.settings], config.skipped


def test_quoted_value_with_a_trailing_comment_is_not_an_error(tmp_path):
    # The case: the quotes were kept when a comment followed, and ENV003 failed the commit.
    (tmp_path / ".env").write_text('NCCL_DEBUG="WARN" # comment\n', encoding="utf-8")
    result = run_cli("check", ".env", "--format", "json", "--isolated", "--no-cache", cwd=tmp_path)
    assert json.loads(result.stdout)["findings"] == []
    assert result.exit_code == 0


def test_compose_quotes_comments_export_and_yaml_style():
    text = ("export NCCL_ALGO = Ring # unquoted: the comment starts at ' #'\n"
            "NCCL_PROTO='LL#x'  # single quotes are literal\n"
            "NCCL_SOCKET_IFNAME: eth0\n"
            "NCCL_IB_HCA=mlx5_0#1\n")
    assert _compose(text) == ([("NCCL_ALGO", "Ring", 1, 8), ("NCCL_PROTO", "LL#x", 2, 1),
                               ("NCCL_SOCKET_IFNAME", "eth0", 3, 1), ("NCCL_IB_HCA", "mlx5_0#1", 4, 1)], [])


def test_compose_escapes_and_multi_line_values_keep_later_lines():
    text = 'NCCL_DEBUG_SUBSYS="INIT,\\\nNET"\nNCCL_A="x\\ty\\"z"\nNCCL_B=\'it\\\'s\'\nNCCL_C="l1\nl2"\nNCCL_D=1\n'
    settings, skipped = _compose(text)
    assert settings == [("NCCL_DEBUG_SUBSYS", "INIT,\\\nNET", 1, 1), ("NCCL_A", 'x\ty"z', 3, 1),
                        ("NCCL_B", "it's", 4, 1), ("NCCL_C", "l1\nl2", 5, 1), ("NCCL_D", "1", 7, 1)]
    assert skipped == []


def test_compose_interpolation_uses_the_file_never_the_environment(monkeypatch):
    monkeypatch.setenv("IFACE", "from-the-machine-running-topolint")
    text = ("IF=ens5\nNCCL_SOCKET_IFNAME=${IF}\nNCCL_IB_HCA=${IFACE}\nNCCL_DEBUG=${NCCL_DEBUG:-WARN}\n"
            "NCCL_ALGO=${UNSET:+x}\nNCCL_PROTO=$$Simple\nNCCL_NET=${IF:?missing}\n")
    config = parse_envfile(SourceFile(".env", text))
    assert [(s.name, s.value, s.default_only) for s in config.settings] == [
        ("NCCL_SOCKET_IFNAME", "ens5", False), ("NCCL_IB_HCA", None, False), ("NCCL_DEBUG", "WARN", True),
        ("NCCL_ALGO", None, False), ("NCCL_PROTO", "$Simple", False), ("NCCL_NET", "ens5", False)]


def test_a_line_compose_rejects_stops_the_file_and_is_listed():
    settings, skipped = _compose("NCCL_DEBUG=INFO\nnot a line\nNCCL_ALGO=Ring\n")
    assert settings == [("NCCL_DEBUG", "INFO", 1, 1)]
    assert [(s.line, s.reason.split(" (")[0]) for s in skipped] == [(2, "docker compose rejects the file here")]


def test_docker_env_file_keeps_quotes_and_comments_literally():
    config = parse_docker_env_file(SourceFile("run.env", '  NCCL_DEBUG="INFO" # comment\n# NCCL_ALGO=Ring\n'))
    assert [(s.name, s.value, s.loc.column) for s in config.settings] == [("NCCL_DEBUG", '"INFO" # comment', 3)]


def test_nccl_conf_takes_the_value_as_written():
    config = parse_nccl_conf(SourceFile("nccl.conf", "NCCL_DEBUG=INFO\r\nNCCL_ALGO = Ring\n"))
    assert [(s.name, s.value, s.loc.line) for s in config.settings] == [("NCCL_DEBUG", "INFO", 1), ("NCCL_ALGO", "Ring", 2)]



def test_the_consumer_decides_how_a_dot_env_is_read(tmp_path):
    quoted = 'NCCL_DEBUG="WARN" # comment\n'
    (tmp_path / ".env").write_text(quoted)  # compose: WARN
    (tmp_path / "run.env").write_text(quoted)  # docker run --env-file: the quotes and comment are the value
    (tmp_path / "common.env").write_text("export NCCL_SOCKET_IFNAM=eth0\n")  # sourced: shell, read by the script
    (tmp_path / "go.sh").write_text("source ./common.env\ndocker run --env-file run.env image\n")
    result = run_cli("check", ".", "--isolated", "--no-cache", "--format", "json", "--verbose", cwd=tmp_path)
    found = sorted((f["code"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"])
    assert found == [("ENV001", "common.env", 1), ("ENV003", "run.env", 1)]
    assert ".env: read as docker compose reads a .env file (no other consumer seen)" in result.stderr
    assert "run.env: read as docker run --env-file reads it (values as written)" in result.stderr
    assert "common.env: sourced by a shell script: read as shell there, not on its own" in result.stderr
