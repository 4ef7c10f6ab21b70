"""ROCE003: PFC protects some priorities, but NCCL's RoCE traffic (or its control messages) is
marked so that it lands on another, lossy one; info with the NCCL_IB_TC / NCCL_IB_SL that would
land on a lossless priority when the trust mode is not shown."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, where
from topolint.checks._roce import marking, pfc_text, roce_qos
from topolint.engine.finding import Hit

NEEDS = ("qos",)


class Parameters(CheckParameters):
    pass


def _remedy(qos, lossless: list[int]) -> str:
    """The NCCL setting that lands on the first lossless priority."""
    target = lossless[0]
    if qos.trust == "dscp":
        dscps = sorted(d for d, p in qos.dscp2prio.items() if p == target) or list(range(target * 8, target * 8 + 8))
        return f"NCCL_IB_TC={dscps[0] << 2} (DSCP {dscps[0]}, priority {target})"
    return f"NCCL_IB_SL={target} (with VLAN-tagged RoCE), or trust dscp with NCCL_IB_TC={(target * 8) << 2}"


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    for item in roce_qos(context, view):
        qos = item.qos
        if qos.pfc is None or not any(qos.pfc):
            continue  # nothing lossless: ROCE001
        lossless = [p for p, on in enumerate(qos.pfc) if on]
        mark = marking(context, view, qos, item.hca)
        fields = {"port": item.label, "priority": mark.priority, "trust": mark.trust, "pfc": pfc_text(qos.pfc),
                  "remedy": _remedy(qos, lossless), "dscp": "-" if mark.dscp is None else mark.dscp}
        evidence = [f"{where(qos.at('pfc'))}: {pfc_text(qos.pfc)}"] + mark.why
        if qos.trust is None:
            yield Hit(entity=item.entity, location=qos.at("pfc"), fields=fields, variant="unknown", severity="info",
                      evidence=evidence)
        elif mark.priority not in lossless:
            yield Hit(entity=item.entity, location=qos.at("trust"), fields=fields, evidence=evidence)
        elif mark.fifo_priority is not None and mark.fifo_priority not in lossless:
            fields["fifo_priority"] = mark.fifo_priority
            yield Hit(entity=item.entity, location=qos.at("trust"), fields=fields, variant="fifo", evidence=evidence)
