"""GitHub Actions workflow commands: one annotation per finding, within GitHub's limits.

GitHub keeps at most 10 annotations per level per step (and 50 per job) and drops the rest
silently, so errors go first and a final notice says how many were not shown.
"""

from __future__ import annotations

from topolint.engine.finding import Finding
from topolint.reporters import Report
from topolint.reporters._group import group_line
from topolint.reporters._text import visible

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}
PER_LEVEL = 10  # GitHub's per-step limit for each of error, warning and notice


def escape_data(text: str) -> str:
    # Same rules as actions/toolkit escapeData; % first so escapes are not escaped again. Other
    # control characters (ESC) are made visible first: the log would pass them to the viewer.
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    # Properties are comma-separated key=value pairs ended by "::", hence ":" and "," too.
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    props = [f"file={escape_property(f.path)}", f"line={max(f.line, 1)}"]
    if f.column > 0:
        props.append(f"col={f.column}")
    props.append(f"title={escape_property(f'{f.code} {f.slug}')}")
    message = f.message if f.group is None else f"{f.message} (group: {group_line(f.group)})"
    return f"::{COMMANDS.get(f.severity, 'warning')} {','.join(props)}::{escape_data(message)}"


def render_github(report: Report) -> str:
    active = [f for f in report.findings if not f.suppressed]
    by_level = {level: [f for f in active if f.severity == level] for level in ("error", "warning", "info")}
    other = [f for f in active if f.severity not in by_level]  # unknown severities annotate as warnings
    by_level["warning"] += other
    shown = {level: items[:PER_LEVEL] for level, items in by_level.items()}
    hidden = len(active) - sum(len(items) for items in shown.values())
    if hidden and len(shown["info"]) == PER_LEVEL:
        # The overflow line is itself a notice: keep a notice slot free so GitHub shows it.
        shown["info"] = shown["info"][:-1]
        hidden += 1
    lines = [annotation(f) for level in ("error", "warning", "info") for f in shown[level]]
    if hidden:
        noun = "finding" if hidden == 1 else "findings"
        lines.append(f"::notice::topolint: {hidden} more {noun} not annotated (GitHub shows at most "
                     f"{PER_LEVEL} per level per step); see the full report")
    return "".join(line + "\n" for line in lines)
