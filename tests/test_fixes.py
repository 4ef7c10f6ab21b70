"""Autofix: --fix / --unsafe-fixes / --diff round-trip on a fixture of every config format
(fixtures/fixes/NAME, expected result fixtures/fixes/fixed/NAME), keeping line endings, the
byte-order mark and the file mode; a second run changes nothing; JSON and SARIF carry the edits."""

from __future__ import annotations

import json
import shutil
import stat

import jsonschema
import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.engine.fixes import Edit, FileText, apply_edits

FIXES = FIXTURES / "fixes"
FORMATS = ["train.sbatch", "Dockerfile", "job.yaml", "docker-compose.yml", ".env", "nccl.conf", "launch.py", "topo.xml"]
FIXED_CODES = {"ENV001", "ENV002", "ENV003", "TOPO001"}
SARIF_SCHEMA = ROOT.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"


def _check(tmp_path, name: str, *flags: str):
    result = run_cli("check", name, "--isolated", "--no-cache", "--format", "json", *flags, cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _codes(result) -> set[str]:
    return {f["code"] for f in json.loads(result.stdout)["findings"]} & FIXED_CODES


def _place(tmp_path, name: str, transform=lambda data: data):
    target = tmp_path / name
    target.write_bytes(transform((FIXES / name).read_bytes()))
    target.chmod(0o640)
    return target, transform((FIXES / "fixed" / name).read_bytes())


@pytest.mark.parametrize("name", FORMATS)
def test_unsafe_fixes_round_trip(tmp_path, name):
    target, expected = _place(tmp_path, name)
    before = _check(tmp_path, name)
    assert _codes(before), "the fixture has findings with fixes"
    fixed = _check(tmp_path, name, "--fix", "--unsafe-fixes")
    assert target.read_bytes() == expected
    assert _codes(fixed) == set()  # the fixed file re-lints clean of those codes
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    again = _check(tmp_path, name, "--fix", "--unsafe-fixes")
    assert target.read_bytes() == expected  # applying twice changes nothing
    assert "fixed 0 findings in 0 files" in again.stderr


@pytest.mark.parametrize("name", ["train.sbatch", ".env", "Dockerfile"])
def test_crlf_endings_and_byte_order_mark_are_kept(tmp_path, name):
    def crlf_bom(data: bytes) -> bytes:
        return b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")

    target, expected = _place(tmp_path, name, crlf_bom)
    _check(tmp_path, name, "--fix", "--unsafe-fixes")
    assert target.read_bytes() == expected


def test_safe_fix_applies_without_unsafe_fixes_and_unsafe_ones_wait(tmp_path):
    xml, xml_expected = _place(tmp_path, "topo.xml")
    script, _ = _place(tmp_path, "train.sbatch")
    original_script = script.read_bytes()
    result = _check(tmp_path, ".", "--fix")
    assert xml.read_bytes() == xml_expected
    assert script.read_bytes() == original_script
    assert "fixed 1 findings in 1 files; 4 more with --unsafe-fixes" in result.stderr


def test_diff_writes_nothing_and_shows_the_edits(tmp_path):
    target, _ = _place(tmp_path, "nccl.conf")
    original = target.read_bytes()
    result = run_cli("check", "nccl.conf", "--isolated", "--no-cache", "--diff", "--unsafe-fixes", cwd=tmp_path)
    assert target.read_bytes() == original
    assert result.exit_code == 1
    assert result.stdout.splitlines()[2:] == ["@@ -1,2 +1,2 @@", "-NCCL_SOCKET_IFNAM=eth0", "-NCCL_IB_GDR_LEVEL=PHB",
                                              "+NCCL_SOCKET_IFNAME=eth0", "+NCCL_NET_GDR_LEVEL=PHB"]
    safe_only = run_cli("check", "nccl.conf", "--isolated", "--no-cache", "--diff", cwd=tmp_path)
    assert safe_only.stdout == "" and safe_only.exit_code == 0
    assert "2 more with --unsafe-fixes" in safe_only.stderr


def test_json_carries_the_edits(tmp_path):
    _place(tmp_path, "nccl.conf")
    findings = json.loads(_check(tmp_path, "nccl.conf").stdout)["findings"]
    assert [f["autofix"] for f in findings if f["code"] == "ENV001"] == [{
        "message": "Rename NCCL_SOCKET_IFNAM to NCCL_SOCKET_IFNAME", "applicability": "unsafe",
        "edits": [{"path": "nccl.conf", "start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 18},
                   "content": "NCCL_SOCKET_IFNAME"}]}]


def test_sarif_fixes_are_valid_and_count_utf16_columns(tmp_path):
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA}")
    (tmp_path / "run.sh").write_text("export X=\U0001F600 NCCL_SOCKET_IFNAM=eth0\n", encoding="utf-8")
    result = run_cli("check", "run.sh", "--isolated", "--no-cache", "--format", "sarif", "--project-root", ".",
                     cwd=tmp_path)
    document = json.loads(result.stdout)
    validator = jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    assert list(validator.iter_errors(document)) == []
    run = document["runs"][0]
    assert run["columnKind"] == "utf16CodeUnits"
    (hit,) = [r for r in run["results"] if r["ruleId"] == "ENV001"]
    # "export X=" is 9 code units, the emoji 2 (one code point), then a blank: the name starts at 13.
    assert hit["locations"][0]["physicalLocation"]["region"]["startColumn"] == 13
    (replacement,) = hit["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement == {"deletedRegion": {"startLine": 1, "startColumn": 13, "endLine": 1, "endColumn": 30},
                           "insertedContent": {"text": "NCCL_SOCKET_IFNAME"}}


