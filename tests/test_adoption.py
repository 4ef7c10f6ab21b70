"""A new user's first contact (issue 25): each case found following README.md and docs/ on a fresh
clone, and the small things a best-in-class linter offers there: the variables it knows, fixable
findings counted, suppressions added with their reasons, the configuration schema printed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT, run_cli
from readme_snippets import all_snippets, snippets_for

DECLARATION = FIXTURES / "rules" / "TOPO001" / "bad_declaration.xml"  # a safe fix
UNSAFE = "export NCCL_P2P_LEVEL='nvl'\n"  # ENV003: an unsafe value fix


def _readme(section: str, lang: str):
    (snippet,) = [s for s in all_snippets() if s.document == "README.md" and s.section == section and s.lang == lang]
    return snippet


def _place(snippet, work: Path) -> None:
    for entry in filter(None, snippet.keys.get("files", "").split(",")):
        name, _, source = entry.rpartition("=")
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / source).is_dir() else shutil.copy)(ROOT / source, target)


def test_config_example_runs_with_the_files_it_lists(tmp_path):
    """Why: the `.topolint.toml` example exited 2 ("`rule-dirs`: site-rules: not a directory", then
    "no rule with code 'SITE001'") unless files the docs never list existed."""
    snippet = _readme("Configuration", "toml")
    assert snippet.kind == "run" and snippet.keys["as"] == ".topolint.toml"
    (tmp_path / ".topolint.toml").write_text(snippet.body, encoding="utf-8")
    bare = run_cli("check", ".", cwd=tmp_path)
    assert bare.exit_code == 2 and "`rule-dirs`: site-rules: not a directory" in bare.stderr
    _place(snippet, tmp_path)
    result = run_cli("check", ".", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr  # fail-level = "error": the topology's warnings do not fail
    assert "Found 4 findings (0 error, 4 warning, 0 info)." in result.stdout
    assert "SITE001" in run_cli("check", "--show-settings", cwd=tmp_path).stdout


def test_suppression_example_suppresses_what_it_names(tmp_path):
    """Why: the example put ignore[ENV004] above NCCL_ALGO=Ring (whose finding is ENV005), so it
    reported TL004 "suppresses nothing"."""
    snippet = _readme("Suppressing findings", "bash")
    _place(snippet, tmp_path)
    (tmp_path / "train.sh").write_text(snippet.body, encoding="utf-8")
    for extra in ([], ["--topology", "node17/"]):
        result = run_cli("check", "train.sh", "--select", "ALL", "--format", "json", *extra, cwd=tmp_path)
        findings = json.loads(result.stdout)["findings"]
        assert result.exit_code == 0 and not [f for f in findings if not f["suppressed"]], result.stdout
    assert sorted(f["code"] for f in findings) == ["ENV004", "ENV005", "NET002"]


def test_config_schema_module_on_an_installed_package(tmp_path):
    """Why: `python -m topolint.config` on a non-editable install was a traceback (it wrote into
    ../docs, which site-packages has not). It prints the schema, the one docs/ holds."""
    import topolint

    site = tmp_path / "site-packages"
    shutil.copytree(Path(topolint.__file__).parent, site / "topolint", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "topolint.config"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "docs" / "config.schema.json").read_text(encoding="utf-8")
    assert not (tmp_path / "docs").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["site-packages"]


def test_rules_variables_lists_what_env001_knows(tmp_path):
    """Why: ENV001's fix pointed at a file inside the package; no command listed the known variables."""
    (tmp_path / "job.sh").write_text("export NCCL_TOTALLY_MADE_UP=1\n", encoding="utf-8")
    (tmp_path / ".topolint.toml").write_text('extra-variables = ["NCCL_SITE_OPT"]\n', encoding="utf-8")
    finding = json.loads(run_cli("check", "job.sh", "--format", "json", cwd=tmp_path).stdout)["findings"][0]
    assert finding["code"] == "ENV001" and "`topolint rules --variables`" in finding["fix"]
    assert "nccl_env.json" not in finding["fix"]
    listed = run_cli("rules", "--variables", cwd=tmp_path)
    assert listed.exit_code == 0
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert re.match(r"NCCL_NVLS_ENABLE\s+2\.17\.1-2\.30\.7\s+current\s+nccl$", rows["NCCL_NVLS_ENABLE"])
    assert rows["NCCL_IB_GDR_LEVEL"].split()[1] == "2.3.5-2.3.7" and "renamed to NCCL_NET_GDR_LEVEL" in rows["NCCL_IB_GDR_LEVEL"]
    assert rows["NCCL_ASYNC_ERROR_HANDLING"].endswith("pytorch") and rows["NCCL_TESTS_*"].endswith("nccl-tests")
    assert "extra-variables in" in rows["NCCL_SITE_OPT"]
    assert "NCCL_TOTALLY_MADE_UP" not in rows
    data = json.loads(run_cli("rules", "--variables", "--format", "json", cwd=tmp_path).stdout)
    nvls = next(r for r in data if r["name"] == "NCCL_NVLS_ENABLE")
    assert nvls["reader"] == "nccl" and nvls["versions"] == "2.17.1-2.30.7" and nvls["source"].endswith("v2.17.1-1")
    assert len(data) == len(rows)


