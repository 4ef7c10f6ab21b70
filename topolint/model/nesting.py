"""Where a document nests deepest: the position to report when a decoder gives up on nesting
(Python's json recurses once per level and raises RecursionError past about a thousand, with no
position). One linear scan of the text, strings skipped; the lowest layer, so the parsers and the
fleet's inventory reader share it."""

from __future__ import annotations

import re

_JSON_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}\n]')


def json_deepest(text: str) -> tuple[int, int]:
    """(line, column), 1-based, of the first bracket at the document's deepest nesting."""
    depth = deepest = 0
    line, line_start, where = 1, 0, (1, 0)
    for token in _JSON_TOKEN.finditer(text):
        char = token.group()
        if char == "\n":
            line, line_start = line + 1, token.end()
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, (line, token.start() - line_start + 1)
        elif char in "]}":
            depth -= 1
    return where
