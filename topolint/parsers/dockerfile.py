"""Dockerfiles: ``ENV`` in both forms (``ENV A=1 B="x y"`` and legacy ``ENV A 1``), per stage,
and the heredocs of ``RUN`` and ``COPY``/``ADD`` (BuildKit's ``<<EOF`` syntax).

Instructions are joined at the escape character (``\\`` or the ``# escape=`` directive) as
BuildKit joins them: the next line follows directly, and comment and empty lines inside a
continuation are dropped; one pass over the lines. Each
``FROM`` starts a stage; settings are scoped ``stage:NAME`` (or ``stage:N`` for an unnamed
stage). ``ARG`` is build-time only and not read. A ``RUN <<EOF`` body is a ``/bin/sh`` script
(a ``#!`` line names another interpreter: then it is listed as skipped); ``RUN cmd <<EOF`` is
read as the shell reads that command with its heredoc (``RUN cat > /etc/nccl.conf <<EOF``).
What a ``RUN`` sets lasts for that build step only: its scope, ``stage:N#run@LINE``, is not
nested in the stage's. A ``COPY <<EOF /etc/nccl.conf`` (or ``~/.nccl.conf``) body is nccl.conf
content in the image, scope ``stage:N#nccl.conf:DEST``. Other heredocs are listed as skipped.

Where the image's NCCL comes from is read too (``ConfigFile.nccl_sources``, model/nccl_sources.py):
the base image of each ``FROM`` (or the earlier stage it names), NCCL package pins, wheels and
modules in ``RUN`` commands (parsers/_nccl_pins.py, with the ``pip install -r`` files the build
context holds), ``COPY --from=STAGE`` of NCCL's own files, and the files ``COPY``/``ADD`` put into
a stage by name (``ConfigFile.image_files``: a script copied into the image runs with its NCCL).
"""

from __future__ import annotations

import json
import os
import re
import shlex

from topolint.inputs.source import SourceFile
from topolint.model.config import ConfigFile, EnvSetting, SkippedLine
from topolint.parsers._common import ASSIGNMENT, Cursor, shell_value, wanted, written_at
from topolint.parsers._lines import TextLines
from topolint.parsers.envfile import parse_literal_lines
from topolint.parsers._nccl_pins import PinReader, file_opener

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)(\s+|$)")
_HEREDOC = re.compile(r"<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_.-]*)\2")
NCCL_CONF_NAMES = {"nccl.conf", ".nccl.conf"}


def _escape_character(lines: list[str]) -> str:
    for text in lines[:5]:
        match = re.match(r"^#\s*escape\s*=\s*(\S)", text)
        if match:
            return match.group(1)
    return "\\"


def parse_dockerfile(source: SourceFile) -> ConfigFile:
    config = ConfigFile(path=source.path, format="dockerfile")
    lines = TextLines(source.text)
    escape = _escape_character(lines)
    continuation = _continuation(escape)
    stage, stages = "stage:0", 0
    stage_names: dict[str, str] = {}  # AS name (lower case) -> its scope
    copies: dict[str, str] = {}  # basename in the image -> path in the build context (pip install -r)
    folder = os.path.dirname(source.real_path) if source.real_path else None
    notes: list[str] = []
    opener = file_opener(folder, os.path.dirname(source.path), copies, notes)
    number = 0
    while number < len(lines):
        text = lines[number].rstrip("\r")
        if not text.strip() or text.lstrip().startswith("#"):
            number += 1
            continue
        first = number + 1
        instruction, number = _join_continued(lines, number, continuation)
        match = _INSTRUCTION.match(instruction)
        if not match:
            continue
        keyword = match.group(1).upper()
        body = instruction[match.end():]
        heredocs = []
        if keyword in ("RUN", "COPY", "ADD") and "<<" in body:
            heredocs, number = _read_heredocs(body, lines, number)
        if keyword == "FROM":
            stages += 1
            stage = f"stage:{_stage_name(body) or stages - 1}"
            config.scopes[stage] = "image"
            _from(config, body, Cursor(lines, first, number), stage, stage_names)
            stage_names.setdefault(str(stages - 1), stage)
            if _stage_name(body):
                stage_names[_stage_name(body).lower()] = stage
        elif keyword == "RUN" and not heredocs and escape == "\\":
            reader = PinReader(config.nccl_sources, lambda word: config.loc(word.line, word.column), opener, notes)
            _run_pins(reader, lines, first, number, stage)
        elif keyword in ("COPY", "ADD") and not heredocs:
            _copy(config, body, Cursor(lines, first, number), stage, stage_names, copies, source.path)
        elif keyword == "ENV":
            # Its words are split from the physical lines again, not from the joined text: that and
            # the settings made from it (cut from the file's text) are not held together.
            skip, instruction = match.end(), None
            match = body = None
            _env(config, lambda: _pieces(lines, first - 1, number, continuation, skip), Cursor(lines, first, number),
                 stage, source.path, first)
        elif keyword == "RUN" and heredocs:
            _run_heredocs(config, source, lines, body, heredocs, f"{stage}#run@{first}", first)
        elif heredocs:
            _copy_heredocs(config, body, heredocs, stage)
    config.skipped.extend(SkippedLine(1, note) for note in notes)
    return config


