"""Samples and mutations for the fuzz suite (tests/test_fuzz.py) and the linear-cost tests.

Samples are found by sniffing every file under fixtures/ and the shared corpus the way a folder
walk does, so a parser that lands in ``topolint.parsers.registry.PARSERS`` is fuzzed as soon as
a fixture or corpus file of its format exists. Corpus files are read in place, never copied.
"""

from __future__ import annotations

import codecs
import os
import re
from functools import lru_cache
from pathlib import Path

from topolint.inputs import config_names
from topolint.inputs.sniff import sniff
from topolint.parsers.registry import PARSERS

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIRS = (ROOT / "fixtures", ROOT.parent / "shared" / "corpus")
MAX_SAMPLE_BYTES = 256 * 1024

# Values a copy, a paste or an attacker puts where a number was.
HOSTILE_NUMBERS = ("9" * 5000, "-9999999999999999999999", "inf", "-inf", "nan", "1e999", "0x", "²", "٣", "-1",
                   "0" * 30 + "1", "0xffffffffffffffffffff", "")
MUTATIONS = ("truncate", "flip", "number", "delete_line", "duplicate_line", "tab_space", "crlf", "bom",
             "utf16", "nul")
_NUMBER = re.compile(rb"[0-9]+(?:\.[0-9]+)?")


def format_of(path: str, text: str) -> str | None:
    """The format a folder walk would give this file."""
    return config_names.by_name(path) or config_names.shebang(text) or sniff(text)


@lru_cache(maxsize=1)
def samples() -> dict[str, list[Path]]:
    """Format -> sample files, for every format in the parser table that has one."""
    found: dict[str, list[Path]] = {}
    for top in SAMPLE_DIRS:
        if not top.is_dir():
            continue
        for folder, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                try:
                    if path.stat().st_size > MAX_SAMPLE_BYTES:
                        continue
                    text = path.read_bytes().decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                fmt = format_of(str(path), text)
                if fmt in PARSERS:
                    found.setdefault(fmt, []).append(path)
    return found


def mutate(data: bytes, mutation: str, position: int, choice: int) -> bytes:
    """One mutation of ``data``; ``position`` and ``choice`` pick where and what (any ints)."""
    if not data:
        return data
    at = position % len(data)
    lines = data.splitlines(keepends=True)
    line = position % len(lines) if lines else 0
    if mutation == "truncate":
        return data[:at]
    if mutation == "flip":
        return data[:at] + bytes([data[at] ^ (1 << (choice % 8))]) + data[at + 1:]
    if mutation == "number":
        numbers = list(_NUMBER.finditer(data))
        if not numbers:
            return data
        match = numbers[position % len(numbers)]
        value = HOSTILE_NUMBERS[choice % len(HOSTILE_NUMBERS)].encode("utf-8")
        return data[:match.start()] + value + data[match.end():]
    if mutation == "delete_line":
        return b"".join(lines[:line] + lines[line + 1:])
    if mutation == "duplicate_line":
        return b"".join(lines[:line + 1] + lines[line:])
    if mutation == "tab_space":
        return data.replace(b"\t", b" ") if choice % 2 and b"\t" in data else data.replace(b"  ", b"\t")
    if mutation == "crlf":
        return data.replace(b"\n", b"\r\n")
    if mutation == "bom":
        return codecs.BOM_UTF8 + data
    if mutation == "utf16":
        return data.decode("utf-8", errors="replace").encode("utf-16")
    if mutation == "nul":
        return data[:at] + b"\x00" + data[at:]
    raise ValueError(mutation)
