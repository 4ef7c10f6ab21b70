"""ROCE001: a RoCE port with PFC off on every priority (mlnx_qos, dcb pfc show).

An error, or a warning when ECN/DCQCN is shown on for the priority NCCL uses (lossy RoCE by
design). A port whose PFC is on for some other priority than NCCL's is ROCE003 (the marking or
the trust mode is what to fix). InfiniBand-only nodes are never judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, where
from topolint.checks._roce import marking, roce_qos
from topolint.engine.finding import Hit

NEEDS = ("qos",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    for item in roce_qos(context, view):
        qos = item.qos
        if qos.pfc is None or any(qos.pfc):
            continue
        mark = marking(context, view, qos, item.hca)
        ecn, ecn_lines = view.ecn_enabled(item.interface, mark.priority)
        hit = Hit(entity=item.entity, location=qos.at("pfc"),
                  fields={"port": item.label, "priority": mark.priority, "trust": mark.trust,
                          "dscp": "-" if mark.dscp is None else mark.dscp, "interface": item.interface or "IF"},
                  evidence=[f"{where(qos.at('pfc'))}: PFC enabled row is all 0"] + mark.why)
        if ecn:
            hit.variant, hit.severity = "ecn", "warning"
            hit.evidence.append(f"{where(ecn_lines[0].loc)}: ECN (DCQCN) is on for priority {mark.priority} "
                                f"(roce_np/roce_rp enable): lossy RoCE with congestion control, by design or not")
        else:
            hit.evidence.append("ECN/DCQCN for that priority is " + ("off" if ecn is False else "not shown"))
        yield hit
