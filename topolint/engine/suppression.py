"""Inline suppressions: one pass after every rule ran, before selection.

Directives, in each file's own comment syntax:

- ``# topolint: ignore[CODE,...] reason`` (shell, Slurm, Dockerfile, YAML, .env, Python, TOML):
  at the end of a line it covers that line; alone on a line it covers the next line that is
  not blank or a comment, and the block below it (deeper-indented lines, and lines continued
  with a trailing backslash), so a directive above a YAML key covers its children.
- ``# topolint: file-ignore[CODE,...] reason`` anywhere: the whole file.
- ``# noqa: CODE,...`` (the directive ruff and flake8 users already write) covers its own line,
  for topolint's own codes only: other tools' codes (``E501``, ``SC2086``) and a bare
  ``# noqa`` are ignored, never TL004; a topolint code in it that matched nothing is TL004.
- ``<!-- topolint: ignore[CODE,...] reason -->`` (XML): covers the next element and its
  descendants; ``<!-- topolint: file-ignore[...] -->`` the whole file.
- Spans parsers attach to ``SourceFile.suppressions`` (``SuppressionSpan``), e.g. a Kubernetes
  object's ``topolint.dev/ignore-ENV004: "reason"`` annotation covering the object's lines:
  build them with ``annotation_spans``.

A code may be any rule selector (code, prefix, category, slug, ALL). The reason is the text after
``]``. With ``require_reason`` a directive without a reason suppresses nothing (the findings it
names stay active, so the run still fails) and TL004 says why. TL004 also reports a directive
token that names a rule which ran on the file and matched nothing, a token that names no
known rule, and a comment that starts like a directive but does not parse. TL004 findings are
themselves suppressible (``file-ignore[TL004]``, or TL004 in the same directive) and a token
naming TL004 is never reported as unused.

Which comment syntax a file uses comes from its recognised format (``COMMENT_SYNTAX``), else
its name, else ``#``. To support a new format, add it to ``COMMENT_SYNTAX``; to support a new
syntax, add a scanner to ``SCANNERS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

from topolint.engine.finding import Finding, Hit
from topolint.engine.rule import RuleDefinition
from topolint.inputs.source import SourceFile
from topolint.model.facts import Location, build
from topolint.parsers.xmlsafe import LineIndex

TL004 = "TL004"
WHOLE_FILE = 1 << 31
ANNOTATION_PREFIX = "topolint.dev/ignore-"


@dataclass(frozen=True)
class SuppressionSpan:
    """Lines ``first_line``..``last_line`` of ``path`` where findings of ``codes`` are suppressed.

    ``line``/``column`` locate the directive itself (TL004 points there). Any parser may attach
    spans to ``SourceFile.suppressions``; comment directives are scanned here.
    """

    path: str
    first_line: int
    last_line: int
    codes: tuple[str, ...]
    reason: str = ""
    line: int = 1
    column: int = 0
    kind: str = "ignore"  # ignore, file-ignore, annotation

    def covers(self, line: int) -> bool:
        return self.first_line <= line <= self.last_line


@dataclass(frozen=True)
class Malformed:
    """A comment that starts like a directive but does not parse."""

    path: str
    line: int
    column: int
    text: str


@dataclass
class Directives:
    spans: list[SuppressionSpan] = field(default_factory=list)
    malformed: list[Malformed] = field(default_factory=list)


_BODY = re.compile(r"(?P<kind>ignore|file-ignore)\[(?P<codes>[^\]\n]*)\](?P<reason>.*)\Z", re.S)
_HASH = re.compile(r"(?:^|(?<=\s))#\s*topolint\s*:(?P<body>.*)$")
_XML_TOKEN = re.compile(
    r"<!--(?P<comment>.*?)-->"
    r"|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE(?:[^\[>]*\[.*?\])?[^>]*>"
    r"|</(?P<end>[A-Za-z_][\w:.-]*)\s*>"
    r"|<(?P<start>[A-Za-z_][\w:.-]*)(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*(?P<close>/?)>",
    re.S,
)
# ruff's and flake8's "noqa" directive with a colon and codes. Only topolint's own codes count; a
# bare one and other tools' codes (E501, SC2086) are not topolint's business.
_NOQA = re.compile(r"(?:^|(?<=\s))#\s*noqa\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[,\s]+[A-Za-z]+[0-9]+)*)", re.I)
_XML_DIRECTIVE = re.compile(r"\s*topolint\s*:(?P<body>.*)\Z", re.S)


def _codes(text: str) -> tuple[str, ...]:
    return tuple(part for part in re.split(r"[\s,]+", text) if part)


def _reason(text: str) -> str:
    return " ".join(text.strip().lstrip(":#-—").split())


def _parse_body(body: str) -> tuple[str, tuple[str, ...], str] | None:
    match = _BODY.match(body.strip())
    if not match or not _codes(match.group("codes")):
        return None
    return match.group("kind"), _codes(match.group("codes")), _reason(match.group("reason"))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def scan_hash(source: SourceFile) -> Directives:
    found = Directives()
    lines = source.text.splitlines()
    for i, text in enumerate(lines):
        noqa = _NOQA.search(text) if "noqa" in text.lower() else None
        if noqa:  # covers its own line, like ruff's
            codes = tuple(code.upper() for code in _codes(noqa.group("codes")))
            found.spans.append(SuppressionSpan(source.path, i + 1, i + 1, codes, "", i + 1, noqa.start() + 1, "noqa"))
        match = _HASH.search(text)
        if not match:
            continue
        line, column = i + 1, match.start() + 1
        parsed = _parse_body(match.group("body"))
        if parsed is None:
            found.malformed.append(Malformed(source.path, line, column, text[match.start():].strip()))
            continue
        kind, codes, reason = parsed
        if kind == "file-ignore":
            span = SuppressionSpan(source.path, 1, WHOLE_FILE, codes, reason, line, column, kind)
        elif text[:match.start()].strip():  # trailing: the line it ends
            span = SuppressionSpan(source.path, line, line, codes, reason, line, column, kind)
        else:
            span = SuppressionSpan(source.path, line, _block_end(lines, i), codes, reason, line, column, kind)
        found.spans.append(span)
    return found


def _block_end(lines: list[str], directive: int) -> int:
    """Last line (1-based) of the block a directive standing alone on line ``directive`` covers."""
    target, end = _block_span(lines, directive + 1)
    return directive + 1 if target is None else end + 1


def _block_span(lines: list[str], start: int) -> tuple[int | None, int]:
    """(first, last) 0-based lines of the block that begins at the first line from ``start`` that
    is not blank or a comment: deeper-indented lines and backslash continuations follow it."""
    target = next((j for j in range(start, len(lines)) if _content(lines[j])), None)
    if target is None:
        return None, start
    base = _indent(lines[target])
    end = target
    while end + 1 < len(lines):
        following = lines[end + 1]
        if lines[end].rstrip().endswith("\\") or (following.strip() and _indent(following) > base):
            end += 1
        else:
            break
    return target, end


def _content(line: str) -> bool:
    """Not blank and not a comment; Slurm's ``#SBATCH`` directives are content, not comments."""
    stripped = line.lstrip()
    return bool(stripped.strip()) and (not stripped.startswith("#") or stripped.startswith("#SBATCH"))


