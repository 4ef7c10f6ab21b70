"""Internal errors: a bug in a parser or a check that slipped through anyway.

The run goes on without that parser's or rule's result for that input; every other input is
still checked and written in every format. The run exits 2 (as ruff does for internal errors; 1
stays "findings"), prints one line per error naming the input and the rule and asking for a
report, and SARIF says ``executionSuccessful: false`` with a ``toolExecutionNotifications`` entry.
"""

from __future__ import annotations

from dataclasses import dataclass

REPORT_URL = "https://github.com/topolint/topolint/issues"


@dataclass(frozen=True)
class InternalError:
    input: str  # the file, or the node's files, being checked
    rule: str  # a rule code, "parser FORMAT", or the command
    error: str  # exception type and message, on one line

    def line(self) -> str:
        return (f"topolint: error: internal error in {self.rule} on {self.input}: {self.error}; this is a bug in "
                f"topolint, please report it at {REPORT_URL} (with the input if you can share it)")


class Described(Exception):
    """An exception already described: how a worker process (engine/parallel.py) sends one back."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def describe(exc: BaseException) -> str:
    """``KeyError: 'x'``, on one line and short, whatever the exception holds."""
    if isinstance(exc, Described):
        return exc.text
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def node_input(node) -> str:
    """A node's files as an internal error names them."""
    paths = sorted(node.sources) or [node.name]
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
