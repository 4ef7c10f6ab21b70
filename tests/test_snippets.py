"""Every snippet of README.md and docs/*.md, as its marker says (docs/snippets.md, tests/readme_snippets.py).

Run snippets run verbatim in a folder holding exactly the files their marker lists: plain
``topolint ...`` lines in-process, anything with shell syntax through bash with ``topolint`` on
PATH; their exit codes and the ``text`` block shown after them are checked. The others have their
syntax checked (bash -n and topolint's argument parser, YAML, TOML, JSON, Python, XML) and, for
scripts and manifests, pass topolint's own lint. A block without a marker fails, so docs written
later are bound too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from readme_snippets import OUTPUT_LANGUAGES, all_snippets

SNIPPETS = all_snippets()
STANDINS = ROOT / "tests" / "standins"
SHELLS = {"bash", "sh", "shell", "console"}
HOW = ("mark it on the line before its fence: <!-- snippet: files=NAME=fixtures/...,... exit=N --> to run it, "
       "<!-- snippet: no-run (why) --> when it cannot run here, or tested-by= / same-as= (docs/snippets.md)")


def _of(*kinds: str) -> list:
    return [pytest.param(s, id=s.id) for s in SNIPPETS if s.kind in kinds]


def test_every_snippet_is_marked():
    unmarked = [f"{s.id} ({s.lang or 'no language'})" for s in SNIPPETS
                if s.marker is None and s.lang not in OUTPUT_LANGUAGES]
    assert not unmarked, f"snippets without a marker: {', '.join(unmarked)}: {HOW}"
    broken = [f"{s.id}: {s.problem}" for s in SNIPPETS if s.problem]
    assert not broken, "; ".join(broken)


# --- running -------------------------------------------------------------------------------------

def _commands(text: str) -> list[str]:
    """The script's commands, one per line (backslash continuations joined; comment lines dropped)."""
    commands, pending = [], ""
    for line in text.splitlines():
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


def _plain_topolint(command: str) -> list[str] | None:
    """The arguments of a plain ``topolint ...`` command (no shell syntax): run in-process."""
    if re.search(r"[|&;<>$`*?()]", command.split(" #")[0]):
        return None
    words = shlex.split(command, comments=True)
    return words[1:] if words and words[0] == "topolint" else None


