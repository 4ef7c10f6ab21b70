"""The progress line of ``topolint check`` on a terminal: how many nodes are checked, then the
cluster stage. Shown only on a terminal (never in a pipe, a file or CI logs) and only once a run
has taken more than a second, so quick runs print nothing; rewritten in place at most five times
a second and erased when the run ends, before the report."""

from __future__ import annotations

import sys
import time

DELAY = 1.0  # seconds before the line first appears
INTERVAL = 0.2  # seconds between rewrites


class RunProgress:
    def __init__(self, stream, clock=time.monotonic):
        self.stream, self.clock = stream, clock
        self.start = clock()
        self.shown_at: float | None = None
        self.visible = False

    def _show(self, text: str, force: bool = False) -> None:
        now = self.clock()
        if now - self.start < DELAY or (not force and self.shown_at is not None and now - self.shown_at < INTERVAL):
            return
        self.shown_at = now
        self.visible = True
        self.stream.write(f"\r\033[Ktopolint: {text}")
        self.stream.flush()

    def node(self, done: int, total: int) -> None:
        self._show(f"checked {done}/{total} nodes", force=done == total)

    def stage(self, text: str) -> None:
        self._show(text, force=True)

    def close(self) -> None:
        if self.visible:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.visible = False


def terminal_run_progress(stream=None) -> RunProgress | None:
    """A RunProgress on stderr when it is a terminal; None otherwise (and then nothing is written)."""
    stream = stream or sys.stderr
    try:
        return RunProgress(stream) if stream.isatty() else None
    except (AttributeError, ValueError):  # a closed or unusual stream
        return None
