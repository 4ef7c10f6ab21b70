"""The real infra files of ../shared/corpus/configs against tests/config_corpus_expectations.tsv:
every setting topolint reads there has a row, a correct setting gets no warning or error, and
every clear mistake is reported on its line by the code the table names.

The corpus is third-party material and never copied here; without it these tests skip.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest
from conftest import ROOT, run_cli

TABLE = ROOT / "tests" / "config_corpus_expectations.tsv"


def _rows() -> dict[tuple[str, int, str], tuple[str, str]]:
    rows = {}
    with TABLE.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if row:
                key = (f"configs/{row[0]}", int(row[1]), row[2])
                assert key not in rows, f"two rows for {key}"
                assert row[3] in ("must-not-fire", "info-at-most") or row[3].startswith("must-fire "), row
                assert row[4].strip(), f"{key} has no why"
                rows[key] = (row[3], row[4])
    return rows


@pytest.fixture(scope="module")
def corpus_run(request):
    """One check of the whole folder (as a user runs it), and the settings topolint reads there."""
    from conftest import CORPUS

    if not (CORPUS / "configs").is_dir():
        pytest.skip(f"shared corpus configs not found at {CORPUS / 'configs'} (it sits beside the checkout in CI)")
    result = run_cli("check", "configs", "--isolated", "--no-cache", "--select", "ALL", "--preview",
                     "--format", "json", cwd=CORPUS)
    assert "Traceback" not in result.stderr, result.stderr
    findings: dict[tuple[str, int, str], list[tuple[str, str]]] = defaultdict(list)
    for finding in json.loads(result.stdout)["findings"]:
        entity = finding["entity"]
        name = entity.split("@", 1)[0].removeprefix("env/") if entity.startswith("env/") else "-"
        findings[(finding["path"], finding["line"], name)].append((finding["code"], finding["severity"]))

    import os

    from topolint.inputs.collect import collect

    here = os.getcwd()
    os.chdir(CORPUS)
    try:
        configs = collect(["configs"]).configs
    finally:
        os.chdir(here)
    read = {(s.loc.path, s.loc.line, s.name) for c in configs for s in c.settings}
    read |= {(u.setting.loc.path, u.setting.loc.line, u.setting.name) for c in configs for u in c.unreached}
    return findings, read


def test_every_setting_topolint_reads_has_a_row(corpus_run):
    _, read = corpus_run
    missing = sorted(read - set(_rows()))
    assert not missing, f"judge these settings in tests/config_corpus_expectations.tsv: {missing}"


def test_no_warning_or_error_without_a_must_fire_row(corpus_run):
    findings, _ = corpus_run
    rows = _rows()
    unexpected = [(key, found) for key, found in sorted(findings.items())
                  if any(severity != "info" for _, severity in found)
                  and not rows.get(key, ("",))[0].startswith("must-fire")]
    assert not unexpected, f"warnings or errors on settings the table calls correct: {unexpected}"


def test_each_row_holds(corpus_run):
    findings, _ = corpus_run
    failed = []
    for key, (verdict, why) in sorted(_rows().items()):
        found = findings.get(key, [])
        if verdict == "must-not-fire" and found:
            failed.append((key, verdict, found))
        elif verdict == "info-at-most" and any(severity != "info" for _, severity in found):
            failed.append((key, verdict, found))
        elif verdict.startswith("must-fire "):
            codes = set(verdict.split(" ", 1)[1].split(","))
            if not codes <= {code for code, _ in found}:
                failed.append((key, verdict, found))
    assert not failed, failed

