"""Configuration found per file, as ruff finds it: the nearest configuration wins whole (``extend``
inherits), command-line flags win over every one, nested excludes apply below them, a configured or
given topology is context, and the result cache is keyed by each node's own configuration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

import topolint.config as config_module

BAD_NUMA = FIXTURES / "rules" / "NUMA001" / "bad.xml"  # NUMA001 (error)
PXN = FIXTURES / "samples" / "dgx-like-2socket-dump.xml"  # four NUMA001 warnings
DUP = FIXTURES / "rules" / "TOPO005" / "bad_duplicate_nvlink.xml"  # TOPO005
NET002 = FIXTURES / "rules" / "NET002"  # bad.env against topology/: NET002; topology/ alone: NET003
WATCHED = {"NUMA001", "TOPO005", "NET002", "NET003", "SITE001", "TL004", "ENV004"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def findings(cwd: Path, *args: str) -> list[tuple[str, str]]:
    """(path, code) of the active findings the rules here are about."""
    result = run_cli("check", *args, "--format", "json", cwd=cwd)
    assert result.exit_code in (0, 1), result.stderr
    return sorted((f["path"], f["code"]) for f in json.loads(result.stdout)["findings"]
                  if not f["suppressed"] and f["code"] in WATCHED)


@pytest.fixture
def monorepo(tmp_path) -> Path:
    """A root project and a nested one (its own pyproject.toml), each with both kinds of topology finding."""
    for folder in ("root-topo", "nested/topo"):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(BAD_NUMA, tmp_path / folder / "numa.xml")
        shutil.copy(DUP, tmp_path / folder / "dup.xml")
    write(tmp_path / ".topolint.toml", 'select = ["NUMA"]\n')
    write(tmp_path / "nested" / "pyproject.toml", '[project]\nname = "nested"\n[tool.topolint]\nselect = ["TOPO"]\n')
    return tmp_path


def test_a_nested_pyproject_governs_its_files_when_run_from_the_root(monorepo):
    """Why: configuration was found from the working directory only: the nested project's
    pyproject.toml was ignored when run from the root."""
    assert findings(monorepo, ".") == [("nested/topo/dup.xml", "TOPO005"), ("root-topo/numa.xml", "NUMA001")]
    # From inside the nested project, and naming its files from the root: the same answer for them.
    assert findings(monorepo / "nested", "topo") == [("topo/dup.xml", "TOPO005")]
    assert findings(monorepo, "nested/topo/dup.xml", "nested/topo/numa.xml") == [("nested/topo/dup.xml", "TOPO005")]


def test_the_nearest_configuration_wins_whole_and_extend_inherits(monorepo):
    write(monorepo / ".topolint.toml", 'select = ["NUMA", "TOPO"]\n[per-file-ignores]\n"dup.xml" = ["TOPO005"]\n')
    write(monorepo / "nested" / "pyproject.toml", '[tool.topolint]\nselect = ["NUMA", "TOPO"]\n')
    # Not merged: the root's per-file-ignores do not reach the nested project's dup.xml.
    assert ("nested/topo/dup.xml", "TOPO005") in findings(monorepo, ".")
    assert ("root-topo/dup.xml", "TOPO005") not in findings(monorepo, ".")
    # extend: the root's keys are inherited, the nested file's own keys replace them.
    write(monorepo / "nested" / "pyproject.toml", '[tool.topolint]\nextend = "../.topolint.toml"\nselect = ["TOPO"]\n')
    assert findings(monorepo, "nested") == []  # TOPO005 per-file-ignored by the inherited table
    write(monorepo / "nested" / "pyproject.toml", '[tool.topolint]\nextend = "../.topolint.toml"\n'
                                                  '[tool.topolint.per-file-ignores]\n"numa.xml" = ["NUMA001"]\n')
    assert findings(monorepo, "nested") == [("nested/topo/dup.xml", "TOPO005")]


def test_inherited_paths_stay_relative_to_the_file_that_sets_them(tmp_path):
    shutil.copytree(FIXTURES / "site-rules", tmp_path / "site")
    write(tmp_path / "base.toml", 'rule-dirs = ["site"]\nselect = ["SITE001"]\nextend-exclude = ["proj/old/*"]\n')
    dump = ('<system version="1">\n  <cpu numaid="0" host_hash="0x1" affinity="ff">\n'
            '    <nic><net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/></nic>\n  </cpu>\n</system>\n')
    write(tmp_path / "proj" / "now" / "dump.xml", dump)
    write(tmp_path / "proj" / "old" / "dump.xml", dump)
    write(tmp_path / "proj" / ".topolint.toml", 'extend = "../base.toml"\n')
    assert findings(tmp_path / "proj", ".") == [("now/dump.xml", "SITE001")]


def test_extend_errors_name_the_file(tmp_path):
    write(tmp_path / "a" / ".topolint.toml", 'extend = "../b.toml"\n')
    write(tmp_path / "b.toml", 'extend = "a/.topolint.toml"\n')
    shutil.copy(BAD_NUMA, tmp_path / "a" / "numa.xml")
    cycle = run_cli("check", "a", cwd=tmp_path)
    assert cycle.exit_code == 2 and "a cycle" in cycle.stderr and "Traceback" not in cycle.stderr
    write(tmp_path / "a" / ".topolint.toml", 'extend = "../missing.toml"\n')
    missing = run_cli("check", "a", cwd=tmp_path)
    assert missing.exit_code == 2 and "missing.toml: no such file" in missing.stderr
    assert str(tmp_path / "a" / ".topolint.toml") in missing.stderr


def test_a_nested_configuration_that_cannot_be_used_is_a_usage_error(monorepo):
    bad = write(monorepo / "nested" / "pyproject.toml", '[tool.topolint]\nselct = ["TOPO"]\n')
    result = run_cli("check", ".", cwd=monorepo)
    assert result.exit_code == 2 and str(bad) in result.stderr and "`tool.topolint.selct`" in result.stderr
    assert "Traceback" not in result.stderr


def test_command_line_flags_win_over_every_configuration(monorepo):
    assert findings(monorepo, ".", "--select", "TOPO") == [("nested/topo/dup.xml", "TOPO005"),
                                                           ("root-topo/dup.xml", "TOPO005")]
    assert findings(monorepo, ".", "--extend-select", "NUMA001") == [
        ("nested/topo/dup.xml", "TOPO005"), ("nested/topo/numa.xml", "NUMA001"), ("root-topo/numa.xml", "NUMA001")]
    # --config and --isolated: one configuration for every file, as ruff's --config.
    assert findings(monorepo, ".", "--isolated") == sorted(
        (f"{folder}/{name}", code) for folder in ("nested/topo", "root-topo")
        for name, code in (("dup.xml", "TOPO005"), ("numa.xml", "NUMA001")))
    assert findings(monorepo, ".", "--config", ".topolint.toml") == [("nested/topo/numa.xml", "NUMA001"),
                                                                    ("root-topo/numa.xml", "NUMA001")]


def test_nested_excludes_apply_below_their_folder(monorepo):
    write(monorepo / "nested" / "pyproject.toml", '[tool.topolint]\nselect = ["TOPO", "NUMA"]\nextend-exclude = ["dup.xml"]\n')
    assert findings(monorepo, ".") == [("nested/topo/numa.xml", "NUMA001"), ("root-topo/numa.xml", "NUMA001")]
    # force-exclude set in the nested configuration applies to the files named there (pre-commit).
    write(monorepo / "nested" / "pyproject.toml", '[tool.topolint]\nextend-exclude = ["topo"]\nforce-exclude = true\n')
    assert findings(monorepo, "nested/topo/numa.xml", "root-topo/numa.xml") == [("root-topo/numa.xml", "NUMA001")]


def test_fail_level_severity_and_suppression_reasons_follow_each_file(tmp_path):
    write(tmp_path / ".topolint.toml", 'select = ["NUMA001", "TL004"]\n')
    write(tmp_path / "lenient" / ".topolint.toml", 'select = ["NUMA001", "TL004"]\nfail-level = "error"\n'
                                                   'require-suppression-reason = true\n')
    shutil.copy(PXN, tmp_path / "lenient" / "numa.xml")
    assert run_cli("check", "lenient", cwd=tmp_path).exit_code == 0  # its warnings do not fail the run
    (tmp_path / "strict").mkdir()
    shutil.copy(PXN, tmp_path / "strict" / "numa.xml")
    assert run_cli("check", ".", cwd=tmp_path).exit_code == 1  # the root's do
    write(tmp_path / "lenient" / ".topolint.toml", '[severity]\nNUMA001 = "info"\n')
    report = json.loads(run_cli("check", ".", "--format", "json", cwd=tmp_path).stdout)
    severity = {f["path"]: f["severity"] for f in report["findings"] if f["code"] == "NUMA001"}
    assert severity == {"strict/numa.xml": "warning", "lenient/numa.xml": "info"}
    # A directive without a reason suppresses nothing where the configuration requires one.
    write(tmp_path / "lenient" / ".topolint.toml", 'require-suppression-reason = true\n')
    for folder in (tmp_path, tmp_path / "lenient"):
        write(folder / "job.sh", "# topolint: ignore[ENV004]\nexport NCCL_DEBUG=INFO\n")
    assert [p for p, code in findings(tmp_path, "job.sh", "lenient/job.sh") if code == "ENV004"] == ["lenient/job.sh"]


def test_a_given_or_configured_topology_is_context(tmp_path):
    """Why: a configured `topology =` (and --topology) added that topology's own findings to every run."""
    shutil.copytree(NET002, tmp_path / "infra")
    infra = tmp_path / "infra"
    assert findings(infra, "bad.env", "--topology", "topology") == [("bad.env", "NET002")]
    write(infra / ".topolint.toml", 'topology = "topology"\n')
    assert findings(infra, "bad.env") == [("bad.env", "NET002")]
    # A checked path as well: its findings are reported, once.
    assert findings(infra, ".") == [("bad.env", "NET002"), ("bad_port_down.env", "NET002"),
                                    ("topology/ibstat.txt", "NET003")]
    assert findings(infra, "bad.env", "topology") == [("bad.env", "NET002"), ("topology/ibstat.txt", "NET003")]


