"""One input file, read once, with the errors that reading can raise."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_INPUT_BYTES = 32 * 1024 * 1024  # an 8-GPU dump is ~15 KB; anything this large is not a dump
# Per run: a 2,000-node cluster of full bundles (topolint collect: ~1 MB a node) is 2 GB.
MAX_TOTAL_INPUT_BYTES = 8 * 1024 * 1024 * 1024
_CHUNK = 1024 * 1024
_SMALL_CHUNK = 64 * 1024
_SPECIAL = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class InputError(Exception):
    """An input that was recognised or named but cannot be read (TL001)."""

    def __init__(self, path: str, line: int, message: str, column: int = 0, head: str | None = None,
                 special: bool = False):
        super().__init__(message)
        self.path = path
        self.line = max(line, 1)
        self.column = max(column, 0)
        self.message = message
        self.head = head  # the start of the content, decoded leniently: lets a walk tell what it was
        self.special = special  # not a regular file (FIFO, device, socket): a walk skips it


@dataclass
class SourceFile:
    """The text of one input. ``path`` is what reports show; ``real_path`` is on disk (or None).

    ``format`` is the format the collector recognised (it picks the comment syntax for
    suppression comments). ``suppressions`` holds suppression spans a parser found in ways
    comments cannot express, e.g. Kubernetes annotations (engine.suppression.annotation_spans).
    """

    path: str
    text: str
    real_path: Path | str | None = None
    lines: list[str] = field(default_factory=list, repr=False)
    format: str | None = None
    suppressions: list = field(default_factory=list, repr=False)
    bom: bool = False  # the file started with a UTF-8 byte order mark (decoding drops it)

    def line_text(self, line: int) -> str:
        if not self.lines:
            self.lines = self.text.splitlines()
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""


def _head(data: bytes) -> str:
    return data[:65536].decode("utf-8", errors="replace")


def decode_input(path: str, data: bytes) -> str:
    """Bytes to text, or InputError naming the line of the first bad byte."""
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(path, 1, f"over the {MAX_INPUT_BYTES}-byte limit", head=_head(data))
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise InputError(path, line, "binary content (NUL byte); expected a text file", head=_head(data))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", column,
                         head=_head(data)) from None
    return text


def read_bounded(read, limit: int | None = None) -> bytes:
    """At most ``limit + 1`` bytes from ``read`` (a file's or a pipe's read), in chunks: memory
    stays at the limit however much the other end has (``/dev/zero`` as stdin)."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    chunks, total = [], 0
    while total <= limit:
        chunk = read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def open_regular(path: str, real_path: Path | str) -> int:
    """A descriptor for a regular file, else InputError naming what it is. O_NONBLOCK: opening a
    FIFO for reading would otherwise block until a writer comes, before any stat-based check."""
    fd = os.open(real_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
        raise InputError(path, 1, f"{what}, not a regular file: only regular files are read", special=True)
    return fd


def _read_file(fd: int) -> bytes:
    """A regular file's bytes, at most the limit plus one: one read of the size fstat gives (no
    buffer of the chunk size per file: a cluster has thousands of small files), then small reads
    until the end, should the file have grown."""
    limit, chunks, total = MAX_INPUT_BYTES, [], 0
    want = os.fstat(fd).st_size + 1
    while total <= limit:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = _SMALL_CHUNK
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_source(path: str, real_path: Path | str) -> SourceFile:
    try:
        fd = open_regular(path, real_path)
        try:
            data = _read_file(fd)  # never more than the limit, whatever the size
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(path, 1, f"cannot read: {exc.strerror or exc}") from None
    return SourceFile(path=path, text=decode_input(path, data), real_path=real_path,
                      bom=data.startswith(b"\xef\xbb\xbf"))


def read_stream(path: str, stream) -> SourceFile:
    """Standard input (``-``), bounded like a file."""
    data = read_bounded(stream.read)
    return SourceFile(path, decode_input(path, data), bom=data.startswith(b"\xef\xbb\xbf"))


class InputBudget:
    """The bytes one run reads, all inputs together (``--max-total-input``): past the limit,
    later files are not read and one TL001 says so."""

    def __init__(self, limit: int = MAX_TOTAL_INPUT_BYTES):
        self.limit = limit
        self.used = 0
        self.refused = 0

    def charge(self, source: SourceFile) -> bool:
        """Count ``source``; False once the run is over its limit."""
        self.used += len(source.text)
        if self.used > self.limit:
            self.refused += 1
            return False
        return True
