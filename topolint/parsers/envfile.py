"""`.env`, `.deepspeed_env` and `nccl.conf`-style files, each read the way its consumer reads it.

- **docker compose** (a project's ``.env``, ``env_file:``; the default when the consumer is not
  known): the rules of compose-go's ``dotenv/parser.go`` (compose-spec/compose-go@e70e961):
  an optional ``export`` prefix, ``KEY=value`` or ``KEY: value``; single quotes literal
  (``\\'`` escapes the quote), double quotes with ``\\n \\t \\" \\\\ \\$``-style escapes, both
  possibly over several lines and followed by anything (a trailing ``# comment``); an
  unquoted value ends at the line's end or at `` #``, trailing blanks dropped. Double-quoted and
  unquoted values are interpolated (``$V``, ``${V}``, ``${V:-d}``, ``${V-d}``, ``${V:?e}``,
  ``${V:+a}``, ``$$``) against the variables set earlier in the file only: the environment of
  the machine running topolint is never read, so a value that depends on another variable is
  not a literal, and ``${SELF:-d}`` is a default. A line compose rejects is listed with
  ``--verbose``.
- **docker run --env-file** (``parse_docker_env_file``): docker/cli ``pkg/kvfile/kvfile.go``
  (docker/cli@28f7560): leading blanks dropped, ``#`` only at the start of a line, the value
  taken as written after the first ``=`` (quotes and ``# text`` included).
- NCCL's own ``nccl.conf`` (``NCCL_CONF_FILE``, ``~/.nccl.conf``, ``/etc/nccl.conf``) and
  DeepSpeed's ``.deepspeed_env``: ``VAR=value`` lines, the value as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from topolint.inputs.source import SourceFile
from topolint.model.config import ConfigFile, EnvSetting, SkippedLine
from topolint.model.numbers import strtol
from topolint.parsers._lines import TextLines

_LINE = re.compile(r"^(\s*)(export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")
COMPOSE_NOTE = "read as docker compose reads a .env file (no other consumer seen)"


def parse_envfile(source: SourceFile, fmt: str = "envfile") -> ConfigFile:
    """A ``.env`` file as docker compose reads it."""
    config = ConfigFile(path=source.path, format=fmt)
    _ComposeEnv(source.text, config).parse()
    return config


def read_compose_env(source: SourceFile, scope: str, how: str) -> ConfigFile:
    """``source`` read as compose reads an env file, its settings in ``scope`` (a service's)."""
    config = ConfigFile(path=source.path, format="envfile")
    _ComposeEnv(source.text, config).parse()
    for setting in config.settings:
        setting.scope, setting.source = scope, how
    return config


def parse_docker_env_file(source: SourceFile) -> ConfigFile:
    """A ``docker run --env-file`` file: the value is everything after the first ``=``."""
    config = ConfigFile(path=source.path, format="docker-env-file")
    lines = TextLines(source.text)  # the settings' names and values are runs of it (model/config.py _Sliced)
    for number, text in enumerate(lines, 1):
        line = text.rstrip("\r")
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        name, has_value, value = stripped.partition("=")
        if not name or " " in name or "\t" in name:
            config.skipped.append(SkippedLine(number, "docker rejects this line: no variable name or a blank in it"))
            continue
        if name.startswith("NCCL_"):
            column = len(line) - len(stripped) + 1
            config.settings.append(EnvSetting(name, value if has_value else None, config.loc(number, column), "file",
                                              "docker-env-file", source.path, raw=stripped, passthrough=not has_value,
                                              value_at=config.loc(number, column + len(name) + 1),
                                              value_written=value if has_value else "", text=lines))
    return config


def parse_literal_lines(lines: Iterable[str], config: ConfigFile, first_line: int = 1, scope: str = "file",
                        how: str | None = None, path: str | None = None, expanded: bool = False,
                        loc=None, file_lines: TextLines | None = None) -> None:
    """``VAR=value`` lines with the value as written (nccl.conf, .deepspeed_env), from ``first_line``.
    ``expanded``: the lines come from an unquoted heredoc, so a ``$`` value is computed, not literal.
    ``file_lines``: the lines are the file's, its TextLines (the settings are then runs of it)."""
    path = path or config.path
    loc = loc or config.loc
    for number, text in enumerate(lines, first_line):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(text.rstrip("\r"))
        if not match:
            config.skipped.append(SkippedLine(number, "not a VAR=value line"))
            continue
        indent, export, name, raw = match.groups()
        if name.startswith("NCCL_"):
            column = len(indent) + len(export or "") + 1
            value = raw.strip()
            value_column = match.start(4) + len(raw) - len(raw.lstrip()) + 1
            if expanded and ("$" in value or "`" in value):
                value = None
            config.settings.append(EnvSetting(name, value, loc(number, column), scope, how or config.format,
                                              path, raw=stripped, value_at=loc(number, value_column),
                                              value_written=value or "", text=file_lines))


# NCCL's reader (src/misc/param.cc setEnvFile, NVIDIA/nccl@5067397) takes the bytes before the
# first '=' as the name, a byte-order mark included. compose-go (dotenv/godotenv.go
# parseWithLookup), docker's --env-file reader (pkg/kvfile) and BuildKit drop the mark.
NCCL_KEEPS_BOM = "NCCL's nccl.conf reader (src/misc/param.cc setEnvFile: the name is every byte before '=')"


def parse_nccl_conf(source: SourceFile) -> ConfigFile:
    config = ConfigFile(path=source.path, format="nccl-conf")
    if source.bom:  # one setting a line: line 1's is lost
        config.bom_kept[source.path] = (NCCL_KEEPS_BOM, len(source.text.split("\n", 1)[0]))
    lines = TextLines(source.text)
    parse_literal_lines(lines, config, file_lines=lines)
    return config


def parse_deepspeed_env(source: SourceFile) -> ConfigFile:
    config = ConfigFile(path=source.path, format="deepspeed-env")
    lines = TextLines(source.text)
    parse_literal_lines(lines, config, file_lines=lines)
    return config


# --- docker compose ---------------------------------------------------------------------------

_BLANK = "\t\v\f\r \x85\xa0"  # compose-go isSpace: blanks, not the newline
_EXPORT = re.compile(r"export[" + _BLANK + r"]+")
_KEY_CHARS = re.compile(r"[\w.\-\[\]]*", re.UNICODE)
_ESCAPES = re.compile(r"\\(?:[abcfnrtv$\"\\]|0[0-7]{0,3})")
_ESCAPE_VALUES = {"a": "\a", "b": "\b", "c": "c", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                  "\"": "\"", "\\": "\\"}


_SHARED = 256


class _Reject(Exception):
    pass


class _ComposeEnv:
    def __init__(self, text: str, config: ConfigFile):
        self.text = text
        self.lines = TextLines(text)  # the settings' names and values are runs of it (model/config.py _Sliced)
        self.config = config
        self.pos = 0
        self.values: dict[str, str | None] = {}  # what earlier lines set (None: not a literal)
        self.counted, self.line, self.line_start = 0, 1, 0  # newlines counted up to ``counted``
        # One str for a name or value the file writes again (NCCL_DEBUG in every section), each a
        # fresh slice otherwise; at most _SHARED of them, so a file of distinct names costs nothing more.
        self.shared: dict[str, str] = {}

    def share(self, text: str | None) -> str | None:
        if text is None:
            return None
        found = self.shared.get(text)
        if found is None:
            if len(self.shared) < _SHARED:
                self.shared[text] = text
            return text
        return found

    def _position(self, index: int) -> tuple[int, int]:
        """Line and column of ``index``; indices only grow, so counting stays linear."""
        newlines = self.text.count("\n", self.counted, index)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.counted, index) + 1
        self.counted = index
        return self.line, index - self.line_start + 1

    def parse(self) -> None:
        text = self.text
        while True:
            # A statement starts after blanks, newlines and comment lines (compose-go getStatementStart).
            while self.pos < len(text) and (text[self.pos] in _BLANK or text[self.pos] == "\n"):
                self.pos += 1
            if self.pos >= len(text):
                return
            if text[self.pos] == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
                continue
            statement = self.pos
            try:
                self._statement()
            except _Reject as exc:
                line, _ = self._position(statement)
                self.config.skipped.append(SkippedLine(
                    line, f"docker compose rejects the file here ({exc}): nothing from line {line} on is read"))
                return

    def _statement(self) -> None:
        text = self.text
        export = _EXPORT.match(text, self.pos)
        if export:
            self.pos = export.end()
        key_start = self.pos
        key_end = _KEY_CHARS.match(text, self.pos).end()
        end = key_end
        while end < len(text) and text[end] in _BLANK:
            end += 1
        if end < len(text) and text[end] not in "=:\n":
            raise _Reject(f"unexpected character {text[end]!r} in a variable name")
        key = text[key_start:key_end]
        if not key:
            raise _Reject("no variable name")
        if end >= len(text) or text[end] == "\n":  # KEY alone: taken from the environment
            self.pos = end
            self._setting(key, key_start, None, key, passthrough=True)
            self.values[key] = None
            return
        self.pos = end + 1
        while self.pos < len(text) and text[self.pos] in _BLANK:
            self.pos += 1
        quote = text[self.pos] if self.pos < len(text) and text[self.pos] in "'\"" else None
        value_start = self.pos
        if quote:
            value = self._quoted(quote)
        else:
            stop = text.find("\n", self.pos)
            stop = len(text) if stop < 0 else stop
            value = text[self.pos:stop].split(" #", 1)[0].rstrip(_BLANK)
            value_end, self.pos = self.pos + len(value), stop
        if quote:
            value_end = self.pos
        literal, default_only = (value, False) if quote == "'" else _interpolate(key, value, self.values)
        self._setting(key, key_start, literal, text[key_start:value_end], default_only=default_only,
                      written=(value_start, text[value_start:value_end]))
        self.values[key] = None if default_only else literal

    def _quoted(self, quote: str) -> str:
        """compose-go extractVarValue: a backslash before any character is kept unless it escapes the
        quote; double-quoted values then get escape sequences expanded."""
        text, i, chars = self.text, self.pos + 1, []
        escaped = False
        while i < len(text):
            char = text[i]
            if char != quote:
                if not escaped and char == "\\":
                    escaped = True
                elif escaped:
                    escaped = False
                    chars.append("\\" + char)
                else:
                    chars.append(char)
                i += 1
                continue
            if escaped:
                escaped = False
                chars.append(char)
                i += 1
                continue
            self.pos = i + 1
            value = "".join(chars)
            return _expand_escapes(value) if quote == '"' else value
        raise _Reject("unterminated quoted value")

    def _setting(self, name: str, index: int, value: str | None, raw: str, passthrough: bool = False,
                 default_only: bool = False, written: tuple[int, str] = (0, "")) -> None:
        """``written``: where the value's text starts and that text (quotes included)."""
        if not name.startswith("NCCL_"):
            return
        line, column = self._position(index)
        value_at, value_written = None, ""
        if written[1] and "\n" not in written[1]:  # one line: an edit can rewrite it
            value_at, value_written = self.config.loc(*self._position(written[0])), written[1]
        share = self.share
        self.config.settings.append(EnvSetting(share(name), share(value), self.config.loc(line, column), "file",
                                               self.config.format, self.config.path, raw=raw.strip(),
                                               default_only=default_only, passthrough=passthrough,
                                               value_at=value_at, value_written=share(value_written), text=self.lines))