def _path(tmp_path: Path, standins: str) -> str:
    """PATH with ``topolint`` running this checkout first, then tests/standins/ if the marker names stand-ins."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    (folder / "topolint").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m topolint \"$@\"\n")
    (folder / "topolint").chmod(0o755)
    names = list(filter(None, standins.split(",")))
    for name in names:
        assert (STANDINS / name).is_file(), f"standins={name}: no tests/standins/{name}"
    return os.pathsep.join([str(folder), *([str(STANDINS)] if names else []), os.environ["PATH"]])


def _place(files: str, work: Path) -> None:
    for entry in filter(None, files.split(",")):
        name, _, source = entry.rpartition("=") if "=" in entry else (entry, "", entry)
        origin = ROOT / source
        assert origin.exists(), f"files={entry}: {source} is not in the repository"
        target = work / name.rstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, target)
        else:
            shutil.copy(origin, target)


def _run(command: str, work: Path, tmp_path: Path, standins: str, monkeypatch) -> tuple[int, str, str]:
    """One command line, as bash runs it. The plain forms run in-process (a tenth of the time of a
    subprocess): ``topolint ...``, ``cat FILE | topolint ...`` (FILE on stdin), and ``A && B`` of
    those, ``cd DIR`` and stand-ins; anything else goes to bash with ``topolint`` on PATH."""
    parts = command.split(" && ")
    if len(parts) > 1 and not any(re.search(r"[|;<>$`(]|\|\|", part.split(" #")[0]) for part in parts[:-1]):
        out = err = ""
        here = work
        for part in parts:
            words = shlex.split(part, comments=True)
            if words[:1] == ["cd"] and len(words) == 2:
                here = here / words[1]
                continue
            code, more_out, more_err = _run(part, here, tmp_path, standins, monkeypatch)
            out, err = out + more_out, err + more_err
            if code:
                return code, out, err
        return 0, out, err
    piped = re.fullmatch(r"cat (\S+) \| (topolint .*)", command)
    arguments = _plain_topolint(piped.group(2) if piped else command)
    if arguments is not None:
        import io

        with monkeypatch.context() as patch:
            patch.setenv("PATH", _path(tmp_path, standins))  # what topolint live runs, for one
            if piped:
                stdin = io.TextIOWrapper(io.BytesIO((work / piped.group(1)).read_bytes()))
                patch.setattr(sys, "stdin", stdin)
            result = run_cli(*arguments, cwd=work)
        return result.exit_code, result.stdout, result.stderr
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    env = {**os.environ, "PATH": _path(tmp_path, standins), "TOPOLINT_NO_CACHE": "1"}
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def matches(shown: str, actual: str) -> bool:
    """The output shown, a line ``...`` standing for any lines (none too; the blank lines around it
    are part of it)."""
    lines = shown.splitlines()
    kept = [line for i, line in enumerate(lines) if line.strip() or not (
        (i > 0 and lines[i - 1].strip() == "...") or (i + 1 < len(lines) and lines[i + 1].strip() == "..."))]
    pattern = "".join(r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line) + r"\n" for line in kept)
    return re.fullmatch(pattern, actual if actual.endswith("\n") or not actual else actual + "\n") is not None


@pytest.mark.parametrize("snippet", _of("run"))
def test_run_snippet(snippet, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    _place(snippet.keys.get("files", ""), work)
    if "as" in snippet.keys:
        (work / snippet.keys["as"]).parent.mkdir(parents=True, exist_ok=True)
        (work / snippet.keys["as"]).write_text(snippet.body, encoding="utf-8")
        script = snippet.keys.get("run", f"topolint check {snippet.keys['as']}")
    else:
        assert snippet.lang in SHELLS, f"{snippet.id}: a {snippet.lang} snippet runs with as=NAME (and run=...)"
        script = snippet.body
    commands = _commands(script)
    assert commands, f"{snippet.id}: nothing to run"
    expected = [int(e) for e in snippet.keys.get("exit", "0").split(",")]
    if len(expected) == 1:
        expected *= len(commands)
    assert len(expected) == len(commands), f"{snippet.id}: exit= names {len(expected)} codes for {len(commands)} commands"
    stdout = ""
    for command, code in zip(commands, expected):
        exit_code, out, err = _run(command, work, tmp_path, snippet.keys.get("standins", ""), monkeypatch)
        assert "Traceback" not in err, f"{snippet.id}: {command}\n{err}"
        assert exit_code == code, f"{snippet.id}: `{command}` exited {exit_code}, the marker says {code}\n{out}{err}"
        stdout += out
    if snippet.output is not None:
        assert matches(snippet.output, stdout), f"{snippet.id}: the output shown after it is not what it prints:\n{stdout}"


# --- syntax of the others ---------------------------------------------------------------------------

def _lint(snippet, tmp_path: Path, name: str) -> None:
    """Scripts and manifests pass topolint's own lint (no finding at or above warning)."""
    (tmp_path / name).write_text(snippet.body, encoding="utf-8")
    result = run_cli("check", name, "--isolated", "--ignore", "TL002", "--format", "concise", cwd=tmp_path)
    expected = int(snippet.keys.get("lint", "0"))
    assert result.exit_code == expected, f"{snippet.id}: topolint check exits {result.exit_code}:\n{result.stdout}{result.stderr}"


def _shell_syntax(snippet, tmp_path: Path) -> None:
    text = snippet.body
    if snippet.lang == "console":
        text = "".join(line[2:] + "\n" for line in text.splitlines() if line.startswith("$ "))
    if shutil.which("bash") is not None:
        done = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
        assert done.returncode == 0, f"{snippet.id}: bash -n: {done.stderr}"
    from topolint.cli import build_parser

    for command in _commands(text):
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", command):
            arguments = _plain_topolint(part) if "[" not in part and "<" not in part else None
            if arguments:
                parser = build_parser(only=arguments[0] if not arguments[0].startswith("-") else None)
                try:
                    _, unknown = parser.parse_known_args(arguments)
                except SystemExit:
                    pytest.fail(f"{snippet.id}: `{part}`: topolint does not accept these arguments")
                assert not unknown, f"{snippet.id}: `{part}`: unknown arguments {unknown}"
    if snippet.lang != "console" and snippet.kind == "no-run":
        _lint(snippet, tmp_path, "snippet.sh")


