"""Inline suppressions: comment directives per syntax, XML element ranges, annotation spans,
required reasons, and TL004 (a suppression that suppresses nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES, run_cli

from topolint.engine import suppression
from topolint.engine.finding import Finding
from topolint.engine.rule import load_rules
from topolint.inputs.source import SourceFile

TL004_DIR = FIXTURES / "rules" / "TL004"
DUP_BUSID = FIXTURES / "rules" / "TOPO005" / "bad_duplicate_busid.xml"
DUP_NVLINK = FIXTURES / "rules" / "TOPO005" / "bad_duplicate_nvlink.xml"
RULES = load_rules()


def json_of(*args, cwd: Path | None = None) -> tuple[int, dict]:
    result = run_cli("check", *args, "--format", "json", **({"cwd": cwd} if cwd else {}))
    assert "Traceback" not in result.stderr, result.stderr
    return result.exit_code, json.loads(result.stdout)


def with_directive(tmp_path: Path, source: Path, before: str, directive: str, name: str = "topo.xml") -> Path:
    """A copy of ``source`` with ``directive`` on its own line above the first line containing ``before``."""
    lines = source.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if before in line)
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines.insert(index, indent + directive)
    target = tmp_path / name
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def finding(code: str, path: str, line: int) -> Finding:
    return Finding(code=code, slug="x", category="env", severity="warning", message="m", path=path, line=line,
                   column=1, node="n1", entity=f"env/X@{path}#{line}", fix="f")


def active(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code and not f["suppressed"]]


# --- XML -------------------------------------------------------------------------------------

def test_xml_directive_suppresses_the_next_element_with_reason(tmp_path):
    path = with_directive(tmp_path, DUP_NVLINK, '<gpu dev="0"', "<!-- topolint: ignore[TOPO005] pasted twice, fixed upstream -->")
    code, report = json_of(path.name, "--select", "TOPO005", cwd=tmp_path)
    assert code == 0
    [suppressed] = [f for f in report["findings"] if f["code"] == "TOPO005"]
    # The finding sits on the nested <nvlink>, a child of the element after the comment.
    assert suppressed["suppressed"] and suppressed["suppression"] == "inSource"
    assert suppressed["justification"] == "pasted twice, fixed upstream"
    assert report["summary"]["total"] == 0 and report["summary"]["suppressed"] == 1


def test_xml_directive_covers_only_the_next_element(tmp_path):
    # Above the first copy of the busid; TOPO005 reports the second copy, so nothing is suppressed.
    path = with_directive(tmp_path, DUP_BUSID, 'busid="0000:19:00.0"', "<!-- topolint: ignore[TOPO005] -->")
    code, report = json_of(path.name, "--select", "TOPO005,TL004", cwd=tmp_path)
    assert code == 1
    assert len(active(report, "TOPO005")) == 3  # the fixture repeats three elements
    assert [f["line"] for f in active(report, "TL004")] == [5]


def test_suppressed_findings_are_in_sarif_only(tmp_path):
    path = with_directive(tmp_path, DUP_NVLINK, '<gpu dev="0"', "<!-- topolint: ignore[TOPO005] known -->")
    full = run_cli("check", path.name, "--select", "TOPO005", cwd=tmp_path)
    assert full.exit_code == 0 and full.stdout == "All checks passed (1 suppressed).\n"
    sarif = json.loads(run_cli("check", path.name, "--select", "TOPO005", "--format", "sarif", cwd=tmp_path).stdout)
    [result] = sarif["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "inSource", "justification": "known"}]
    assert "baselineState" not in result


def test_xml_file_ignore_and_slug(tmp_path):
    code, report = json_of(TL004_DIR.joinpath("good_file_ignore.xml").relative_to(FIXTURES.parent), "--select", "TOPO,TL")
    assert code == 0
    assert [f["suppressed"] for f in report["findings"] if f["code"] == "TOPO005"] == [True]


# --- # comments -----------------------------------------------------------------------------

SCRIPT = """\
#!/bin/bash
#SBATCH --nodes=2
export NCCL_IB_HCA=mlx5_0   # topolint: ignore[NET002] the site image renames HCAs
# topolint: ignore[ENV004]
export NCCL_ALGO=Ring
export NCCL_PROTO=Simple
# topolint: ignore[ENV005] multi-line command: the continuation lines are covered
srun --export=ALL \\
  --mpi=pmix \\
  python train.py
