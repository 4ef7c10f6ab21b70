"""Python launchers: ``os.environ[...] = ...``, ``os.environ.setdefault``, ``os.environ.update``,
and shell commands written as strings (``'export NCCL_DEBUG=WARN; '``, ``'NCCL_X=1 deepspeed'``).

Read with ``ast`` (never executed). String and number constants are literal values; anything
else is recorded as a setting whose value is unknown. ``if``/``else`` bodies and functions are
scopes of their own, as in shell scripts. A string constant that sets an ``NCCL_*`` variable the
way a shell does (an ``export`` or a ``NAME=value`` word) is a command the launcher hands to a
shell (``subprocess``, ``pdsh``, ``ssh``): it is read as a script of its own
(``.../shell@LINE``), the names found on the lines the literal spans.
"""

from __future__ import annotations

import ast
import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.config import ConfigFile, EnvSetting
from topolint.parsers._lines import TextLines

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what ast counts as a line break (not \f or \v)


def _is_environ(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (isinstance(node, ast.Name) and node.id == "environ")


def _const(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool):
        return str(node.value)
    return None


# A shell assignment of an NCCL variable inside a string: at the start or after a blank, ; & |.
_SHELL_SETTING = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?NCCL_[A-Za-z0-9_]*=")


class _Visitor:
    def __init__(self, config: ConfigFile, text: str, source: SourceFile | None = None, lines: bool = True):
        self.config = config
        self.source = source
        self.text = text
        self.text_lines = TextLines(text)  # the settings' names and values are runs of it (model/config.py _Sliced)
        self._file_lines: list[str] | None = None  # split when a shell string needs them
        # Source lines as UTF-8 (ast's columns are byte offsets), split once: ast.get_source_segment
        # splits the whole file on every call, quadratic in a launcher with thousands of settings.
        if lines:  # else each batch's, given to read()
            self.read(text, 0)

    def read(self, text: str, first: int) -> None:
        """The lines of the text being read (the file or one batch of it), ``first`` lines into the file."""
        self._lines = [line.encode("utf-8") for line in _LINE_BREAK.split(text)]
        self._first = first

    @property
    def file_lines(self) -> list[str]:
        if self._file_lines is None:
            self._file_lines = self.text.split("\n")
        return self._file_lines

    def segment(self, node) -> str:
        """The source text of ``node``, as ast.get_source_segment gives it."""
        first, last = node.lineno - 1 - self._first, (node.end_lineno or node.lineno) - 1 - self._first
        end = node.end_col_offset if node.end_col_offset is not None else len(self._lines[last])
        if first == last:
            return self._lines[first][node.col_offset:end].decode("utf-8", errors="replace")
        parts = [self._lines[first][node.col_offset:], *self._lines[first + 1:last], self._lines[last][:end]]
        return "\n".join(p.decode("utf-8", errors="replace") for p in parts)

    def add(self, key_node, value_node, scope: str, how: str, default: bool = False) -> None:
        name = _const(key_node)
        if not name or not name.startswith("NCCL_"):
            return
        column = key_node.col_offset + 1 + (1 if isinstance(key_node, ast.Constant) and isinstance(key_node.value, str) else 0)
        raw = self.segment(value_node) if value_node is not None else ""
        self.config.settings.append(EnvSetting(
            name, _const(value_node) if value_node is not None else None,
            self.config.loc(key_node.lineno, column), scope, how, self.config.path,
            raw=raw, default_only=default, text=self.text_lines, **self.written(value_node, raw)))

    def written(self, node, raw: str) -> dict:
        """``value_at``/``value_written`` of a string literal on one line (``"v"``, ``'v'``, ``r"v"``):
        its text is ``raw``, the one string for both."""
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or node.end_lineno != node.lineno:
            return {}
        before = self._lines[node.lineno - 1 - self._first][:node.col_offset].decode("utf-8", errors="replace")
        return {"value_at": self.config.loc(node.lineno, len(before) + 1), "value_written": raw}

    def body(self, statements, scope: str) -> None:
        for statement in statements:
            self.statement(statement, scope)

    def statement(self, node, scope: str) -> None:
        if isinstance(node, ast.If):
            self.expressions(node.test, scope)
            self.body(node.body, f"{scope}/if@{node.lineno}")
            if node.orelse:
                self.body(node.orelse, f"{scope}/else@{node.lineno}")
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.body(node.body, f"{scope}/fn:{node.name}")
            return
        if isinstance(node, ast.ClassDef):
            self.body(node.body, f"{scope}/class:{node.name}")
            return
        if isinstance(node, ast.Try):
            self.body(node.body, scope)
            for handler in node.handlers:
                self.body(handler.body, f"{scope}/except@{handler.lineno}")
            self.body(node.orelse, scope)
            self.body(node.finalbody, scope)
            return
        if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            self.body(node.body, scope)
            self.body(getattr(node, "orelse", []), scope)
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring or a bare string: text, not a command
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and _is_environ(target.value):
                    self.add(target.slice, node.value, scope, "os.environ")
        self.expressions(node, scope)

    def shell_string(self, node, scope: str) -> None:
        """A string constant that is a shell command setting NCCL variables, read as one."""
        from topolint.parsers.shell import parse_shell_into

        if self.source is None or node.end_lineno is None:
            return
        start, end = node.lineno, node.end_lineno
        parse_shell_into(self.config, self.source, self.file_lines, [node.value], start, f"{scope}/shell@{start}",
                         span=(start, end))

    def expressions(self, node, scope: str) -> None:
        for child in ast.walk(node):
            if isinstance(child, ast.Constant) and isinstance(child.value, str) and "NCCL_" in child.value \
                    and _SHELL_SETTING.search(child.value):
                self.shell_string(child, scope)
                continue
            if not (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)):
                continue
            owner, method = child.func.value, child.func.attr
            if method in ("setdefault",) and _is_environ(owner) and child.args:
                self.add(child.args[0], child.args[1] if len(child.args) > 1 else None, scope, "os.environ.setdefault", True)
            elif method == "update" and _is_environ(owner):
                for arg in child.args:
                    if isinstance(arg, ast.Dict):
                        for key, value in zip(arg.keys, arg.values):
                            if key is not None:
                                self.add(key, value, scope, "os.environ.update")
                for keyword in child.keywords:
                    if keyword.arg and keyword.arg.startswith("NCCL_"):
                        fake = ast.Constant(keyword.arg)
                        fake.lineno, fake.col_offset = keyword.lineno, keyword.col_offset - 1
                        self.add(fake, keyword.value, scope, "os.environ.update")
            elif method == "putenv" and isinstance(owner, ast.Name) and owner.id == "os" and len(child.args) == 2:
                self.add(child.args[0], child.args[1], scope, "os.putenv")


