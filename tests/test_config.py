"""Configuration files: discovery, precedence under the command line, every key, errors that
name the key and the file (exit 2), and the generated JSON Schema in docs/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint import config as config_module
from topolint.config import Config, ConfigError, discover, find_config, load_config

BAD_NUMA = FIXTURES / "rules" / "NUMA001" / "bad.xml"  # NUMA001 error
DUP = FIXTURES / "rules" / "TOPO005" / "bad_duplicate_nvlink.xml"  # TOPO005 error
SCHEMA = ROOT / "docs" / "config.schema.json"
WATCHED = {"NUMA001", "TOPO005", "SITE001", "TL004"}


@pytest.fixture
def project(tmp_path) -> Path:
    """A project folder with two topology files under topo/."""
    (tmp_path / "topo").mkdir()
    shutil.copy(BAD_NUMA, tmp_path / "topo" / "numa.xml")
    shutil.copy(DUP, tmp_path / "topo" / "dup.xml")
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def codes(project: Path, *args: str, cwd: Path | None = None) -> tuple[int, list[str]]:
    result = run_cli("check", *args, "--format", "json", cwd=cwd or project)
    assert result.exit_code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    # Only the rules these fixtures are about, so rules added later do not change the answers.
    return result.exit_code, sorted({f["code"] for f in report["findings"]
                                     if not f["suppressed"] and f["code"] in WATCHED})


# --- discovery ----------------------------------------------------------------------------------

def test_found_upwards_from_the_working_directory(project):
    write(project / ".topolint.toml", 'select = ["TOPO005"]\n')
    (project / "sub").mkdir()
    assert find_config(project / "sub") == project / ".topolint.toml"
    assert codes(project, "../topo", cwd=project / "sub")[1] == ["TOPO005"]


def test_pyproject_tool_table_and_skipping_pyproject_without_it(project):
    write(project / "pyproject.toml", '[tool.topolint]\nselect = ["NUMA001"]\n')
    assert codes(project, "topo")[1] == ["NUMA001"]
    write(project / "inner" / "pyproject.toml", '[project]\nname = "x"\n')  # no [tool.topolint]: skipped
    assert find_config(project / "inner") == project / "pyproject.toml"


def test_dot_topolint_toml_wins_over_pyproject_in_the_same_folder(project):
    write(project / "pyproject.toml", '[tool.topolint]\nselect = ["NUMA001"]\n')
    write(project / ".topolint.toml", 'select = ["TOPO005"]\n')
    assert find_config(project) == project / ".topolint.toml"


def test_explicit_config_and_isolated(project):
    write(project / ".topolint.toml", 'select = ["TOPO005"]\n')
    other = write(project / "ci" / "strict.toml", 'select = ["NUMA001"]\n')
    assert codes(project, "topo", "--config", str(other))[1] == ["NUMA001"]
    assert codes(project, "topo", "--isolated")[1] == ["NUMA001", "TOPO005"]
    both = run_cli("check", "topo", "--isolated", "--config", str(other), cwd=project)
    assert both.exit_code == 2 and "cannot be used together" in both.stderr
    missing = run_cli("check", "topo", "--config", "nope.toml", cwd=project)
    assert missing.exit_code == 2 and "nope.toml" in missing.stderr


def test_verbose_names_the_config_file(project):
    write(project / ".topolint.toml", 'nccl-version = "2.21.5"\n')
    result = run_cli("check", "topo", "-v", cwd=project)
    assert f"configuration from {project / '.topolint.toml'}" in result.stderr
    assert "assumed NCCL 2.21.5" in result.stderr
    assert "assumed NCCL 2.19.0" in run_cli("check", "topo", "-v", "--nccl-version", "2.19", cwd=project).stderr


# --- keys -----------------------------------------------------------------------------------------

def test_selection_keys_and_command_line_precedence(project):
    write(project / ".topolint.toml", 'select = ["NUMA"]\nextend-select = ["TOPO005"]\nignore = ["TL004"]\n')
    assert codes(project, "topo")[1] == ["NUMA001", "TOPO005"]
    assert codes(project, "topo", "--select", "TOPO")[1] == ["TOPO005"]  # --select replaces select
    assert codes(project, "topo", "--ignore", "NUMA001")[1] == ["TOPO005"]  # --ignore adds to ignore


def test_severity_override_and_fail_level(project):
    write(project / ".topolint.toml", 'select = ["NUMA001"]\n[severity]\nNUMA001 = "info"\n')
    result = run_cli("check", "topo/numa.xml", "--format", "json", cwd=project)
    assert result.exit_code == 0
    assert {f["severity"] for f in json.loads(result.stdout)["findings"]} == {"info"}
    sarif = json.loads(run_cli("check", "topo/numa.xml", "--format", "sarif", cwd=project).stdout)
    assert sarif["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] == "note"
    write(project / ".topolint.toml", 'select = ["NUMA001"]\nfail-level = "info"\n[severity]\nNUMA001 = "info"\n')
    assert run_cli("check", "topo/numa.xml", cwd=project).exit_code == 1
    assert run_cli("check", "topo/numa.xml", "--fail-level", "error", cwd=project).exit_code == 0


def test_per_file_ignores(project):
    write(project / ".topolint.toml", '[per-file-ignores]\n"topo/dup.xml" = ["TOPO005"]\n"numa.*" = ["numa"]\n')
    assert codes(project, "topo")[1] == []


def test_exclude_and_extend_exclude_apply_to_folder_walks(project):
    write(project / ".topolint.toml", 'extend-exclude = ["dup.xml"]\n')
    assert codes(project, "topo")[1] == ["NUMA001"]
    assert codes(project, "topo", "--extend-exclude", "numa.xml")[1] == []
    write(project / ".topolint.toml", 'exclude = ["topo/numa*"]\n')
    assert codes(project, ".")[1] == ["TOPO005"]


def test_force_exclude_applies_to_named_files(project):
    write(project / ".topolint.toml", 'extend-exclude = ["topo"]\n')
    # Named explicitly: checked, unless --force-exclude (what pre-commit passes).
    assert codes(project, "topo/dup.xml")[1] == ["TOPO005"]
    assert codes(project, "topo/dup.xml", "--force-exclude")[1] == []
    write(project / ".topolint.toml", 'extend-exclude = ["topo"]\nforce-exclude = true\n')
    assert codes(project, "topo/dup.xml", "topo/numa.xml")[1] == []


def test_rule_dirs_and_rule_parameters(project):
    shutil.copytree(FIXTURES / "site-rules", project / "site")
    write(project / "dump.xml", '<system version="1">\n  <cpu numaid="0" host_hash="0x1" affinity="ff">\n'
                                '    <nic><net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1"/></nic>\n'
                                '  </cpu>\n</system>\n')
    write(project / ".topolint.toml", 'rule-dirs = ["site"]\nselect = ["SITE001"]\n')
    assert codes(project, "dump.xml")[1] == ["SITE001"]
    write(project / ".topolint.toml", 'rule-dirs = ["site"]\nselect = ["SITE001"]\n[rules.SITE001]\nmin-gbps = 200\n')
    assert codes(project, "dump.xml")[1] == []


def test_topology_and_extra_variables_reach_the_run(project, monkeypatch):
    from topolint.engine import runner

    seen = {}
    real_run = runner.run

    def spy(rules, collection, options, cache=None):
        seen["options"] = options
        return real_run(rules, collection, options, cache)

    monkeypatch.setattr(runner, "run", spy)
    write(project / "conf" / ".topolint.toml", 'topology = "../topo/numa.xml"\nextra-variables = ["NCCL_MY_PLUGIN"]\n')
    run_cli("check", "../topo", cwd=project / "conf")
    assert seen["options"].extra_variables == ("NCCL_MY_PLUGIN",)
    loaded = discover(None, False, cwd=project / "conf")
    assert loaded.resolve(loaded.config.topology) == (project / "topo" / "numa.xml").resolve()


# --- errors: exit 2, naming the key and the file ------------------------------------------------------

@pytest.mark.parametrize("text, needle", [
    ('selec = ["NUMA001"]\n', "unknown key `selec`"),
    ('fail-level = "fatal"\n', "`fail-level`"),
    ('preview = "yes"\n', "`preview`"),
    ('nccl-version = "two"\n', "`nccl-version`"),
    ('[per-file-ignores]\n"*.xml" = "TOPO005"\n', "`per-file-ignores.*.xml`"),
    ('select = ["NOPE999"]\n', "`select`: unknown rule selector 'NOPE999'"),
    ('[per-file-ignores]\n"*.xml" = ["NOPE"]\n', "`per-file-ignores.*.xml`: unknown rule selector"),
    ('[severity]\nNOPE001 = "info"\n', "`severity.NOPE001`: no rule with code"),
    ('[severity]\nNUMA001 = "fatal"\n', "`severity.NUMA001`"),
    ('[rules.NUMA001]\nthreshold = 3\n', "`rules.NUMA001.threshold`: unknown parameter"),
    ('rule-dirs = ["missing"]\n', "`rule-dirs`: missing: not a directory"),
    ('select = [\n', "not valid TOML"),
])
def test_bad_config_is_a_usage_error(project, text, needle):
    path = write(project / ".topolint.toml", text)
    result = run_cli("check", "topo", cwd=project)
    assert result.exit_code == 2, result.stdout
    assert str(path) in result.stderr and needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_bad_rule_parameter_value(project):
    shutil.copytree(FIXTURES / "site-rules", project / "site")
    write(project / ".topolint.toml", 'rule-dirs = ["site"]\n[rules.SITE001]\nmin-gbps = -5\n')
    result = run_cli("check", "topo", cwd=project)
    assert result.exit_code == 2 and "`rules.SITE001.min-gbps`: Input should be greater than 0" in result.stderr


def test_pyproject_errors_name_the_tool_table(project):
    path = write(project / "pyproject.toml", '[tool.topolint]\nbogus = 1\n')
    with pytest.raises(ConfigError, match=r"unknown key `tool\.topolint\.bogus`"):
        load_config(path)


# --- schema -----------------------------------------------------------------------------------------

def test_schema_in_docs_is_current():
    assert SCHEMA.read_text(encoding="utf-8") == config_module.schema_text(), \
        "docs/config.schema.json is stale: run `python -m topolint.config > docs/config.schema.json`"


def test_schema_accepts_a_full_config_and_rejects_bad_keys():
    jsonschema = pytest.importorskip("jsonschema")
    import tomllib

    example = tomllib.loads("""
select = ["NUMA", "TOPO"]
extend-select = ["NUMA003"]
ignore = ["TL004"]
preview = false
exclude = [".git", "scratch"]
extend-exclude = ["old/*.xml"]
force-exclude = true
fail-level = "error"
nccl-version = "2.27.7"
extra-variables = ["NCCL_MY_PLUGIN_OPT"]
topology = "topo/dgx01.xml"
rule-dirs = ["site-rules"]
require-suppression-reason = true
[per-file-ignores]
"legacy/*.xml" = ["TOPO002"]
[severity]
NET005 = "warning"
[rules.SITE001]
min-gbps = 200
""")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(example)
    Config.model_validate(example)  # the model agrees with its schema
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({**example, "selct": []})