def covering_block(lines: list[str], above: int, line: int) -> bool:
    """Would a directive inserted on its own line above line ``above`` (1-based) cover ``line``?"""
    target, end = _block_span(lines, above - 1)
    return target is not None and target + 1 <= line <= end + 1


def scan_xml(source: SourceFile) -> Directives:
    found = Directives()
    index = LineIndex(source.text)
    # A directive waits for the next start tag; its span ends where that element ends.
    pending: list[tuple[int, int, str, tuple[str, ...], str]] = []
    open_elements: list[tuple[str, list]] = []  # (tag, directives waiting for its end line)
    for match in _XML_TOKEN.finditer(source.text):
        if match.group("comment") is not None:
            directive = _XML_DIRECTIVE.match(match.group("comment"))
            if not directive:
                continue
            line, column = index.position(match.start())
            parsed = _parse_body(directive.group("body"))
            if parsed is None:
                found.malformed.append(Malformed(source.path, line, column, " ".join(match.group(0).split())))
                continue
            kind, codes, reason = parsed
            if kind == "file-ignore":
                found.spans.append(SuppressionSpan(source.path, 1, WHOLE_FILE, codes, reason, line, column, kind))
            else:
                pending.append((line, column, kind, codes, reason))
        elif match.group("start"):
            waiting, pending = pending, []
            if match.group("close"):
                end_line = index.position(match.end() - 1)[0]
                found.spans.extend(_xml_span(source.path, item, end_line) for item in waiting)
            else:
                open_elements.append((match.group("start"), waiting))
        elif match.group("end"):
            # A directive with no element after it in its parent covers only its own line.
            found.spans.extend(_xml_span(source.path, item, item[0]) for item in pending)
            pending = []
            if open_elements:
                _, waiting = open_elements.pop()
                end_line = index.position(match.end() - 1)[0]
                found.spans.extend(_xml_span(source.path, item, end_line) for item in waiting)
    for item in pending:
        found.spans.append(_xml_span(source.path, item, item[0]))
    for _, waiting in open_elements:  # unclosed (the file is malformed): to the end
        found.spans.extend(_xml_span(source.path, item, WHOLE_FILE) for item in waiting)
    return found


def _xml_span(path: str, item: tuple, last_line: int) -> SuppressionSpan:
    line, column, kind, codes, reason = item
    return SuppressionSpan(path, line, max(last_line, line), codes, reason, line, column, kind)


SCANNERS: dict[str, Callable[[SourceFile], Directives]] = {"xml": scan_xml, "hash": scan_hash,
                                                          "none": lambda source: Directives()}
# Recognised format -> comment syntax. Formats not listed use "#" unless the name says XML; JSON
# that topolint writes itself (node inventories, docs/fleet.md) has no comments.
COMMENT_SYNTAX: dict[str, str] = {"nccl-topo-xml": "xml", "nccl-graph-xml": "xml", "topolint-inventory": "none"}


