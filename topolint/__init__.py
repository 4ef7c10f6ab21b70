"""topolint: static topology analyzer and NCCL config linter for multi-GPU training.

``topolint.check(paths, select=..., ...)`` is the Python API (topolint/api.py); it loads on
first use, so ``import topolint`` (and the command line's start-up) stays cheap.
"""

__version__ = "0.1.0"

_API = ("check", "CheckResult", "Summary", "Finding", "Related", "UsageError")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from topolint import api

        return getattr(api, name)
    raise AttributeError(f"module 'topolint' has no attribute {name!r}")
