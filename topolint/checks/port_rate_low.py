"""NET004: an Active port runs below an Active sibling of the same card, or below the rate a
site profile expects for its model.

Most RDMA NIC models are sold at several rates (ConnectX-6 Dx 25-200 GbE, ConnectX-7 as NDR and
NDR200, BlueField-3 at 200 or 400), so two ports of one model at different rates may be two
products. Without a profile a port is only compared with the ports of its own card (the same
system image GUID). Ports that are not Active keep a stale Rate and are never compared.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, port_hit, report_line
from topolint.engine.finding import Hit

NEEDS = ("ports",)
# Unset: the node's profile's values (profiles/params.py): its port_gbps (HCA name globs, as Azure's
# health checks state rates per port); NIC models are sold at several rates, so no profile states those.
PROFILE = {"expected_port_gbps": "port_gbps"}


class Parameters(CheckParameters):
    expected_gbps: dict[str, float] = {}  # site profile: NIC model ("MT4129") -> the rate its ports should run at
    expected_port_gbps: dict[str, float] = {}  # HCA name glob ("mlx5_ib*") -> the rate its ports should run at


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    active = [p for p in view.ports.values() if p.active and p.rate[0] is not None]
    # The ports of one card (system image GUID) and link layer, found by key: a node of many
    # HCAs compared every port with every other.
    cards: dict[tuple, list] = {}
    for port in active:
        if port.value("system_guid"):
            cards.setdefault((port.value("system_guid"), port.link_layer), []).append(port)
    for port in active:
        (rate, source), model = port.rate, port.value("model")
        expected, against = _expected(params, port, model)
        card = port.value("system_guid")
        best = _fastest_other(cards, (card, port.link_layer), port) if card else None
        where_rate = port.report_with("rate_gbps").at("rate") if port.value("rate_gbps") is not None \
            else port.link.at("speed")
        if expected is not None and rate < expected:
            hit = port_hit(context, port, where_rate, rate=f"{rate:g}", want=f"{expected:g}",
                           against=against)
        elif best is not None and rate < best.rate[0]:
            want = best.rate[0]
            hit = port_hit(context, port, where_rate, rate=f"{rate:g}", want=f"{want:g}",
                           against=f"{best.label} of the same card at {want:g} Gb/s")
            hit.evidence.append(_rate_line(best))
            hit.evidence.append(f"both ports have system image GUID {card}: one card, one product rate")
        else:
            continue
        hit.evidence[0:0] = [_rate_line(port), report_line(port, "state", "State: Active")]
        yield hit


def _fastest_other(cards: dict, key: tuple, port):
    """The first fastest port of the card other than ``port`` (what max() over its siblings
    gives), from the card's first two fastest: a card of many ports is not a scan per port."""
    fastest = cards.setdefault(("fastest",) + key, _two_fastest(cards.get(key, [])))
    first, second = fastest
    return second if first is port else first


def _two_fastest(ports: list) -> tuple:
    first = max(ports, key=lambda p: p.rate[0], default=None)
    second = max((p for p in ports if p is not first), key=lambda p: p.rate[0], default=None)
    return first, second


def _expected(params, port, model) -> tuple[float | None, str]:
    """The rate the port should run at: by NIC model, else by the first HCA glob its name matches."""
    expected = params.expected_gbps.get(model or "")
    if expected is not None:
        return expected, f"the site profile's {expected:g} Gb/s for {model}"
    for pattern, rate in params.expected_port_gbps.items():
        if fnmatch.fnmatchcase(port.hca, pattern):
            return rate, f"the profile's {rate:g} Gb/s for {pattern} ports"
    return None, ""


def _rate_line(port) -> str:
    if port.value("rate_gbps") is not None:
        return report_line(port, "rate_gbps", f"Rate: {port.value('rate_gbps'):g} (Active)")
    link = port.link
    return f"{link.at('speed').path}:{link.at('speed').line}: ethtool {port.netdev}: Speed: {link.speed_text} (the netdev of {port.label})"
