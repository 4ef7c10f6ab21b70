"""The fleet samples of the shared corpus (issue 27: fabric files, scheduler topology, job node
lists): each file alone, against the committed table tests/fleet_corpus_expectations.tsv of what
must and must not fire (healthy files included). The corpus is third-party material and never
copied here; without it these tests skip."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import ROOT, run_cli

TABLE = ROOT / "tests" / "fleet_corpus_expectations.tsv"
# Corpus folders whose every file needs a row (one team's formats each).
FOLDERS = ("ibnetdiscover", "iblinkinfo", "lldpctl")


def _rows() -> dict[str, tuple[set[str], set[str]]]:
    rows = {}
    with TABLE.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if row:
                codes = lambda text: {c for c in text.split(",") if c and c != "-"}  # noqa: E731
                rows[row[0]] = (codes(row[1]), codes(row[2]))
    return rows


EXPECTATIONS = _rows()


def test_every_fleet_corpus_file_has_a_row(corpus):
    files = {f"{folder}/{p.name}" for folder in FOLDERS if (corpus / folder).is_dir()
             for p in (corpus / folder).iterdir() if p.is_file()}
    assert not files - set(EXPECTATIONS), "add rows to tests/fleet_corpus_expectations.tsv"


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_fleet_corpus_file(name, corpus):
    path = corpus / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    must, must_not = EXPECTATIONS[name]
    result = run_cli("check", path, "--select", "ALL", "--preview", "--format", "json", "--isolated")
    assert "Traceback" not in result.stderr
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    findings = json.loads(result.stdout)["findings"]
    fired = {f["code"] for f in findings} | {f"{f['code']}:{f['severity']}" for f in findings}
    assert must <= fired, f"{name}: expected {sorted(must - fired)}; fired {sorted(fired)}"
    assert not (must_not & fired), f"{name}: {sorted(must_not & fired)} must not fire"
