"""The fabric samples of the shared corpus (issue 27: ibnetdiscover, iblinkinfo, lldpctl; the
scheduler samples are in test_fleet_corpus.py): each file alone, against the committed table tests/fabric_files_corpus_expectations.tsv of what
must and must not fire (healthy files included). The corpus is third-party material and never
copied here; without it these tests skip."""

from __future__ import annotations

import pytest
from conftest import ROOT
from corpus_table import assert_expectations, read_table

TABLE = ROOT / "tests" / "fabric_files_corpus_expectations.tsv"
# Corpus folders whose every file needs a row (one team's formats each).
FOLDERS = ("ibnetdiscover", "iblinkinfo", "lldpctl")
EXPECTATIONS = read_table(TABLE)


def test_every_fabric_corpus_file_has_a_row(corpus):
    files = {f"{folder}/{p.name}" for folder in FOLDERS if (corpus / folder).is_dir()
             for p in (corpus / folder).iterdir() if p.is_file()}
    assert not files - set(EXPECTATIONS), "add rows to tests/fabric_files_corpus_expectations.tsv"


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_fabric_corpus_file(name, corpus):
    path = corpus / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    assert_expectations(name, path, *EXPECTATIONS[name])
