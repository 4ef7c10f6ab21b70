"""NET004: an Active port runs below an Active sibling of the same card, or below the rate a
site profile expects for its model.

Most RDMA NIC models are sold at several rates (ConnectX-6 Dx 25-200 GbE, ConnectX-7 as NDR and
NDR200, BlueField-3 at 200 or 400), so two ports of one model at different rates may be two
products. Without a profile a port is only compared with the ports of its own card (the same
system image GUID). Ports that are not Active keep a stale Rate and are never compared.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, port_hit, report_line
from topolint.engine.finding import Hit

NEEDS = ("ports",)


class Parameters(CheckParameters):
    expected_gbps: dict[str, float] = {}  # site profile: NIC model ("MT4129") -> the rate its ports should run at


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    active = [p for p in view.ports.values() if p.active and p.value("rate_gbps") is not None]
    for port in active:
        rate, model = port.value("rate_gbps"), port.value("model")
        expected = params.expected_gbps.get(model or "")
        card = port.value("system_guid")
        siblings = [p for p in active if p is not port and card and p.value("system_guid") == card
                    and p.link_layer == port.link_layer]
        best = max(siblings, key=lambda p: p.value("rate_gbps"), default=None)
        report = port.report_with("rate_gbps")
        if expected is not None and rate < expected:
            hit = port_hit(context, port, report.at("rate"), rate=f"{rate:g}", want=f"{expected:g}",
                           against=f"the site profile's {expected:g} Gb/s for {model}")
        elif best is not None and rate < best.value("rate_gbps"):
            want = best.value("rate_gbps")
            hit = port_hit(context, port, report.at("rate"), rate=f"{rate:g}", want=f"{want:g}",
                           against=f"{best.label} of the same card at {want:g} Gb/s")
            hit.evidence.append(report_line(best, "rate_gbps", f"Rate: {want:g} (Active)"))
            hit.evidence.append(f"both ports have system image GUID {card}: one card, one product rate")
        else:
            continue
        hit.evidence.insert(0, report_line(port, "rate_gbps", f"Rate: {rate:g} (Active)"))
        yield hit
