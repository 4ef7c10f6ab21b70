"""The default human format: each finding with its source line, evidence and fix."""

from __future__ import annotations

from topolint.reporters import Report, summary_line
from topolint.reporters.concise import finding_line


def _frame(report: Report, path: str, line: int, column: int) -> list[str]:
    source = report.sources.get(path)
    if source is None:
        return []
    text = source.line_text(line).rstrip()
    if not text:
        return []
    gutter = " " * len(str(line))
    lines = [f"{gutter} |", f"{line} | {text}"]
    if column:
        lines.append(f"{gutter} | {' ' * (column - 1)}^")
    return lines


def render_full(report: Report) -> str:
    out: list[str] = []
    for f in report.findings:
        if f.suppressed:
            continue
        out.append(finding_line(f, report.color))
        out.extend("  " + line for line in _frame(report, f.path, f.line, f.column))
        out.append(f"  = entity: {f.entity}")
        for related in f.related:
            out.append(f"  = related: {related.location.path}:{related.location.line}: {related.message}"
                       f" ({related.entity})")
        for item in f.evidence:
            out.append(f"  = evidence: {item}")
        out.append(f"  = fix: {f.fix}")
        out.append("")
    summary = summary_line(report)
    if summary:
        out.append(summary)
    elif out:
        out.pop()  # --quiet: no blank line after the last finding
    return "".join(line + "\n" for line in out)
