"""Fuzzing of what tests/test_fuzz.py leaves out (issue 20, item 6): node bundle manifests
(parsers/bundle_manifest.py), the TOML configuration (topolint/config.py) and rule files (the
built-in rules/*.toml and a site's own, read through ``--rule-dir`` or ``rule-dirs``). A mutated
file is never a traceback nor an internal error: a manifest is TL001 with its file and line
(exit 2, the other inputs still checked), a config or rule file that cannot be used is a clear
error naming the file (exit 2).

Mutations and their budget are tests/fuzzing.py's and tests/test_fuzz.py's: deterministic, no
example database; TOPOLINT_FUZZ_EXAMPLES examples per target, 6 by default for the targets that
run the whole CLI (a run each).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from fuzzing import MUTATIONS, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topolint.engine.rule import RuleError, builtin_rules_dir, validate_rule_file
from topolint.inputs.source import InputError, SourceFile, decode_input
from topolint.parsers.bundle_manifest import parse_manifest

CLI_EXAMPLES = int(os.environ.get("TOPOLINT_FUZZ_EXAMPLES", "6"))
EXAMPLES = int(os.environ.get("TOPOLINT_FUZZ_EXAMPLES", "25"))


def _settings(examples: int):
    return settings(derandomize=True, database=None, deadline=None, max_examples=examples,
                    suppress_health_check=list(HealthCheck), print_blob=True)


mutation_lists = st.lists(st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 2**31), st.integers(0, 255)),
                          min_size=1, max_size=3)

BUNDLE = ROOT / "fixtures" / "drawing" / "bundle-node"
MANIFESTS = sorted(ROOT.glob("fixtures/**/topolint-bundle.json"))
SITE_RULE = ROOT / "fixtures" / "site-rules" / "SITE001.toml"
BUILTIN_RULES = sorted(builtin_rules_dir().glob("*.toml"))
TOPOLOGY = ROOT / "fixtures" / "samples" / "dgx-like-2socket-dump.xml"
CONFIG = """\
select = ["ALL"]
ignore = ["TL004"]
extend-select = ["NUMA003"]
fail-level = "error"
nccl-version = "2.27.7"
extra-variables = ["NCCL_MY_PLUGIN_OPT"]
topology = "topo/dgx01.xml"
rule-dirs = ["site-rules"]
extend-exclude = ["scratch", "old/*.xml"]
require-suppression-reason = true

[per-file-ignores]
"vendor/*.xml" = ["TOPO002", "unused-suppression"]

[severity]
NET005 = "warning"

[rules.SITE001]
min_gbps = 200
"""


def _apply(data: bytes, mutations) -> bytes:
    for name, position, choice in mutations:
        data = mutate(data, name, position, choice)
    return data


def _assert_clean_failure(result, named: str) -> None:
    """Exit 0, 1 or 2; no traceback, no internal error; an exit 2 says which file."""
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "internal error" not in result.stderr, output
    if result.exit_code == 2:
        assert named in output, output


def test_the_samples_exist():
    assert MANIFESTS and SITE_RULE.is_file() and BUILTIN_RULES and (BUNDLE / "topolint-bundle.json").is_file()


@_settings(EXAMPLES)
@given(sample=st.sampled_from(MANIFESTS), mutations=mutation_lists)
def test_bundle_manifest_parser_refuses_with_a_line_or_reads(sample, mutations):
    data = _apply(sample.read_bytes(), mutations)
    try:
        source = SourceFile(path="topolint-bundle.json", text=decode_input("topolint-bundle.json", data))
        parse_manifest(source, "node")
    except InputError as exc:
        assert exc.path == "topolint-bundle.json" and exc.line >= 1


@_settings(CLI_EXAMPLES)
@given(mutations=mutation_lists)
def test_cli_on_a_bundle_with_a_mutated_manifest(tmp_path_factory, mutations):
    folder = tmp_path_factory.mktemp("bundle") / "node"
    shutil.copytree(BUNDLE, folder)
    manifest = folder / "topolint-bundle.json"
    manifest.write_bytes(_apply(manifest.read_bytes(), mutations))
    result = run_cli("check", "node", "--no-cache", "--isolated", cwd=folder.parent)
    _assert_clean_failure(result, "topolint-bundle.json")
    if result.exit_code == 2 and "topolint-bundle.json:" in result.stdout:
        assert "TL001" in result.stdout  # the manifest's line, as TL001: the node's other files still read


def _project(tmp_path_factory, config: bytes | None = None, rule: bytes | None = None) -> Path:
    folder = tmp_path_factory.mktemp("project")
    (folder / "topo").mkdir()
    shutil.copy(TOPOLOGY, folder / "topo" / "dgx01.xml")
    (folder / "site-rules").mkdir()
    (folder / "site-rules" / "SITE001.toml").write_bytes(SITE_RULE.read_bytes() if rule is None else rule)
    (folder / ".topolint.toml").write_bytes(CONFIG.encode() if config is None else config)
    return folder


def test_the_config_sample_runs_as_it_is(tmp_path_factory):
    result = run_cli("check", ".", "--no-cache", cwd=_project(tmp_path_factory))
    assert result.exit_code == 0, result.stdout + result.stderr


@_settings(CLI_EXAMPLES)
@given(mutations=mutation_lists)
def test_cli_with_a_mutated_config(tmp_path_factory, mutations):
    folder = _project(tmp_path_factory, config=_apply(CONFIG.encode(), mutations))
    result = run_cli("check", ".", "--no-cache", cwd=folder)
    _assert_clean_failure(result, ".topolint.toml")
    if "not valid TOML" in result.stderr:
        assert "line" in result.stderr, result.stderr  # tomllib's position: (at line N, column M)


@_settings(CLI_EXAMPLES)
@given(mutations=mutation_lists)
def test_cli_with_a_mutated_site_rule_file(tmp_path_factory, mutations):
    folder = _project(tmp_path_factory, rule=_apply(SITE_RULE.read_bytes(), mutations))
    result = run_cli("check", ".", "--no-cache", cwd=folder)
    _assert_clean_failure(result, "SITE001")


@_settings(EXAMPLES)
@given(sample=st.sampled_from(BUILTIN_RULES), mutations=mutation_lists)
def test_mutated_rule_files_are_refused_with_their_file_or_load(tmp_path_factory, sample, mutations):
    """The built-in rules as a site's own would be read (validated): RuleError naming the file."""
    path = tmp_path_factory.mktemp("rules") / sample.name
    path.write_bytes(_apply(sample.read_bytes(), mutations))
    try:
        validate_rule_file(path)
    except RuleError as exc:
        assert str(path) in str(exc)


@pytest.mark.parametrize("text", ["[rules.SITE001\nmin_gbps = 200\n", "select = [\n" * 2000, "a = " + "[" * 5000 + "]" * 5000])
def test_config_that_does_not_decode_names_the_file_and_line(tmp_path_factory, text):
    folder = _project(tmp_path_factory, config=text.encode())
    result = run_cli("check", ".", "--no-cache", cwd=folder)
    assert result.exit_code == 2
    assert ".topolint.toml" in result.stderr and "line" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
