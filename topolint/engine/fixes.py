"""Autofix, as ruff has it: a finding may carry a ``Fix`` (edits with exact ranges and an
applicability); ``--fix`` applies the safe ones, ``--unsafe-fixes`` the unsafe ones too, and
``--diff`` shows what ``--fix`` would change without writing.

- **safe**: behaviour cannot change for the worse (an ``<?xml ...?>`` declaration or a
  byte-order mark NCCL's own parser rejects: the file does not load today);
- **unsafe**: the edit wakes or changes a setting at run time (renaming a misspelt or renamed
  variable makes NCCL read it for the first time), so a person has to want it.

Positions are 1-based lines and 1-based columns in characters (Unicode code points) of the
text as topolint read it (a UTF-8 byte-order mark is not part of line 1); an edit's end is
exclusive. Each edit records the text it replaces, and is applied only when the file still
holds exactly that text there, so a stale or misplaced edit changes nothing. Edits apply to the
text the check read, and engine/writes.py writes the result only where the file still holds
those bytes (mode, owner and links kept), with its byte-order mark and every line ending as they
were; edits never touch a line ending. Applying a fix twice changes nothing.

A byte-order mark is outside every text position, so removing one is an edit of its own kind
(``Edit.bom``, made by ``remove_bom``): JSON gives it ``"kind": "byte-order-mark"`` with
``byte_offset`` 0 and ``byte_length`` 3 (and an empty range at 1:1, a no-op for a consumer that
knows only text ranges); SARIF a ``deletedRegion`` of ``byteOffset`` 0, ``byteLength`` 3.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

SAFE, UNSAFE = "safe", "unsafe"
BOM_EDIT = "byte-order-mark"  # the JSON kind of an edit that removes the byte-order mark
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Edit:
    path: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int  # exclusive
    content: str  # what replaces the range ("" deletes it)
    expected: str = ""  # the text in the range now; the edit applies only where it is still there
    bom: bool = False  # removes the file's UTF-8 byte-order mark (bytes 0-3): the range is 1:1-1:1

    def as_dict(self) -> dict:
        data = {"path": self.path, "start": {"line": self.start_line, "column": self.start_column},
                "end": {"line": self.end_line, "column": self.end_column}, "content": self.content}
        if self.bom:
            data.update(kind=BOM_EDIT, byte_offset=0, byte_length=len(_BOM))
        return data


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: str  # SAFE or UNSAFE
    edits: tuple[Edit, ...]

    def as_dict(self) -> dict:
        return {"message": self.message, "applicability": self.applicability,
                "edits": [e.as_dict() for e in self.edits]}

    def cache_dict(self) -> dict:
        """``as_dict`` plus each edit's expected text, for the result cache."""
        data = self.as_dict()
        for row, edit in zip(data["edits"], self.edits):
            row["expected"] = edit.expected
        return data

    @staticmethod
    def from_dict(data: dict | None) -> Fix | None:
        """The inverse of ``cache_dict``."""
        if not data:
            return None
        edits = tuple(Edit(e["path"], e["start"]["line"], e["start"]["column"], e["end"]["line"], e["end"]["column"],
                           e["content"], e.get("expected", ""), e.get("kind") == BOM_EDIT) for e in data["edits"])
        return Fix(data["message"], data["applicability"], edits)


def replace_on_line(path: str, line: int, column: int, old: str, new: str, message: str,
                    applicability: str = UNSAFE) -> Fix:
    """A fix that replaces ``old``, found at ``line``:``column`` on one line, with ``new``."""
    return Fix(message, applicability, (Edit(path, line, column, line, column + len(old), new, old),))


def remove_bom(path: str, message: str, applicability: str = SAFE) -> Fix:
    """A fix that removes the UTF-8 byte-order mark at the start of ``path``."""
    return Fix(message, applicability, (Edit(path, 1, 1, 1, 1, "", "\ufeff", bom=True),))


