"""Nesting bounded in every parser that nests (issue 20, item 3): past its bound an input is TL001
naming the line where the bound was passed, never a RecursionError, a traceback or memory that
grows with the square of the depth (20,000 nested shell ``if`` held 1.6 GB of scope names).

Bounds: shell blocks 256 (parsers/shell.py MAX_NESTING; Dockerfile RUN heredocs and GitHub
Actions ``run:`` scripts are read by the same parser), XML 256 (libxml2), YAML 100 composed and
1,000 brackets in the text (parsers/_yaml.py), JSON as deep as Python's decoder goes (the
position is the first bracket at the deepest level), Python launchers as deep as CPython's
parser goes (the line found by bisection).
"""

from __future__ import annotations

import tracemalloc

import pytest
from conftest import run_cli

from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.bundle_manifest import parse_manifest
from topolint.parsers.registry import parse
from topolint.parsers.shell import MAX_NESTING

DEEP = 20_000


def _refusal(fmt: str, text: str, path: str = "deep") -> InputError:
    with pytest.raises(InputError) as caught:
        parse(fmt, SourceFile(path=path, text=text))
    return caught.value


def _nested_ifs(depth: int) -> str:
    return "if true; then\n" * depth + "export NCCL_DEBUG=INFO\n" + "fi\n" * depth


def test_shell_nested_ifs_are_refused_at_the_bound_with_memory_linear_in_the_depth():
    error = _refusal("shell", _nested_ifs(DEEP))
    assert error.line == MAX_NESTING + 1 and "nested deeper than 256 levels" in error.message
    peaks = []
    for depth in (500, 2_000):  # every scope name held the names of the blocks around it: depth squared
        tracemalloc.start()
        try:
            _refusal("shell", _nested_ifs(depth))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] < 5 * peaks[0], peaks


@pytest.mark.parametrize("opener,closer,line", [
    ("f() {\n", "}\n", MAX_NESTING + 1), ("while true; do\n", "done\n", MAX_NESTING + 1), ("{\n", "}\n", MAX_NESTING + 1),
    ("case x in\n a)\n", ";;\nesac\n", MAX_NESTING + 1),  # the case and its branch: two levels on two lines
])
def test_every_shell_block_counts_toward_the_bound(opener, closer, line):
    error = _refusal("shell", opener * 300 + closer * 300)
    assert "nested deeper" in error.message and error.line == line


def test_shell_nesting_up_to_the_bound_is_read():
    config = parse("shell", SourceFile(path="ok.sh", text="if true; then\n" * MAX_NESTING
                                       + "export NCCL_DEBUG=INFO\n" + "fi\n" * MAX_NESTING))
    assert [s.name for s in config.settings] == ["NCCL_DEBUG"]


def test_dockerfile_heredoc_and_workflow_scripts_share_the_shell_bound():
    body = "if true; then\n" * 300 + "echo\n" + "fi\n" * 300
    assert _refusal("dockerfile", "FROM x\nRUN <<EOF\n" + body + "EOF\n").line == 2 + MAX_NESTING + 1
    steps = "on: [push]\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: |\n"
    script = "".join("          " + line + "\n" for line in body.splitlines())
    assert _refusal("github-actions", steps + script).line == 6 + MAX_NESTING + 1


@pytest.mark.parametrize("fmt,head,tail", [
    ("ip-addr", "[\n", "]"),
    ("ip-route", "[\n", "]"),
    ("nccl-tests", '{"version": 3,\n"results": ', "}"),
    ("topolint-inventory", '{"topolint_inventory": 1,\n"x": ', "}"),
])
def test_json_nested_too_deeply_names_the_deepest_line(fmt, head, tail):
    error = _refusal(fmt, head + "  [\n" * DEEP + "]" * DEEP + tail)
    assert "too deeply" in error.message or "deeply nested" in error.message
    assert (error.line, error.column) == (DEEP + 1, 3)


def test_bundle_manifest_nested_too_deeply_names_the_deepest_line():
    text = '{"topolint_bundle": 1,\n"commands": ' + "[\n" * DEEP + "]" * DEEP + "}"
    with pytest.raises(InputError) as caught:
        parse_manifest(SourceFile(path="topolint-bundle.json", text=text), "node")
    assert "nested too deeply" in caught.value.message and caught.value.line == DEEP + 1


@pytest.mark.parametrize("fmt,text,line", [
    ("nccl-topo-xml", '<system version="1">\n' + "<cpu>\n" * 300 + "</cpu>" * 300 + "</system>", 257),
    ("nccl-graph-xml", '<graphs version="1">\n' + "<graph>\n" * 300 + "</graph>" * 300 + "</graphs>", 257),
    ("hwloc", '<?xml version="1.0"?>\n<topology version="3.0">\n' + '<object type="Machine">\n' * 300
     + "</object>" * 300 + "</topology>", 258),
    ("config-yaml", "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 300)), 101),
    ("config-yaml", "a: " + "[\n" * DEEP + "]" * DEEP + "\n", 1001),
])
def test_xml_and_yaml_past_their_bound_name_the_line(fmt, text, line):
    error = _refusal(fmt, text)
    assert error.line == line and ("depth" in error.message or "nested deeper" in error.message)


@pytest.mark.parametrize("expression", ["+".join(["'x'"] * 200_000), "(\n" + "-\n" * 200_000 + "1)"])
def test_python_launcher_too_deep_names_the_line_where_the_parser_gave_out(expression):
    text = 'import os\nx = 1\n\nos.environ["NCCL_DEBUG"] = ' + expression + "\ny = 2\n"
    error = _refusal("python", text)
    assert "nested too deeply" in error.message
    assert 4 <= error.line < text.count("\n")  # on the statement that nests, not line 1 nor after it


def test_a_too_deep_script_is_tl001_and_exit_2_from_the_cli(tmp_path):
    (tmp_path / "deep.sh").write_text("#!/bin/bash\n" + "if true; then\n" * DEEP + "fi\n" * DEEP)
    result = run_cli("check", "deep.sh", "--no-cache", cwd=tmp_path)
    assert result.exit_code == 2
    assert "deep.sh:258:" in result.stdout and "TL001" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr and "internal error" not in result.stderr