def test_an_edit_whose_text_changed_is_not_applied():
    text = FileText(False, ["export NCCL_SOCKET_IFNAME=eth0", ""])
    stale = Edit("x", 1, 8, 1, 25, "NCCL_SOCKET_IFNAME", expected="NCCL_SOCKET_IFNAM")
    changed, applied = apply_edits(text, [stale])
    assert applied == [] and changed.lines == text.lines


def test_overlapping_edits_take_the_first():
    text = FileText(False, ["x = [1, 2]"])
    changed, applied = apply_edits(text, [Edit("x", 1, 5, 1, 11, "[3]", "[1, 2]"), Edit("x", 1, 6, 1, 7, "4", "1")])
    assert changed.lines == ["x = [3]"] and len(applied) == 1


def test_ambiguous_suggestion_has_no_fix(tmp_path):
    from topolint.model.nccl_env import only_suggestion, suggest

    assert only_suggestion("NCCL_SOCKET_IFNAM") == "NCCL_SOCKET_IFNAME"
    ambiguous = [name for name in ("NCCL_IB_TIMEOU", "NCCL_P2P_LEVE", "NCCL_MIN_NCHANNEL", "NCCL_NCHANNELS")
                 if suggest(name) and only_suggestion(name) is None]
    assert ambiguous, "some misspelling is close to two names"


def test_fix_of_stdin_is_not_written(tmp_path):
    import subprocess
    import sys

    shutil.copy(FIXES / "nccl.conf", tmp_path / "nccl.conf")
    result = subprocess.run([sys.executable, "-m", "topolint", "check", "-", "--stdin-filename", "nccl.conf",
                             "--isolated", "--no-cache", "--fix", "--unsafe-fixes"], cwd=tmp_path, capture_output=True,
                            input=(FIXES / "nccl.conf").read_bytes(), env={"PYTHONPATH": str(ROOT)}, check=False)
    assert b"nccl.conf: not a file on disk (stdin): not fixed" in result.stderr
    assert (tmp_path / "nccl.conf").read_bytes() == (FIXES / "nccl.conf").read_bytes()
