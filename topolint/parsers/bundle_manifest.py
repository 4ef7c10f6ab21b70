"""The manifest of a node bundle (``topolint-bundle.json``, docs/bundles.md).

JSON numbers go through model/numbers.py (``parse_int``/``parse_float`` hooks), so an absurd
value is None, not a huge int; each command keeps the line of its ``"file"`` key.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.host import BundleCommand, BundleManifest
from topolint.model.nesting import json_deepest
from topolint.model.numbers import decimal, decimal_fraction

MANIFEST_NAME = "topolint-bundle.json"
FORMAT_VERSION = 1
STATUSES = ("ok", "failed", "timeout", "missing", "denied", "skipped")
# A bundle file is a plain name inside the bundle folder: no separators, no dot-dot, no hidden file.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
MAX_COMMANDS = 256


def _number(text: str) -> float | None:
    return decimal_fraction(text)


def _load(source: SourceFile) -> Any:
    try:
        return json.loads(source.text, parse_int=decimal, parse_float=_number, parse_constant=lambda _: None)
    except json.JSONDecodeError as exc:
        raise InputError(source.path, exc.lineno, f"malformed bundle manifest: {exc.msg}", exc.colno) from None
    except RecursionError:
        line, column = json_deepest(source.text)
        raise InputError(source.path, line, "malformed bundle manifest: nested too deeply", column) from None


def _file_lines(text: str, names: list[str]) -> list[int]:
    """The line of each command's ``"file": NAME`` key, in order (one forward scan)."""
    lines = text.split("\n")
    found, cursor = [], 0
    for name in names:
        needle = _file_key(name)
        line = cursor
        while line < len(lines) and not ('"file"' in lines[line] and needle.search(lines[line])):
            line += 1
        if line == len(lines):
            line = cursor  # not where collect writes it: keep the previous line
        found.append(line + 1)
        cursor = line
    return found


@lru_cache(maxsize=256)
def _file_key(name: str) -> re.Pattern:
    """The ``"file": NAME`` key of one command (a cluster's manifests name the same files)."""
    return re.compile(r'"file"\s*:\s*' + re.escape(json.dumps(name)))


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _command(entry: Any, line: int, source: SourceFile) -> BundleCommand:
    loc = build(Location, path=source.path, line=line, column=1)
    if not isinstance(entry, dict):
        raise InputError(source.path, line, "malformed bundle manifest: each command must be an object")
    name = _string(entry.get("file"))
    if name is None or not _PLAIN_NAME.fullmatch(name) or ".." in name:
        raise InputError(source.path, line, f"malformed bundle manifest: command file {name!r} is not a plain "
                                            "file name inside the bundle")
    status = entry.get("status")
    if status not in STATUSES:
        raise InputError(source.path, line, f"malformed bundle manifest: status {status!r} of {name} is not one "
                                            f"of {', '.join(STATUSES)}")
    argv = entry.get("argv", [])
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise InputError(source.path, line, f"malformed bundle manifest: argv of {name} must be a list of strings")
    exit_code = entry.get("exit_code")
    seconds = entry.get("seconds")
    return build(BundleCommand, file=name, argv=argv, status=status,
                 exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
                 seconds=seconds if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None,
                 format=_string(entry.get("format")), message=_string(entry.get("message")), loc=loc)


def parse_manifest(source: SourceFile, folder: str) -> BundleManifest:
    data = _load(source)
    if not isinstance(data, dict) or data.get("topolint_bundle") != FORMAT_VERSION:
        raise InputError(source.path, 1, f"malformed bundle manifest: expected an object with "
                                         f"\"topolint_bundle\": {FORMAT_VERSION}")
    commands = data.get("commands", [])
    if not isinstance(commands, list) or len(commands) > MAX_COMMANDS:
        raise InputError(source.path, 1, f"malformed bundle manifest: \"commands\" must be a list of at most "
                                         f"{MAX_COMMANDS} objects")
    names = [c.get("file") if isinstance(c, dict) and isinstance(c.get("file"), str) else "" for c in commands]
    lines = _file_lines(source.text, names)
    tools = data.get("tools", {})
    return build(
        BundleManifest,
        path=source.path,
        folder=folder,
        host=_string(data.get("host")),
        collected_at=_string(data.get("collected_at")),
        topolint_version=_string(data.get("topolint_version")),
        tools={k: v for k, v in tools.items() if isinstance(v, str)} if isinstance(tools, dict) else {},
        commands=[_command(entry, line, source) for entry, line in zip(commands, lines)],
        loc=build(Location, path=source.path, line=1, column=1),
    )
