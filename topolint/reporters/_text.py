"""Input-derived text in the human formats (full, concise, github).

Values come from files anyone can write: a newline in a YAML value would start a new log line
(GitHub Actions reads ``::error ...`` at the start of a line as a workflow command) and ESC bytes
would drive the terminal. ``visible`` writes every control character as an escape a reader can
see, and ``safe_lines`` makes sure no line of a report starts with a workflow command. JSON and
SARIF keep exact values (standard JSON escaping): baselines and fixes need them.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, and the Unicode line separators and bidirectional
# overrides that reorder or break what a terminal shows.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}
# Workflow commands (``::error ...``) and the older ``##[error]`` form, after any blanks.
_COMMAND_START = re.compile(r"^(\s*)(::|##\[)", re.M)


def _escape(match: re.Match) -> str:
    char = match.group(0)
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def visible(text: str) -> str:
    """``text`` with control characters, ESC and newlines written as visible escapes."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def safe_lines(text: str) -> str:
    """A rendered report in which no line starts with a workflow command (a path or value that
    begins with ``::`` is shifted by one space)."""
    return _COMMAND_START.sub(r"\1 \2", text)
