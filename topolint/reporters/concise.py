"""One line per finding: path:line:col: CODE [severity] message."""

from __future__ import annotations

from topolint.reporters import Report, summary_line


def finding_line(f) -> str:
    column = f":{f.column}" if f.column else ""
    return f"{f.path}:{f.line}{column}: {f.code} [{f.severity}] {f.message}"


def render_concise(report: Report) -> str:
    lines = [finding_line(f) for f in report.findings if not f.suppressed]
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"
