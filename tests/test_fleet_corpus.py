"""The scheduler samples of the shared corpus (Slurm topology files, node lists and hostfiles,
Kubernetes node labels): each file alone, read as the committed table
tests/fleet_corpus_expectations.tsv says (its format and what it holds), and what must and must
not fire. The corpus is third-party material and never copied here; without it these skip."""

from __future__ import annotations

import csv

import pytest
from conftest import ROOT
from corpus_table import assert_expectations

from topolint.inputs.collect import content_format
from topolint.inputs.source import SourceFile
from topolint.model.scheduler import HostOrder, NodeLabelsFile, TopologyFile
from topolint.fleet.scheduler import leaf_label
from topolint.parsers.registry import parse

TABLE = ROOT / "tests" / "fleet_corpus_expectations.tsv"
FOLDERS = ("slurm-topology", "nodelist", "k8s-node-labels")


def _rows() -> dict[str, tuple]:
    rows = {}
    with TABLE.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if row:
                codes = lambda text: {c for c in text.split(",") if c and c != "-"}  # noqa: E731
                rows[row[0]] = (row[1], row[2], codes(row[3]), codes(row[4]))
    return rows


EXPECTATIONS = _rows()


def summary(facts) -> str:
    """What a parsed file holds, as the table's ``holds`` column writes it."""
    if isinstance(facts, TopologyFile):
        return ";".join(f"{t.kind}:{len(t.switches)} switches:{sum(len(s.nodes) for s in t.switches)} nodes"
                        if t.kind == "tree" else f"{t.kind}:{len(t.blocks)} blocks:{sum(len(b.nodes) for b in t.blocks)} nodes"
                        for t in facts.topologies)
    if isinstance(facts, HostOrder):
        return f"{facts.kind}:{len(facts.hosts)} hosts:{len({h.name for h in facts.hosts})} distinct"
    if isinstance(facts, NodeLabelsFile):
        keys = {found[0] for n in facts.nodes if (found := leaf_label(n)) is not None}
        return f"nodes:{len(facts.nodes)}:{','.join(sorted(keys)) or '-'}"
    return "-"


def test_every_fleet_corpus_file_has_a_row(corpus):
    files = {f"{folder}/{p.name}" for folder in FOLDERS if (corpus / folder).is_dir()
             for p in (corpus / folder).iterdir() if p.is_file()}
    assert not files - set(EXPECTATIONS), "add rows to tests/fleet_corpus_expectations.tsv"


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_fleet_corpus_file(name, corpus):
    path = corpus / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    fmt, holds, must, must_not = EXPECTATIONS[name]
    text = path.read_text(encoding="utf-8")
    found = content_format(path.name, text)
    assert (found or "-") == fmt
    if holds != "-":
        assert summary(parse(found, SourceFile(path=name, text=text))) == holds
    assert_expectations(name, path, must, must_not)
