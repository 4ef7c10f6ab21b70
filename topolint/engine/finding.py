"""Findings: what a check reports (Hit) and what reporters print (Finding)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from topolint.engine.fixes import Fix
from topolint.model.facts import Location


@dataclass(frozen=True)
class Related:
    """The other end of a path, or another line that matters."""

    location: Location
    entity: str
    message: str
    # When this is the other end of the path the finding is about (a GPU's nearest NIC): the
    # entities the path passes on the way, () for none named (the finding's entity to this one
    # as the model routes it), or a relay such as a PXN GPU. None: another line that matters.
    # Drawings draw such paths (topolint/drawing/).
    via: tuple[str, ...] | None = None


@dataclass
class Hit:
    """One offending entity, as a check sees it. The engine turns it into a Finding."""

    entity: str
    location: Location
    fields: dict[str, Any] = field(default_factory=dict)
    variant: str = "default"
    severity: str | None = None  # overrides the rule's severity for this hit
    evidence: list[str] = field(default_factory=list)
    related: list[Related] = field(default_factory=list)
    autofix: Fix | None = None  # edits that resolve it (engine/fixes.py)


@dataclass
class Finding:
    code: str
    slug: str
    category: str
    severity: str
    message: str
    path: str
    line: int
    column: int
    node: str
    entity: str
    fix: str
    related: list[Related] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    suppressed: bool = False
    suppression: str | None = None  # "inSource" or "external" when suppressed
    justification: str | None = None  # the reason a suppression comment or annotation gave
    fingerprint: str = ""
    autofix: Fix | None = None

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = entity_fingerprint(self.code, self.entity)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.entity, self.message)


def entity_fingerprint(code: str, entity: str, variant: str = "default") -> str:
    """Stable across edits: rule, entity and kind of problem, never the line."""
    key = f"{code}\0{entity}" + (f"\0{variant}" if variant != "default" else "")
    return hashlib.sha256(key.encode()).hexdigest()[:16]