echo done
"""

YAML = """\
spec:
  containers:
    - name: trainer
      # topolint: ignore[ENV004] the whole list item and its children
      env:
        - name: NCCL_ALGO
          value: Ring
      image: trainer:1
"""


def spans_of(text: str, path: str, fmt: str | None = None) -> list[tuple[int, int, tuple, str]]:
    found = suppression.directives(SourceFile(path, text, format=fmt))
    return [(s.first_line, s.last_line, s.codes, s.reason) for s in found.spans]


def test_hash_directives_trailing_standalone_and_continuations():
    assert spans_of(SCRIPT, "job.sbatch") == [
        (3, 3, ("NET002",), "the site image renames HCAs"),
        (4, 5, ("ENV004",), ""),
        (7, 10, ("ENV005",), "multi-line command: the continuation lines are covered"),
    ]


def test_hash_directive_covers_an_indented_yaml_block():
    assert spans_of(YAML, "pod.yaml") == [(4, 7, ("ENV004",), "the whole list item and its children")]


def test_hash_file_ignore_and_multiple_codes():
    assert spans_of("FOO=1\n# topolint: file-ignore[ENV004, ENV005] generated\n", ".env") == [
        (1, suppression.WHOLE_FILE, ("ENV004", "ENV005"), "generated")]


def test_comment_syntax_follows_format_then_name():
    assert suppression.comment_syntax(SourceFile("x", "<system/>", format="nccl-topo-xml")) == "xml"
    assert suppression.comment_syntax(SourceFile("a/topo.xml", "")) == "xml"
    assert suppression.comment_syntax(SourceFile("Dockerfile", "FROM x\n", format="dockerfile")) == "hash"
    assert suppression.comment_syntax(SourceFile("job.sbatch", "#!/bin/bash\n")) == "hash"


def test_hash_directives_suppress_findings_and_report_unused():
    source = SourceFile("job.sbatch", SCRIPT)
    findings = [finding("TOPO005", "job.sbatch", 3), finding("TOPO001", "job.sbatch", 9),
                finding("TOPO002", "job.sbatch", 11)]
    # Only the codes the rules know are resolvable; pretend the script's rules are TOPO rules.
    text = SCRIPT.replace("NET002", "TOPO005").replace("ENV004", "TOPO003").replace("ENV005", "TOPO001")
    source = SourceFile("job.sbatch", text)
    extra = suppression.apply(findings, {"job.sbatch": source}, RULES, {"job.sbatch": "n1"},
                              {"n1": {"TOPO001", "TOPO002", "TOPO003", "TOPO005"}})
    assert [f.suppressed for f in findings] == [True, True, False]
    assert findings[0].justification == "the site image renames HCAs"
    assert [(f.code, f.line, f.message.split(" ")[0]) for f in extra] == [("TL004", 4, "ignore[TOPO003]")]


def test_unused_directive_for_a_rule_that_did_not_run_is_not_reported():
    source = SourceFile("job.sbatch", "# topolint: ignore[TOPO003]\nexport NCCL_ALGO=Ring\n")
    extra = suppression.apply([], {"job.sbatch": source}, RULES, {"job.sbatch": "n1"}, {"n1": {"TOPO001"}})
    assert extra == []


# --- annotation spans (the interface the Kubernetes parser feeds) --------------------------------

MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  annotations:
    topolint.dev/ignore-TOPO003: "static file from the vendor"
    topolint.dev/ignore-TOPO001: "kept"
spec:
  containers: []
"""


