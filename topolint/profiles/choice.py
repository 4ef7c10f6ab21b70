"""Which profile a node gets (docs/profiles.md), in this order:

1. ``--profile NAME``: every node of the run.
2. ``[profiles]`` in the configuration: node-name globs to profile names, the first glob (in the
   file's order) that matches the node's name wins (``"gpu-h100-*" = "dgx-h100"``).
3. The profile the node's revealed shape matches (profiles/reveal.py): every value of the
   profile's ``match`` revealed and agreeing, every value of its ``also`` agreeing where revealed;
   of several, the one more revealed values agree with; a tie chooses none (the note names them),
   since a wrong profile would raise false findings.

A node with no profile is judged by nothing a profile states: the rules that read one do not run
on it, and ``--verbose`` says why.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field

from topolint.profiles.reveal import Shape, agrees, node_shape, revealed


@dataclass
class Chosen:
    profile: object | None  # profiles.model.Profile, None: no profile for the node
    how: str  # why this profile (or why none), for notes and evidence
    evidence: list[str] = field(default_factory=list)


def match(shape: Shape, profiles: list) -> Chosen:
    """The profile ``shape`` matches best, or a Chosen without one saying why."""
    scored = []
    for profile in profiles:
        if not all(revealed(k, shape) and agrees(k, profile.value(k), shape, profile) for k in profile.match):
            continue
        also = [k for k in profile.also if revealed(k, shape)]
        if not all(agrees(k, profile.value(k), shape, profile) for k in also):
            continue
        scored.append((len(profile.match) + len(also), profile, [*profile.match, *also]))
    if not scored:
        return Chosen(None, "no profile matches what the node reveals" + _revealed_text(shape))
    scored.sort(key=lambda item: (-item[0], item[1].name))
    best = [item for item in scored if item[0] == scored[0][0]]
    if len(best) > 1:
        names = ", ".join(item[1].name for item in best)
        return Chosen(None, f"what the node reveals matches {names} alike: no profile chosen"
                            f"{_revealed_text(shape)} (choose one with --profile or [profiles] in the configuration)")
    _, profile, keys = best[0]
    evidence = [f"{shape.values[k].where}" if k in shape.values else f"NIC names {', '.join(shape.nic_names[:4])}"
                for k in keys]
    return Chosen(profile, f"matched by what it reveals ({', '.join(keys)})", evidence)


def _revealed_text(shape: Shape) -> str:
    shown = [f"{k} {v.value}" for k, v in sorted(shape.values.items())]
    return f" ({'; '.join(shown)})" if shown else " (it reveals none of a profile's values)"


class ProfileChoice:
    """The run's profile choice: the library, ``--profile`` and the configuration's globs."""

    def __init__(self, library, named: str | None = None, globs: dict[str, str] | None = None,
                 globs_where: str = "the configuration"):
        self.library = library
        self.named = named
        self.globs = dict(globs or {})
        self.globs_where = globs_where
        self._matched: dict[str, Chosen] = {}

    def key(self) -> str:
        """What the result cache keys on: the choice and the profiles' own content."""
        parts = [self.named or "", repr(sorted(self.globs.items()))]
        for name in self.library.names():
            profile = self.library.raw[name]
            parts.append(f"{name}\0{profile.model_dump()!r}")
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    def for_node(self, node) -> Chosen:
        return self.for_name(node.name, lambda: node_shape(node))

    def for_name(self, name: str, shape_of) -> Chosen:
        """The choice for a node called ``name`` whose shape ``shape_of()`` gives when it is needed."""
        if self.named:
            return Chosen(self.library.get(self.named), f"--profile {self.named}")
        for pattern, profile in self.globs.items():
            if fnmatch.fnmatchcase(name, pattern):
                return Chosen(self.library.get(profile),
                              f'[profiles] "{pattern}" = "{profile}" in {self.globs_where}')
        found = self._matched.get(name)
        if found is None:
            found = self._matched[name] = match(shape_of(), self.library.matchable())
        return found
