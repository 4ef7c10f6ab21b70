"""ROCE004: an explicit NCCL_IB_GID_INDEX points at a RoCE v1 or link-local GID, at no GID, or at
different kinds of GID across the --topology node's RoCE ports (show_gids, sysfs gid_attrs).

NCCL_IB_GID_INDEX unset: from 2.21 NCCL selects a GID itself (default -1, ``ncclIbGetGidIndex``
in src/transport/net_ib.cc scans for the address family and RoCE version), so differing tables
are not a finding; up to 2.20 the default is 0, judged like an explicit 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import literal_settings, setting_hit
from topolint.checks._fabric import fabric_nodes, unset_hit, where
from topolint.engine.finding import Hit
from topolint.model.numbers import strtol

NEEDS = ("config", "gids")
# What --verbose says when they are missing.
NEEDS_HELP = {"gids": "no GID tables: give --topology a node folder with `show_gids` output"}


class Parameters(CheckParameters):
    pass


def _kind(gid) -> str:
    family = "IPv4" if gid.ipv4 else "link-local" if gid.link_local else "IPv6"
    return f"RoCE {gid.version or '?'} {family}"


def _roce_ports(view) -> dict[tuple[str, int], list]:
    """GID tables of RoCE ports in use: some GID with an address, or the port known Active."""
    tables: dict[tuple[str, int], list] = {}
    for gid in view.gids:
        tables.setdefault((gid.hca, gid.port), []).append(gid)
    judged = {}
    for key, gids in tables.items():
        port = view.ports.get(key)
        if port is not None and port.link_layer == "infiniband":
            continue
        if not any(g.version == "v2" or g.netdev for g in gids):
            continue  # an IB port's table (one v1 GID, no netdev)
        if any(not g.link_local for g in gids) or (port is not None and port.active):
            judged[key] = gids
    return judged


def _problems(index: int, tables: dict) -> tuple[list[str], list[str]]:
    problems, evidence, kinds = [], [], {}
    for (hca, port), gids in sorted(tables.items()):
        gid = next((g for g in gids if g.index == index), None)
        if gid is None:
            problems.append(f"{hca} port {port} has no GID at index {index}")
            continue
        kinds.setdefault(_kind(gid), []).append(f"{hca}:{port}")
        evidence.append(f"{where(gid.loc)}: {hca} port {port} GID[{index}] = {gid.gid} ({_kind(gid)})")
        if gid.version == "v1":
            problems.append(f"{hca} port {port} index {index} is RoCE v1 (not routable across subnets)")
        elif gid.link_local:
            problems.append(f"{hca} port {port} index {index} is a link-local GID (no IP: not routable)")
    if len(kinds) > 1:
        problems.append("the index points at different kinds of GID: "
                        + "; ".join(f"{k} on {', '.join(v)}" for k, v in sorted(kinds.items())))
    return problems, evidence


def _good_index(tables: dict) -> str:
    common = None
    for gids in tables.values():
        found = {g.index for g in gids if g.version == "v2" and g.ipv4}
        common = found if common is None else common & found
    return str(min(common)) if common else "the RoCE v2 IPv4 index of each port (show_gids), or leave it unset (NCCL 2.21+)"


def check(context, params: Parameters) -> Iterator[Hit]:
    nodes = [(node, _roce_ports(view)) for node, view in fabric_nodes(context)]
    nodes = [(node, tables) for node, tables in nodes if tables]
    if not nodes:
        return
    node, tables = nodes[0]
    settings = [s for _, s in literal_settings(context) if s.name == "NCCL_IB_GID_INDEX" and s.value]
    for setting in settings:
        index, whole = strtol(setting.value)
        if not whole or index < 0:
            continue  # -1 is auto-selection; what does not parse is ENV003
        problems, evidence = _problems(index, tables)
        if problems:
            hit = setting_hit(setting, node=node.name, problems="; ".join(problems), good=_good_index(tables))
            hit.evidence.extend(evidence)
            yield hit
    if context.version.gid_index_auto:
        return
    for config in context.configs:
        if any(s.name == "NCCL_IB_GID_INDEX" for s in config.settings):
            continue
        problems, evidence = _problems(0, tables)
        hit = unset_hit(config, "NCCL_IB_GID_INDEX", node=node.name, problems="; ".join(problems),
                        good=_good_index(tables)) if problems else None
        if hit is not None:
            hit.variant = "unset"
            hit.evidence.append(f"NCCL_IB_GID_INDEX unset: NCCL {context.version} uses index 0 (its default "
                                "up to 2.20; from 2.21 it selects a GID itself)")
            hit.evidence.extend(evidence)
            yield hit
