"""One module per command (`check`, `rules`/`rule`, ...): each holds the logic behind a function a
Python caller can use, plus a thin `cli(args)` that cli.py dispatches to.

Exit codes: 0 clean, 1 findings at or above the fail level, 2 usage error or unreadable input.
"""

from __future__ import annotations

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(ValueError):
    """Options, configuration or rule definitions that cannot be used; the CLI exits 2 with it."""
