"""One line per finding: path:line:col: CODE [severity] message (``CODE [*]``: --fix fixes it)."""

from __future__ import annotations

from topolint.reporters import Report, fixable, summary_line
from topolint.reporters._group import group_suffix
from topolint.reporters._text import safe_lines, visible
from topolint.reporters.color import paint


def finding_line(f, color: bool = False, unsafe: bool = False) -> str:
    column = f":{f.column}" if f.column else ""
    where = paint(f"{visible(f.path)}:{f.line}{column}:", "bold", color)
    severity = paint(f"[{f.severity}]", f.severity if f.severity in ("error", "warning", "info") else "bold", color)
    code = paint(f.code, 'code', color) + (" " + paint("[*]", "info", color) if fixable(f, unsafe) else "")
    group = group_suffix(f.group) if f.group is not None else ""
    return f"{where} {code} {severity} {visible(f.message + group)}"


def render_concise(report: Report) -> str:
    from topolint.engine.node_groups import shown_once

    lines = [finding_line(f, report.color, report.unsafe_fixes) for f in shown_once(report.findings)[0]
             if not f.suppressed]
    summary = summary_line(report)
    if summary:
        lines.append(summary)
    return safe_lines("".join(line + "\n" for line in lines))
