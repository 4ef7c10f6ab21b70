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
# One fixture per config format topolint reads (train.env: a compose env_file), each with renames
# and value edits in every way the format writes a value; two topology files with a safe fix.
FORMATS = ["train.sbatch", "Dockerfile", "job.yaml", "docker-compose.yml", ".env", "train.env", "nccl.conf",
           ".deepspeed_env", "launch.py", "topo.xml", "bom-topo.xml"]
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


def test_docker_run_env_file_round_trip_keeps_literal_quotes(tmp_path):
    """A file given to ``docker run --env-file`` is read as written: its quotes are part of the value."""
    (tmp_path / "run.sh").write_text("#!/bin/bash\ndocker run --env-file ./nccl.env nvcr.io/nvidia/pytorch:24.05-py3\n")
    env = tmp_path / "nccl.env"
    env.write_bytes(b'  NCCL_P2P_LEVEL=node\r\nNCCL_SOCKET_IFNAM=eth0\r\nNCCL_NET_GDR_LEVEL="pxb"\r\n')
    env.chmod(0o600)
    _check(tmp_path, ".", "--fix", "--unsafe-fixes")
    fixed = b'  NCCL_P2P_LEVEL=PHB\r\nNCCL_SOCKET_IFNAME=eth0\r\nNCCL_NET_GDR_LEVEL="pxb"\r\n'
    assert env.read_bytes() == fixed and stat.S_IMODE(env.stat().st_mode) == 0o600
    left = [f for f in json.loads(_check(tmp_path, ".").stdout)["findings"] if f["code"] in FIXED_CODES]
    assert [(f["code"], f["line"], f["autofix"]) for f in left] == [("ENV003", 3, None)]  # '"pxb"': no exact fix
    assert "fixed 0 findings in 0 files" in _check(tmp_path, ".", "--fix", "--unsafe-fixes").stderr
    assert env.read_bytes() == fixed


@pytest.mark.parametrize("name", FORMATS)
def test_crlf_endings_are_kept_in_every_format(tmp_path, name):
    target, expected = _place(tmp_path, name, lambda data: data.replace(b"\n", b"\r\n"))
    _check(tmp_path, name, "--fix", "--unsafe-fixes")
    assert target.read_bytes() == expected
    assert "fixed 0 findings in 0 files" in _check(tmp_path, name, "--fix", "--unsafe-fixes").stderr


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
    assert "fixed 1 findings in 1 files; 6 more with --unsafe-fixes" in result.stderr


def test_diff_writes_nothing_and_shows_the_edits(tmp_path):
    target, _ = _place(tmp_path, "nccl.conf")
    original = target.read_bytes()
    result = run_cli("check", "nccl.conf", "--isolated", "--no-cache", "--diff", "--unsafe-fixes", cwd=tmp_path)
    assert target.read_bytes() == original
    assert result.exit_code == 1
    assert result.stdout.splitlines()[2:] == ["@@ -1,3 +1,3 @@", "-NCCL_SOCKET_IFNAM=eth0", "-NCCL_IB_GDR_LEVEL=PHB",
                                              "-NCCL_P2P_LEVEL=sys", "+NCCL_SOCKET_IFNAME=eth0",
                                              "+NCCL_NET_GDR_LEVEL=PHB", "+NCCL_P2P_LEVEL=SYS"]
    safe_only = run_cli("check", "nccl.conf", "--isolated", "--no-cache", "--diff", cwd=tmp_path)
    assert safe_only.stdout == "" and safe_only.exit_code == 0
    assert "3 more with --unsafe-fixes" in safe_only.stderr


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


# --- the byte-order mark ------------------------------------------------------------------------

def test_bom_fix_is_safe_and_keeps_crlf_and_mode(tmp_path):
    target, expected = _place(tmp_path, "bom-topo.xml", lambda data: data.replace(b"\n", b"\r\n"))
    assert target.read_bytes().startswith(b"\xef\xbb\xbf<!--") and not expected.startswith(b"\xef")
    result = _check(tmp_path, "bom-topo.xml", "--fix")  # safe: no --unsafe-fixes needed
    assert target.read_bytes() == expected and b"\r\n" in expected
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert "fixed 1 findings in 1 files" in result.stderr and _codes(result) == set()


