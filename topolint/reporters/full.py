"""The default human format: each finding with its source line, evidence and fix."""

from __future__ import annotations

from topolint.reporters import Report, summary_line
from topolint.reporters._group import group_line
from topolint.reporters._text import safe_lines, visible
from topolint.reporters.concise import finding_line


def _frame(report: Report, path: str, line: int, column: int) -> list[str]:
    source = report.sources.get(path)
    if source is None:
        return []
    raw = source.line_text(line).rstrip()
    if not raw:
        return []
    text = visible(raw)
    gutter = " " * len(str(line))
    lines = [f"{gutter} |", f"{line} | {text}"]
    if column:
        lines.append(f"{gutter} | {' ' * len(visible(raw[:column - 1]))}^")
    return lines


def render_full(report: Report) -> str:
    from topolint.engine.node_groups import shown_once

    out: list[str] = []
    for f in shown_once(report.findings)[0]:  # a finding repeated on many nodes: once, with its nodes
        if f.suppressed:
            continue
        out.append(finding_line(f, report.color, report.unsafe_fixes))
        out.extend("  " + line for line in _frame(report, f.path, f.line, f.column))
        out.append(f"  = entity: {visible(f.entity)}")
        if f.group is not None:
            out.append(f"  = group: {visible(group_line(f.group))}")
        for related in f.related:
            out.append(visible(f"  = related: {related.location.path}:{related.location.line}: {related.message}"
                               f" ({related.entity})"))
        for item in f.evidence:
            out.append(f"  = evidence: {visible(item)}")
        out.append(f"  = fix: {visible(f.fix)}")
        out.append("")
    summary = summary_line(report)
    if summary:
        out.append(summary)
    elif out:
        out.pop()  # --quiet: no blank line after the last finding
    return safe_lines("".join(line + "\n" for line in out))
