"""NET001: exists with its docs; it needs interfaces facts that no parser provides yet, so it does not
run (--verbose says why)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit

NEEDS = ("config", "interfaces")
UNAVAILABLE = {"interfaces": "no parser provides interface facts (ip addr, ethtool) yet"}


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    return iter(())
