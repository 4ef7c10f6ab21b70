"""Site rule templates: each has a fixture rule, bad and good inputs, snapshots and docs.

fixtures/site-templates/<template>/rules/*.toml instantiates the template as a site would; every
bad* input must raise that rule and every good* input must not. docs/site-templates.md shows
the same rule files, so the documented examples are the tested ones.
"""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, ROOT, assert_snapshot, run_cli

from topolint.checks import load_check
from topolint.checks._site import TEMPLATES
from topolint.docs import site_templates_markdown

TEMPLATE_FIXTURES = FIXTURES / "site-templates"
CASES = sorted(p for p in TEMPLATE_FIXTURES.glob("*/*") if p.is_file() and p.name.startswith(("bad", "good")))


def _rule_code(template: str) -> str:
    (rule,) = (TEMPLATE_FIXTURES / template / "rules").glob("*.toml")
    return rule.stem


@pytest.mark.parametrize("fixture", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_template_fixture(fixture):
    template = fixture.parent.name
    code = _rule_code(template)
    result = run_cli("check", fixture.relative_to(ROOT), "--rule-dir", (fixture.parent / "rules").relative_to(ROOT),
                     "--select", code, "--format", "concise", "--isolated")
    fired = [line for line in result.stdout.splitlines() if f": {code} [" in line]
    if fixture.name.startswith("bad"):
        assert fired and result.exit_code == 1, result.stdout + result.stderr
    else:
        assert not fired and result.exit_code == 0, result.stdout + result.stderr
    assert_snapshot(f"site-templates/{template}__{fixture.stem}.txt", result.snapshot())


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_has_a_rule_and_bad_and_good_fixtures(template):
    folder = TEMPLATE_FIXTURES / template
    names = [p.name for p in folder.iterdir()]
    assert any(n.startswith("bad") for n in names) and any(n.startswith("good") for n in names), template
    rule_text = (folder / "rules" / f"{_rule_code(template)}.toml").read_text()
    assert f'check = "{template}"' in rule_text


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_documents_its_parameters_and_fields(template):
    module = load_check(template)
    assert module.__doc__.startswith("Template: ")
    assert all(info.description for info in module.Parameters.model_fields.values()), template
    # Every message and fix of its example rule names only fields the template gives.
    rule_text = (TEMPLATE_FIXTURES / template / "rules" / f"{_rule_code(template)}.toml").read_text()
    names = set(re.findall(r"\{(\w+)\}", rule_text.split("[docs]")[0]))
    assert names <= set(module.FIELDS) | set(module.Parameters.model_fields), template


def test_site_templates_page_is_current():
    page = (ROOT / "docs" / "site-templates.md").read_text(encoding="utf-8")
    assert page == site_templates_markdown(ROOT), "docs/site-templates.md is stale: run python -m topolint.docs"
    for template in TEMPLATES:
        assert f"## `{template}`" in page


def test_templates_are_not_used_by_builtin_rules():
    """Templates are for sites; a built-in rule instantiating one would make it a policy of ours."""
    from topolint.engine.rule import load_rules

    assert not {r.check for r in load_rules()} & set(TEMPLATES)


def test_rule_command_renders_a_site_rule():
    folder = (TEMPLATE_FIXTURES / "site_nvlink_min_count" / "rules").relative_to(ROOT)
    result = run_cli("rule", "SITE108", "--rule-dir", folder)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# SITE108 nvlinks-missing\n")
    assert "| SITE108 | nvlinks-missing | site | error | stable |" in result.stdout
    assert "| `min_links` | `18` |" in result.stdout
    assert run_cli("rule", "nvlinks-missing", "--rule-dir", folder).stdout == result.stdout
