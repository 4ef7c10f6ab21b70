"""Shell read as bash reads it: words, comments, quotes, substitutions, heredocs, defaults;
linear in the input and without recursion on deep nesting."""

from __future__ import annotations

from conftest import run_cli

from topolint.inputs.source import SourceFile
from topolint.parsers._bash import statements
from topolint.parsers.shell import parse_shell


def _settings(text: str):
    return [(s.name, s.value, s.loc.line, s.loc.column, s.default_only) for s in parse_shell(SourceFile("x.sh", text)).settings]


def test_hash_inside_a_word_is_not_a_comment():
    # shlex took "#" anywhere as a comment: the value became "eth" and the rest vanished.
    assert _settings("export NCCL_SOCKET_IFNAME=eth#0 NCCL_DEBUG=INFO # a comment NCCL_ALGO=Ring\n") == [
        ("NCCL_SOCKET_IFNAME", "eth#0", 1, 8, False), ("NCCL_DEBUG", "INFO", 1, 33, False)]


def test_colon_default_assignment_is_read():
    text = 'set -a\n: "${NCCL_DEBUG:=INFO}"\necho "${NCCL_ALGO=Ring}"\nNCCL_PROTO=${NCCL_PROTO:=Simple}\n'
    assert _settings(text) == [("NCCL_DEBUG", "INFO", 2, 6, True), ("NCCL_ALGO", "Ring", 3, 9, True),
                               ("NCCL_PROTO", "Simple", 4, 1, True)]


def test_default_with_expansion_is_not_a_literal():
    assert _settings('export NCCL_SOCKET_IFNAME\n: "${NCCL_SOCKET_IFNAME:=$(ip route | head -1)}"\n')[1:] == [
        ("NCCL_SOCKET_IFNAME", None, 2, 6, True)]


def test_command_substitution_with_spaces_is_one_word():
    assert _settings('export NCCL_IB_HCA="$(ls /sys/class/infiniband | tr "\\n" ,)" NCCL_DEBUG=WARN\n') == [
        ("NCCL_IB_HCA", None, 1, 8, False), ("NCCL_DEBUG", "WARN", 1, 62, False)]


def test_heredoc_body_is_data_not_commands():
    text = "cat > notes.txt <<'EOF'\nexport NCCL_DEBUG=INFO\nEOF\nexport NCCL_ALGO=Ring\n"
    config = parse_shell(SourceFile("x.sh", text))
    assert [(s.name, s.loc.line) for s in config.settings] == [("NCCL_ALGO", 4)]
    assert [(s.line, s.reason) for s in config.skipped] == [(2, "heredoc body (lines 2-2) is input to cat: not analysed")]


def test_heredoc_fed_to_a_shell_is_a_script_and_one_written_to_nccl_conf_is_its_content():
    text = ("srun -N2 bash <<'EOF'\n"
            "export NCCL_DEBUG=WARN\n"
            "cat > /etc/nccl.conf <<EOT\n"
            "NCCL_SOCKET_IFNAME=eth0\n"
            "NCCL_IB_HCA=$HCA\n"
            "EOT\n"
            "EOF\n"
            "sudo tee -a ~/.nccl.conf >/dev/null <<'X'\n"
            "NCCL_ALGO=Ring\n"
            "X\n")
    config = parse_shell(SourceFile("x.sh", text))
    assert [(s.name, s.value, s.loc.line, s.loc.column, s.scope) for s in config.settings] == [
        ("NCCL_DEBUG", "WARN", 2, 8, "file/sh@2"),
        ("NCCL_SOCKET_IFNAME", "eth0", 4, 1, "nccl.conf:/etc/nccl.conf"),
        ("NCCL_IB_HCA", None, 5, 1, "nccl.conf:/etc/nccl.conf"),  # unquoted EOT: $HCA is expanded
        ("NCCL_ALGO", "Ring", 9, 1, "nccl.conf:~/.nccl.conf")]
    assert config.skipped == []