def test_each_configuration_checks_against_its_own_topology(tmp_path):
    shutil.copytree(NET002, tmp_path / "a")
    (tmp_path / "b").mkdir()
    shutil.copy(NET002 / "bad.env", tmp_path / "b" / "bad.env")
    write(tmp_path / "a" / ".topolint.toml", 'topology = "topology"\n')
    # b/ has no configuration of its own and the root's names no topology: NET002 cannot run there.
    assert findings(tmp_path, "a/bad.env", "b/bad.env") == [("a/bad.env", "NET002")]


def test_show_settings_and_verbose_name_the_configuration_of_each_path(monorepo):
    nested = run_cli("check", "nested/topo", "--show-settings", cwd=monorepo).stdout
    assert f'configuration = "{monorepo / "nested" / "pyproject.toml"}"' in nested and '"TOPO005"' in nested
    assert '"NUMA001"' not in nested
    assert f'configuration = "{monorepo / ".topolint.toml"}"' in run_cli("check", "--show-settings", cwd=monorepo).stdout
    files = run_cli("check", ".", "--show-files", cwd=monorepo).stdout.splitlines()
    assert f"nested/topo/dup.xml\tnccl-topo-xml\tnested\t{monorepo / 'nested' / 'pyproject.toml'}" in files
    assert f"root-topo/dup.xml\tnccl-topo-xml\troot-topo\t{monorepo / '.topolint.toml'}" in files
    assert run_cli("check", "root-topo", "--show-files", cwd=monorepo).stdout.count("\t") == 4  # one configuration: 3 columns
    verbose = run_cli("check", ".", "-v", cwd=monorepo).stderr
    assert f"configuration {monorepo / 'nested' / 'pyproject.toml'} governs 2 files" in verbose