def comment_syntax(source: SourceFile) -> str:
    if source.format in COMMENT_SYNTAX:
        return COMMENT_SYNTAX[source.format]
    if PurePath(source.path).suffix.lower() == ".xml" or (
            source.format is None and source.text.lstrip().startswith("<")):
        return "xml"
    return "hash"


def directives(source: SourceFile) -> Directives:
    """Comment directives in ``source`` plus the spans parsers attached to it."""
    if "topolint" not in source.text and not _has_noqa(source.text):  # most files have none: skip the scan
        return Directives(spans=list(source.suppressions))
    found = SCANNERS[comment_syntax(source)](source)
    found.spans.extend(source.suppressions)
    return found


# A noqa directive is "#", blanks, "noqa" in any case (_NOQA); this finds every text that may hold
# one. Not re.I: a case-blind pattern loses the regex engine's fast scan for its first character
# ("#"), and no character but the ASCII letters matches n, o, q or a case-blind.
_NOQA_HINT = re.compile(r"#\s*[nN][oO][qQ][aA]")


def _has_noqa(text: str) -> bool:
    return _NOQA_HINT.search(text) is not None


def annotation_spans(path: str, first_line: int, last_line: int, annotations: dict[str, str],
                     lines: dict[str, int] | None = None) -> list[SuppressionSpan]:
    """Spans for a Kubernetes object's ``topolint.dev/ignore-CODE: "reason"`` annotations.

    A parser calls this with the object's line range and its metadata.annotations (and, when it
    knows them, each annotation's line, which TL004 points at), then appends the result to
    ``SourceFile.suppressions``.
    """
    spans = []
    for key, value in annotations.items():
        if not key.startswith(ANNOTATION_PREFIX):
            continue
        code = key[len(ANNOTATION_PREFIX):].strip()
        line = (lines or {}).get(key, first_line)
        spans.append(SuppressionSpan(path, first_line, last_line, (code.upper(),), _reason(str(value or "")),
                                     line, 0, "annotation"))
    return spans


# --- the pass ---------------------------------------------------------------------------------

@dataclass
class _Token:
    span: SuppressionSpan
    token: str
    codes: set[str] | None  # None: names no known rule
    used: bool = False


def _resolve(token: str, rules: list[RuleDefinition]) -> set[str] | None:
    from topolint.engine.selection import SelectionError, resolve

    try:
        return resolve(token, rules)[0]
    except SelectionError:
        return None


def _mark(findings: Iterable[Finding], tokens: list[_Token], require_reason: bool) -> None:
    for finding in findings:
        for token in tokens:
            if token.codes and finding.code in token.codes and token.span.covers(finding.line):
                if require_reason and not token.span.reason:
                    continue
                token.used = True
                if not finding.suppressed:
                    finding.suppressed = True
                    finding.suppression = "inSource"
                    finding.justification = token.span.reason or None


def apply(findings: list[Finding], sources: dict[str, SourceFile], rules: list[RuleDefinition],
          node_of: dict[str, str], ran: dict[str, set[str]], require_reason: bool = False) -> list[Finding]:
    """Mark the findings that directives cover as suppressed ("inSource"), in place.

    ``node_of`` maps a source path to its node, ``ran`` a node to the codes of the rules that ran
    on it (selected or not). Returns the TL004 findings, already marked where they are suppressed.
    """
    from topolint.engine.runner import to_finding
    from topolint.model.node import file_entity

    by_code = {r.code: r for r in rules}
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    unused: list[Finding] = []
    for path, source in sources.items():
        found = directives(source)
        if not found.spans and not found.malformed:
            continue
        tokens = [_Token(span, token, _resolve(token, rules)) for span in found.spans for token in span.codes
                  if span.kind != "noqa" or token in by_code]  # a noqa span: topolint's exact codes only
        _mark(by_path.get(path, []), tokens, require_reason)
        if TL004 not in by_code:
            continue
        node = node_of.get(path, "-")
        ran_here = ran.get(node, set())

        def hit(entity_suffix: str, line: int, column: int, variant: str, **fields) -> Finding:
            location = build(Location, path=path, line=line, column=column)
            return to_finding(by_code[TL004], node, Hit(entity=f"{file_entity(node, path)}#{entity_suffix}",
                                                        location=location, fields=fields, variant=variant))

        own: list[Finding] = []
        for token in tokens:
            span = token.span
            label = f"{span.kind}[{token.token}]"
            if token.codes is not None and TL004 in token.codes and len(token.codes) == 1:
                continue
            if token.codes is None:
                own.append(hit(label, span.line, span.column, "unknown", token=token.token, kind=span.kind))
            elif require_reason and not span.reason:
                own.append(hit(label, span.line, span.column, "no-reason", token=token.token, kind=span.kind))
            elif not token.used and token.codes & ran_here:
                own.append(hit(label, span.line, span.column, "default", token=token.token, kind=span.kind))
        for bad in found.malformed:
            own.append(hit(f"malformed[{bad.text[:80]}]", bad.line, bad.column, "malformed", text=bad.text[:80]))
        _mark(own, tokens, require_reason)
        unused.extend(own)
    return unused
