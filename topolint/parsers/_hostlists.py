"""Hostlist expressions in a parsed input: topolint/model/hostlist.py's one expansion, its
errors as TL001 at the expression's line and column."""

from __future__ import annotations

from topolint.inputs.source import InputError
from topolint.model.hostlist import Budget, HostlistError, expand


def hosts_at(expression: str, path: str, line: int, column: int, budget: Budget, what: str) -> list[str]:
    """The hosts of ``expression``, written at ``line``:``column`` (1-based) of ``path``."""
    try:
        return expand(expression, budget)
    except HostlistError as exc:
        at = column + max(exc.column - 1, 0) if column else 0
        raise InputError(path, line, f"malformed {what}: hostlist {_shown(expression)}: {exc.message}", at) from None


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
