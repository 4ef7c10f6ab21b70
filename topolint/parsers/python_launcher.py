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
    def __init__(self, config: ConfigFile, text: str, source: SourceFile | None = None):
        self.config = config
        self.source = source
        self.file_lines = text.split("\n")
        # Source lines as UTF-8 (ast's columns are byte offsets), split once: ast.get_source_segment
        # splits the whole file on every call, quadratic in a launcher with thousands of settings.
        self._lines = [line.encode("utf-8") for line in _LINE_BREAK.split(text)]

    def segment(self, node) -> str:
        """The source text of ``node``, as ast.get_source_segment gives it."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
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
        self.config.settings.append(EnvSetting(
            name, _const(value_node) if value_node is not None else None,
            self.config.loc(key_node.lineno, column), scope, how, self.config.path,
            raw=self.segment(value_node) if value_node is not None else "",
            default_only=default, **self.written(value_node)))

    def written(self, node) -> dict:
        """``value_at``/``value_written`` of a string literal on one line (``"v"``, ``'v'``, ``r"v"``)."""
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or node.end_lineno != node.lineno:
            return {}
        before = self._lines[node.lineno - 1][:node.col_offset].decode("utf-8", errors="replace")
        return {"value_at": self.config.loc(node.lineno, len(before) + 1), "value_written": self.segment(node)}

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
    config = ConfigFile(path=source.path, format="python")
    if "NCCL_" not in source.text:
        return config
    try:
        tree = ast.parse(source.text, filename=source.path)
    except SyntaxError as exc:
        raise InputError(source.path, exc.lineno or 1, f"Python syntax error: {exc.msg}", exc.offset or 0) from None
    except (RecursionError, MemoryError):
        # CPython's parser gives up on expressions nested thousands deep (a + a + ..., - - - 1).
        raise InputError(source.path, _too_deep_line(source.text),
                         "Python syntax error: expressions nested too deeply to parse") from None
    visitor = _Visitor(config, source.text, source)
    visitor.body(tree.body, "file")
    return config
