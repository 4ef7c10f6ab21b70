"""Injection fixtures (issue 7, "Output injection"): values from inputs never start a line with
a workflow command and never put a control character on the terminal in the text formats
(full, concise, github); JSON and SARIF keep the exact values, and SARIF puts input-derived text
only in message.text. The landed full and concise formats printed the injected line raw."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import FIXTURES, run_cli

from topolint.reporters._text import safe_lines, visible

INJECTION = FIXTURES / "injection"
INJECTED = "\n::error file=evil.py,line=1::injected"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _outputs(*paths, cwd=None):
    outputs = {}
    for fmt in ("full", "concise", "github", "json", "sarif"):
        result = run_cli("check", *map(str, paths), "--no-cache", "--format", fmt, **({"cwd": cwd} if cwd else {}))
        assert result.exit_code in (1, 2), result.stderr
        outputs[fmt] = result.stdout
    return outputs


@pytest.mark.parametrize("name", ["pod.yaml", "job.env"])
def test_text_formats_show_control_characters_and_start_no_command(name):
    outputs = _outputs(INJECTION / name)
    for fmt in ("full", "concise", "github"):
        assert not CONTROL.search(outputs[fmt]), fmt  # ESC, BEL, CR: all written as escapes
        own = [line for line in outputs[fmt].splitlines() if line.startswith("::")]
        if fmt == "github":
            findings = json.loads(outputs["json"])["findings"]
            assert len(own) == len(findings)  # one annotation each, no injected extra
            assert all(line.split("::", 2)[1].split(" ")[0] in ("error", "warning", "notice") for line in own)
        else:
            assert own == [], fmt
    assert "\\x1b" in outputs["concise"] or "\\n::error" in outputs["concise"]


def test_json_and_sarif_keep_exact_values():
    outputs = _outputs(INJECTION / "pod.yaml", INJECTION / "job.env")
    messages = [f["message"] for f in json.loads(outputs["json"])["findings"]]
    assert any(INJECTED in m for m in messages) and any("\x1b[2J" in m for m in messages)
    sarif = json.loads(outputs["sarif"])
    results = sarif["runs"][0]["results"]
    assert any(INJECTED in r["message"]["text"] for r in results)
    assert all(set(r["message"]) == {"text"} for r in results)  # never markdown for input text


def test_a_path_that_looks_like_a_workflow_command(tmp_path):
    shutil.copyfile(INJECTION / "job.env", tmp_path / "::error file=x,line=1::pwned.env")
    outputs = _outputs(tmp_path / "::error file=x,line=1::pwned.env", cwd=tmp_path)
    for fmt in ("full", "concise"):
        lines = outputs[fmt].splitlines()
        assert any("::error file=x,line=1::pwned.env" in line for line in lines)
        assert not [line for line in lines if line.startswith("::")], fmt


def test_visible_and_safe_lines():
    assert visible("a\nb\rc\x1b[31m\x07\u202e") == "a\\nb\\rc\\x1b[31m\\x07\\u202e"
    assert visible("tab\tstays") == "tab\tstays"
    assert safe_lines("ok\n::error::x\n  ##[error]y\n") == "ok\n ::error::x\n   ##[error]y\n"
