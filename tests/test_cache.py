"""The result cache: an unchanged node is not parsed or checked again, and anything its
findings depend on (its files, the rules, the options, topolint's code) makes a new entry."""

from __future__ import annotations

import json
import shutil

import pytest

import topolint.inputs.collect as collect_module
from conftest import FIXTURES, run_cli

BAD = FIXTURES / "rules" / "NUMA001" / "bad.xml"
GOOD = FIXTURES / "rules" / "NUMA001" / "good.xml"


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)
    for name, source in (("node-a", BAD), ("node-b", GOOD)):
        (tmp_path / "cluster" / name).mkdir(parents=True)
        shutil.copy(source, tmp_path / "cluster" / name / "topo.xml")
    return tmp_path


@pytest.fixture
def parsed(monkeypatch):
    """Names of the files parsed during a run."""
    seen = []
    real = collect_module.parse

    def spy(fmt, source):
        seen.append(source.path)
        return real(fmt, source)

    monkeypatch.setattr(collect_module, "parse", spy)
    return seen


def check(cwd, *args):
    return run_cli("check", "cluster", "--format", "json", "--select", "NUMA", *args, cwd=cwd)


def test_second_run_reads_the_cache_and_reports_the_same(cluster, parsed):
    first = check(cluster)
    assert sorted(parsed) == ["cluster/node-a/topo.xml", "cluster/node-b/topo.xml"]
    assert (cluster / ".topolint_cache" / ".gitignore").read_text().strip().endswith("*")
    parsed.clear()
    second = check(cluster)
    assert parsed == []  # neither node was parsed, let alone checked
    assert second.stdout == first.stdout and second.exit_code == first.exit_code == 1
    assert [f["code"] for f in json.loads(second.stdout)["findings"]] == ["NUMA001"]


def test_a_changed_file_is_checked_again(cluster, parsed):
    check(cluster)
    shutil.copy(GOOD, cluster / "cluster" / "node-a" / "topo.xml")
    parsed.clear()
    result = check(cluster)
    assert parsed == ["cluster/node-a/topo.xml"]
    assert json.loads(result.stdout)["findings"] == [] and result.exit_code == 0


def test_options_and_rules_are_part_of_the_key(cluster, parsed):
    check(cluster)
    parsed.clear()
    check(cluster, "--nccl-version", "2.11.4")
    assert len(parsed) == 2
    parsed.clear()
    check(cluster, "--rule-dir", FIXTURES / "site-rules")
    assert len(parsed) == 2


def test_selection_and_suppression_apply_to_cached_results(cluster):
    check(cluster)
    ignored = check(cluster, "--ignore", "NUMA001")  # the cached entry still holds it
    assert json.loads(ignored.stdout)["findings"] == [] and ignored.exit_code == 0
    text = BAD.read_text().replace('<gpu dev="0"', '<!-- topolint: ignore[NUMA001] known -->\n      <gpu dev="0"')
    (cluster / "cluster" / "node-a" / "topo.xml").write_text(text)
    check(cluster)  # fills the cache for the edited file
    again = check(cluster)
    (finding,) = json.loads(again.stdout)["findings"]
    assert finding["suppressed"] is True and again.exit_code == 0


def test_no_cache_flag_and_environment_write_nothing(cluster, monkeypatch, parsed):
    check(cluster, "--no-cache")
    assert not (cluster / ".topolint_cache").exists()
    monkeypatch.setenv("TOPOLINT_NO_CACHE", "1")
    check(cluster)
    assert not (cluster / ".topolint_cache").exists()


def test_unreadable_nodes_are_not_cached(cluster, parsed):
    (cluster / "cluster" / "node-a" / "topo.xml").write_text('<system version="1">\n  <cpu numaid="0">\n')
    first = check(cluster)
    assert first.exit_code == 2
    parsed.clear()
    second = check(cluster)
    assert parsed == ["cluster/node-a/topo.xml"] and second.stdout == first.stdout


def test_cache_dir_option(cluster, tmp_path):
    check(cluster, "--cache-dir", tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere").is_dir() and not (cluster / ".topolint_cache").exists()


def test_damaged_entries_are_computed_again(cluster, parsed):
    first = check(cluster)
    for entry in (cluster / ".topolint_cache").rglob("*.json"):
        entry.write_text("{not json")
    parsed.clear()
    second = check(cluster)
    assert len(parsed) == 2 and second.stdout == first.stdout
