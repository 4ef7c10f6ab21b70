"""Findings: what a check reports (Hit) and what reporters print (Finding)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
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


MAX_GROUP_MEMBERS = 20  # members a group lists; ``total`` counts them all
MAX_EVIDENCE = 12  # evidence lines a grouped finding keeps; one more line counts the rest


@dataclass(frozen=True)
class FindingGroup:
    """One finding standing for many (kind "members": entities or pairs of one node), or one
    finding repeated on many nodes (kind "nodes", the fleet stage). Findings that would grow with
    pairs are grouped instead, so a run's output stays linear in its input.

    For kind "members" the finding's entity (and so its fingerprint) is the first member's:
    baselines and suppressions written before the grouping still match."""

    id: str  # stable across runs and machines: a hash of the kind, the key and every member
    kind: str  # "members" or "nodes"
    members: tuple[str, ...]  # the listed members, in a deterministic order, at most MAX_GROUP_MEMBERS
    total: int  # how many members there are in all, listed or not

    @classmethod
    def of(cls, kind: str, members: Iterable[str], key: str = "", limit: int = MAX_GROUP_MEMBERS) -> FindingGroup:
        """The group of ``members`` (in the order given, duplicates dropped); ``key`` tells apart
        groups of the same members (a rule code, a problem)."""
        every = list(dict.fromkeys(members))
        if not every:
            raise ValueError("a finding group needs at least one member")
        digest = hashlib.sha256(f"{kind}\0{key}".encode())
        for member in every:
            digest.update(b"\0" + member.encode())
        return cls(id=digest.hexdigest()[:16], kind=kind, members=tuple(every[:limit]), total=len(every))

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "members": list(self.members), "total": self.total}

    @classmethod
    def from_dict(cls, data: dict | None) -> FindingGroup | None:
        if data is None:
            return None
        return cls(id=data["id"], kind=data["kind"], members=tuple(data["members"]), total=data["total"])


def capped_evidence(items: Iterable[str], limit: int = MAX_EVIDENCE, noun: str = "more") -> list[str]:
    """At most ``limit`` evidence lines, then one line that counts the rest."""
    kept: list[str] = []
    rest = 0
    for item in items:
        if len(kept) < limit:
            kept.append(item)
        else:
            rest += 1
    if rest:
        kept.append(f"... and {rest} {noun} not listed")
    return kept


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
    group: FindingGroup | None = None  # one hit for many members; entity must be the first member


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
    group: FindingGroup | None = None

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = entity_fingerprint(self.code, self.entity)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.entity, self.message)


def entity_fingerprint(code: str, entity: str, variant: str = "default") -> str:
    """Stable across edits: rule, entity and kind of problem, never the line."""
    key = f"{code}\0{entity}" + (f"\0{variant}" if variant != "default" else "")
    return hashlib.sha256(key.encode()).hexdigest()[:16]
