"""NET003: an InfiniBand or RoCE port that is not Active (ibstat, ibstatus, ibv_devinfo).

ibdev2netdev's (Up)/(Down) is the netdev's state, not the port's, and is never evidence here.
A port is info instead of an error when nothing GPU traffic uses could be on it: a dump shows it
is no GPU's nearest NIC, or (without a dump) its model differs from faster Active ports beside it,
or it is Disabled (turned off on purpose) beside NICs of another model.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, port_hit, report_line
from topolint.engine.finding import Hit

NEEDS = ("ports",)
# Why a port is in that state, by what the physical layer says.
_CAUSES = {
    "polling": "the physical link never came up (no cable, a bad cable or transceiver, or the switch port is down)",
    "disabled": "the port is administratively disabled (firmware, mlxconfig, or the switch)",
    "linkup": "the cable trained (LinkUp) but the port was not activated: on InfiniBand no subnet manager "
              "assigned it (a LID of 65535 or 0); for an SR-IOV VF the PF side has not configured it",
    "sleep": "the port is asleep (power saving or a disabled link)",
}
_FIXES = {
    "polling": "Check the cable and transceiver of {hca} port {port} and the switch port it connects to "
               "(`mlxlink -d {hca} -p {port}`); reseat or replace the cable.",
    "disabled": "Enable the port (`ibportstate`, `mlxlink -d {hca} -a UP`, or `ip link set {netdev} up` on RoCE) "
                "and check that the switch port is enabled.",
    "linkup": "Make sure a subnet manager runs on the fabric (opensm or the switch's SM) and sees this port "
              "(`sminfo`, `ibstat {hca}`); for an SR-IOV VF, configure it on the PF (node GUID, policy).",
}


STATE_NAMES = {"down": "Down", "init": "Init", "armed": "Armed", "active_defer": "Active-defer"}


class Parameters(CheckParameters):
    pass


def _frontend_reason(context, view, port) -> str | None:
    """Why no GPU traffic would use ``port``, or None when it may carry some."""
    gpus, net_loc, _ = view.gpus_served(context, port.hca, port.port)
    if net_loc is not None:
        return None if gpus else "the NCCL topology dump shows it as no GPU's nearest NIC"
    model, rate = port.value("model"), port.value("rate_gbps")
    faster = [p for p in view.ports.values() if p.active and p.value("model") != model
              and (p.value("rate_gbps") or 0) > (rate or 0)]
    if model and faster:
        other = faster[0]
        return (f"its model {model} differs from the faster Active ports beside it ({other.label}, "
                f"{other.value('model')} at {other.value('rate_gbps'):g} Gb/s): most likely a frontend or "
                "management port")
    others = [p for p in view.ports.values() if p.value("model") not in (None, model) and p.state != "down"]
    if model and others and port.value("phys_state") == "disabled":
        return (f"it is administratively disabled and NICs of another model sit beside it ({others[0].label}, "
                f"{others[0].value('model')}): most likely an unused frontend port")
    return None


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    for port in view.ports.values():
        state = port.state
        if state is None or port.active:
            continue  # a paste cut before the State line says nothing
        phys = port.value("phys_state")
        report = port.report_with("state")
        hit = port_hit(context, port, report.at("state"), state=STATE_NAMES.get(state, state),
                       phys=phys or "not shown", cause=_CAUSES.get(phys or "", "the port is not usable for traffic"))
        hit.evidence.append(report_line(port, "state", f"State: {state}"))
        if phys:
            hit.evidence.append(report_line(port, "phys_state", f"Physical state: {phys}"))
        if port.value("rate_gbps") is not None:
            hit.evidence.append(f"its Rate ({port.value('rate_gbps'):g}) is stale on a port that is not Active: not its speed")
        if phys in _FIXES:
            hit.variant = phys
        reason = _frontend_reason(context, view, port)
        if reason:
            hit.severity = "info"
            hit.evidence.append(f"not judged as a fabric port: {reason}")
        yield hit
