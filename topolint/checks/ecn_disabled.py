"""ROCE002: ECN/DCQCN (``/sys/class/net/IF/ecn/roce_np|roce_rp/enable/PRIO``) is off for the
priority NCCL's RoCE traffic uses. Only judged where the enable files are shown."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, where
from topolint.checks._roce import marking, roce_qos
from topolint.engine.finding import Hit

NEEDS = ("qos",)


class Parameters(CheckParameters):
    pass


def _judged(context, view):
    """(entity, label, interface, hca, marking) per RoCE port with ECN files: the QoS reports, and
    interfaces whose ECN files come without one (trust not shown: pcp, the default, assumed)."""
    from topolint.model.fabric import QosPort, netdev_entity
    from topolint.model.facts import build

    seen = set()
    for item in roce_qos(context, view):
        seen.add(item.interface)
        yield item.entity, item.label, item.interface, marking(context, view, item.qos, item.hca)
    if view.infiniband_only:
        return
    for interface in sorted({e.interface for e in view.ecn} - seen):
        port = view.hca_of_netdev(interface)
        if port is not None and port.link_layer == "infiniband":
            continue
        first = view.ecn_of(interface)[0]
        bare = build(QosPort, interface=interface, loc=first.loc, lines={}, dscp2prio={})
        yield (netdev_entity(context.node.name, interface), interface, interface,
               marking(context, view, bare, port.hca if port else None))


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    for entity, label, interface, mark in _judged(context, view):
        ecn, lines = view.ecn_enabled(interface, mark.priority)
        if ecn is not False:
            continue
        off = [e for e in lines if not e.enabled]
        roles = " and ".join(sorted({"roce_np (receiver: CNPs)" if e.role == "np" else "roce_rp (sender: rate control)"
                                     for e in off}))
        hit = Hit(entity=entity, location=off[0].loc,
                  fields={"port": label, "priority": mark.priority, "roles": roles,
                          "interface": interface or off[0].interface},
                  evidence=[f"{where(e.loc)}: {e.interface} ecn/roce_{e.role}/enable/{e.priority} = 0" for e in off]
                  + mark.why)
        yield hit