def _from(config: ConfigFile, body: str, cursor: Cursor, stage: str, stage_names: dict[str, str]) -> None:
    """The image a stage starts from: an earlier stage (FROM <name>) or a base image."""
    from topolint.model.nccl_sources import NcclSource, image_source

    words = [w for w in body.split() if not w.startswith("--")]
    if not words:
        return
    image = words[0]
    line, column = cursor.find(image)
    loc = config.loc(line, column)
    if image.lower() in stage_names:
        config.nccl_sources.append(NcclSource("stage", image, loc, stage, ref=stage_names[image.lower()]))
    else:
        config.nccl_sources.append(image_source(image, loc, stage))


def _run_pins(reader: PinReader, lines: list[str], first: int, end: int, stage: str) -> None:
    """NCCL pins in a ``RUN`` command: its physical lines lexed as the shell would (BuildKit drops
    comment and empty lines inside a continuation: they become bare continuations here)."""
    from topolint.parsers._bash import statements

    chunk = [lines[i].rstrip("\r") for i in range(first - 1, min(end, len(lines)))]
    chunk = [text if i == 0 or (text.strip() and not text.lstrip().startswith("#")) else "\\"
             for i, text in enumerate(chunk)]
    found, _ = statements("\n".join(chunk), first)
    for statement in found:
        words: list = []
        tokens = statement.tokens
        if tokens and tokens[0].upper() == "RUN":
            tokens = tokens[1:]
            while tokens and tokens[0].startswith("--"):
                tokens = tokens[1:]
        for token in tokens + [None]:
            if token is None or token.op:
                reader.command(words, f"{stage}#run@{first}")
                words = []
            else:
                words.append(token)


def _copy(config: ConfigFile, body: str, cursor: Cursor, stage: str, stage_names: dict[str, str],
          copies: dict[str, str], path: str) -> None:
    """``COPY``/``ADD``: files copied into the stage by name (a script that then runs with the
    image's NCCL), and ``COPY --from=STAGE`` of NCCL's own files (that stage's NCCL)."""
    from topolint.model.nccl_sources import NcclSource

    try:
        words = json.loads(body) if body.strip().startswith("[") else shlex.split(body)
    except (ValueError, TypeError):
        return
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        return
    options = [w for w in words if w.startswith("--")]
    words = [w for w in words if not w.startswith("--")]
    if len(words) < 2:
        return
    *sources, destination = words
    origin = next((o.split("=", 1)[1] for o in options if o.startswith("--from=")), None)
    if origin is not None:
        ref = stage_names.get(origin.lower())
        for item in sources:
            if ref and "nccl" in item.lower():
                line, column = cursor.find(item)
                config.nccl_sources.append(NcclSource("copy-stage", item, config.loc(line, column), stage, ref=ref))
        return
    folder = os.path.dirname(path)
    for item in sources:
        if any(c in item for c in "*?[$") or item in (".", "./") or item.endswith("/") or "://" in item:
            continue  # folders and globs: not evidence that one file runs there
        name = os.path.basename(destination) if not destination.endswith("/") and len(sources) == 1 \
            else os.path.basename(item)
        copies[name] = item
        line, column = cursor.find(item)
        shown = os.path.normpath(os.path.join(folder, item)).replace(os.sep, "/")
        config.image_files.append((stage, shown, config.loc(line, column)))


