"""Which rule owns a transport being turned off: NET007 / NVL003 with evidence, else ENV006."""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.checks._config import (
    literal_settings,
    multi_gpu_evidence,
    rdma_settings_listed,
    topology_label,
    topology_views,
    visible_first,
)
from topolint.model.config import EnvSetting
from topolint.model.nccl_env import level_name, param_read


@dataclass
class Case:
    setting: EnvSetting
    transport: str  # net, p2p, shm, gdr, cumem
    rule: str  # NET007, NVL003 or ENV006
    evidence: list[str] = field(default_factory=list)
    cause: str = "default"  # the message variant


# src/plugin/net.cc ncclNetInit (v2.30.7-1): with NCCL_NET set only the plugin of that name is
# tried, and the internal IB plugin's init refuses when NCCL_IB_DISABLE is set
# (src/transport/net_ib/init.cc: ``if (ncclParamIbDisable()) return ncclInternalError``), so no
# network starts: "Failed to initialize any NET plugin", ncclInvalidUsage. NCCL before the plugin
# rework (src/init.cc, 2.18) failed the same way ("Error: network IB not found").
INIT_FAILS = ("NCCL_NET=IB lets NCCL use only its IB network, which NCCL_IB_DISABLE=1 turns off: communicator "
              "init fails (src/plugin/net.cc ncclNetInit: \"Failed to initialize any NET plugin\")")


def cases(context) -> list[Case]:
    """Every transport-off setting with the rule that owns it, decided once per run (three
    rules read the same decision)."""
    if "transport_cases" not in context.shared:
        context.shared["transport_cases"] = _decide(context)
    return context.shared["transport_cases"]


def evidenced_hits(context, rule: str):
    """NVL003 / NET007: the setting's line, with the evidence that the transport is wanted."""
    from topolint.checks._config import setting_hit

    for case in cases(context):
        if case.rule == rule:
            hit = setting_hit(case.setting, reason=case.evidence[0])
            hit.variant = case.cause
            hit.evidence.extend(case.evidence)
            yield hit


def _asks_for_ib(o: EnvSetting) -> bool:
    return o.literal and o.name == "NCCL_NET" and (o.value or "").strip().upper() == "IB"


def _asks_ib(context, config, scope: str) -> bool:
    """NCCL_NET=IB applies in ``scope``: asked once per file and scope, not once per setting."""
    key = ("asks_ib", id(config), scope)
    found = context.shared.get(key)
    if found is None or found[0] is not config.settings:
        found = context.shared[key] = (config.settings, visible_first(context, config, scope, _asks_for_ib, 1)[1] > 0)
    return found[1]


def _decide(context) -> list[Case]:
    views = topology_views(context)
    found = []
    for config, s in literal_settings(context):
        value = (s.value or "").strip()
        if (s.name == "NCCL_IB_DISABLE" and param_read(value)) or (s.name == "NCCL_NET" and value.lower() == "socket"):
            evidence = [f"{topology_label(v)} names RDMA NICs: {', '.join(sorted({h.name for h in v.hcas}))}"
                        for v in views if v.rdma]
            listed, more = rdma_settings_listed(context, config, s.scope)
            evidence += [f"{e} in the same scope configures RDMA" for e in listed]
            if more:
                evidence.append(f"... and {more} more settings in the same scope configure RDMA")
            asks_ib = s.name == "NCCL_IB_DISABLE" and _asks_ib(context, config, s.scope)
            if asks_ib:  # NCCL_NET=IB names the one network NCCL may use, and IB is off: init fails
                evidence.append(INIT_FAILS)
                found.append(Case(s, "net", "NET007", evidence, "init-fails"))
            elif evidence:
                found.append(Case(s, "net", "NET007", evidence))
            elif not views:
                found.append(Case(s, "net", "ENV006"))
        elif (s.name == "NCCL_P2P_DISABLE" and value == "1") or s.name == "NCCL_P2P_LEVEL":
            level = "LOC" if s.name == "NCCL_P2P_DISABLE" else level_name(value)
            if level not in ("LOC", "NVL", "NVB", "C2C"):
                continue
            if views:
                if level == "LOC":
                    evidence = [f"{topology_label(v)} has {'NVLink' if v.nvlink else 'PCIe P2P'} between GPUs"
                                for v in views if v.nvlink or v.pcie_p2p]
                else:
                    evidence = [f"{topology_label(v)} has PCIe P2P but no NVLink: level {level} turns P2P off"
                                for v in views if v.pcie_p2p and not v.nvlink]
                if evidence:
                    found.append(Case(s, "p2p", "NVL003", evidence))
            elif level == "LOC":
                evidence = [f"{e} in the same scope" for e in multi_gpu_evidence(context, config, s.scope)]
                found.append(Case(s, "p2p", "NVL003" if evidence else "ENV006", evidence))
        elif s.name == "NCCL_SHM_DISABLE" and param_read(value):
            # SHM carries what P2P cannot: it costs where GPUs have neither NVLink nor PCIe P2P.
            evidence = [f"{topology_label(v)} has {v.gpu_count} GPUs with neither NVLink nor PCIe P2P between them"
                        for v in views if v.gpu_count >= 2 and not v.nvlink and not v.pcie_p2p]
            found.append(Case(s, "shm", "ENV006", evidence))
        elif s.name == "NCCL_NET_GDR_LEVEL" and level_name(value) == "LOC":
            found.append(Case(s, "gdr", "ENV006"))
        elif s.name == "NCCL_CUMEM_ENABLE" and value == "0":
            evidence = [f"{topology_label(v)} has NVLink" for v in views if v.nvlink]
            if evidence:
                found.append(Case(s, "cumem", "ENV006", evidence))
    return found
