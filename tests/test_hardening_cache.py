"""Cache entries are validated when read; anything unexpected is a miss, never an error
(issue 7: wrong shapes ended in KeyError, deep nesting in RecursionError). The cache is skipped
when it cannot be written, and it has a size bound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.engine import cache as cache_module

BAD = FIXTURES / "rules" / "NUMA001" / "bad.xml"


def _run(tmp_path):
    return run_cli("check", "node", "--format", "json", "--cache-dir", "cache", cwd=tmp_path)


@pytest.fixture(autouse=True)
def cache_on(monkeypatch):
    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)  # conftest turns it off for other tests


@pytest.fixture
def cached(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(BAD, tmp_path / "node" / "topo.xml")
    first = _run(tmp_path)
    (entry,) = (tmp_path / "cache").rglob("*.json")
    return tmp_path, first, entry


def _entry_variants(entry: dict) -> dict[str, str]:
    finding = entry["findings"][0]
    return {
        "not json": "{",
        "a list": "[]",
        "missing key": json.dumps({k: v for k, v in entry.items() if k != "ran"}),
        "line as text": json.dumps({**entry, "findings": [{**finding, "line": "53"}, *entry["findings"][1:]]}),
        "line as bool": json.dumps({**entry, "findings": [{**finding, "line": True}]}),
        "unknown field": json.dumps({**entry, "findings": [{**finding, "extra": 1}]}),
        "related of wrong shape": json.dumps({**entry, "findings": [{**finding, "related": [{"location": 3}]}]}),
        "notes not text": json.dumps({**entry, "notes": [{"x": 1}]}),
        "deeply nested": "[" * 100_000 + "]" * 100_000,
        "nested findings": json.dumps({**entry, "findings": [[[[[]]]]]}),
        "bad autofix": json.dumps({**entry, "findings": [{**finding, "autofix": {"message": "m", "edits": 3}}]}),
    }


def test_damaged_entries_are_misses_with_the_same_result(cached):
    tmp_path, first, entry_path = cached
    entry = json.loads(entry_path.read_text(encoding="utf-8"))
    for name, text in _entry_variants(entry).items():
        entry_path.write_text(text, encoding="utf-8")
        again = _run(tmp_path)
        assert (again.exit_code, again.stdout) == (first.exit_code, first.stdout), name
        assert json.loads(entry_path.read_text(encoding="utf-8")) == entry, name  # rewritten whole


def test_a_file_where_the_cache_folder_should_be_is_skipped_silently(tmp_path):
    (tmp_path / "node").mkdir()
    shutil.copyfile(BAD, tmp_path / "node" / "topo.xml")
    (tmp_path / "cache").write_text("not a folder", encoding="utf-8")
    result = _run(tmp_path)
    assert result.exit_code == 1 and result.stderr == ""
    (tmp_path / "cache").unlink()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "ab").write_text("", encoding="utf-8")  # a file where a shard folder goes
    assert _run(tmp_path).exit_code == 1


def test_prune_removes_the_oldest_entries_past_the_bound(tmp_path):
    for index in range(10):
        shard = tmp_path / f"{index:02x}"
        shard.mkdir()
        entry = shard / f"{index:02x}entry.json"
        entry.write_text("x" * 1000, encoding="utf-8")
        os.utime(entry, ns=(index * 10**9, index * 10**9))
    cache_module.prune(tmp_path, limit=20_000)
    assert len(list(tmp_path.rglob("*.json"))) == 10  # under the bound: nothing goes
    cache_module.prune(tmp_path, limit=8_000)
    left = sorted(p.name for p in tmp_path.rglob("*.json"))
    assert left == [f"{i:02x}entry.json" for i in range(4, 10)]  # the oldest went, down to 3/4


def test_concurrent_runs_sharing_a_cache_agree(tmp_path):
    cluster = tmp_path / "cluster"
    for name in ("n1", "n2", "n3", "n4"):
        (cluster / name).mkdir(parents=True)
        shutil.copyfile(BAD, cluster / name / "topo.xml")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TOPOLINT_NO_CACHE", None)
    command = [sys.executable, "-m", "topolint", "check", "cluster", "--format", "json", "--cache-dir", "cache"]
    children = [subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    outputs = {child.communicate(timeout=120)[0] for child in children}
    assert len(outputs) == 1
    assert not list((tmp_path / "cache").rglob("tmp*"))  # no partial entry left behind