def drop_stale_fixes(findings, sources: dict) -> None:
    """Keep a finding's fix only when every edit's range holds its expected text in the file as
    read (``sources``: path -> SourceFile), so output never carries an edit that cannot apply."""
    texts: dict[str, FileText | None] = {}
    for finding in findings:
        fix = finding.autofix
        if fix is None:
            continue
        for edit in fix.edits:
            if edit.path not in texts:
                source = sources.get(edit.path)
                texts[edit.path] = FileText(source.bom, source.text.split("\n")) if source is not None else None
            text = texts[edit.path]
            if text is None or not _edit_holds(text, edit):
                finding.autofix = None
                break


def wanted(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability == SAFE or unsafe)


# --- applying ---------------------------------------------------------------------------------

@dataclass
class FileText:
    """A file's text split into lines that keep their endings, with its byte-order mark."""

    bom: bool
    lines: list[str]
    _joined: str | None = field(default=None, repr=False)
    _line_starts: list[int] | None = field(default=None, repr=False)

    @staticmethod
    def decode(data: bytes) -> FileText:
        bom = data.startswith(_BOM)
        text = data[len(_BOM):].decode("utf-8") if bom else data.decode("utf-8")
        return FileText(bom, text.split("\n"))  # "\r" stays on its line: endings are kept

    def joined(self) -> str:
        if self._joined is None:
            self._joined = "\n".join(self.lines)
        return self._joined

    def encode(self) -> bytes:
        return (_BOM if self.bom else b"") + "\n".join(self.lines).encode("utf-8")

    def offset_range(self, edit: Edit) -> tuple[int, int] | None:
        """Character offsets of the edit in the joined text, or None when it is outside the file."""
        if not (1 <= edit.start_line <= edit.end_line <= len(self.lines)):
            return None
        starts = self._starts()
        start = starts[edit.start_line - 1] + edit.start_column - 1
        end = starts[edit.end_line - 1] + edit.end_column - 1
        if edit.start_column < 1 or end < start or end > starts[edit.end_line - 1] + len(self.lines[edit.end_line - 1]):
            return None
        return start, end

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts, total = [], 0
            for line in self.lines:
                starts.append(total)
                total += len(line) + 1
            self._line_starts = starts
        return self._line_starts


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _holds(text: str, span: tuple[int, int], expected: str) -> bool:
    """The range holds ``expected`` as a whole: a name is not the start or end of a longer one
    (after a rename, NCCL_SOCKET_IFNAM is still the first 17 characters of NCCL_SOCKET_IFNAME)."""
    start, end = span
    if text[start:end] != expected:
        return False
    if expected and _word_char(expected[-1]) and end < len(text) and _word_char(text[end]):
        return False
    return not (expected and _word_char(expected[0]) and start > 0 and _word_char(text[start - 1]))


def _edit_holds(text: FileText, edit: Edit) -> bool:
    """The edit can apply to ``text``: its mark is there (a BOM edit) or its range holds its text."""
    if edit.bom:
        return text.bom
    span = text.offset_range(edit)
    return span is not None and _holds(text.joined(), span, edit.expected)


def apply_edits(original: FileText, edits: list[Edit]) -> tuple[FileText, list[Edit]]:
    """The text with every edit that still matches applied (non-overlapping, in order), and those edits."""
    bom_edits = [edit for edit in edits if edit.bom and original.bom][:1]  # one mark, removed once
    text = original.joined()
    placed = []
    for edit in edits:
        if not edit.bom and _edit_holds(original, edit):
            placed.append((original.offset_range(edit), edit))
    placed.sort(key=lambda item: item[0])
    kept, last_end = [], -1
    for span, edit in placed:
        if span[0] < last_end or (span[0] == span[1] and span[0] == last_end):
            continue  # overlaps an edit already taken: the next pass re-reads the file
        kept.append((span, edit))
        last_end = span[1]
    pieces, cursor = [], 0
    for (start, end), edit in kept:
        pieces.append(text[cursor:start])
        pieces.append(edit.content)
        cursor = end
    pieces.append(text[cursor:])
    return FileText(original.bom and not bom_edits, "".join(pieces).split("\n")), bom_edits + [e for _, e in kept]