def _expand_escapes(value: str) -> str:
    def one(match: re.Match) -> str:
        body = match.group(0)[1:]
        if body == "$":
            return "$$"  # compose-go: a literal $ for the interpolation that follows
        if body.startswith("0"):
            return chr(strtol(body[1:] or "0", 8)[0])  # an octal escape: \0 then up to 3 octal digits
        return _ESCAPE_VALUES[body]

    return _ESCAPES.sub(one, value)


_REFERENCE = re.compile(r"\$(?:\$|(?P<plain>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                        r"(?:(?P<op>:?[-?+])(?P<arg>[^{}$]*))?\})")


def _interpolate(name: str, value: str, known: dict[str, str | None]) -> tuple[str | None, bool]:
    """(value, default_only) as compose interpolates it when the environment sets nothing.

    A variable set earlier in the file is substituted; one that is not, or a nested form
    compose accepts but this does not follow (``${A:-${B}}``), makes the value not a literal,
    except ``${SELF:-d}``/``${SELF-d}`` of the variable itself, which is the default ``d``.
    """
    if "$" not in value:
        return value, False
    whole = _REFERENCE.fullmatch(value)
    if whole and whole.group("name") == name and whole.group("op") in ("-", ":-") and name not in known:
        return whole.group("arg"), True
    parts, last = [], 0
    for match in _REFERENCE.finditer(value):
        parts.append(value[last:match.start()])
        last = match.end()
        if match.group(0) == "$$":
            parts.append("\0")  # a literal $, kept apart from a stray one
            continue
        ref = match.group("plain") or match.group("name")
        current = known.get(ref)
        if current is None:  # not set earlier in the file, or not a literal there
            return None, False
        op, arg = match.group("op"), match.group("arg")
        if op in (":-", ":?") and current == "":
            if op == ":?":
                return None, False
            current = arg
        elif op in ("+", ":+"):
            current = arg if (current or op == "+") else ""
        parts.append(current)
    parts.append(value[last:])
    joined = "".join(parts)
    if "$" in joined.replace("\0", ""):  # a "$" that starts no reference compose knows
        return None, False
    return joined.replace("\0", "$"), False
