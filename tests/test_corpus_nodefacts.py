"""The lspci, numactl and hwloc samples of the shared corpus: every file is recognised and read
without a crash, and tests/corpus_nodefacts.tsv says which codes must and must not fire per file
(healthy files included). The corpus is third-party material and never copied here."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import ROOT, run_cli

TABLE = ROOT / "tests" / "corpus_nodefacts.tsv"
FOLDERS = ("lspci", "numactl", "hwloc")


def _codes(text: str) -> set[str]:
    return {c for c in text.split(",") if c and c != "-"}


def _rows() -> dict[str, tuple[set[str], set[str]]]:
    with TABLE.open(encoding="utf-8") as handle:
        rows = csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t")
        return {row[0]: (_codes(row[1]), _codes(row[2])) for row in rows if row}


EXPECTATIONS = _rows()


def test_every_sample_has_a_row(corpus):
    files = {f"{folder}/{p.name}" for folder in FOLDERS for p in (corpus / folder).iterdir() if p.is_file()}
    assert not files - set(EXPECTATIONS), f"add rows to {TABLE.name}"


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_sample(name, corpus):
    path = corpus / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    result = run_cli("check", path, "--select", "ALL", "--preview", "--format", "json")
    assert "Traceback" not in result.stderr
    fired = {f["code"] for f in json.loads(result.stdout)["findings"]}
    must, must_not = EXPECTATIONS[name]
    assert must <= fired, f"{name}: expected {sorted(must - fired)}; fired {sorted(fired)}"
    assert not (must_not & fired), f"{name}: {sorted(must_not & fired)} must not fire"
    assert result.exit_code == (2 if "TL001" in fired else result.exit_code)