@dataclass
class FixOutcome:
    fixed: dict[str, int] = field(default_factory=dict)  # path -> edits applied
    diffs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why a file was left alone
    hidden_unsafe: int = 0  # unsafe fixes that --unsafe-fixes would add
    not_written: list = field(default_factory=list)  # engine/writes.py NotWritten: TL006

    @property
    def count(self) -> int:
        return sum(self.fixed.values())


def fix_files(findings, sources: dict, unsafe: bool, write: bool, checked=None,
              left_alone: frozenset[str] | set[str] = frozenset()) -> FixOutcome:
    """Apply (``write``) or diff the fixes of the active ``findings`` to the text the check read
    (``sources``: path -> SourceFile). Only files in ``checked`` (engine/writes.py CheckedPaths;
    None: any file on disk) are written or diffed; files in ``left_alone`` (paths) are skipped
    without a word (an earlier pass already said why). A file that changed since it was read, or
    cannot be written, is left as it is and listed in ``not_written``."""
    from topolint.engine.writes import OUTSIDE, NotWritten, checked_bytes, write_checked

    outcome = FixOutcome()
    by_path: dict[str, list[Edit]] = {}
    nodes: dict[str, str] = {}
    for finding in findings:
        fix = getattr(finding, "autofix", None)
        if fix is None or finding.suppressed:
            continue
        if not wanted(fix, unsafe):
            outcome.hidden_unsafe += 1
            continue
        for edit in fix.edits:
            by_path.setdefault(edit.path, []).append(edit)
            nodes.setdefault(edit.path, finding.node)
    for path in sorted(by_path):
        if path in left_alone:
            continue
        source = sources.get(path)
        if source is None or source.real_path is None:
            outcome.skipped.append(f"{path}: not a file on disk (stdin): not fixed")
            continue
        edits = by_path[path]
        first = min(edits, key=lambda e: (e.start_line, e.start_column))
        if checked is not None and source.real_path not in checked:
            outcome.not_written.append(NotWritten(path, first.start_line, first.start_column, OUTSIDE,
                                                  count=len(edits), node=nodes[path]))
            outcome.skipped.append(f"{path}: {outcome.not_written[-1].reason()}")
            continue
        original = FileText(source.bom, source.text.split("\n"))  # the text the check judged
        changed, applied = apply_edits(original, edits)
        if not applied:
            continue
        if write:
            failed = write_checked(source.real_path, checked_bytes(source), changed.encode())
            if failed is not None:
                outcome.not_written.append(NotWritten(path, first.start_line, first.start_column, failed[0],
                                                      failed[1], len(applied), nodes[path]))
                outcome.skipped.append(f"{path}: {outcome.not_written[-1].reason()}")
                continue
        else:
            outcome.diffs.append(unified_diff(path, original, changed))
        outcome.fixed[path] = len(applied)
    return outcome


def unified_diff(path: str, before: FileText, after: FileText) -> str:
    """The change as ``diff -u`` shows it; a byte-order mark is part of line 1 there, as in git."""
    old = [line + "\n" for line in _with_bom(before)]
    new = [line + "\n" for line in _with_bom(after)]
    if before.lines and before.lines[-1] == "":  # the file ends with a newline: no empty last line
        old, new = old[:-1], new[:-1]
    return "".join(difflib.unified_diff(old, new, fromfile=f"a/{path.lstrip('/')}", tofile=f"b/{path.lstrip('/')}"))


def _with_bom(text: FileText) -> list[str]:
    return ["\ufeff" + text.lines[0], *text.lines[1:]] if text.bom and text.lines else text.lines
