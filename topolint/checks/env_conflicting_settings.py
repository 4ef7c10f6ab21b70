"""ENV007: one variable set twice to different values in one scope (one control-flow path), a
duplicate Kubernetes env name or repeated Dockerfile ENV, or two settings that contradict."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import (
    ScopeIndex,
    related_setting,
    setting_evidence,
    setting_hit,
)
from topolint.engine.finding import Hit
from topolint.model.nccl_env import param_int

NEEDS = ("config",)
_DUPLICATES = ("k8s-env", "dockerfile-env", "compose-env", "configmap")


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    for config in context.configs:
        settings = [s for s in config.settings if not s.passthrough]
        # Each setting meets the first earlier one of its name and scope that it conflicts with:
        # found from what is kept per (name, scope), never by comparing every pair (a .env of
        # 1,000 identical lines was a million comparisons for no finding).
        earlier: dict[tuple[str, str], _Earlier] = {}
        for later in settings:
            if later.default_only:
                continue
            seen = earlier.setdefault((later.name, later.scope), _Earlier())
            hit = _against(seen, later)
            seen.add(later)
            if hit is not None:
                yield hit
        yield from _contradictions(settings)


class _Earlier:
    """The settings of one name and scope so far (defaults left out: they never conflict), kept
    as much as ``_against`` asks: the first of each kind, and the first literal value of each kind
    with the first literal that differs from it."""

    __slots__ = ("count", "first_other", "other_values", "file_values")

    def __init__(self) -> None:
        self.count = 0
        self.first_other: tuple[int, object] | None = None  # the first not from a compose env_file
        self.other_values = _FirstValues()  # literals not from a compose env_file
        self.file_values = _FirstValues()  # literals from a compose env_file

    def add(self, setting) -> None:
        order, self.count = self.count, self.count + 1
        if setting.source == "compose-env-file":
            if setting.literal:
                self.file_values.add(order, setting)
        else:
            if self.first_other is None:
                self.first_other = (order, setting)
            if setting.literal:
                self.other_values.add(order, setting)


class _FirstValues:
    """The first literal setting, and the first whose value differs from that one's: together
    they give the first setting whose value differs from any value asked about."""

    __slots__ = ("first", "first_different")

    def __init__(self) -> None:
        self.first: tuple[int, object] | None = None
        self.first_different: tuple[int, object] | None = None

    def add(self, order: int, setting) -> None:
        if self.first is None:
            self.first = (order, setting)
        elif self.first_different is None and setting.value != self.first[1].value:
            self.first_different = (order, setting)

    def differing_from(self, value) -> tuple[int, object] | None:
        if self.first is None or self.first[1].value != value:
            return self.first
        return self.first_different


def _against(seen: _Earlier, later) -> Hit | None:
    """The hit of ``later`` against the first earlier setting of its name and scope that it
    conflicts with (what comparing it with each earlier one in order finds), or None."""
    if later.source == "compose-env-file":  # later files and environment win by design
        return None
    if later.source == "compose-env":
        # environment: overrides an env_file value that differs; any other repeat is a duplicate.
        overridden = seen.file_values.differing_from(later.value) if later.literal else None
        first = min((c for c in (overridden, seen.first_other) if c is not None), key=lambda c: c[0], default=None)
        if first is None:
            return None
        if first is overridden:
            return _overridden(first[1], later)
        return _repeated(first[1], later)
    if later.source in _DUPLICATES:
        first = seen.first_other
    else:
        first = seen.other_values.differing_from(later.value) if later.literal else None
    return _repeated(first[1], later) if first is not None else None


def _repeated(earlier, later) -> Hit:
    differ = earlier.literal and later.literal and earlier.value != later.value
    hit = setting_hit(later, earlier_value=earlier.value if earlier.value is not None else "(computed)",
                      earlier_line=earlier.loc.line)
    hit.variant = "default" if differ else "duplicate"
    hit.evidence.insert(0, setting_evidence(earlier))
    hit.related.append(related_setting(earlier, f"first set here to {earlier.value}"))
    return hit


def _overridden(earlier, later) -> Hit:
    """compose's ``environment:`` overrides the service's ``env_file`` (compose-go types/project.go
    ``WithServicesEnvironmentResolved``): worth knowing, not wrong."""
    hit = setting_hit(later, earlier_value=earlier.value, earlier_line=earlier.loc.line, earlier_path=earlier.loc.path)
    hit.variant, hit.severity = "env-file-overridden", "info"
    hit.evidence.insert(0, setting_evidence(earlier))
    hit.related.append(related_setting(earlier, f"{earlier.name}={earlier.value} in env_file, not used"))
    return hit


_PAIRS = [
    # (a, a's value test, b, b's value test, variant)
    ("NCCL_P2P_DISABLE", lambda v: v == "1", "NCCL_P2P_LEVEL", lambda v: True, "p2p"),
    # NCCL_IB_DISABLE=1 with NCCL_NET=IB is NET007's (NCCL fails at init): one finding per cause.
]


def _contradictions(settings) -> Iterator[Hit]:
    # Each side's settings by name, then by scope (ScopeIndex): what a setting can meet is read
    # from its related scopes, not from a scan of the other side per setting (n P2P_DISABLE lines
    # and n P2P_LEVEL lines were n * n steps). What is reported is what comparing every pair in
    # file order reports, after the run keeps one finding per setting: its first match.
    named: dict[str, list] = {}
    for s in settings:
        if s.literal:
            named.setdefault(s.name, []).append(s)
    for a_name, a_test, b_name, b_test, variant in _PAIRS:
        sides = [s for s in named.get(b_name, ()) if b_test(s.value.strip())]
        if not sides:
            continue
        index, reported = ScopeIndex(sides), set()
        for a in (s for s in named.get(a_name, ()) if a_test(s.value.strip())):
            b = index.first(a.scope)
            if b is not None and id(b) not in reported:  # a's first b; a later a of it adds nothing
                reported.add(id(b))
                hit = setting_hit(b, other=a.name, other_value=a.value, earlier_line=a.loc.line,
                                  earlier_value=a.value)
                hit.variant = variant
                hit.evidence.insert(0, setting_evidence(a))
                hit.related.append(related_setting(a, f"{a.name}={a.value} wins"))
                yield hit
    # Both are NCCL_PARAMs (ncclLoadParam); only clean integers are compared: a value NCCL reads
    # in part is ENV invalid-value's finding, not a range conflict.
    for low, high in (("NCCL_MIN_CTAS", "NCCL_MAX_CTAS"), ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS")):
        lows = [(s, param_int(s.value)) for s in named.get(low, ())]
        index = _Minima([_Numbered(s, v, i) for i, (s, v) in enumerate(p for p in lows if p[1] is not None)])
        found = []  # (a's place, b's place, a, b): each b against the first a above it
        for place, b in enumerate(named.get(high, ())):
            value = param_int(b.value)
            if value is None:
                continue
            first = index.first_above(b.scope, value)
            if first is not None:
                found.append((first[0], place, first[1], b))
        for _, _, a, b in sorted(found, key=lambda f: f[:2]):  # the order comparing pairs yields them
            hit = setting_hit(b, other=a.name, other_value=a.value, earlier_line=a.loc.line,
                              earlier_value=a.value)
            hit.variant = "range"
            hit.evidence.insert(0, setting_evidence(a))
            hit.related.append(related_setting(a, f"{a.name}={a.value}"))
            yield hit


class _Numbered:
    """A MIN setting with its integer, indexed by scope."""

    __slots__ = ("setting", "value", "scope", "order")

    def __init__(self, setting, value: int, order: int) -> None:
        self.setting, self.value, self.scope, self.order = setting, value, setting.scope, order


class _Minima(ScopeIndex):
    """MIN settings by scope, answering the first related one above a value: each scope's
    settings carry their running maximum (kept per scope), searched in the scopes around the
    asked one; the scopes inside it are merged once per asked scope. No scope's answer copies
    what the scopes around it hold (n prefixed commands under n job-level MINs)."""

    def __init__(self, items: list):
        super().__init__(items)
        self._running: dict[str, list[int]] = {}  # scope -> running maxima of its own items
        self._inside: dict[str, tuple[list[int], list[int]]] = {}  # asked scope -> (places, running maxima)

    def first_above(self, scope: str, value: int):
        """(place, setting) of the first related item whose value is above ``value``, or None."""
        found = [self._above(self.by_scope[s], self._maxima(s), value) for s in self.chain(scope)]
        inside = self._inside.get(scope)
        if inside is None:
            places = sorted(i for s in self.inner(scope) for i in self.by_scope[s])
            inside = self._inside[scope] = (places, self._rising(places))
        found.append(self._above(*inside, value))
        place = min((p for p in found if p is not None), default=None)
        if place is None:
            return None
        item = self.items[place]
        return item.order, item.setting

    def _maxima(self, scope: str) -> list[int]:
        running = self._running.get(scope)
        if running is None:
            running = self._running[scope] = self._rising(self.by_scope[scope])
        return running

    def _rising(self, places: list[int]) -> list[int]:
        highest, running = None, []
        for i in places:
            value = self.items[i].value
            highest = value if highest is None or value > highest else highest
            running.append(highest)
        return running

    @staticmethod
    def _above(places: list[int], running: list[int], value: int) -> int | None:
        at = bisect.bisect_right(running, value)  # running maxima only rise: the first above value
        return places[at] if at < len(running) else None
