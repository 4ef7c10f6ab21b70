"""A TOML file's decoding error with its line, for the configuration and rule loaders: tomllib
says "(at line N, column M)" for most errors but "(at end of document)" for a file cut short, and
a RecursionError with nothing for arrays nested a thousand deep."""

from __future__ import annotations

from pathlib import Path


def toml_error(exc: BaseException, path: Path) -> str:
    """The error's text, with the line it is on when tomllib did not say."""
    text = str(exc) if not isinstance(exc, RecursionError) else "nested too deeply"
    if "(at line " in text:
        return text
    try:
        lines = path.read_bytes().count(b"\n") + 1
    except OSError:
        return text
    if isinstance(exc, RecursionError):
        return f"{text} (at line {_deepest_line(path)})"
    return f"{text.replace('(at end of document)', '').rstrip()} (at end of document, line {lines})"


def _deepest_line(path: Path) -> int:
    from topolint.model.nesting import json_deepest  # TOML arrays and inline tables nest like JSON

    return json_deepest(path.read_text(encoding="utf-8", errors="replace"))[0]
