"""`topolint rules` and `topolint rule CODE`: list the rules, explain one; `topolint rules
--variables`: the environment variables topolint knows (what ENV001 accepts)."""

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
    if getattr(args, "variables", False):
        sys.stdout.write(variables_text(args.format))
        return EXIT_CLEAN
    sys.stdout.write(rules_text(listed_rules(args.rule_dir), args.format))
    return EXIT_CLEAN


def known_variables() -> list[dict]:
    """Every variable name ENV001 accepts, sorted: the catalog (NCCL, PyTorch, plugins) with the
    releases that read each (data/nccl_versions/env_reads.tsv, NCCL's sources per release tag; the
    catalog's first and last version where the table has no row), then the prefixes other
    software reads and the configuration's extra-variables."""
    from topolint.config import ConfigError, discover
    from topolint.model.nccl_env import catalog
    from topolint.model.nccl_reads import table

    reads = table()
    rows = []
    for name, entry in sorted(catalog()["variables"].items()):
        ranges = reads.get(name, ())
        if ranges:
            versions = ", ".join(r.span for r in ranges)
            source = f"{ranges[0].source} at {ranges[0].tag.split(' ')[0]}"
        elif entry.get("since"):
            versions = f"{entry['since']}-{entry['last_seen']}" if entry.get("last_seen") else f"{entry['since']}+"
            source = ""
        else:
            versions, source = "-", ""
        rows.append({"name": name, "reader": entry.get("reader", "nccl"), "versions": versions,
                     "status": entry.get("status_text") or entry.get("status") or "current",
                     "summary": entry.get("summary", ""), "source": source})
    for item in catalog()["other_prefixes"]:
        rows.append({"name": item["prefix"] + "*", "reader": item["reader"], "versions": "-", "status": "current",
                     "summary": f"every name starting {item['prefix']}", "source": ""})
    try:
        loaded = discover(None, False)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    for name in loaded.config.extra_variables:
        rows.append({"name": name, "reader": f"extra-variables in {loaded.path}", "versions": "-",
                     "status": "configured", "summary": "", "source": ""})
    return rows


def variables_text(fmt: str) -> str:
    rows = known_variables()
    if fmt == "json":
        import json

        return json.dumps(rows, indent=2) + "\n"
    if fmt == "markdown":
        lines = ["| variable | NCCL releases that read it | status | reader |\n", "|---|---|---|---|\n"]
        lines += [f"| `{r['name']}` | {r['versions']} | {r['status']} | {r['reader']} |\n" for r in rows]
        return "".join(lines)
    # name, the NCCL releases that read it, its status, who reads it (the widest column last)
    return "".join(f"{r['name']:<40} {r['versions']:<16} {r['status']:<24} {r['reader']}\n".replace("  \n", "\n")
                   for r in rows)


def rule_cli(args) -> int:
    from topolint.docs import rule_markdown

    sys.stdout.write(rule_markdown(find_rule(listed_rules(args.rule_dir), args.code)))
    return EXIT_CLEAN
