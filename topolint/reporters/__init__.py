"""Reporters: one module per output format. Each renders a Report to a string."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from topolint.engine.finding import Finding
from topolint.engine.rule import RuleDefinition
from topolint.inputs.source import SourceFile

FORMATS = ("full", "concise", "json", "sarif", "github", "html", "markdown")


@dataclass
class Report:
    findings: list[Finding]
    rules: list[RuleDefinition]  # the enabled rules, sorted by code
    sources: dict[str, SourceFile] = field(default_factory=dict)
    project_root: Path = field(default_factory=Path.cwd)
    nccl_version: str = ""
    unreadable: bool = False  # an input could not be read (TL001), whatever the selection
    internal_errors: list = field(default_factory=list)  # engine.internal.InternalError: bugs, exit 2
    # Display settings of the human formats (full, concise):
    quiet: bool = False  # findings only, no summary line
    color: bool = False  # ANSI colour (reporters/color.py)
    not_shown: int = 0  # findings left out below --show-level
    show_level: str = "info"
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes are marked and counted as fixable too
    # The drawn nodes of the html and markdown formats (drawing/views.py Picture), and how many
    # nodes were left undrawn:
    pictures: list = field(default_factory=list)
    not_drawn: int = 0

    def counts(self) -> dict[str, int]:
        active = [f for f in self.findings if not f.suppressed]
        return {s: sum(1 for f in active if f.severity == s) for s in ("error", "warning", "info")}


def render(fmt: str, report: Report) -> str:
    if fmt == "full":
        from topolint.reporters.full import render_full as renderer
    elif fmt == "concise":
        from topolint.reporters.concise import render_concise as renderer
    elif fmt == "json":
        from topolint.reporters.json_report import render_json as renderer
    elif fmt == "sarif":
        from topolint.reporters.sarif import render_sarif as renderer
    elif fmt == "github":
        from topolint.reporters.github import render_github as renderer
    elif fmt == "html":
        from topolint.reporters.html import render_html as renderer
    elif fmt == "markdown":
        from topolint.reporters.markdown import render_markdown as renderer
    else:
        raise KeyError(fmt)
    return renderer(report)


def fixable(finding: Finding, unsafe: bool = False) -> bool:
    """Whether ``--fix`` (with ``unsafe``: ``--fix --unsafe-fixes``) fixes the finding."""
    fix = finding.autofix
    return fix is not None and (fix.applicability == "safe" or unsafe)


def summary_line(report: Report) -> str:
    """The closing line of the human formats (and, as ruff says it, how many findings the fixes
    would fix); empty with --quiet."""
    if report.quiet:
        return ""
    from topolint.reporters.color import paint

    line = _summary_text(report)
    if report.not_shown:
        hidden = f"{report.not_shown} below {report.show_level} not shown (--show-level)"
        line = f"No findings at or above {report.show_level}; {hidden}." if line.startswith("All checks passed") \
            else f"{line[:-1]}; {hidden}."
    fixes = _fixes_text(report)
    return paint(line, "bold", report.color) + (f"\n{fixes}" if fixes else "")


def _fixes_text(report: Report) -> str:
    """``[*] N fixable with --fix (M more with --unsafe-fixes).``: the findings shown that the fixes
    would fix (the ``[*]`` ones), and those only unsafe fixes would."""
    active = [f for f in report.findings if not f.suppressed and f.autofix is not None]
    safe = sum(1 for f in active if fixable(f))
    unsafe = len(active) - safe
    if report.unsafe_fixes:
        return f"[*] {len(active)} fixable with --fix --unsafe-fixes." if active else ""
    if safe and unsafe:
        return f"[*] {safe} fixable with --fix ({unsafe} more with --unsafe-fixes)."
    if safe:
        return f"[*] {safe} fixable with --fix."
    return f"No fixes available with --fix ({unsafe} with --unsafe-fixes)." if unsafe else ""


def _summary_text(report: Report) -> str:
    counts = report.counts()
    total = sum(counts.values())
    in_source = sum(1 for f in report.findings if f.suppressed and f.suppression != "external")
    baselined = sum(1 for f in report.findings if f.suppressed and f.suppression == "external")
    hidden = ", ".join(text for n, text in ((in_source, f"{in_source} suppressed"), (baselined, f"{baselined} baselined"))
                       if n)
    if not total:
        return f"All checks passed ({hidden})." if hidden else "All checks passed."
    noun = "finding" if total == 1 else "findings"
    line = f"Found {total} {noun} ({counts['error']} error, {counts['warning']} warning, {counts['info']} info)"
    from topolint.engine.node_groups import shown_once

    repeated = shown_once(report.findings)[1]
    if repeated:  # the human formats print a finding repeated on several nodes once
        line += f", {total - repeated} printed: the same finding on several nodes is printed once, with its nodes"
    return f"{line}; {hidden}." if hidden else f"{line}."
