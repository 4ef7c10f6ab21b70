"""`topolint check --add-noqa`: write topolint's own suppression directive for each active finding.

The directive is ``# topolint: ignore[CODE,...]`` on a line of its own, above the statement
the finding is in, indented like it, with the line ending of that line: a trailing comment
would change meaning in a Dockerfile (``ENV A=1 # x`` sets A to ``1 # x`` in the legacy form and
breaks the key=value one), after a shell line continuation, or inside a quoted value. Where no
line can hold it without changing what the file means (inside a heredoc or a multi-line value
that the directive's block would not reach, a JSON or XML file), nothing is written and the
finding is listed. Files are written as ``--fix`` writes them (engine/writes.py): only the
checked paths, only where the file still holds what was checked, keeping byte-order mark, line
endings, mode, owner and links; a file not written is TL006 and the command exits 2. A second
run adds nothing, because the findings are then suppressed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Where a reason is required (--require-suppression-reason, require-suppression-reason = true), a
# directive without one suppresses nothing: each is written with this placeholder to replace.
REASON_PLACEHOLDER = "TODO: say why this is safe"

HASH_FORMATS = {"shell", "dockerfile", "config-yaml", "envfile", "nccl-conf", "deepspeed-env", "python"}


@dataclass
class Added:
    files: dict[str, int] = field(default_factory=dict)  # path -> directives written
    skipped: list[str] = field(default_factory=list)
    placeholders: int = 0  # directives written with REASON_PLACEHOLDER (reasons required)
    not_written: list = field(default_factory=list)  # engine/writes.py NotWritten: TL006, exit 2

    @property
    def count(self) -> int:
        return sum(self.files.values())


def add_noqa(options) -> Added:
    """Directives for the active findings, written through engine/writes.py: only into the checked
    paths, only where the file still holds what was checked."""
    from topolint.commands.check import run_check
    from topolint.engine.writes import OUTSIDE, CheckedPaths, NotWritten

    result = run_check(options)
    added = Added()
    checked = CheckedPaths(result.checked_paths)
    wanted: dict[str, dict[int, set[str]]] = {}
    nodes: dict[str, str] = {}
    for finding in result.findings:
        if not finding.suppressed and finding.code not in ("TL001", "TL002", "TL004", "TL006"):
            wanted.setdefault(finding.path, {}).setdefault(finding.line, set()).add(finding.code)
            nodes.setdefault(finding.path, finding.node)
    for path in sorted(wanted):
        source = result.report.sources.get(path)
        if source is None or source.real_path is None:
            added.skipped.append(f"{path}: not a file on disk: no directive written")
            continue
        if source.format not in HASH_FORMATS:
            added.skipped.append(f"{path}: {source.format or 'this'} file: add suppressions by hand "
                                 "(no directive is written into XML or JSON)")
            continue
        if source.real_path not in checked:
            missed = NotWritten(path, min(wanted[path]), 0, OUTSIDE, count=len(wanted[path]), node=nodes[path])
            added.not_written.append(missed)
            added.skipped.append(f"{path}: {missed.reason()}")
            continue
        reason = REASON_PLACEHOLDER if path in result.reason_required else ""
        count = _write(source, wanted[path], added, reason=reason, node=nodes[path])
        if count:
            added.files[path] = count
            added.placeholders += count if reason else 0
    return added


def _write(source, lines_codes: dict[int, set[str]], added: Added, reason: str = "", node: str = "-") -> int:
    from topolint.engine.fixes import FileText
    from topolint.engine.suppression import covering_block
    from topolint.engine.writes import NotWritten, checked_bytes, write_checked

    skipped = added.skipped
    text = FileText(source.bom, source.text.split("\n"))  # the text the check judged
    anchors = _statement_starts(source)
    inserts: dict[int, set[str]] = {}
    for line, codes in sorted(lines_codes.items()):
        anchor = anchors.get(line, line)
        if anchor is None or not (1 <= anchor <= len(text.lines)) or \
                not covering_block(text.lines, anchor, line):
            skipped.append(f"{source.path}:{line}: no line above it can hold a directive without changing "
                           f"what the file means: {', '.join(sorted(codes))} not suppressed")
            continue
        inserts.setdefault(anchor, set()).update(codes)
    for anchor in sorted(inserts, reverse=True):
        target = text.lines[anchor - 1]
        indent = target[:len(target) - len(target.lstrip(" \t"))]
        ending = "\r" if target.endswith("\r") else ""
        text.lines.insert(anchor - 1, f"{indent}{directive(inserts[anchor], reason)}{ending}")
    if inserts:
        failed = write_checked(source.real_path, checked_bytes(source), text.encode())
        if failed is not None:
            missed = NotWritten(source.path, min(inserts), 0, failed[0], failed[1], len(inserts), node)
            added.not_written.append(missed)
            skipped.append(f"{source.path}: {missed.reason()}")
            return 0
    return len(inserts)


def directive(codes: set[str], reason: str = "") -> str:
    return f"# topolint: ignore[{','.join(sorted(codes))}]" + (f" {reason}" if reason else "")


def _statement_starts(source) -> dict[int, int | None]:
    """Line -> the line a directive goes above (the statement's first line); None: nowhere."""
    if source.format == "shell":
        return _shell_starts(source.text)
    if source.format == "dockerfile":
        return _dockerfile_starts(source.text)
    return {}


def _shell_starts(text: str) -> dict[int, int | None]:
    from topolint.parsers._bash import statements

    found, _ = statements(text)
    starts: dict[int, int | None] = {}
    for statement in found:
        for line in range(statement.first_line, statement.last_line + 1):
            starts[line] = statement.first_line
        for heredoc in statement.heredocs:  # never inside a heredoc: above the command that opens it
            for line in range(heredoc.first_line, heredoc.first_line + len(heredoc.body) + 1):
                starts[line] = statement.first_line
    return starts


def _dockerfile_starts(text: str) -> dict[int, int | None]:
    """Instructions continued with a trailing backslash: every line maps to the first."""
    starts: dict[int, int | None] = {}
    first = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.rstrip("\r").rstrip()
        if first is None and stripped and not stripped.lstrip().startswith("#"):
            first = number
        if first is not None:
            starts[number] = first
            if not stripped.endswith("\\"):
                first = None
    return starts
