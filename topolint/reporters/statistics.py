"""`--statistics`: how many active findings each rule reported, most first (like ruff)."""

from __future__ import annotations

import json
from collections import Counter

from topolint.reporters import Report


def statistics_rows(report: Report) -> list[tuple[int, str, str, str]]:
    """(count, code, slug, severity) per rule with active findings; by count, then code."""
    active = [f for f in report.findings if not f.suppressed]
    counts = Counter(f.code for f in active)
    first = {}
    for f in active:
        first.setdefault(f.code, f)
    return sorted(((n, code, first[code].slug, first[code].severity) for code, n in counts.items()),
                  key=lambda row: (-row[0], row[1]))


def render_statistics(report: Report, fmt: str) -> str:
    rows = statistics_rows(report)
    if fmt == "json":
        return json.dumps([{"code": code, "slug": slug, "severity": severity, "count": n}
                           for n, code, slug, severity in rows], indent=2) + "\n"
    width = max((len(str(n)) for n, *_ in rows), default=1)
    code_width = max((len(code) for _, code, *_ in rows), default=1)
    return "".join(f"{n:>{width}}\t{code:<{code_width}}\t[{severity}] {slug}\n" for n, code, slug, severity in rows)
