"""Rule documentation rendered from the rule definitions: `topolint rule`, docs/rules/, SARIF help.

One source, several views, so the docs cannot drift from the rules. jinja2 loads only here.
"""

from __future__ import annotations

import json
from pathlib import Path

from topolint.engine.rule import RuleDefinition

DOCS_BASE_URL = "https://github.com/topolint/topolint/blob/main/docs/rules"

RULE_TEMPLATE = """\
# {{ rule.code }} {{ rule.slug }}

{{ rule.summary }}.

| code | slug | category | default severity | status |
|---|---|---|---|---|
| {{ rule.code }} | {{ rule.slug }} | {{ rule.category }} | {{ rule.severity }} | {{ rule.status }} |

## What it does
{{ rule.docs.what | trim }}

## Why is this bad?
{{ rule.docs.why | trim }}

## Example
Bad:
```{{ rule.docs.example_format }}
{{ rule.docs.bad | trim }}
```

Good:
```{{ rule.docs.example_format }}
{{ rule.docs.good | trim }}
```

## Fix
{{ rule.docs.fix | trim }}
{% if rule.parameters %}
## Parameters
| name | value |
|---|---|
{% for name, value in rule.parameters | dictsort %}| `{{ name }}` | `{{ value }}` |
{% endfor %}{% endif %}"""

INDEX_TEMPLATE = """\
# topolint rules

Generated from rules/*.toml by `python -m topolint.docs`; do not edit by hand.

| code | slug | category | severity | status | summary |
|---|---|---|---|---|---|
{% for rule in rules %}| [{{ rule.code }}]({{ rule.code }}.md) | {{ rule.slug }} | {{ rule.category }} | {{ rule.severity }} | {{ rule.status }} | {{ rule.summary }} |
{% endfor %}"""


def _environment():
    import jinja2

    return jinja2.Environment(autoescape=False, keep_trailing_newline=True, trim_blocks=False,
                              undefined=jinja2.StrictUndefined)


def rule_markdown(rule: RuleDefinition) -> str:
    text = _environment().from_string(RULE_TEMPLATE).render(rule=rule)
    return text.rstrip() + "\n"


def rules_index_markdown(rules: list[RuleDefinition]) -> str:
    return _environment().from_string(INDEX_TEMPLATE).render(rules=rules)


def rule_url(rule: RuleDefinition) -> str:
    return f"{DOCS_BASE_URL}/{rule.code}.md"


def generated_pages(rules: list[RuleDefinition]) -> dict[str, str]:
    """File name under docs/rules/ to content."""
    pages = {f"{rule.code}.md": rule_markdown(rule) for rule in rules}
    pages["README.md"] = rules_index_markdown(rules)
    return pages


def write_docs(target: Path) -> list[Path]:
    from topolint.engine.rule import load_rules

    target.mkdir(parents=True, exist_ok=True)
    pages = generated_pages(load_rules())
    for stale in target.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    written = []
    for name, content in pages.items():
        path = target / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


SITE_TEMPLATES_INTRO = """\
# Site rule templates

Generated from topolint/checks/ and fixtures/site-templates/ by `python -m topolint.docs`; do
not edit by hand.

A site rule is a rule TOML in a folder of your own, loaded with `--rule-dir DIR` (or
`rule-dirs = ["DIR"]` in the configuration): the same format as rules/*.toml, with a code of
your own (`SITE101`), `check` naming one of the templates below and your values in
`[parameters]`. Messages and fixes are templates too: `{name}` is a parameter or one of the
fields the check gives. Site rules are validated when they load: a missing table, an unknown
key, an unknown check or a parameter that does not fit is a usage error (exit 2) naming the file
and the key. `topolint rule SITE101 --rule-dir DIR` shows the rule as documented. Each example
below is a fixture the tests run, with the bad and good inputs beside it.
"""


def _type_name(annotation) -> str:
    text = getattr(annotation, "__name__", None) if not getattr(annotation, "__args__", None) else None
    return text or str(annotation).replace("typing.", "")


def _template_section(name: str, root: Path) -> str:
    import importlib

    module = importlib.import_module(f"topolint.checks.{name}")
    summary = " ".join(module.__doc__.split()).removeprefix("Template: ")
    lines = [f"## `{name}`", "", summary[:1].upper() + summary[1:], "",
             f"Needs: {', '.join(module.NEEDS)} input. Fields for messages and fixes, besides the parameters: "
             + ", ".join(f"`{{{f}}}`" for f in module.FIELDS) + ".", "",
             "| parameter | type | default | meaning |", "|---|---|---|---|"]
    for field, info in module.Parameters.model_fields.items():
        default = "required" if info.is_required() else f"`{json.dumps(info.get_default())}`"
        lines.append(f"| `{field}` | `{_type_name(info.annotation)}` | {default} | {info.description} |")
    for rule in sorted((root / "fixtures" / "site-templates" / name / "rules").glob("*.toml")):
        where = rule.relative_to(root).as_posix()
        lines += ["", f"Example: `{where}`", "", f"<!-- snippet: same-as={where} -->", "```toml",
                  rule.read_text(encoding="utf-8").rstrip(), "```"]
    return "\n".join(lines) + "\n"


def site_templates_markdown(root: Path | None = None) -> str:
    """docs/site-templates.md: every template with its parameters and a fixture rule using it."""
    from topolint.checks._site import TEMPLATES

    root = root or Path(__file__).resolve().parent.parent
    return SITE_TEMPLATES_INTRO + "".join("\n" + _template_section(name, root) for name in TEMPLATES)


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    for page in write_docs(root / "docs" / "rules"):
        print(page.relative_to(root))
    (root / "docs" / "site-templates.md").write_text(site_templates_markdown(root), encoding="utf-8")
    print("docs/site-templates.md")
