"""``ip route`` and ``ip -j route`` into a RoutesFile: ``default via 10.0.0.1 dev eth0 ... src
10.0.0.5``, ``10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.5``; JSON objects with
``dst``, ``gateway``, ``dev`` and ``prefsrc``. Route types (``unreachable``, ``local``,
``broadcast``) and multipath ``nexthop`` lines are accepted; only unicast routes are kept."""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import Route, RoutesFile
from topolint.model.facts import build
from topolint.parsers import _json
from topolint.parsers._lines import PROMPT, at, malformed, numbered

ROUTE = re.compile(r"(?:(unicast|local|broadcast|unreachable|blackhole|prohibit|throw|anycast|multicast)\s+)?"
                   r"(default|[0-9A-Fa-f:.]+(?:/\d+)?)(\s.*)?")
NEXTHOP = re.compile(r"nexthop\s.*")
EXPECTED = "'DEST [via GW] dev IF ...'"


def _word(rest: str, key: str) -> str | None:
    match = re.search(r"\b%s (\S+)" % key, rest)
    return match.group(1) if match else None


def parse_ip_route(source: SourceFile) -> RoutesFile:
    if source.text.lstrip().startswith("["):
        return _parse_json(source)
    path = source.path
    result = build(RoutesFile, path=path, routes=[])
    for line in numbered(source.text):
        match = ROUTE.fullmatch(line.text)
        if match is None:
            if NEXTHOP.fullmatch(line.text) or PROMPT.match(line.text):
                continue
            raise malformed("ip route", path, line, EXPECTED)
        kind, rest = match.group(1), match.group(3) or ""
        if kind not in (None, "unicast") or (" dev " not in f" {rest} " and " via " not in f" {rest} "):
            continue
        result.routes.append(build(Route, destination=match.group(2), gateway=_word(rest, "via"),
                                   device=_word(rest, "dev"), source=_word(rest, "src"), loc=at(path, line)))
    return result


def _parse_json(source: SourceFile) -> RoutesFile:
    path = source.path
    data = _json.load(path, source.text, "ip -j route")
    if not isinstance(data, list):
        raise InputError(path, 1, "malformed ip -j route JSON: expected a list of routes")
    positions = _json.Positions(path, source.text, "dst")
    result = build(RoutesFile, path=path, routes=[])
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("dst"), str):
            raise InputError(path, 1, "malformed ip -j route JSON: a route without a \"dst\" string")
        loc = positions.take()
        if item.get("type", "unicast") != "unicast":
            continue
        text = lambda key: item.get(key) if isinstance(item.get(key), str) else None  # noqa: E731
        result.routes.append(build(Route, destination=item["dst"], gateway=text("gateway"), device=text("dev"),
                                   source=text("prefsrc"), loc=loc))
    return result
