"""ANSI colour for the human formats (full, concise), when the command line asks for it.

The CLI decides (``wants_color``): ``--color always|never`` wins; otherwise NO_COLOR (any
non-empty value, no-color.org) turns it off, FORCE_COLOR (non-empty) turns it on, and else
it is on only when stdout is a terminal that is not TERM=dumb.
"""

from __future__ import annotations

import os

STYLES = {
    "bold": "1",
    "error": "1;31",
    "warning": "1;33",
    "info": "1;36",
    "code": "1;31",
    "dim": "2",
}


def paint(text: str, style: str, on: bool) -> str:
    if not on or not text:
        return text
    return f"\x1b[{STYLES[style]}m{text}\x1b[0m"


def wants_color(choice: str, stream, environ=os.environ) -> bool:
    if choice in ("always", "never"):
        return choice == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and environ.get("TERM") != "dumb"