def test_dockerfile_heredocs_run_as_sh_and_copied_nccl_conf():
    from topolint.parsers.dockerfile import parse_dockerfile

    text = ("FROM base AS train\n"
            "RUN <<EOF\nexport NCCL_SOCKET_IFNAM=eth0\nEOF\n"
            "COPY <<EOF /etc/nccl.conf\nNCCL_ALGO=Ring\nEOF\n"
            "RUN <<EOF\n#!/usr/bin/env python3\nprint(1)\nEOF\n"
            "RUN cat > /etc/nccl.conf <<'EOT'\nNCCL_PROTO=Simple\nEOT\n"
            "ENV NCCL_DEBUG=WARN\n")
    config = parse_dockerfile(SourceFile("Dockerfile", text))
    assert [(s.name, s.loc.line, s.scope) for s in config.settings] == [
        ("NCCL_SOCKET_IFNAM", 3, "stage:train#run@2"),
        ("NCCL_ALGO", 6, "stage:train#nccl.conf:/etc/nccl.conf"),
        ("NCCL_PROTO", 13, "nccl.conf:/etc/nccl.conf"),
        ("NCCL_DEBUG", 15, "stage:train")]
    assert [(s.line, s.reason) for s in config.skipped] == [
        (9, "RUN heredoc body (lines 9-10) is a python3 script: not analysed")]


def test_tab_stripped_heredoc_and_positions_after_it():
    found, stopped = statements("cat <<-END\n\tbody\n\tEND\nexport A=1\n")
    assert stopped is None
    heredoc = found[0].heredocs[0]
    assert (heredoc.delimiter, heredoc.first_line, heredoc.body, heredoc.terminated) == ("END", 2, ["body"], True)
    assert [(str(t), t.line, t.column) for t in found[1].tokens] == [("export", 4, 1), ("A=1", 4, 8)]


def test_ansi_c_quotes_and_control_characters_kept_exact():
    assert _settings("export NCCL_DEBUG=$'INFO\\t' NCCL_ALGO=Ri\x01ng\n") == [
        ("NCCL_DEBUG", "INFO\t", 1, 8, False), ("NCCL_ALGO", "Ri\x01ng", 1, 29, False)]


def test_a_quoted_value_over_many_lines_is_one_word():
    text = 'export NCCL_DEBUG="' + "a\n" * 100_000 + '"\nexport NCCL_ALGO=Ring\n'
    config = parse_shell(SourceFile("x.sh", text))
    assert [(s.name, s.loc.line) for s in config.settings] == [("NCCL_DEBUG", 1), ("NCCL_ALGO", 100_002)]
    assert config.skipped == []


def test_unterminated_substitution_stops_once_without_rescanning():
    text = "export NCCL_DEBUG=INFO\n" + "x=$(\n" * 50_000
    config = parse_shell(SourceFile("x.sh", text))
    assert [s.name for s in config.settings] == ["NCCL_DEBUG"]
    assert [(s.line, s.reason) for s in config.skipped] == [(2, "unterminated $(...): lines 2-50002 not analysed")]


def test_heredocs_nested_in_heredocs_stop_at_a_bound():
    depth = 40
    text = "".join(f"bash <<'E{i}'\n" for i in range(depth)) + "export NCCL_DEBUG=WARN\n" + \
        "".join(f"E{i}\n" for i in reversed(range(depth)))
    config = parse_shell(SourceFile("x.sh", text))
    assert config.settings == []
    assert any("is input to bash: not analysed" in s.reason for s in config.skipped)


def test_deep_nesting_needs_no_recursion():
    text = "export NCCL_DEBUG=" + "$(" * 20_000 + "x" + ")" * 20_000 + "\nexport NCCL_ALGO=Ring\n"
    assert _settings(text) == [("NCCL_DEBUG", None, 1, 8, False), ("NCCL_ALGO", "Ring", 2, 8, False)]


def test_skipped_heredoc_bodies_are_listed_with_verbose(tmp_path):
    (tmp_path / "x.sh").write_text("cat > notes.txt <<'EOF'\nexport NCCL_DEBUG=INFO\nEOF\nexport NCCL_ALGO=Ring\n")
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:22.04\nRUN <<EOF\n#!/usr/bin/env python3\nprint(1)\nEOF\n"
                                         "ENV NCCL_ALGO=Ring\n")
    quiet = run_cli("check", ".", "--isolated", "--no-cache", cwd=tmp_path)
    assert "not analysed" not in quiet.stderr
    verbose = run_cli("check", ".", "--isolated", "--no-cache", "--verbose", cwd=tmp_path).stderr.splitlines()
    assert "topolint: x.sh:2: skipped, heredoc body (lines 2-2) is input to cat: not analysed" in verbose
    assert any(line.startswith("topolint: Dockerfile:3: skipped, RUN heredoc body") and "python3 script" in line
               for line in verbose), verbose
