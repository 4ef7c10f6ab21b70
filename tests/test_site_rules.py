"""Site rules: the same definition format as the built-in rules, loaded with --rule-dir."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_cli

from topolint.engine.rule import load_rules


def _write(tmp_path, speed):
    path = tmp_path / "dump.xml"
    path.write_text(
        '<system version="1">\n  <cpu numaid="0" host_hash="0x1" affinity="ff">\n'
        f'    <nic><net name="mlx5_0" dev="0" speed="{speed}" port="1" gdr="1"/></nic>\n'
        "  </cpu>\n</system>\n"
    )
    return path


def test_site_rule_validates_like_builtin_rules():
    rules = load_rules([FIXTURES / "site-rules"], validate=True)
    assert "SITE001" in {r.code for r in rules}


def test_site_rule_fires_with_its_parameter(tmp_path):
    result = run_cli("check", _write(tmp_path, 200000), "--rule-dir", FIXTURES / "site-rules",
                     "--select", "SITE001", "--format", "json")
    assert result.exit_code == 1
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["message"] == "mlx5_0 runs at 200 Gb/s, below this fleet's 400 Gb/s"
    assert finding["line"] == 3 and finding["entity"] == "dump/nic/mlx5_0:1"


def test_site_rule_quiet_at_the_required_rate(tmp_path):
    result = run_cli("check", _write(tmp_path, 400000), "--rule-dir", FIXTURES / "site-rules",
                     "--select", "SITE001", "--format", "concise")
    assert result.exit_code == 0, result.stdout


def test_site_rule_cannot_redefine_a_builtin_code(tmp_path):
    (tmp_path / "NUMA001.toml").write_text((FIXTURES / "site-rules" / "SITE001.toml").read_text()
                                           .replace("SITE001", "NUMA001"))
    result = run_cli("check", _write(tmp_path, 200000), "--rule-dir", tmp_path)
    assert result.exit_code == 2 and "already defined" in result.stderr


def test_site_rule_with_bad_parameter_is_a_usage_error(tmp_path):
    text = (FIXTURES / "site-rules" / "SITE001.toml").read_text().replace("min_gbps = 400", "min_gbps = -1")
    (tmp_path / "SITE001.toml").write_text(text)
    result = run_cli("check", _write(tmp_path, 200000), "--rule-dir", tmp_path)
    assert result.exit_code == 2 and "SITE001.toml" in result.stderr and "Traceback" not in result.stderr


def test_site_rule_naming_an_unknown_check_is_a_usage_error(tmp_path):
    text = (FIXTURES / "site-rules" / "SITE001.toml").read_text().replace("net_speed_minimum", "no_such_check")
    (tmp_path / "SITE001.toml").write_text(text)
    result = run_cli("check", _write(tmp_path, 200000), "--rule-dir", tmp_path)
    assert result.exit_code == 2 and "no_such_check" in result.stderr


def test_site_rule_without_its_value_takes_the_profiles(tmp_path):
    """A template parameter a site rule leaves unset comes from the node's profile (docs/profiles.md):
    without one the rule does not run and says why; with one its value judges the node."""
    text = (FIXTURES / "site-rules" / "SITE001.toml").read_text().replace("[parameters]\nmin_gbps = 400\n", "")
    (tmp_path / "SITE001.toml").write_text(text)
    dump = _write(tmp_path, 50000)
    alone = run_cli("check", dump, "--rule-dir", tmp_path, "--select", "SITE001", "-v", "--no-cache")
    assert alone.exit_code == 0 and "SITE001 not run on node" in alone.stderr and "no profile" in alone.stderr
    profiled = run_cli("check", dump, "--rule-dir", tmp_path, "--select", "SITE001", "--profile", "p5-48xlarge",
                       "--no-cache", "--format", "concise")
    assert profiled.exit_code == 1 and "SITE001" in profiled.stdout and "100" in profiled.stdout, profiled.stdout


def test_rules_listing_includes_site_rules_from_the_config(tmp_path):
    (tmp_path / ".topolint.toml").write_text(f'rule-dirs = ["{(FIXTURES / "site-rules").as_posix()}"]\n')
    listing = run_cli("rules", cwd=tmp_path)
    assert listing.exit_code == 0 and "SITE001" in listing.stdout
    explained = run_cli("rule", "fabric-below-ndr", cwd=tmp_path)
    assert explained.exit_code == 0 and explained.stdout.startswith("# SITE001 fabric-below-ndr")


# --- validation when site rules load ----------------------------------------------------------

def _site_rule(tmp_path, edit) -> str:
    text = edit((FIXTURES / "site-rules" / "SITE001.toml").read_text())
    (tmp_path / "SITE002.toml").write_text(text.replace("SITE001", "SITE002"))
    return str(tmp_path)


def _without_table(text: str, table: str) -> str:
    head, _, rest = text.partition(f"[{table}]\n")
    return head + rest.split("\n\n", 1)[1]


@pytest.mark.parametrize("edit, key", [
    (lambda t: _without_table(t, "fixes"), "fixes: Field required"),
    (lambda t: _without_table(t, "messages"), "messages: Field required"),
    (lambda t: t.replace('tags = ["site", "network"]', 'tags = ["site"]\nowner = "infra"'), "owner: Extra inputs"),
    (lambda t: t.replace("[fixes]\ndefault", "[fixes]\nother"), "fixes.default: missing"),
    (lambda t: t.replace('severity = "error"', 'severity = "fatal"'), "severity:"),
    (lambda t: t.replace("net_speed_minimum", "no_such_check"), "check: no check named 'no_such_check'"),
    (lambda t: t.replace("min_gbps = 400", "min_gbps = 400\nmax_gbps = 800"), "parameters.max_gbps: Extra inputs"),
    (lambda t: t.replace("min_gbps = 400", "min_gbps = -1"), "parameters.min_gbps: Input should be greater than 0"),
    (lambda t: t.replace('code = "SITE001"', 'code = "SITE001'), "not valid TOML"),
])
@pytest.mark.parametrize("command", ["check", "rule", "rules"])
def test_bad_site_rule_is_a_usage_error_naming_file_and_key(tmp_path, edit, key, command):
    folder = _site_rule(tmp_path, edit)
    args = {"check": ["check", _write(tmp_path, 200000)], "rule": ["rule", "SITE002"], "rules": ["rules"]}[command]
    result = run_cli(*args, "--rule-dir", folder)
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert str(tmp_path / "SITE002.toml") in result.stderr and key in result.stderr, result.stderr


def test_valid_site_rule_lists_and_renders(tmp_path):
    folder = _site_rule(tmp_path, lambda t: t)
    listed = run_cli("rules", "--rule-dir", folder)
    assert listed.exit_code == 0 and any(line.startswith("SITE002 ") for line in listed.stdout.splitlines())
    shown = run_cli("rule", "SITE002", "--rule-dir", folder)
    assert shown.exit_code == 0 and "| `min_gbps` | `400` |" in shown.stdout