def _continuation(escape: str) -> re.Pattern:
    """BuildKit's ``lineContinuationRegex`` (frontend/dockerfile/parser/parser.go
    ``SetEscapeToken``): the escape character at the end of a line, blanks after it allowed, and
    not itself escaped (``\\\\`` at the end is a literal backslash)."""
    e = re.escape(escape)
    return re.compile(rf"([^{e}]){e}[ \t]*$|^{e}[ \t]*$")


def _join_continued(lines: list[str], number: int, continuation: re.Pattern) -> tuple[str, int]:
    """One instruction from its physical lines, as BuildKit's ``Parse`` joins them: the escape
    character and the blanks after it go, the next line follows directly (its leading blanks
    kept), comment lines and empty lines inside the continuation are dropped. Returns the text and
    the index of the line after it."""
    start, continued = number, continuation.search(lines[number].rstrip("\r")) is not None
    number += 1
    if not continued:
        return next(_pieces(lines, start, number, continuation)), number
    while continued and number < len(lines):
        text = lines[number].rstrip("\r")
        number += 1
        if text.strip() and not text.lstrip().startswith("#"):
            continued = continuation.search(text) is not None
    # Joined as UTF-8 bytes, a byte a character: a list of every line's str is some 60 bytes a
    # line more (issue 20); surrogatepass round-trips any text.
    joined = bytearray()
    for text in _pieces(lines, start, number, continuation):
        joined += text.encode("utf-8", "surrogatepass")
    return joined.decode("utf-8", "surrogatepass"), number


def _pieces(lines, start: int, end: int, continuation: re.Pattern, skip: int = 0):
    """The parts of lines ``start`` to ``end`` (0-based, end excluded) one instruction joins, less
    its first ``skip`` characters: each line without its continuation, the comment and empty lines
    after the first dropped."""
    for index in range(start, end):
        text = lines[index].rstrip("\r")
        if index > start and (not text.strip() or text.lstrip().startswith("#")):
            continue
        text = _trim_continuation(text, continuation)[0]
        if skip:
            text, skip = text[skip:], max(0, skip - len(text))
        yield text


def _trim_continuation(text: str, continuation: re.Pattern) -> tuple[str, bool]:
    match = continuation.search(text)
    if match is None:
        return text, False
    return text[:match.start()] + (match.group(1) or ""), True


def _stage_name(body: str) -> str | None:
    words = body.split()
    lowered = [w.lower() for w in words]
    if "as" in lowered and lowered.index("as") + 1 < len(words):
        return words[lowered.index("as") + 1]
    return None


def _read_heredocs(body: str, lines: list[str], number: int) -> tuple[list[tuple], int]:
    """(delimiter match, first body line, body lines) of each ``<<EOF`` in ``body``; the bodies
    follow the instruction, each up to its delimiter line."""
    found = []
    for marker in _HEREDOC.finditer(body):
        strip_tabs, delimiter = bool(marker.group(1)), marker.group(3)
        start, content = number + 1, []
        while number < len(lines):
            line = lines[number].rstrip("\r")
            number += 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            content.append(line.lstrip("\t") if strip_tabs else line)
        found.append((marker, start, content))
    return found, number


def _run_heredocs(config: ConfigFile, source: SourceFile, lines: list[str], body: str, heredocs: list[tuple],
                  scope: str, first: int) -> None:
    from topolint.parsers.shell import parse_shell_into

    command = body[:heredocs[0][0].start()].strip()
    if command:  # RUN cmd <<EOF: the shell reads the command with its heredoc
        marker, start, content = heredocs[0]
        delimiter = marker.group(3)
        script = [body] + content + [delimiter]
        parse_shell_into(config, source, lines, script, start - 1, scope)
        return
    for marker, start, content in heredocs:
        interpreter = content[0][2:].split()[-1:] if content and content[0].startswith("#!") else ["sh"]
        if interpreter and os.path.basename(interpreter[0]) in ("sh", "bash", "dash"):
            parse_shell_into(config, source, lines, content, start, scope)
        elif content:
            config.skipped.append(SkippedLine(start, f"RUN heredoc body (lines {start}-{start + len(content) - 1}) "
                                                     f"is a {os.path.basename(interpreter[0])} script: not analysed"))


def _copy_heredocs(config: ConfigFile, body: str, heredocs: list[tuple], stage: str) -> None:
    words = [w for w in body.split() if not w.startswith("--")]
    destination = words[-1] if words and not words[-1].startswith("<<") else ""
    for marker, start, content in heredocs:
        if os.path.basename(destination) in NCCL_CONF_NAMES and len(heredocs) == 1:
            parse_literal_lines(content, config, start, scope=f"{stage}#nccl.conf:{destination}", how="nccl-conf",
                                expanded=not marker.group(2))
        elif content:
            config.skipped.append(SkippedLine(start, f"heredoc body (lines {start}-{start + len(content) - 1}) "
                                                     f"copied to {destination or '?'}: not analysed"))