def _too_deep_line(text: str) -> int:
    """The line on which the parser's nesting gives out: the first line whose text up to it fails the
    same way (the parser recurses as it reads, so a cut expression that deep fails alike). A
    bisection: a few parses of a prefix, on this error path only."""
    lines = text.split("\n")
    low, high = 1, len(lines)  # the whole text fails; find the shortest prefix that does
    while low < high:
        middle = (low + high) // 2
        try:
            ast.parse("\n".join(lines[:middle]))
            deep = False
        except SyntaxError:
            deep = False
        except (RecursionError, MemoryError):
            deep = True
        if deep:
            high = middle
        else:
            low = middle + 1
    return low


def parse_python(source: SourceFile) -> ConfigFile:
    if "NCCL_" not in source.text:
        return ConfigFile(path=source.path, format="python")
    streamed = _streamed(source)
    if streamed is not None:
        return streamed
    config = ConfigFile(path=source.path, format="python")
    _Visitor(config, source.text, source).body(_whole(source.text, source.path).body, "file")
    return config


# A tree is about 130 bytes per byte of text (issue 20): a long launcher is read a few KiB of
# top-level statements at a time, each batch's tree dropped once read, never one whole-file tree.
_BATCH = 1024
# Before a line at column 0 that can start a statement of its own (not a block's else, not after a decorator).
_CUT = re.compile(r"(?:\r\n|\r|\n)(?![ \t\f#\r\n]|(?:else|elif|except|finally)\b)")


def _streamed(source: SourceFile) -> ConfigFile | None:
    """The launcher read batch by batch, cut before a line at column 0. A batch that parses whole
    ends with no bracket, string or line continuation open and no block waiting for its else, so
    the batches' statements are the file's. None (read the file whole, for exactly the parser's
    error or tree) where the rest of the file does not parse, or a batch names ``__future__``
    after the first (a future import is only valid at the top of the whole file; barry_as_FLUFL
    changes how the rest parses)."""
    text = source.text
    if len(text) <= 2 * _BATCH or "barry_as_FLUFL" in text:
        return None
    config = ConfigFile(path=source.path, format="python")
    visitor = _Visitor(config, text, source, lines=False)
    start, line = 0, 0
    while start < len(text):
        size = _BATCH
        while True:  # a cut inside a string fails: twice the text then, so the retries stay linear
            cut = _CUT.search(text, start + size)
            while cut and text[text.rfind("\n", 0, cut.start()) + 1] == "@":  # keep a decorator with its def
                cut = _CUT.search(text, cut.end())
            end = cut.end() if cut else len(text)
            piece = text[start:end]
            if start and "__future__" in piece:
                return None
            try:
                tree = ast.parse(piece, filename=source.path)
                break
            except (SyntaxError, RecursionError, MemoryError, ValueError):
                if end == len(text):
                    return None  # a real error: the whole file's parse says it
                size = 2 * (end - start)
        visitor.read(piece, line)
        del piece
        ast.increment_lineno(tree, line)
        visitor.body(tree.body, "file")
        del tree
        line += len(_LINE_BREAK.findall(text, start, end))
        start = end
    return config


def _whole(text: str, path: str):
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise InputError(path, exc.lineno or 1, f"Python syntax error: {exc.msg}", exc.offset or 0) from None
    except (RecursionError, MemoryError):
        # CPython's parser gives up on expressions nested thousands deep (a + a + ..., - - - 1).
        raise InputError(path, _too_deep_line(text),
                         "Python syntax error: expressions nested too deeply to parse") from None