def test_bom_diff_shows_the_mark_on_line_one(tmp_path):
    _place(tmp_path, "bom-topo.xml")
    result = run_cli("check", "bom-topo.xml", "--isolated", "--no-cache", "--diff", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[2].startswith("@@ -1,")
    assert lines[3] == "-\ufeff<!-- A static NCCL_TOPO_FILE saved by an editor that starts files with a byte-order mark. -->"
    assert lines[4] == "+" + lines[3][2:]


def test_bom_edit_in_json_matches_the_schema(tmp_path):
    _place(tmp_path, "bom-topo.xml")
    document = json.loads(_check(tmp_path, "bom-topo.xml").stdout)
    (finding,) = [f for f in document["findings"] if f["code"] == "TOPO001"]
    assert finding["autofix"] == {"message": "Remove the byte-order mark", "applicability": "safe", "edits": [{
        "path": "bom-topo.xml", "start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 1}, "content": "",
        "kind": "byte-order-mark", "byte_offset": 0, "byte_length": 3}]}
    schema = json.loads((ROOT / "docs" / "json-output.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert list(validator.iter_errors(document)) == []
    finding["autofix"]["edits"][0].pop("byte_length")  # kind without its byte range is not valid
    assert list(validator.iter_errors(document))


def test_bom_edit_in_sarif_is_a_byte_region(tmp_path):
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA}")
    _place(tmp_path, "bom-topo.xml")
    result = run_cli("check", "bom-topo.xml", "--isolated", "--no-cache", "--format", "sarif", "--project-root", ".",
                     cwd=tmp_path)
    document = json.loads(result.stdout)
    validator = jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    assert list(validator.iter_errors(document)) == []
    (hit,) = [r for r in document["runs"][0]["results"] if r["ruleId"] == "TOPO001"]
    (change,) = hit["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "bom-topo.xml"
    assert change["replacements"] == [{"deletedRegion": {"byteOffset": 0, "byteLength": 3}}]


def test_bom_edit_applies_once_and_survives_the_cache():
    from topolint.engine.fixes import Fix, remove_bom

    text = FileText(True, ["<system/>", ""])
    fix = remove_bom("t.xml", "Remove the byte-order mark")
    once, applied = apply_edits(text, list(fix.edits) * 2)
    assert (once.bom, once.lines, len(applied)) == (False, text.lines, 1)
    again, applied = apply_edits(once, list(fix.edits))
    assert (again.bom, again.lines, applied) == (False, once.lines, [])  # no mark left: nothing to do
    assert Fix.from_dict(fix.cache_dict()) == fix


# --- value edits --------------------------------------------------------------------------------

def _verbose_notes(tmp_path, name: str, text: str) -> tuple[list, list[str]]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    result = run_cli("check", name, "--isolated", "--no-cache", "--format", "json", "--verbose", cwd=tmp_path)
    fixes = [f["autofix"] for f in json.loads(result.stdout)["findings"] if f["code"] == "ENV003"]
    return fixes, [line for line in result.stderr.splitlines() if "no fix to" in line]


@pytest.mark.parametrize(("name", "text", "why"), [
    ("run.sh", 'export NCCL_P2P_LEVEL="nv\\\nl"\n', "not written as one run of text on one line"),
    ("run.sh", 'NCCL_P2P_LEVEL=nv"l" torchrun t.py\n', "written as"),
    ("compose.env", "A=node\nNCCL_P2P_LEVEL=${A}\n", "interpolation"),
    ("pod.yaml", ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n"
                  '      env:\n        - {name: NCCL_P2P_LEVEL, value: "n\\x76l"}\n'), "an escape"),
    ("launch.py", 'import os\nos.environ["NCCL_P2P_LEVEL"] = r"nvl"\n', "string prefix"),
    ("pod.yaml", ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n"
                  "      env:\n        - name: NCCL_P2P_LEVEL\n          value: >-\n            nvl\n"),
     "not written as one run of text on one line"),
])
def test_no_value_fix_where_no_exact_edit_exists_and_verbose_says_why(tmp_path, name, text, why):
    fixes, notes = _verbose_notes(tmp_path, name, text)
    assert fixes == [None]
    assert len(notes) == 1 and f"{name}:" in notes[0] and why in notes[0], notes


def test_value_fix_keeps_the_quoting_style_and_edits_a_default_in_place(tmp_path):
    (tmp_path / "run.sh").write_text("export NCCL_P2P_LEVEL='nvl'\nNCCL_NET_GDR_LEVEL=\"pxb\" torchrun t.py\n"
                                     'export NCCL_SOCKET_FAMILY="${NCCL_SOCKET_FAMILY:-af_inet}"\n')
    result = _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert (tmp_path / "run.sh").read_text() == ("export NCCL_P2P_LEVEL='NVL'\nNCCL_NET_GDR_LEVEL=\"PXB\" torchrun t.py\n"
                                                 'export NCCL_SOCKET_FAMILY="${NCCL_SOCKET_FAMILY:-AF_INET}"\n')
    assert _codes(result) == set()


# Where a reader keeps the mark as part of line 1's first word, that line's setting is lost (ENV001).
@pytest.mark.parametrize(("name", "text", "lost"), [
    ("run.sh", "export NCCL_SOCKET_IFNAME=eth0\nexport NCCL_DEBUG=WARN\n", True),  # bash: `\ufeffexport`
    ("nccl.conf", "NCCL_SOCKET_IFNAME=eth0\nNCCL_DEBUG=WARN\n", True),  # NCCL setEnvFile: `\ufeffNCCL_...`
    ("run.sh", "#!/bin/bash\nexport NCCL_SOCKET_IFNAME=eth0\n", False),  # nothing set on line 1
    ("run.sh", "cd /work; export NCCL_SOCKET_IFNAME=eth0\n", False),  # `\ufeffcd` fails, the export runs
    (".env", "NCCL_SOCKET_IFNAME=eth0\n", False),  # compose-go drops the mark
    ("Dockerfile", "FROM ubuntu:22.04\nENV NCCL_SOCKET_IFNAME=eth0\n", False),  # BuildKit drops it
])
def test_bom_that_hides_the_first_setting(tmp_path, name, text, lost):
    target = tmp_path / name
    target.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    found = [f for f in json.loads(_check(tmp_path, name).stdout)["findings"] if f["code"] == "ENV001"]
    assert bool(found) == lost
    if not lost:
        return
    (finding,) = found
    assert (finding["line"], "line 1 is never set" in finding["message"]) == (1, True)
    assert finding["autofix"]["applicability"] == "unsafe"  # the setting takes effect: like a rename
    assert "1 more with --unsafe-fixes" in _check(tmp_path, name, "--fix").stderr
    _check(tmp_path, name, "--fix", "--unsafe-fixes")
    assert target.read_bytes() == text.replace("\n", "\r\n").encode()
    assert not [f for f in json.loads(_check(tmp_path, name).stdout)["findings"] if f["code"] == "ENV001"]


def test_bom_in_a_sourced_file_is_reported_there(tmp_path):
    (tmp_path / "common.sh").write_bytes(b"\xef\xbb\xbfexport NCCL_IB_HCA=mlx5_0\n")
    (tmp_path / "train.sh").write_text('#!/bin/bash\nsource "$(dirname "$0")/common.sh"\n')
    found = [f for f in json.loads(_check(tmp_path, "train.sh").stdout)["findings"] if f["code"] == "ENV001"]
    assert [(f["path"], f["line"]) for f in found] == [("common.sh", 1)]
    assert found[0]["autofix"]["edits"][0]["path"] == "common.sh"
