"""ROCE004: exists with its docs; it needs gids facts that no parser provides yet, so it does not
run (--verbose says why)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit

NEEDS = ("config", "gids")
UNAVAILABLE = {"gids": "no parser provides GID table facts (show_gids) yet"}


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    return iter(())
