"""ENV006: a setting turns off a transport (SHM, P2P, IB, GDR, cuMem) with no evidence for
NVL003 or NET007 either way."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import setting_hit
from topolint.checks._transport import cases
from topolint.engine.finding import Hit

NEEDS = ("config",)


class Parameters(CheckParameters):
    pass


_UNSETTLED = {
    "net": "no --topology names RDMA NICs and the scope configures no RDMA: on nodes without InfiniBand or RoCE "
           "this setting costs nothing",
    "shm": "no --topology shows GPUs without P2P between them: where every GPU pair has NVLink or PCIe P2P, "
           "NCCL does not use SHM",
    "p2p": "no --topology or launch option shows several GPUs per node or process",
    "gdr": "no --topology shows a NIC GPUDirect RDMA could use",
}


def check(context, params: Parameters) -> Iterator[Hit]:
    for case in cases(context):
        if case.rule == "ENV006":
            hit = setting_hit(case.setting)
            hit.variant = case.transport
            hit.evidence.extend(case.evidence)
            if not case.evidence:  # nothing says what it costs here: it cannot be settled from the file
                hit.severity = "info"
                hit.evidence.append(_UNSETTLED.get(case.transport, "no topology or launch option shows what it costs"))
            yield hit
