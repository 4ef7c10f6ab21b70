"""Hostlist expressions in a parsed input: topolint/model/hostlist.py's one expansion, its
errors as TL001 at the expression's line and column."""

from __future__ import annotations

from topolint.inputs.source import InputError
from topolint.model.hostlist import Budget, HostlistError, Hosts, count_hosts, expand


def hosts_at(expression: str, path: str, line: int, column: int, budget: Budget, what: str) -> list[str]:
    """The hosts of ``expression``, written at ``line``:``column`` (1-based) of ``path``."""
    try:
        return expand(expression, budget)
    except HostlistError as exc:
        raise _error(expression, path, line, column, what, exc) from None


def hosts_kept(expression: str, path: str, line: int, column: int, budget: Budget, what: str) -> tuple[Hosts, int]:
    """``hosts_at`` kept as the expression (model/hostlist.py Hosts), and how many: what a parse
    holds of a ``Nodes=gpu[001-128]`` is the text, not a string per host."""
    try:
        return Hosts(expression), count_hosts(expression, budget)
    except HostlistError as exc:
        raise _error(expression, path, line, column, what, exc) from None


def _error(expression: str, path: str, line: int, column: int, what: str, exc: HostlistError) -> InputError:
    at = column + max(exc.column - 1, 0) if column else 0
    return InputError(path, line, f"malformed {what}: hostlist {_shown(expression)}: {exc.message}", at)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
