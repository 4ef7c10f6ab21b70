"""Which NCCL releases read an environment variable, from NCCL's own sources at its release tags
(topolint/data/nccl_versions/env_reads.tsv, derived by scripts/build_nccl_versions.py).

A version between two release tags (an NGC build such as 2.12.9) is judged only where both
neighbouring tags agree: "not read yet" needs a version at or before the last tag that did not
read the name, "no longer read" one at or after the first tag that stopped. Versions before the
oldest open-source tag (2.3.5) are never judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from topolint.model.nccl_version import NcclVersion

TABLE = Path(__file__).resolve().parent.parent / "data" / "nccl_versions" / "env_reads.tsv"


@dataclass(frozen=True)
class ReadRange:
    """One run of consecutive release tags that read ``name``."""

    name: str
    first: NcclVersion
    last: NcclVersion
    before: NcclVersion | None  # the newest tag before ``first`` that does not read it
    after: NcclVersion | None  # the oldest tag after ``last`` that does not read it
    source: str  # NCCL file that reads it at ``first``
    tag: str

    @property
    def span(self) -> str:
        return f"{self.first}" if self.first == self.last else f"{self.first}-{self.last}"


def _version(text: str) -> NcclVersion | None:
    return None if text == "-" else NcclVersion.parse(text)


@lru_cache(maxsize=1)
def table() -> dict[str, tuple[ReadRange, ...]]:
    ranges: dict[str, list[ReadRange]] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or line.startswith("name\t") or not line.strip():
            continue
        name, first, last, before, after, source, tag = line.split("\t")
        ranges.setdefault(name, []).append(ReadRange(name, NcclVersion.parse(first), NcclVersion.parse(last),
                                                     _version(before), _version(after), source, tag))
    return {name: tuple(found) for name, found in ranges.items()}


def oldest_tag() -> NcclVersion:
    return min(r.first for ranges in table().values() for r in ranges if r.before is None)


@dataclass(frozen=True)
class NotRead:
    """``name`` is not read by ``version``: "not-yet" (first read later) or "no-longer"."""

    name: str
    version: NcclVersion
    state: str
    read_by: str  # the releases that read it, e.g. "2.17.1-2.30.7"
    ranges: tuple[ReadRange, ...]


def not_read(name: str, version: NcclVersion) -> NotRead | None:
    """Why ``version`` does not read ``name``, or None when it does or the table cannot say
    (a name it does not hold, a version it does not cover)."""
    ranges = table().get(name)
    if not ranges or version < oldest_tag():
        return None
    if any(r.first <= version <= r.last for r in ranges):
        return None
    ahead = [r for r in ranges if r.before is not None and version <= r.before]
    behind = [r for r in ranges if r.after is not None and version >= r.after]
    if len(ahead) + len(behind) != len(ranges):
        return None  # between a tag that did not read it and one that did: not settled
    state = "no-longer" if behind else "not-yet"
    return NotRead(name, version, state, ", ".join(r.span for r in ranges), ranges)


# Value syntaxes that changed between releases, each held to NCCL's parser at the tags named.
_PER_COLLECTIVE_FROM = NcclVersion(2, 24, 3)  # src/graph/tuning.cc parseList(str, prefixElems, ...) at v2.24.3-1
_PER_COLLECTIVE_BEFORE = NcclVersion(2, 23, 4)  # src/graph/tuning.cc parseList(str, elems, ...) at v2.23.4-1


def value_problem(name: str, value: str, versions: tuple[NcclVersion, ...]) -> str | None:
    """Why every one of ``versions`` misreads ``value``, where the syntax NCCL reads changed between
    releases; None when one of them reads it (or the value is not of such a variable)."""
    if name in ("NCCL_ALGO", "NCCL_PROTO") and (":" in value or ";" in value) and versions \
            and all(v <= _PER_COLLECTIVE_BEFORE for v in versions):
        what = "algorithm" if name == "NCCL_ALGO" else "protocol"
        return (f"{value!r} uses the per-collective form 'func:list;func:list' that NCCL reads from "
                f"{_PER_COLLECTIVE_FROM}: up to {_PER_COLLECTIVE_BEFORE} NCCL splits the value at commas only and "
                f"compares each piece with the {what} names (src/graph/tuning.cc parseList at v2.23.4-1), so a piece "
                f"with ':' matches none and enables nothing")
    return None