def test_each_folder_is_looked_up_once(tmp_path, monkeypatch):
    """The per-file lookup is cached per folder: a cluster of 20 nodes of 3 files asks each folder once."""
    for index in range(20):
        node = tmp_path / "cluster" / f"node{index:02}"
        node.mkdir(parents=True)
        for name in ("a.xml", "b.xml", "c.xml"):
            shutil.copy(BAD_NUMA, node / name)
    asked = []
    real = config_module._config_in
    monkeypatch.setattr(config_module, "_config_in", lambda folder: asked.append(folder) or real(folder))
    assert run_cli("check", "cluster", "--select", "NUMA", cwd=tmp_path).exit_code == 1
    assert len(asked) == len(set(asked))  # never twice
    assert len(asked) <= 20 + len(tmp_path.parts) + 1  # the node folders, cluster/ and the folders above


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """Two projects of two nodes each; ``parsed`` lists the files a run parses (the cache answers the others)."""
    import topolint.inputs.collect as collect_module

    monkeypatch.delenv("TOPOLINT_NO_CACHE", raising=False)
    shutil.copytree(FIXTURES / "site-rules", tmp_path / "site")
    for project in ("a", "b"):
        for node in ("n1", "n2"):
            write(tmp_path / project / node / "dump.xml",
                  '<system version="1">\n  <cpu numaid="0" host_hash="0x1" affinity="ff">\n'
                  '    <nic><net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/></nic>\n  </cpu>\n</system>\n')
        write(tmp_path / project / ".topolint.toml", 'rule-dirs = ["../site"]\nselect = ["SITE001"]\n')
    parsed = []
    real = collect_module.parse
    monkeypatch.setattr(collect_module, "parse", lambda fmt, source: parsed.append(source.path) or real(fmt, source))
    return tmp_path, parsed


def test_editing_a_nested_configuration_invalidates_exactly_the_nodes_it_governs(cached):
    root, parsed = cached
    assert findings(root, "a", "b") == [(f"{p}/{n}/dump.xml", "SITE001") for p in "ab" for n in ("n1", "n2")]
    parsed.clear()
    assert len(findings(root, "a", "b")) == 4 and parsed == []  # all four from the cache
    write(root / "b" / ".topolint.toml", 'rule-dirs = ["../site"]\nselect = ["SITE001"]\n[rules.SITE001]\nmin-gbps = 200\n')
    assert findings(root, "a", "b") == [("a/n1/dump.xml", "SITE001"), ("a/n2/dump.xml", "SITE001")]
    assert sorted(parsed) == ["b/n1/dump.xml", "b/n2/dump.xml"]  # a/ was answered by the cache
    # A selection change is applied after the rules: nothing is checked again.
    parsed.clear()
    write(root / "a" / ".topolint.toml", 'rule-dirs = ["../site"]\nselect = ["TL"]\n')
    assert findings(root, "a", "b") == [] and parsed == []
