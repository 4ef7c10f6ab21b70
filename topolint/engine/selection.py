"""Selection and suppression: one pass over the findings after every rule ran."""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.engine.finding import Finding
from topolint.engine.rule import SEVERITY_ORDER, RuleDefinition


class SelectionError(ValueError):
    pass


def resolve(token: str, rules: list[RuleDefinition]) -> tuple[set[str], bool]:
    """Codes a selector names, and whether it names them exactly (code or slug).

    A selector is ALL, a code, a code prefix (NUMA, PCIE0), a category or a slug.
    """
    token = token.strip()
    if not token:
        raise SelectionError("empty rule selector")
    if token.upper() == "ALL":
        return {r.code for r in rules}, False
    exact = {r.code for r in rules if token.upper() == r.code or token.lower() == r.slug}
    if exact:
        return exact, True
    matched = {r.code for r in rules if r.code.startswith(token.upper()) or r.category == token.lower()}
    if not matched:
        raise SelectionError(f"unknown rule selector {token!r}: not a code, prefix, category or slug")
    return matched, False


@dataclass
class Selection:
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    preview: bool = False

    def enabled(self, rules: list[RuleDefinition]) -> set[str]:
        """Default: every stable rule. Preview rules need --preview or their exact code or slug."""
        by_code = {r.code: r for r in rules}
        chosen: set[str] = set()
        explicit: set[str] = set()
        for token in self.select if self.select is not None else ["ALL"]:
            codes, exact = resolve(token, rules)
            chosen |= codes
            explicit |= codes if exact else set()
        for token in self.extend_select:
            codes, exact = resolve(token, rules)
            chosen |= codes
            explicit |= codes if exact else set()
        for token in self.ignore:
            chosen -= resolve(token, rules)[0]
        return {c for c in chosen if self.preview or not by_code[c].is_preview or c in explicit}


def apply(findings: list[Finding], enabled: set[str]) -> list[Finding]:
    """Keep the findings of enabled rules. Suppressed findings stay, marked, for SARIF."""
    return [f for f in findings if f.code in enabled]


def at_or_above(finding: Finding, level: str) -> bool:
    return SEVERITY_ORDER[finding.severity] <= SEVERITY_ORDER[level]
