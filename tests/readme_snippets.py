"""Code blocks of README.md and docs/*.md, by section, so tests can run the snippets verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def blocks(section: str, lang: str, document: str = "README.md") -> list[str]:
    """The ``lang`` code blocks under the heading ``section`` (up to the next heading of its level)."""
    lines = (ROOT / document).read_text(encoding="utf-8").splitlines(keepends=True)
    found, level, fenced, body = False, 0, False, []
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"(#+) (.*)\n", line) if not fenced else None
        if heading and found and len(heading.group(1)) <= level:
            break
        if heading and heading.group(2) == section:
            found, level = True, len(heading.group(1))
        elif found:
            body.append(line)
    assert found, f"{document} has no section {section!r}"
    return re.findall(rf"^```{lang}\n(.*?)^```", "".join(body), re.M | re.S)