def _env(config: ConfigFile, body, cursor: Cursor, stage: str, path: str, first: int) -> None:
    """``body()``: the instruction's text after ``ENV``, in the parts _pieces gives."""
    # Word by word, not shlex.split's whole list (issue 20: an ENV over thousands of lines); the
    # settings are kept once every word has split, as none are when one does not.
    words = _words(body())
    settings = config.settings
    kept = len(settings)
    try:
        first_word = next(words, None)
        if first_word is None:
            return
        if ASSIGNMENT.match(first_word):
            pairs = (match.groups() for match in map(ASSIGNMENT.match, _chain(first_word, words)) if match)
        else:  # legacy form: ENV NAME value with spaces
            for _ in words:
                pass  # the rest must split too
            value = "".join(body()).strip()[len(first_word):].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            pairs = iter([(first_word, value)])
        for name, raw in pairs:
            if not wanted(name):
                continue
            line, column = cursor.find(name)
            value, default = shell_value(name, raw)
            value_at, written = _written_value(cursor, line, column, name, value)
            settings.append(EnvSetting(name, value, config.loc(line, column), stage, "dockerfile-env", path,
                                       raw=f"{name}={raw}", default_only=default,
                                       value_at=config.loc(line, value_at) if written else None,
                                       value_written=written or "", text=cursor.lines))
    except _SplitError as exc:
        del settings[kept:]
        config.skipped.append(SkippedLine(first, f"cannot split the ENV instruction ({exc})"))


class _SplitError(Exception):
    pass


_BLANKS = " \t\r\n"  # shlex's whitespace
_PLAIN = re.compile(r"[^ \t\r\n'\"\\]+")
_DOUBLE_QUOTED = re.compile(r'[^"\\]+')


def _words(pieces):
    """shlex.split's words (posix, no comments), one at a time, of the text ``pieces`` make up:
    shlex reads a str through a StringIO, 4 bytes a character (issue 20)."""
    state, escaped, parts = " ", None, []  # state: between words, in one ("a"), in quotes
    for piece in pieces:
        i, end = 0, len(piece)
        while i < end:
            char = piece[i]
            if escaped is not None:  # the character after a backslash: in double quotes,
                if escaped == '"' and char not in '"\\':  # only " and \ are escaped
                    parts.append("\\")
                parts.append(char)
                state, escaped, i = escaped, None, i + 1
            elif state == "'":
                close = piece.find("'", i)
                parts.append(piece[i:] if close < 0 else piece[i:close])
                i, state = (end, state) if close < 0 else (close + 1, "a")
            elif state == '"':
                if char == '"':
                    state, i = "a", i + 1
                elif char == "\\":
                    escaped, i = '"', i + 1
                else:
                    run = _DOUBLE_QUOTED.match(piece, i)
                    parts.append(run.group())
                    i = run.end()
            elif char in _BLANKS:
                if state == "a":
                    yield "".join(parts)
                    state, parts = " ", []
                i += 1
            elif char == "\\":
                state, escaped, i = "a", "a", i + 1
            elif char in "'\"":
                state, i = char, i + 1
            else:
                run = _PLAIN.match(piece, i)
                parts.append(run.group())
                state, i = "a", run.end()
    if escaped is not None:
        raise _SplitError("No escaped character")
    if state in ("'", '"'):
        raise _SplitError("No closing quotation")
    if state == "a":
        yield "".join(parts)


def _chain(first: str, rest):
    yield first
    yield from rest


def _written_value(cursor: Cursor, line: int, column: int, name: str, value: str | None) -> tuple[int, str | None]:
    """Column and text of the value after ``NAME=`` or ``NAME value`` on the name's line."""
    if column < 1 or not 1 <= line <= len(cursor.lines):
        return 0, None
    text = cursor.lines[line - 1]
    index = column - 1 + len(name)
    if text[index:index + 1] == "=":
        index += 1
    else:  # the legacy form: blanks between name and value
        index = len(text) - len(text[index:].lstrip(" \t"))
    return index + 1, written_at(text, index, value)
