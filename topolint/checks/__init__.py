"""Checks: the code behind rules. One module per check; rules/ instantiates them with data.

A rule definition names its check (``check = "gpu_nic_cross_socket"``), which is the module
``topolint.checks.gpu_nic_cross_socket``. Each module defines ``NEEDS`` (the inputs it reads),
``Parameters`` (a pydantic model of its typed parameters with defaults) and
``check(context, params)`` yielding Hits. Nothing registers itself on import, and a module
loads only when a rule uses it.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

from topolint.model.schema import ConfigDict
from topolint.model.schema import Model as BaseModel


class CheckParameters(BaseModel):
    """Base of every check's Parameters. Schemas build on first validation only: a rule without
    parameter values takes the defaults without validating, which keeps start-up fast."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


_NEEDS_LINE = re.compile(r"^NEEDS(?:[ \t]*:[^=\n]*)?[ \t]*=[ \t]*(\([^)\n]*\))[ \t]*(?:#.*)?$", re.M)


def check_needs(name: str) -> tuple[str, ...] | None:
    """A check's NEEDS read from its source without importing it (None: not a one-line literal,
    import the module to know). A config-only run so skips importing the checks of hardware."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(f"topolint.checks.{name}")
        with open(spec.origin, encoding="utf-8") as handle:
            found = _NEEDS_LINE.search(handle.read())
    except (ImportError, AttributeError, TypeError, OSError, ValueError):
        return None
    if found is None:
        return None
    import ast

    try:
        needs = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None
    if not (isinstance(needs, tuple) and all(isinstance(n, str) for n in needs)):
        return None
    return needs


def load_check(name: str) -> ModuleType:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name.startswith("_"):
        raise ValueError(f"invalid check name {name!r}")
    try:
        return importlib.import_module(f"topolint.checks.{name}")
    except ModuleNotFoundError:
        raise ValueError(f"no check named {name!r} (expected module topolint/checks/{name}.py)") from None
