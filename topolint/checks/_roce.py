"""What NCCL marks its RoCE traffic with, and the priority that marking lands on (ROCE001-003).

NCCL (src/transport/net_ib.cc; net_ib/connect.cc from 2.28) puts NCCL_IB_TC in the GRH traffic
class and NCCL_IB_SL in the address handle's service level; both default to 0 up to 2.25, and
from 2.26 to -1, meaning the communicator's trafficClass when the application sets one, else 0
(NCCL_IB_TC_DEFAULT). The control messages (CTS FIFO writes) use NCCL_IB_FIFO_TC from 2.22.
mlx5's ``/sys/class/infiniband/HCA/tc/1/traffic_class`` ("Global tclass=N") overrides the class
of every QP on the device. Under trust dscp the switch and NIC queue by DSCP = class >> 2 through
dscp2prio; under trust pcp by the VLAN PCP, which RoCE takes from the service level.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.checks._fabric import literal_env, where
from topolint.model.numbers import strtol


@dataclass
class Marking:
    priority: int
    dscp: int | None
    trust: str
    why: list[str] = field(default_factory=list)  # each assumption, with its source
    fifo_priority: int | None = None  # NCCL_IB_FIFO_TC's priority, when set and different


def _setting(context, name: str) -> tuple[int | None, str | None]:
    """A literal NCCL_* value as NCCL reads it (strtol base 0: ncclParam uses strtoll), with its line."""
    for setting in literal_env(context, name):
        value, whole = strtol(setting.value)
        if whole and value >= 0:
            return value, f"{where(setting.loc)}: {name}={setting.value}"
    return None, None


def _default_why(context, name: str) -> str:
    if context.version.ib_tc_follows_comm:
        return (f"{name} unset: NCCL {context.version} uses the communicator's traffic class when the application "
                f"sets one, else 0 (the default -1 since 2.26)")
    return f"{name} unset: NCCL {context.version} uses 0 (its default up to 2.25)"


def traffic_class(context, view, hca: str | None) -> tuple[int, list[str]]:
    tclass = view.traffic_class_of(hca)
    if tclass is not None and tclass.tclass is not None:
        return tclass.tclass, [f"{where(tclass.loc)}: {tclass.hca} tc/{tclass.tc}/traffic_class is Global "
                               f"tclass={tclass.tclass}, which overrides NCCL_IB_TC for every QP"]
    value, line = _setting(context, "NCCL_IB_TC")
    return (value, [line]) if value is not None else (0, [_default_why(context, "NCCL_IB_TC")])


def prio_of_dscp(qos, dscp: int) -> tuple[int, str]:
    if dscp in qos.dscp2prio:
        return qos.dscp2prio[dscp], f"{where(qos.at('dscp2prio'))}: dscp2prio maps DSCP {dscp} to priority {qos.dscp2prio[dscp]}"
    return dscp >> 3, (f"dscp2prio not shown: the default map (priority = DSCP / 8) sends DSCP {dscp} to "
                       f"priority {dscp >> 3}")


def marking(context, view, qos, hca: str | None) -> Marking:
    trust = qos.trust or "pcp"
    why = [f"{where(qos.at('trust'))}: Priority trust state: {qos.trust}" if qos.trust
           else "trust state not shown (older mlnx_qos prints none; sysfs dumps have none): pcp, the default, assumed"]
    if trust == "dscp":
        tc, reasons = traffic_class(context, view, hca)
        dscp = tc >> 2
        priority, mapped = prio_of_dscp(qos, dscp)
        result = Marking(priority, dscp, trust, why + reasons + [f"traffic class {tc} carries DSCP {dscp} (class >> 2)",
                                                                  mapped])
        fifo, line = _setting(context, "NCCL_IB_FIFO_TC") if context.version.has_ib_fifo_tc else (None, None)
        if fifo is not None:
            fifo_priority, fifo_mapped = prio_of_dscp(qos, fifo >> 2)
            if fifo_priority != priority:
                result.fifo_priority = fifo_priority
                result.why += [line, f"control messages: {fifo_mapped}"]
        return result
    sl, line = _setting(context, "NCCL_IB_SL")
    reasons = [line] if sl is not None else [_default_why(context, "NCCL_IB_SL")]
    sl = sl if sl is not None else 0
    return Marking(sl & 7, None, trust, why + reasons + [f"under trust pcp the VLAN priority is the service level: {sl & 7}"])


@dataclass
class RoceQos:
    qos: object  # QosPort
    port: object  # PortView or None
    hca: str | None
    interface: str | None
    entity: str
    label: str


def roce_qos(context, view):
    """The node's QoS reports that belong to RoCE ports; nothing on an InfiniBand-only node (QoS
    there is the subnet manager's SL-to-VL business, not PFC)."""
    from topolint.model.fabric import netdev_entity
    from topolint.model.node import file_entity, nic_entity

    if view.infiniband_only:
        return
    node = context.node.name
    for qos in view.qos_ports:
        port = view.hca_of_netdev(qos.interface) if qos.interface else None
        if port is None and qos.hca:
            port = view.first_port_of_hca(qos.hca)
        if port is not None and port.link_layer == "infiniband":
            continue
        hca = qos.hca or (port.hca if port else None)
        if qos.interface:
            entity, label = netdev_entity(node, qos.interface), qos.interface + (f" ({hca})" if hca else "")
        elif hca:
            entity, label = nic_entity(node, hca, port.port if port else None), hca
        else:
            entity, label = file_entity(node, qos.loc.path), "the port of this mlnx_qos report"
        yield RoceQos(qos, port, hca, qos.interface, entity, label)


def pfc_text(pfc: list[bool]) -> str:
    on = [str(p) for p, enabled in enumerate(pfc) if enabled]
    return f"PFC on priority {', '.join(on)}" if on else "PFC off on every priority"
