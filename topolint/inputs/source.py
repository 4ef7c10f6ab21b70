"""One input file, read once, with the errors that reading can raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MAX_INPUT_BYTES = 32 * 1024 * 1024  # an 8-GPU dump is ~15 KB; anything this large is not a dump


class InputError(Exception):
    """An input that was recognised or named but cannot be read (TL001)."""

    def __init__(self, path: str, line: int, message: str, column: int = 0):
        super().__init__(message)
        self.path = path
        self.line = max(line, 1)
        self.column = max(column, 0)
        self.message = message


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


def decode_input(path: str, data: bytes) -> str:
    """Bytes to text, or InputError naming the line of the first bad byte."""
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(path, 1, f"file is {len(data)} bytes, over the {MAX_INPUT_BYTES}-byte limit")
    if b"\x00" in data[:8192]:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise InputError(path, line, "binary content (NUL byte); expected a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", column) from None
    return text


def read_source(path: str, real_path: Path | str) -> SourceFile:
    try:
        with open(real_path, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)  # never more than the limit, whatever the size
        if len(data) > MAX_INPUT_BYTES:
            raise InputError(path, 1, f"file is over the {MAX_INPUT_BYTES}-byte limit")
    except OSError as exc:
        raise InputError(path, 1, f"cannot read: {exc.strerror or exc}") from None
    return SourceFile(path=path, text=decode_input(path, data), real_path=real_path,
                      bom=data.startswith(b"\xef\xbb\xbf"))