def test_fixable_findings_are_marked_and_counted(tmp_path):
    """Why: the output never said how many findings --fix or --unsafe-fixes would fix."""
    shutil.copy(DECLARATION, tmp_path / "topo.xml")
    (tmp_path / "run.sh").write_text(UNSAFE, encoding="utf-8")
    concise = run_cli("check", "topo.xml", "run.sh", "--select", "TOPO001,ENV003", "--format", "concise", cwd=tmp_path)
    lines = concise.stdout.splitlines()
    assert [line for line in lines if "[*]" in line and " TOPO001 " in line] == \
        [line for line in lines if line.startswith("topo.xml:1") and " TOPO001 [*] [error] " in line]
    assert not any("[*]" in line for line in lines if " ENV003 " in line)  # unsafe: marked with --unsafe-fixes only
    assert lines[-1] == "[*] 1 fixable with --fix (1 more with --unsafe-fixes)."
    full = run_cli("check", "topo.xml", "run.sh", "--select", "TOPO001,ENV003", cwd=tmp_path).stdout
    assert " TOPO001 [*] [error] " in full and full.endswith("[*] 1 fixable with --fix (1 more with --unsafe-fixes).\n")
    both = run_cli("check", "topo.xml", "run.sh", "--select", "TOPO001,ENV003", "--unsafe-fixes", "--format",
                   "concise", cwd=tmp_path).stdout.splitlines()
    assert any(" ENV003 [*] " in line for line in both) and both[-1] == "[*] 2 fixable with --fix --unsafe-fixes."
    only_unsafe = run_cli("check", "run.sh", "--format", "concise", cwd=tmp_path).stdout.splitlines()
    assert only_unsafe[-1] == "No fixes available with --fix (1 with --unsafe-fixes)."
    fixed = run_cli("check", "topo.xml", "run.sh", "--select", "TOPO001,ENV003", "--fix", "--format", "concise",
                    cwd=tmp_path)
    assert fixed.stdout.splitlines()[-1] == "No fixes available with --fix (1 with --unsafe-fixes)."
    assert run_cli("check", "run.sh", "--format", "concise", "-q", cwd=tmp_path).stdout.count("\n") == 1  # quiet: none


def test_add_noqa_writes_reasons_where_they_are_required(tmp_path):
    """Why: `--add-noqa --require-suppression-reason` wrote directives without reasons, which then
    suppressed nothing (2 findings became 4)."""
    script = tmp_path / "job.sh"
    script.write_text("export NCCL_DEBUG=INFO\nexport NCCL_ALGO=Ring\n", encoding="utf-8")
    flags = ("--select", "ENV004,ENV005,TL004", "--require-suppression-reason")
    before = json.loads(run_cli("check", "job.sh", *flags, "--format", "json", cwd=tmp_path).stdout)["findings"]
    assert len(before) == 2
    added = run_cli("check", "job.sh", *flags, "--add-noqa", cwd=tmp_path)
    assert "2 directives say 'TODO: say why this is safe'" in added.stderr
    assert script.read_text() == ("# topolint: ignore[ENV004] TODO: say why this is safe\nexport NCCL_DEBUG=INFO\n"
                                  "# topolint: ignore[ENV005] TODO: say why this is safe\nexport NCCL_ALGO=Ring\n")
    after = run_cli("check", "job.sh", *flags, cwd=tmp_path)
    assert after.exit_code == 0 and after.stdout == "All checks passed (2 suppressed).\n"
    # Without the requirement the directive is written as before, with no placeholder.
    script.write_text("export NCCL_DEBUG=INFO\n", encoding="utf-8")
    run_cli("check", "job.sh", "--add-noqa", cwd=tmp_path)
    assert script.read_text() == "# topolint: ignore[ENV004]\nexport NCCL_DEBUG=INFO\n"


def test_readme_autofix_json_is_real_output(tmp_path):
    """The README's JSON autofix excerpt is what --format json says of `export NCCL_P2P_LEVEL='nvl'`."""
    (snippet,) = snippets_for("tests/test_adoption.py::test_readme_autofix_json_is_real_output")
    (tmp_path / "run.sh").write_text(UNSAFE, encoding="utf-8")
    report = json.loads(run_cli("check", "run.sh", "--select", "ENV003", "--format", "json", cwd=tmp_path).stdout)
    (finding,) = report["findings"]
    assert finding["autofix"] == json.loads(snippet)
