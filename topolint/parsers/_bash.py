"""A linear bash lexer: words and operators with their line and column, as bash splits them.

What bash does and ``shlex`` does not: a ``#`` starts a comment only where a word could start
(``a#b`` is one word), ``$(..)``, ``${..}``, backticks and ``$((..))`` are part of the word
they appear in (their quotes and spaces do not split it), ``$'..'`` is ANSI-C quoting, and a
``<<DELIM`` heredoc's body is read after the line that opened it (``<<-`` strips leading tabs;
a quoted delimiter keeps the body literal). Every construct is scanned once, with an explicit
stack instead of recursion, so time and memory are linear in the input and deep nesting cannot
overflow Python's stack. An unterminated quote or substitution ends the analysable part of the
file: bash would fail there too, and resuming would scan the rest again for every line.

Why a lexer of our own rather than tree-sitter-bash (measured 2026-12-01, tree-sitter 0.26.1,
tree-sitter-bash 0.25.1): both parse every shell fixture (no ERROR node in the 18 scripts) and
importing tree-sitter costs ~1.5 ms, so neither start-up nor coverage decides it. tree-sitter
parses 100,000 lines in 0.28 s but walking its 575,000 nodes from Python adds 0.15 s, columns
come in bytes (a conversion per fact), an ERROR node would still need a policy, and the
scope logic of shell.py (if/case branches, functions, per-command steps) would have to be
rewritten onto a tree, with a compiled dependency for every user. This lexer keeps that logic,
is linear (benchmarks/config_parsers.py) and has no dependency.

``\\r`` before a newline is treated as blank and backslash-CR-LF as a line continuation (files
checked out with CRLF endings), the way ``shlex`` did; any other control character stays in the
word exactly as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

OPERATORS = ("<<<", ";;&", "&>>", "<<-", "&&", "||", ";;", ";&", "|&", "<<", ">>", "<&", ">&", "<>", ">|", "&>",
             ";", "&", "|", "(", ")", "<", ">")
_OPERATOR_CHARS = set(";&|()<>")
_BLANK = " \t\r"
# Plain word characters: anything but blanks, newline, quotes, escapes, expansions, operators.
_PLAIN = re.compile(r"[^ \t\r\n'\"\\$`;&|()<>]+")
_DOUBLE_QUOTED_PLAIN = re.compile(r'[^"\\$`]+')
_CLOSERS = {"$(": ")", "$((": "))", "${": "}", "`": "`", "(": ")"}


class Token(str):
    """A word (quotes removed, expansions kept as written) or an operator, with its position."""

    line: int
    column: int
    op: bool
    raw: str
    quoted: bool
    heredoc: Heredoc | None

    def __new__(cls, value: str, line: int, column: int, op: bool = False, raw: str = "", quoted: bool = False):
        token = super().__new__(cls, value)
        token.line, token.column, token.op, token.raw, token.quoted = line, column, op, raw or value, quoted
        token.heredoc = None
        return token


@dataclass(slots=True)
class Heredoc:
    delimiter: str
    literal: bool  # the delimiter was quoted: no expansion in the body
    strip_tabs: bool
    first_line: int = 0  # 1-based line of the body's first line; 0 until read
    body: list[str] = field(default_factory=list)
    terminated: bool = False
    fed: tuple | None = None  # (scope, reader, target) of the command it feeds, set by shell.py


@dataclass(slots=True)
class Statement:
    """The tokens of one logical line (up to an unquoted newline), first and last line."""

    tokens: list[Token]
    first_line: int
    last_line: int
    heredocs: list[Heredoc] = field(default_factory=list)


@dataclass(slots=True)
class Unterminated:
    line: int
    what: str




class _Lexer:
    def __init__(self, text: str, first_line: int = 1):
        self.text = text
        self.pos = 0
        self.line = first_line
        self.line_start = 0

    # ---- positions ----------------------------------------------------------------------------
    def _advance_to(self, end: int) -> None:
        """Move to ``end``, counting the newlines passed."""
        newlines = self.text.count("\n", self.pos, end)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.pos, end) + 1
        self.pos = end

    def column(self, index: int) -> int:
        return index - self.line_start + 1

    # ---- constructs ---------------------------------------------------------------------------
    def _single_quoted(self, start: int) -> int:
        end = self.text.find("'", start)
        if end < 0:
            raise _Open("single quote")
        return end

    def _ansi_quoted(self, start: int) -> int:
        i = start
        while True:
            end = self.text.find("'", i)
            if end < 0:
                raise _Open("$'...' quote")
            backslashes = len(self.text[i:end]) - len(self.text[i:end].rstrip("\\"))
            if backslashes % 2 == 0:
                return end
            i = end + 1

    def _nested(self, start: int, closer: str) -> int:
        """Index just past the ``closer`` that ends a construct opened before ``start``.

        An explicit stack of closers: ``"`` inside ``$(`` is a new quoting context, ``'`` is
        literal only outside double quotes, ``#`` after a blank inside ``$(..)`` is a comment.
        """
        text, i, stack = self.text, start, [closer]
        n = len(text)
        while i < n:
            top = stack[-1]
            char = text[i]
            if char == "\\":
                i += 2
                continue
            if top == '"':
                if char == '"':
                    stack.pop()
                    if not stack:
                        return i + 1
                    i += 1
                    continue
            elif text.startswith(top, i):
                stack.pop()
                i += len(top)
                if not stack:
                    return i
                continue
            elif char == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise _Open("single quote")
                i = end + 1
                continue
            elif char == '"':
                stack.append('"')
                i += 1
                continue
            elif char == "(" and top in (")", "))"):
                stack.append(")")
                i += 1
                continue
            elif char == "#" and top == ")" and (i == 0 or text[i - 1] in " \t\n"):
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
            opener = _opener(text, i)
            if opener:
                stack.append(_CLOSERS[opener])
                i += len(opener)
            else:
                i += 1
        raise _Open({")": "$(...)", "))": "$((...))", "}": "${...}", "`": "backtick", '"': "double quote"}
                    .get(closer, closer))

    def _double_quoted(self, start: int) -> tuple[int, str]:
        """(index of the closing quote, content with bash's double-quote escapes removed)."""
        text, i, parts = self.text, start, []
        n = len(text)
        while i < n:
            char = text[i]
            if char == '"':
                return i, "".join(parts)
            if char == "\\" and i + 1 < n:
                following = text[i + 1]
                if _continuation(text, i):
                    i += _continuation(text, i)
                    continue
                parts.append(following if following in '$`"\\' else "\\" + following)
                i += 2
                continue
            opener = _opener(text, i)
            if opener:
                end = self._nested(i + len(opener), _CLOSERS[opener])
                parts.append(text[i:end])
                i = end
                continue
            run = _DOUBLE_QUOTED_PLAIN.match(text, i)
            if run:
                parts.append(run.group())
                i = run.end()
            else:
                parts.append(char)
                i += 1
        raise _Open("double quote")

    # ---- words --------------------------------------------------------------------------------
    def word(self) -> Token:
        """The word starting at ``pos``; ``pos`` ends just after it."""
        text, start = self.text, self.pos
        line, column = self.line, self.column(start)
        parts: list[str] = []
        quoted = False
        i, n = start, len(text)
        while i < n:
            match = _PLAIN.match(text, i)
            if match:
                parts.append(match.group())
                i = match.end()
                continue
            char = text[i]
            if char in _BLANK or char == "\n" or char in _OPERATOR_CHARS:
                break
            if char == "'":
                end = self._single_quoted(i + 1)
                parts.append(text[i + 1:end])
                quoted, i = True, end + 1
            elif char == '"':
                end, content = self._double_quoted(i + 1)
                parts.append(content)
                quoted, i = True, end + 1
            elif char == "\\":
                if _continuation(text, i):  # continuation inside a word
                    i += _continuation(text, i)
                    continue
                parts.append(text[i + 1:i + 2])
                quoted, i = True, i + 2
            elif text.startswith("$'", i):
                end = self._ansi_quoted(i + 2)
                parts.append(_ansi_c(text[i + 2:end]))
                quoted, i = True, end + 1
            elif _opener(text, i):
                opener = _opener(text, i)
                end = self._nested(i + len(opener), _CLOSERS[opener])
                parts.append(text[i:end])
                i = end
            else:  # a lone "$"
                parts.append(char)
                i += 1
        raw = text[start:i]
        self._advance_to(i)
        return Token("".join(parts), line, column, raw=raw, quoted=quoted)


def _continuation(text: str, i: int) -> int:
    """Length of a backslash-newline at ``i`` (0 if none). Backslash-CR-LF counts too: bash would
    read an escaped CR there, but a CRLF checkout of an LF script is what such a file is."""
    if text.startswith("\\\n", i):
        return 2
    return 3 if text.startswith("\\\r\n", i) else 0


def _opener(text: str, i: int) -> str | None:
    """The substitution that opens at ``i``: ``$((``, ``$(``, ``${`` or a backtick."""
    char = text[i]
    if char == "`":
        return "`"
    if char != "$":
        return None
    if text.startswith("$((", i):
        return "$(("
    if text.startswith("$(", i) or text.startswith("${", i):
        return text[i:i + 2]
    return None


class _Open(Exception):
    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(body: str) -> str:
    """``$'..'`` escapes (the common ones; others are kept as written)."""
    return re.sub(r"\\(.)", lambda m: _ANSI.get(m.group(1), m.group(0)), body, flags=re.S)


def statements(text: str, first_line: int = 1) -> tuple[list[Statement], Unterminated | None]:
    """Split ``text`` into statements; the second value says where an unterminated construct
    stopped the analysis (everything from there on is not in the statements)."""
    found = list(stream(text, first_line))
    stopped = found.pop() if found and isinstance(found[-1], Unterminated) else None
    return found, stopped


def stream(text: str, first_line: int = 1) -> Iterator[Statement | Unterminated]:
    """The statements of ``text`` one at a time, each as soon as its line (and the heredoc bodies
    it opens) is read, so a reader holds one statement's tokens, not the whole script's (issue 20);
    an unterminated construct ends it with an ``Unterminated``."""
    lexer = _Lexer(text, first_line)
    tokens: list[Token] = []
    pending: list[Heredoc] = []
    heredocs: list[Heredoc] = []
    first = lexer.line
    text_length = len(text)
    try:
        while lexer.pos < text_length:
            char = text[lexer.pos]
            if char in _BLANK:
                end = lexer.pos + 1
                while end < text_length and text[end] in _BLANK:
                    end += 1
                lexer.pos = end
                continue
            if char == "\\" and _continuation(text, lexer.pos):
                lexer._advance_to(lexer.pos + _continuation(text, lexer.pos))
                continue
            if char == "\n":
                lexer._advance_to(lexer.pos + 1)
                if pending:
                    _read_bodies(lexer, pending)
                    pending = []
                if tokens:
                    statement = Statement(tokens, first, tokens[-1].line, heredocs)
                    tokens, heredocs = [], []
                    yield statement
                    del statement
                first = lexer.line
                continue
            if char == "#":  # a word could start here: a comment to the end of the line
                end = text.find("\n", lexer.pos)
                lexer.pos = text_length if end < 0 else end
                continue
            if char in _OPERATOR_CHARS:
                operator = next(op for op in OPERATORS if text.startswith(op, lexer.pos))
                token = Token(operator, lexer.line, lexer.column(lexer.pos), op=True)
                lexer.pos += len(operator)
                if not tokens:
                    first = token.line
                tokens.append(token)
                if operator in ("<<", "<<-"):
                    delimiter = _heredoc_delimiter(lexer)
                    if delimiter is not None:
                        token.heredoc = Heredoc(str(delimiter), literal=delimiter.quoted, strip_tabs=operator == "<<-")
                        pending.append(token.heredoc)
                        heredocs.append(token.heredoc)
                        tokens.append(delimiter)
                continue
            token = lexer.word()
            if not tokens:
                first = token.line
            tokens.append(token)
    except _Open as exc:
        yield Unterminated(first if tokens else lexer.line, exc.what)
        return
    if pending:
        _read_bodies(lexer, pending)
    if tokens:
        yield Statement(tokens, first, tokens[-1].line, heredocs)


def _heredoc_delimiter(lexer: _Lexer) -> Token | None:
    text = lexer.text
    while lexer.pos < len(text) and text[lexer.pos] in " \t":
        lexer.pos += 1
    if lexer.pos >= len(text) or text[lexer.pos] in "\n;&|()<>":
        return None
    return lexer.word()


def _read_bodies(lexer: _Lexer, pending: list[Heredoc]) -> None:
    """Read each pending heredoc's body, line by line, from ``pos`` (the start of a line)."""
    text = lexer.text
    for heredoc in pending:
        heredoc.first_line = lexer.line
        while lexer.pos < len(text):
            end = text.find("\n", lexer.pos)
            end = len(text) if end < 0 else end
            line = text[lexer.pos:end]
            lexer._advance_to(min(end + 1, len(text)))
            check = line.rstrip("\r")
            if heredoc.strip_tabs:
                check = check.lstrip("\t")
            if check == heredoc.delimiter:
                heredoc.terminated = True
                break
            heredoc.body.append(line.lstrip("\t") if heredoc.strip_tabs else line)
