"""Command-line conventions: default path, subcommand usage, --quiet, --statistics, --show-settings,
--show-files, --output-format, --show-level, colour and shell completion."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import FIXTURES, ROOT, run_cli

DGX = "fixtures/samples/dgx-like-2socket-dump.xml"  # four NUMA001 warnings
HEALTHY = "fixtures/samples/healthy-8gpu-dump.xml"
ERROR_DUMP = "fixtures/rules/TOPO001/bad_no_version.xml"


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)


def test_unknown_flag_after_check_prints_the_check_usage():
    result = run_cli("check", DGX, "--no-such-flag")
    assert result.exit_code == 2
    assert result.stderr.startswith("usage: topolint check ")
    assert result.stderr.rstrip().endswith("topolint check: error: unrecognized arguments: --no-such-flag")


def test_unknown_flag_after_rules_prints_the_rules_usage():
    result = run_cli("rules", "--bogus")
    assert result.exit_code == 2 and result.stderr.startswith("usage: topolint rules ")


def test_output_format_is_an_alias_of_format():
    assert run_cli("check", DGX, "--output-format", "json").stdout == run_cli("check", DGX, "--format", "json").stdout


def test_quiet_prints_findings_without_the_summary():
    noisy = run_cli("check", DGX, "--format", "concise")
    quiet = run_cli("check", DGX, "--format", "concise", "-q")
    assert quiet.exit_code == noisy.exit_code == 1
    assert quiet.stdout.splitlines() == noisy.stdout.splitlines()[:-1] and len(quiet.stdout.splitlines()) == 4
    assert run_cli("check", HEALTHY, "--quiet").stdout == ""
    full = run_cli("check", DGX, "--quiet").stdout
    assert "Found" not in full and full.endswith("\n") and not full.endswith("\n\n")


def test_quiet_drops_the_baseline_note(tmp_path):
    baseline = tmp_path / "baseline.json"
    run_cli("check", DGX, "--baseline", baseline, "--update-baseline")
    assert "baselined" in run_cli("check", DGX, "--baseline", baseline).stderr
    assert run_cli("check", DGX, "--baseline", baseline, "-q").stderr == ""


def test_show_level_hides_lower_severities_but_not_from_the_exit_code():
    errors_only = run_cli("check", DGX, ERROR_DUMP, "--format", "concise", "--show-level", "error")
    everything = run_cli("check", DGX, ERROR_DUMP, "--format", "concise")
    shown = errors_only.stdout.splitlines()
    assert all("[error]" in line for line in shown[:-1]) and len(shown) > 1
    warnings = sum("[warning]" in line for line in everything.stdout.splitlines())
    assert warnings >= 4 and f"{warnings} below error not shown (--show-level)" in shown[-1]
    assert errors_only.exit_code == everything.exit_code == 1


def test_fail_level_error_with_show_level_error_reports_only_errors():
    result = run_cli("check", DGX, "--fail-level", "error", "--show-level", "error")
    assert result.exit_code == 0
    assert result.stdout == "No findings at or above error; 4 below error not shown (--show-level).\n"


def test_show_level_applies_to_json_too():
    _, document = 0, json.loads(run_cli("check", DGX, "--show-level", "error", "--format", "json").stdout)
    assert document["findings"] == []


def test_statistics_counts_findings_per_rule():
    result = run_cli("check", DGX, ERROR_DUMP, "--statistics")
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert ["4", "NUMA001", "[warning] gpu-nic-cross-socket"] in rows
    counts = [int(row[0]) for row in rows]
    assert counts == sorted(counts, reverse=True) and result.exit_code == 1
    as_json = json.loads(run_cli("check", DGX, "--statistics", "--format", "json").stdout)
    assert as_json == [{"code": "NUMA001", "slug": "gpu-nic-cross-socket", "severity": "warning", "count": 4}]


def test_statistics_refuses_sarif():
    result = run_cli("check", DGX, "--statistics", "--format", "sarif")
    assert result.exit_code == 2 and "--statistics" in result.stderr


def test_show_settings_resolves_the_configuration(tmp_path):
    (tmp_path / ".topolint.toml").write_text('select = ["numa"]\nignore = ["NUMA002"]\nfail-level = "error"\n'
                                             'nccl-version = "2.21.5"\n[severity]\nNUMA001 = "error"\n')
    result = run_cli("check", "--show-settings", cwd=tmp_path)
    settings = dict(line.split(" = ", 1) for line in result.stdout.splitlines())
    assert result.exit_code == 0
    assert json.loads(settings["configuration"]) == str(tmp_path.resolve() / ".topolint.toml")
    assert "NUMA001" in json.loads(settings["select"]) and "NUMA002" not in json.loads(settings["select"])
    assert all(code.startswith("NUMA") for code in json.loads(settings["select"]))
    assert json.loads(settings["fail-level"]) == "error" and json.loads(settings["nccl-version"]) == "2.21.5"
    assert json.loads(settings["severity"]) == {"NUMA001": "error"}
    assert json.loads(settings["paths"]) == ["."]


def test_show_settings_names_the_bad_key(tmp_path):
    (tmp_path / ".topolint.toml").write_text('selekt = ["numa"]\n')
    result = run_cli("check", "--show-settings", cwd=tmp_path)
    assert result.exit_code == 2 and "selekt" in result.stderr


def test_show_files_lists_what_would_be_checked(tmp_path):
    shutil.copy(ROOT / DGX, tmp_path / "topo.xml")
    (tmp_path / "job.sbatch").write_text("#!/bin/bash\nexport NCCL_IB_HCA=mlx5_0\nsrun python train.py\n")
    (tmp_path / "notes.txt").write_text("nothing for topolint\n")
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "old.xml").write_text("<system/>\n")
    result = run_cli("check", "--isolated", "--show-files", "--extend-exclude", "skipped", cwd=tmp_path)
    assert result.exit_code == 0
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[0] for row in rows] == ["job.sbatch", "topo.xml"]
    assert rows[1][1] == "nccl-topo-xml" and rows[0][1] != "?"
    (tmp_path / "broken.xml").write_text('<system version="1">\n  <cpu numaid="0"\n')
    named = run_cli("check", "--isolated", "--show-files", "broken.xml", "notes.txt", cwd=tmp_path)
    assert named.stdout.splitlines() == ["broken.xml\tunreadable (TL001)\tbroken", "notes.txt\tunrecognised (TL002)\tbroken"]


def _colored(result) -> bool:
    return "\x1b[" in result.stdout


def test_colour_off_when_not_a_terminal():
    assert not _colored(run_cli("check", DGX, "--format", "concise"))


def test_force_color_turns_colour_on(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    result = run_cli("check", DGX, "--format", "concise")
    assert "\x1b[1;33m[warning]\x1b[0m" in result.stdout
    # Colour is only decoration: without the escapes the text is unchanged.
    import re

    assert re.sub(r"\x1b\[[0-9;]*m", "", result.stdout) == run_cli("check", DGX, "--format", "concise",
                                                                     "--color", "never").stdout


def test_no_color_wins_over_force_color(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not _colored(run_cli("check", DGX))
    assert _colored(run_cli("check", DGX, "--color", "always"))


def test_colour_never_in_files_or_machine_formats(monkeypatch, tmp_path):
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = tmp_path / "report.txt"
    run_cli("check", DGX, "--format", "full", "--format", "json", "-o", out, "-o", "-")
    assert "\x1b[" not in out.read_text() and "\x1b[" not in run_cli("check", DGX, "--format", "json").stdout


def test_wants_color_on_a_terminal():
    from topolint.reporters.color import wants_color

    class Tty:
        def isatty(self):
            return True

    assert wants_color("auto", Tty(), environ={}) is True
    assert wants_color("auto", Tty(), environ={"TERM": "dumb"}) is False
    assert wants_color("auto", Tty(), environ={"NO_COLOR": "1"}) is False
    assert wants_color("auto", Tty(), environ={"NO_COLOR": ""}) is True  # empty NO_COLOR is unset


# --- shell completion ---------------------------------------------------------------------------

def _bash_complete(words: list[str]) -> list[str]:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script = run_cli("completion", "bash").stdout
    driver = (f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
              "_topolint; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "-c", driver], capture_output=True, text=True, cwd=FIXTURES, check=True)
    return done.stdout.split()


def test_bash_completion_of_commands_flags_and_choices():
    assert _bash_complete(["topolint", "ch"]) == ["check"]
    assert {"--select", "--statistics", "--show-level"} <= set(_bash_complete(["topolint", "check", "--s"]))
    assert _bash_complete(["topolint", "check", "--format", "s"]) == ["sarif"]
    assert _bash_complete(["topolint", "completion", "f"]) == ["fish"]
    assert "samples" in _bash_complete(["topolint", "check", "sam"])  # paths complete as files


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_scripts_parse(shell):
    script = run_cli("completion", shell)
    assert script.exit_code == 0 and "topolint" in script.stdout
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    subprocess.run([shell, "-n"], input=script.stdout, text=True, check=True)


# --- --cross-file (the pre-commit hooks' split) -----------------------------------------------

CROSS = ["fixtures/rules/TL003/bad_numa_nvlink", "fixtures/rules/NET002/bad.env", DGX,
         "--topology", "fixtures/rules/NET002/topology"]


def _codes(*args: str) -> set[str]:
    result = run_cli("check", *CROSS, *args, "--format", "json")
    return {f["code"] for f in json.loads(result.stdout)["findings"]}


def test_cross_file_only_and_exclude_split_the_findings():
    everything = _codes()
    only, excluded = _codes("--cross-file", "only"), _codes("--cross-file", "exclude")
    assert {"TL003", "NET002"} <= only  # a matrix against a dump; settings against a topology
    assert "NUMA001" in excluded and "NUMA001" not in only  # one dump alone
    assert not only & excluded and only | excluded == everything


def test_cross_file_refuses_update_baseline(tmp_path):
    result = run_cli("check", DGX, "--cross-file", "only", "--baseline", tmp_path / "b.json", "--update-baseline")
    assert result.exit_code == 2 and "--cross-file" in result.stderr


def test_cross_file_only_still_explains_an_unreadable_input(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text('<system version="1">\n  <cpu numaid="0"\n')
    result = run_cli("check", broken, "--cross-file", "only", "--format", "concise")
    assert result.exit_code == 2 and "topolint: error:" in result.stderr and "TL001" not in result.stdout
