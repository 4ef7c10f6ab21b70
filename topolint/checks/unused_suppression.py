"""TL004: a suppression that suppresses nothing.

The findings come from the suppression pass (topolint/engine/suppression.py), which runs after
every rule and knows which rules ran on each file; this module only gives the rule its
(empty) parameters, as every check does.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit

NEEDS: tuple[str, ...] = ()


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    return iter(())
