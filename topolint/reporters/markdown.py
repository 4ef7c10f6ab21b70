"""Markdown for a GitHub job summary (``>> "$GITHUB_STEP_SUMMARY"``): the counts, the findings
table, and a Mermaid drawing of the node with the most severe finding (GitHub renders it).

GitHub renders HTML and Markdown in a summary, and turns ``@name`` into a mention: every value from
an input is made visible, its ``& < >`` written as entities, ``@`` as ``&#64;``, and the characters
of Markdown's inline syntax (``| \\ ` * _ [ ] ! ~``) escaped with a backslash, so a cell stays one
cell of plain text (a link needs ``[``, emphasis ``*`` or ``_``, code a backtick). The Mermaid block carries only what drawing/mermaid.py writes.
"""

from __future__ import annotations

import re

from topolint.reporters import Report
from topolint.reporters._group import group_line, repeated_note
from topolint.reporters._text import visible

MAX_ROWS = 100  # a job summary is at most 1 MiB; the rest are counted
_MARKDOWN = re.compile(r"([\\`*_\[\]!~|])")


def cell(text) -> str:
    """``text`` as the content of one Markdown table cell, inert."""
    shown = visible(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
    return _MARKDOWN.sub(r"\\\1", shown)


def render_markdown(report: Report) -> str:
    from topolint.engine.node_groups import shown_once

    active = [f for f in report.findings if not f.suppressed]
    rows, repeated = shown_once(active)  # a finding repeated on many nodes: one row, with its nodes
    counts = report.counts()
    total = sum(counts.values())
    out = [f"## topolint: {total} finding{'s' if total != 1 else ''}" if total else "## topolint: all checks passed",
           "", "| error | warning | info | suppressed |", "|---:|---:|---:|---:|",
           f"| {counts['error']} | {counts['warning']} | {counts['info']} | "
           f"{sum(1 for f in report.findings if f.suppressed)} |", ""]
    if report.unreadable:
        out += ["An input could not be read (TL001): the run exits 2.", ""]
    if active:
        out += ["| severity | rule | where | finding |", "|---|---|---|---|"]
        for f in rows[:MAX_ROWS]:
            where = f"{f.path}:{f.line}" + (f":{f.column}" if f.column else "")
            shown = f.message + (f" (group: {group_line(f.group)})" if f.group is not None else "")
            out.append(f"| {f.severity} | {cell(f.code)} | {cell(where)} | {cell(shown)} |")
        if len(rows) > MAX_ROWS:
            out.append(f"\n{len(rows) - MAX_ROWS} more rows are not listed; see the full report.")
        if repeated:
            out.append(f"\n{repeated_note(len(active), repeated)}.")
        out.append("")
    pictures = list(getattr(report, "pictures", []) or [])
    shown = min(pictures, key=lambda p: p.worst, default=None) if pictures else None
    if shown is not None:
        from topolint.drawing.mermaid import render_mermaid

        why = "the node with the most severe finding" if shown.findings else "the node"
        out += [f"### {cell(shown.node)} ({why})", "", f"{cell(shown.diagram.source)}", "", "```mermaid",
                render_mermaid(shown.diagram).rstrip("\n"), "```", ""]
    return "\n".join(out)