def test_annotation_spans_suppress_within_the_object():
    spans = suppression.annotation_spans("pod.yaml", 1, 9, {
        "topolint.dev/ignore-TOPO003": "static file from the vendor", "topolint.dev/ignore-TOPO001": "kept",
        "other.io/thing": "x"}, lines={"topolint.dev/ignore-TOPO003": 6, "topolint.dev/ignore-TOPO001": 7})
    assert [(s.codes, s.line, s.kind) for s in spans] == [(("TOPO003",), 6, "annotation"), (("TOPO001",), 7, "annotation")]
    source = SourceFile("pod.yaml", MANIFEST, format="kubernetes")
    source.suppressions.extend(spans)
    findings = [finding("TOPO003", "pod.yaml", 9)]
    extra = suppression.apply(findings, {"pod.yaml": source}, RULES, {"pod.yaml": "n1"}, {"n1": {"TOPO001", "TOPO003"}})
    assert findings[0].suppressed and findings[0].justification == "static file from the vendor"
    [unused] = extra
    assert (unused.code, unused.line) == ("TL004", 7)
    assert unused.message.startswith("annotation[TOPO001] suppresses nothing")
    assert unused.entity == "n1/file/pod.yaml#annotation[TOPO001]"


# --- reasons ------------------------------------------------------------------------------------

def test_required_reason_flag(tmp_path):
    path = with_directive(tmp_path, DUP_NVLINK, '<gpu dev="0"', "<!-- topolint: ignore[TOPO005] -->")
    code, report = json_of(path.name, cwd=tmp_path)
    assert code == 0  # without the option a bare directive is honoured
    code, report = json_of(path.name, "--require-suppression-reason", cwd=tmp_path)
    assert code == 1  # the finding stays active, so the run still fails
    assert len(active(report, "TOPO005")) == 1
    [tl004] = active(report, "TL004")
    assert "gives no reason" in tl004["message"] and tl004["line"] == 5


def test_required_reason_config_key(tmp_path):
    with_directive(tmp_path, DUP_NVLINK, '<gpu dev="0"', "<!-- topolint: ignore[TOPO005] -->")
    (tmp_path / ".topolint.toml").write_text("require-suppression-reason = true\n", encoding="utf-8")
    assert run_cli("check", "topo.xml", cwd=tmp_path).exit_code == 1


# --- TL004 --------------------------------------------------------------------------------------

def test_tl004_knows_unselected_rules_ran_and_matched():
    # Only TL004 is selected; TOPO005 still ran, so the directive in good.xml counts as used.
    code, report = json_of(TL004_DIR.joinpath("good.xml").relative_to(FIXTURES.parent), "--select", "TL004")
    assert code == 0 and report["findings"] == []


def test_tl004_can_be_ignored_and_per_file_ignored(tmp_path):
    bad = (TL004_DIR / "bad.xml").read_text(encoding="utf-8")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "a.xml").write_text(bad, encoding="utf-8")
    (tmp_path / "b.xml").write_text(bad, encoding="utf-8")
    _, report = json_of("legacy/a.xml", "b.xml", "--select", "TL004", cwd=tmp_path)
    assert sorted(f["path"] for f in report["findings"]) == ["b.xml", "legacy/a.xml"]
    _, report = json_of("legacy/a.xml", "b.xml", "--select", "TOPO,TL", "--ignore", "TL004", cwd=tmp_path)
    assert report["findings"] == []
    (tmp_path / ".topolint.toml").write_text('[per-file-ignores]\n"legacy/*" = ["unused-suppression"]\n',
                                             encoding="utf-8")
    _, report = json_of("legacy/a.xml", "b.xml", "--select", "TL004", cwd=tmp_path)
    assert [f["path"] for f in report["findings"]] == ["b.xml"]


def test_tl004_suppressed_by_the_same_directive():
    _, report = json_of(TL004_DIR.joinpath("good_kept_on_purpose.xml").relative_to(FIXTURES.parent), "--select", "TL004")
    [tl004] = report["findings"]
    assert tl004["suppressed"] and tl004["justification"].startswith("keep:")


def test_kubernetes_annotation_suppresses_within_its_object_only():
    result = run_cli("check", "fixtures/suppression/annotated-jobs.yaml", "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    by_line = {(f["code"], f["line"]): f for f in findings}
    assert by_line[("ENV004", 15)]["suppressed"] is True  # Job/debug-run carries the annotation
    assert by_line[("ENV004", 15)]["justification"] == "debugging the hang of ticket 123"
    assert by_line[("ENV004", 29)]["suppressed"] is False  # Job/prod-run does not
    assert ("TL004", 7) in by_line  # the ENV005 annotation matches nothing
