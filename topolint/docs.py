"""Rule documentation rendered from the rule definitions: `topolint rule`, docs/rules/, SARIF help.

One source, several views, so the docs cannot drift from the rules. jinja2 loads only here.
"""

from __future__ import annotations

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


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    for page in write_docs(root / "docs" / "rules"):
        print(page.relative_to(root))
