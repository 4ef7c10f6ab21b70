"""`topolint rules` and `topolint rule CODE`: list the rules, explain one."""

from __future__ import annotations

import sys
from pathlib import Path

from topolint.commands import EXIT_CLEAN, UsageError


def load_rule_set(dirs: list[Path]) -> list:
    """Built-in rules plus the site rules in ``dirs``; UsageError names a folder or file that cannot be used."""
    from topolint.engine.rule import load_rules

    for directory in dirs:
        if not directory.is_dir():
            raise UsageError(f"--rule-dir {directory}: not a directory")
    try:
        return load_rules(dirs)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # a malformed site rule file (TOML syntax)
        raise UsageError(f"cannot load rule definitions: {exc}") from None


def listed_rules(rule_dirs: list[Path]) -> list:
    """Built-in rules plus site rules from ``rule_dirs`` and the discovered config's rule-dirs."""
    from topolint.config import ConfigError, discover

    try:
        loaded = discover(None, False)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return load_rule_set([*rule_dirs, *(loaded.resolve(folder) for folder in loaded.config.rule_dirs)])


def find_rule(rules: list, wanted: str):
    """The rule whose code or slug is ``wanted``; UsageError when there is none."""
    wanted = wanted.strip()
    for rule in rules:
        if rule.code == wanted.upper() or rule.slug == wanted.lower():
            return rule
    raise UsageError(f"unknown rule {wanted!r}; `topolint rules` lists them")


def rules_text(rules: list, fmt: str) -> str:
    if fmt == "json":
        import json

        rows = [
            {"code": r.code, "slug": r.slug, "category": r.category, "severity": r.severity,
             "status": r.status, "summary": r.summary, "check": r.check}
            for r in rules
        ]
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "markdown":
        from topolint.docs import rules_index_markdown

        return rules_index_markdown(rules)
    lines = []
    for r in rules:
        preview = " (preview)" if r.is_preview else ""
        lines.append(f"{r.code:<8} {r.slug:<32} {r.severity:<8} {r.summary}{preview}\n")
    return "".join(lines)


def rules_cli(args) -> int:
    sys.stdout.write(rules_text(listed_rules(args.rule_dir), args.format))
    return EXIT_CLEAN


def rule_cli(args) -> int:
    from topolint.docs import rule_markdown

    sys.stdout.write(rule_markdown(find_rule(listed_rules(args.rule_dir), args.code)))
    return EXIT_CLEAN