def _toml_syntax(snippet, tmp_path: Path) -> None:
    import tomllib

    data = tomllib.loads(snippet.body)
    if {"code", "check"} <= set(data):  # a rule definition, site rules' format
        from topolint.engine.rule import validate_rule_file

        (tmp_path / "rule.toml").write_text(snippet.body, encoding="utf-8")
        validate_rule_file(tmp_path / "rule.toml")


@pytest.mark.parametrize("snippet", _of("no-run", "tested-by", "same-as"))
def test_snippet_syntax(snippet, tmp_path):
    if snippet.lang in SHELLS:
        _shell_syntax(snippet, tmp_path)
    elif snippet.lang in ("yaml", "yml"):
        yaml = pytest.importorskip("yaml")
        list(yaml.safe_load_all(snippet.body))
        if snippet.kind == "no-run":
            _lint(snippet, tmp_path, "snippet.yaml")
    elif snippet.lang == "toml":
        _toml_syntax(snippet, tmp_path)
    elif snippet.lang == "json":
        json.loads(snippet.body)
    elif snippet.lang == "python":
        compile(snippet.body, snippet.id, "exec")
    elif snippet.lang == "xml":
        from lxml import etree

        etree.fromstring(snippet.body.encode(), etree.XMLParser(resolve_entities=False, no_network=True))
    elif snippet.lang == "dockerfile" and snippet.kind == "no-run":
        _lint(snippet, tmp_path, "Dockerfile")
    if snippet.kind == "tested-by":
        path, _, name = snippet.keys["tested-by"].partition("::")
        assert (ROOT / path).is_file() and re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(), re.M), \
            f"{snippet.id}: tested-by={snippet.keys['tested-by']}: no such test"
    if snippet.kind == "same-as":
        source = ROOT / snippet.keys["same-as"]
        assert source.is_file() and source.read_text(encoding="utf-8").rstrip() + "\n" == snippet.body, \
            f"{snippet.id}: not the content of {snippet.keys['same-as']}"


def test_the_markers_are_read_as_written(tmp_path):
    """An unmarked block is caught (what test_every_snippet_is_marked fails on), a marker binds the
    block after it, a run snippet takes the text block after it as its output."""
    from readme_snippets import snippets_of

    doc = tmp_path / "new.md"
    doc.write_text("# A\n\n```bash\ntopolint rules\n```\n\n<!-- snippet: no-run (needs a cluster) -->\n\n```bash\n"
                   "srun x\n```\n\n<!-- snippet: files=a.xml=fixtures/x.xml exit=1 -->\n```bash\ntopolint check a.xml\n"
                   "```\n\nIt prints:\n\n```text\nFound 1 finding.\n```\n<!-- snippet: exot=1 -->\n```sh\nx\n```\n")
    unmarked, skipped, run, text, typo = snippets_of(doc)
    assert unmarked.marker is None and skipped.kind == "no-run" and skipped.reason == "needs a cluster"
    assert run.kind == "run" and run.keys == {"files": "a.xml=fixtures/x.xml", "exit": "1"}
    assert run.output == "Found 1 finding.\n" and text.lang == "text" and "exot=1" in typo.problem


def test_output_blocks_are_compared_with_ellipses():
    assert matches("a\n...\nz\n", "a\nb\nc\nz\n") and matches("a\n...\nz\n", "a\nz\n")
    assert matches("a\n\n...\n\nz\n", "a\nb\n\nz\n") and matches("a\n\n...\n\nz\n", "a\nz\n")
    assert not matches("a\n...\nz\n", "a\nb\n") and not matches("a\nb\n", "a\nb\nc\n")


# --- pins ------------------------------------------------------------------------------------------

def test_pins_name_the_version_of_this_checkout():
    """`rev: vX` of the pre-commit snippets and `topolint/topolint@vX` of the Action name the
    version in topolint/__init__.py: the tag made at release."""
    from topolint import __version__

    found = []
    for path in [ROOT / "README.md", ROOT / "action.yml", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        found += [(path.name, m.group(1)) for m in re.finditer(r"repo:\s*\S*topolint\S*.*\n\s*rev:\s*(\S+)", text)]
        found += [(path.name, m.group(1)) for m in re.finditer(r"topolint/topolint@(v[\w.]+)", text)]
    assert len(found) >= 4, found
    assert {rev for _, rev in found} == {f"v{__version__}"}, found
