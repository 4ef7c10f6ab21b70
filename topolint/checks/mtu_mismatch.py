"""NET008: active MTUs differ between Active ports of one fabric, or a RoCE port runs at an MTU of
1024 while it supports 4096.

"One fabric" is one link layer and one subnet: the InfiniBand subnet prefix (ibstatus, or the
ports' GIDs), or the IPv4 network of a RoCE port's netdev (ip addr). Ports whose subnet the
inputs do not give are compared with none. Only ibv_devinfo prints MTUs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, port_hit, report_line
from topolint.engine.finding import Hit

NEEDS = ("ports",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    ports = [p for p in view.ports.values() if p.active and p.value("active_mtu") is not None]
    reported = set()
    for port in ports:
        active, supported = port.value("active_mtu"), port.value("max_mtu")
        if port.link_layer == "ethernet" and active <= 1024 and supported and supported > active:
            hit = port_hit(context, port, port.report_with("active_mtu").at("active_mtu"), mtu=active,
                           max_mtu=supported)
            hit.variant = "roce_small"
            hit.evidence.append(report_line(port, "active_mtu", f"active_mtu: {active}, max_mtu: {supported}"))
            hit.evidence.append("RoCE's active MTU follows the netdev's MTU: 1500 gives 1024, 4200 or more gives 4096")
            reported.add(port.key)
            yield hit
    by_fabric: dict[tuple[str, str], list] = {}
    for port in ports:
        key = view.fabric_of(port)
        if key is not None:
            by_fabric.setdefault(key, []).append(port)
    for (layer, subnet), members in sorted(by_fabric.items()):
        counts = Counter(p.value("active_mtu") for p in members)
        if len(counts) < 2:
            continue
        common = max(counts, key=lambda mtu: (counts[mtu], mtu))
        for port in members:
            mtu = port.value("active_mtu")
            if mtu == common or port.key in reported:
                continue
            other = next(p for p in members if p.value("active_mtu") == common)
            hit = port_hit(context, port, port.report_with("active_mtu").at("active_mtu"), mtu=mtu, common=common,
                           other=other.label, subnet=subnet)
            hit.evidence.append(report_line(port, "active_mtu", f"active_mtu: {mtu}"))
            hit.evidence.append(report_line(other, "active_mtu", f"active_mtu: {common}"))
            hit.evidence.append(f"both are Active on {layer} subnet {subnet}; {counts[common]} of {len(members)} "
                                f"ports there run at {common}")
            yield hit
