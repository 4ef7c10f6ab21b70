"""SARIF, GitHub-annotation and JSON output: schema validity plus GitHub's own, stricter rules."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import urlparse

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.engine.finding import Finding, FindingGroup, Related
from topolint.engine.rule import load_rules
from topolint.model.facts import Location
from topolint.reporters import Report, render
from topolint.reporters import sarif as sarif_module

jsonschema = pytest.importorskip("jsonschema")

SARIF_SCHEMA = ROOT.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"
JSON_SCHEMA = ROOT / "docs" / "json-output.schema.json"
BAD = FIXTURES / "rules" / "NUMA001" / "bad.xml"
BAD_PXN = FIXTURES / "rules" / "NUMA001" / "bad_pxn.xml"


# --- helpers ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sarif_validator():
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA} (the shared reference sits beside the checkout)")
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def errors(validator, document) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def finding(code="NUMA001", severity="error", path="topo.xml", line=3, column=5, entity="n1/gpu/0000:87:00.0",
            message="GPU 0 crosses the socket", **kw) -> Finding:
    return Finding(code=code, slug="gpu-nic-cross-socket", category="numa", severity=severity, message=message,
                   path=path, line=line, column=column, node="n1", entity=entity, fix="add a NIC", **kw)


def related(path="topo.xml", line=7, entity="n1/nic/mlx5_0:1") -> Related:
    return Related(location=Location(path=path, line=line, column=2), entity=entity, message="nearest NIC")


def report(findings, root: Path, rules=None) -> Report:
    return Report(findings=findings, rules=load_rules() if rules is None else rules, project_root=root,
                  nccl_version="2.30.7")


def sarif_of(rep: Report) -> dict:
    return json.loads(render("sarif", rep))


def cli_sarif(*args) -> dict:
    result = run_cli("check", *args, "--format", "sarif")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def github_subset_problems(document: dict) -> list[str]:
    """What GitHub code scanning needs beyond the schema (linters.md §2.2, §2.5, §2.9)."""
    problems = []
    for run in document["runs"]:
        rules = run["tool"]["driver"]["rules"]
        if len(run["results"]) > 25_000:
            problems.append("more than 25,000 results")
        for rule in rules:
            for key in ("shortDescription", "fullDescription"):
                text = rule[key]["text"]
                if not text or len(text) > 1024:
                    problems.append(f"{rule['id']}: {key} empty or over 1024")
            if not rule["help"]["text"]:
                problems.append(f"{rule['id']}: empty help.text")
            if len(rule["properties"]["tags"]) > 20:
                problems.append(f"{rule['id']}: over 20 tags")
        for result in run["results"]:
            if "ruleIndex" in result and rules[result["ruleIndex"]]["id"] != result["ruleId"]:
                problems.append(f"ruleIndex of {result['ruleId']} points at the wrong rule")
            if not result["message"]["text"]:
                problems.append("empty message")
            locations = result["locations"] + result.get("relatedLocations", [])
            for location in locations:
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                scheme = urlparse(uri).scheme
                if not uri or scheme not in ("", "file"):
                    problems.append(f"uri {uri!r} neither relative nor file://")
                if physical["region"]["startLine"] < 1:
                    problems.append(f"startLine < 1 in {uri}")
    return problems


# --- SARIF: schema ---------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", [BAD, BAD_PXN], ids=lambda p: p.name)
def test_sarif_from_cli_is_valid_and_fits_github(fixture, sarif_validator):
    document = cli_sarif(fixture.relative_to(ROOT))
    assert errors(sarif_validator, document) == []
    assert github_subset_problems(document) == []
    run = document["runs"][0]
    assert document["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == sorted(r.code for r in load_rules()
                                                                       if not r.is_preview)
    assert run["results"] and run["invocations"][0]["executionSuccessful"] is True
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")


def test_format_checker_is_live_placeholder_uri_fails(sarif_validator):
    document = cli_sarif(BAD.relative_to(ROOT))
    broken = copy.deepcopy(document)
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = \
        "no file associated with this alert"
    assert any("uri-reference" in e for e in errors(sarif_validator, broken))


def test_start_line_zero_fails(sarif_validator):
    document = cli_sarif(BAD.relative_to(ROOT))
    broken = copy.deepcopy(document)
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert any("minimum" in e for e in errors(sarif_validator, broken))


def test_constructed_report_is_valid(tmp_path, monkeypatch, sarif_validator):
    monkeypatch.chdir(tmp_path)
    findings = [
        finding(related=[related()]),
        finding(code="ZZZ999", severity="info", path="dir with space/a:b.xml", column=0),  # rule not in rules[]
        finding(code="TL001", path="-", entity="stdin/file/-", message="cannot read -: truncated"),
        finding(severity="warning", line=9, suppressed=True, suppression="inSource", justification="vendor file"),
        finding(severity="warning", line=10, suppressed=True, suppression="external"),
    ]
    constructed = report(findings, tmp_path)
    constructed.unreadable = True  # the CLI sets it when any input was TL001, whatever the selection
    document = sarif_of(constructed)
    assert errors(sarif_validator, document) == []
    assert github_subset_problems(document) == []
    results = document["runs"][0]["results"]
    assert "ruleIndex" not in results[1] and results[1]["level"] == "note"
    location = results[1]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "dir%20with%20space/a%3Ab.xml"
    assert "startColumn" not in location["region"]
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "-"
    assert document["runs"][0]["invocations"][0]["executionSuccessful"] is False  # TL001 present
    assert results[3]["suppressions"] == [{"kind": "inSource", "justification": "vendor file"}]
    assert "baselineState" not in results[3]
    assert results[4]["suppressions"] == [{"kind": "external", "status": "accepted",
                                           "justification": "accepted in the topolint baseline"}]
    assert results[4]["baselineState"] == "unchanged"
    assert "suppressions" not in results[0]


# --- SARIF: content --------------------------------------------------------------------------

def test_related_location_is_linked_in_message():
    document = cli_sarif(BAD_PXN.relative_to(ROOT))
    result = document["runs"][0]["results"][0]
    # The nearest NIC, then the PXN route to the same NIC (each related line is linked by its entity).
    assert result["message"]["text"].endswith(" See [NIC mlx5_0:1](1), [NIC mlx5_0:1](2).")
    assert [r["id"] for r in result["relatedLocations"]] == [1, 2]
    assert result["relatedLocations"][0]["message"]["text"]
    assert result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] >= 1


def test_logical_location_and_fingerprints():
    document = cli_sarif(BAD.relative_to(ROOT))
    result = document["runs"][0]["results"][0]
    logical = result["locations"][0]["logicalLocations"][0]
    assert logical["fullyQualifiedName"].split("/")[1] == logical["kind"] == "gpu"
    assert set(result["partialFingerprints"]) == {"topolint/entity/v1"}  # upload-sarif hashes repo files
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "fixtures/rules/NUMA001/bad.xml", "uriBaseId": "%SRCROOT%"}


def test_file_outside_project_root_gets_absolute_uri_and_line_hash(tmp_path):
    document = cli_sarif(BAD.relative_to(ROOT), "--project-root", tmp_path)
    result = document["runs"][0]["results"][0]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": BAD.resolve().as_uri()}
    fingerprints = result["partialFingerprints"]
    assert fingerprints["primaryLocationLineHash"] == fingerprints["topolint/entity/v1"] + ":1"
    assert document["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_sarif_output_is_byte_identical_across_runs():
    first = run_cli("check", BAD.relative_to(ROOT), BAD_PXN.relative_to(ROOT), "--format", "sarif")
    second = run_cli("check", BAD.relative_to(ROOT), BAD_PXN.relative_to(ROOT), "--format", "sarif")
    assert first.stdout == second.stdout and first.stdout.endswith("}\n")


def test_results_over_the_limit_keep_the_most_severe(tmp_path, monkeypatch):
    monkeypatch.setattr(sarif_module, "MAX_RESULTS", 3)
    findings = [finding(severity="info", line=1), finding(severity="error", line=2),
                finding(severity="warning", line=3), finding(severity="error", line=4, suppressed=True),
                finding(severity="error", line=5)]
    run = sarif_of(report(findings, tmp_path))["runs"][0]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in run["results"]] == [2, 3, 5]
    assert run["properties"]["droppedResults"] == 2


def test_long_rule_docs_are_clipped(tmp_path):
    rule = load_rules()[0].model_copy(deep=True)
    rule.docs.what = "word " * 400
    rule.tags = [f"t{i}" for i in range(25)]
    document = sarif_of(report([], tmp_path, rules=[rule]))
    assert github_subset_problems(document) == []


# --- GitHub annotations ----------------------------------------------------------------------

def test_github_escapes_data_and_properties(tmp_path):
    f = finding(path="odd,dir/a:b%.xml", message="50% over\nline two\r", column=0)
    f.slug = "x,y:z"
    line = render("github", report([f], tmp_path))
    assert line == "::error file=odd%2Cdir/a%3Ab%25.xml,line=3,title=NUMA001 x%2Cy%3Az::50%25 over%0Aline two%0D\n"


def test_github_orders_errors_first_and_skips_suppressed(tmp_path):
    findings = [finding(severity="info", line=1), finding(severity="warning", line=2),
                finding(severity="error", line=3), finding(severity="error", line=4, suppressed=True)]
    lines = render("github", report(findings, tmp_path)).splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["::error", "::warning", "::notice"]
    assert "col=5" in lines[0]


def test_github_overflow_notice(tmp_path):
    findings = [finding(severity="warning", line=n) for n in range(1, 13)] + [finding(severity="error")]
    lines = render("github", report(findings, tmp_path)).splitlines()
    assert lines[0].startswith("::error ")
    assert sum(line.startswith("::warning ") for line in lines) == 10
    assert lines[-1] == ("::notice::topolint: 2 more findings not annotated (GitHub shows at most 10 per "
                         "level per step); see the full report")


def test_github_overflow_notice_keeps_a_notice_slot(tmp_path):
    findings = [finding(severity="info", line=n) for n in range(1, 12)]
    lines = render("github", report(findings, tmp_path)).splitlines()
    assert len(lines) == 10 and lines[-1].startswith("::notice::topolint: 2 more findings")


# --- JSON ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def json_validator():
    schema = json.loads(JSON_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("fixture", [BAD, BAD_PXN], ids=lambda p: p.name)
def test_json_output_matches_schema(fixture, json_validator):
    result = run_cli("check", fixture.relative_to(ROOT), "--format", "json")
    document = json.loads(result.stdout)
    assert document["findings"] and errors(json_validator, document) == []


def test_json_constructed_report_matches_schema(tmp_path, json_validator):
    findings = [finding(related=[related()], evidence=["a", "b"]), finding(severity="info", suppressed=True,
                                                                             suppression="inSource", column=0)]
    document = json.loads(render("json", report(findings, tmp_path)))
    assert errors(json_validator, document) == []
    document["findings"][0]["severity"] = "fatal"
    document["findings"][0]["surprise"] = 1
    assert len(errors(json_validator, document)) == 2


# --- finding groups (engine/finding.py FindingGroup) in every format --------------------------

MEMBERS = [f"n1/cpu/{i}" for i in range(25)]


def grouped(**kw) -> Finding:
    group = FindingGroup.of("members", MEMBERS, key="NUMA005")
    return finding(entity=group.members[0], group=group, **kw)


def test_group_is_stable_capped_and_counts_every_member():
    group = FindingGroup.of("members", MEMBERS + MEMBERS[:3], key="NUMA005")
    assert group.total == 25 and len(group.members) == 20 and group.members[0] == "n1/cpu/0"
    assert group == FindingGroup.of("members", MEMBERS, key="NUMA005")  # same members, same id
    assert group.id != FindingGroup.of("members", MEMBERS, key="NUMA006").id
    assert group.id != FindingGroup.of("members", MEMBERS[:24], key="NUMA005").id  # a member left out of the list counts
    assert FindingGroup.from_dict(group.as_dict()) == group


def test_group_in_full_format(tmp_path):
    text = render("full", report([grouped()], tmp_path))
    line = next(line for line in text.splitlines() if line.startswith("  = group: "))
    group = grouped().group
    assert line == (f"  = group: 25 members: {', '.join(MEMBERS[:20])} and 5 more (group {group.id})")
    assert text.index("  = entity: n1/cpu/0") < text.index("  = group: ")


def test_group_in_concise_format(tmp_path):
    text = render("concise", report([grouped(), finding(line=9)], tmp_path))
    assert text.splitlines()[0] == "topo.xml:3:5: NUMA001 [error] GPU 0 crosses the socket [group of 25 members]"
    assert text.splitlines()[1].endswith("GPU 0 crosses the socket")  # no group, no suffix


def test_group_in_github_format(tmp_path):
    line = render("github", report([grouped()], tmp_path)).splitlines()[0]
    assert line.startswith("::error file=topo.xml,line=3,col=5,title=NUMA001 gpu-nic-cross-socket::"
                           "GPU 0 crosses the socket (group: 25 members: n1/cpu/0, n1/cpu/1,")
    assert line.endswith(f" and 5 more (group {grouped().group.id}))")


def test_group_in_json_format(tmp_path, json_validator):
    document = json.loads(render("json", report([grouped(), finding(line=9)], tmp_path)))
    assert errors(json_validator, document) == []
    first, second = document["findings"]
    assert first["group"] == {"id": grouped().group.id, "kind": "members", "members": MEMBERS[:20], "total": 25}
    assert first["entity"] == "n1/cpu/0" and "group" not in second  # ungrouped findings are unchanged
    first["group"]["kind"] = "pairs"
    assert errors(json_validator, document)  # the schema knows the kinds


def test_group_in_sarif_format(tmp_path, sarif_validator):
    document = sarif_of(report([grouped(), finding(line=9)], tmp_path))
    assert errors(sarif_validator, document) == []
    assert github_subset_problems(document) == []
    first, second = document["runs"][0]["results"]
    assert first["properties"]["group"]["total"] == 25
    assert first["properties"]["group"]["members"] == MEMBERS[:20]
    assert first["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "n1/cpu/0"
    assert "properties" not in second


def test_group_in_html_and_markdown_formats(tmp_path):
    group = grouped().group
    wanted = f"group: 25 members: {', '.join(MEMBERS[:20])} and 5 more (group {group.id})"
    page = render("html", report([grouped(), finding(line=9)], tmp_path))
    assert page.count(wanted) == 1 and page.count('<tr id="f-') == 2
    rows = [line for line in render("markdown", report([grouped(), finding(line=9)], tmp_path)).splitlines()
            if line.startswith("| error | NUMA001")]
    assert len(rows) == 2 and wanted.replace("_", "\\_") in rows[0] and "group" not in rows[1]


def test_grouped_hit_is_reported_on_its_first_member():
    from topolint.engine.finding import Hit, entity_fingerprint
    from topolint.engine.runner import to_finding

    rule = next(r for r in load_rules() if r.code == "NUMA005")
    group = FindingGroup.of("members", ["n1/cpu/3", "n1/cpu/1"], key=rule.code)
    hit = Hit(entity="n1/cpu/1", location=Location(path="t.xml", line=2, column=1),
              fields={"numa": "NUMA 3", "affinity": "f", "others": "NUMA 1", "other_affinity": "f", "count": 4,
                      "cpus": "0-3", "own_count": 4, "file": "t.xml"}, group=group)
    found = to_finding(rule, "n1", hit)
    assert found.entity == "n1/cpu/3" and found.group is group
    assert found.fingerprint == entity_fingerprint("NUMA005", "n1/cpu/3")


def test_group_survives_the_result_cache(tmp_path):
    from topolint.engine.cache import _finding_dict, _valid_entry

    from topolint.engine.cache import ResultCache

    def entry():  # as read back from the file: plain JSON
        return {"findings": [json.loads(json.dumps(_finding_dict(grouped())))], "notes": [], "ran": [],
                "collect_notes": []}

    assert _valid_entry(entry())
    assert ResultCache.findings(entry())[0].group == grouped().group
    damaged = entry()
    damaged["findings"][0]["group"]["members"] = []
    assert not _valid_entry(damaged)
