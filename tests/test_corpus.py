"""The real-world corpus (../shared/corpus): every file is read without a crash, and the
committed table tests/corpus_expectations.tsv says which codes must and must not fire per file.

The corpus is third-party material and never copied here; without it these tests skip.
"""

from __future__ import annotations

import csv
import json

import pytest
from conftest import ROOT, run_cli

TABLE = ROOT / "tests" / "corpus_expectations.tsv"
FOLDERS = ("nccl-topo", "nvidia-smi-topo", "nvidia-smi-nvlink", "nccl-tests", "nccl-log")


def _rows() -> dict[str, tuple[set[str], set[str]]]:
    rows = {}
    with TABLE.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if not row:
                continue
            name, must, must_not = row[0], row[1], row[2]
            codes = lambda text: {c for c in text.split(",") if c and c != "-"}  # noqa: E731
            rows[name] = (codes(must), codes(must_not))
    return rows


EXPECTATIONS = _rows()


def _fired(path) -> tuple[int, set[str], str]:
    result = run_cli("check", path, "--select", "ALL", "--preview", "--format", "json")
    assert "Traceback" not in result.stderr
    return result.exit_code, {f["code"] for f in json.loads(result.stdout)["findings"]}, result.stderr


def test_every_corpus_file_has_a_row(corpus):
    files = {f"{folder}/{p.name}" for folder in FOLDERS for p in (corpus / folder).iterdir() if p.is_file()}
    assert not files - set(EXPECTATIONS), "add rows to tests/corpus_expectations.tsv"


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_corpus_file(name, corpus):
    path = corpus / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    must, must_not = EXPECTATIONS[name]
    exit_code, fired, _ = _fired(path)
    assert exit_code in (0, 1, 2)
    assert exit_code == (2 if "TL001" in fired else exit_code)
    assert must <= fired, f"{name}: expected {sorted(must - fired)} to fire; fired {sorted(fired)}"
    assert not (must_not & fired), f"{name}: {sorted(must_not & fired)} must not fire"
