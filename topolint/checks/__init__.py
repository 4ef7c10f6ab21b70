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

from pydantic import BaseModel, ConfigDict


class CheckParameters(BaseModel):
    """Base of every check's Parameters. Schemas build on first validation only: a rule without
    parameter values takes the defaults without validating, which keeps start-up fast."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def load_check(name: str) -> ModuleType:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name.startswith("_"):
        raise ValueError(f"invalid check name {name!r}")
    try:
        return importlib.import_module(f"topolint.checks.{name}")
    except ModuleNotFoundError:
        raise ValueError(f"no check named {name!r} (expected module topolint/checks/{name}.py)") from None
