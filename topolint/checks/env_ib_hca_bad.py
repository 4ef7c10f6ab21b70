"""NET002: NCCL_IB_HCA names HCAs or ports the --topology does not have, or excludes them all.

The HCA names come from an NCCL dump's nets or a matrix's NIC legend, else from the node's own
outputs through the join of node facts (model/node_join.py ``NodeJoin.hcas``: ibstat, ibstatus,
ibv_devinfo, ibdev2netdev, show_gids, hwloc), so a node folder of ibstat and ibdev2netdev output
is enough. An entry that matches no HCA names the closest one ("did you mean mlx5_6").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import (
    Hca,
    TopologyView,
    literal_settings,
    setting_hit,
    topology_label,
    topology_views,
)
from topolint.checks._fabric import fabric_nodes, report_line
from topolint.engine.finding import Hit
from topolint.model.nccl_env import check_value, parse_iflist

NEEDS = ("config", "topology")
# "topology" is any --topology node: an NCCL dump or matrix names HCAs and ports, ibstat-like
# outputs (ports facts) also give each port's state.


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    yield from _port_states(context)
    views = [v for v in topology_views(context) if v.hcas]
    views += _joined_views(context, {v.node for v in views})
    if not views:
        return
    for _, setting in literal_settings(context):
        if setting.name != "NCCL_IB_HCA" or not setting.value or check_value(setting.name, setting.value):
            continue
        exclude, exact, entries = parse_iflist(setting.value)
        for view in views:
            names = sorted({h.name for h in view.hcas})
            ports = {(h.name, h.port) for h in view.hcas}

            def matches(entry: str, name: str) -> bool:
                return name == entry if exact else name.startswith(entry)

            problems = []
            if exclude:
                left = [n for n in names if not any(matches(e, n) for e, _ in entries)]
                if not left:
                    problems.append("the exclusion list leaves no HCA")
            else:
                for entry, port in entries:
                    hit_names = [n for n in names if matches(entry, n)]
                    if not hit_names:
                        close = _did_you_mean(entry, names)
                        problems.append(f"{entry} matches no HCA" + (f" (did you mean {close}?)" if close else ""))
                    elif port is not None and all(p is not None for _, p in ports) \
                            and not any((n, port) in ports for n in hit_names):
                        problems.append(f"{entry} has no port {port}")
            if problems:
                hit = setting_hit(setting, problems="; ".join(problems), hcas=", ".join(names),
                                  topology=topology_label(view))
                hit.evidence.append(f"{topology_label(view)} names HCAs: "
                                    + ", ".join(f"{h.name}:{h.port}" if h.port else h.name for h in view.hcas))
                if not exact:
                    hit.evidence.append("entries without '=' are prefixes (mlx5_1 also matches mlx5_10)")
                yield hit
                break


def _did_you_mean(entry: str, names: list[str]) -> str | None:
    """The HCA a misspelt entry meant: the same device number, the closest spelling of the rest
    (``mxl5_6`` -> ``mlx5_6``); an entry whose number no HCA has (``mlx5_9``) is no typo."""
    number = len(entry) - len(entry.rstrip("0123456789"))
    suffix = entry[len(entry) - number:] if number else ""
    same = [n for n in names if n.endswith(suffix) and (not suffix or not n[:len(n) - len(suffix)][-1:].isdigit())]
    close = difflib.get_close_matches(entry, same, n=1, cutoff=0.6)
    return close[0] if close else None


def _joined_views(context, covered: set[str]) -> list[TopologyView]:
    """The HCAs (and ports) of --topology nodes without a dump or matrix naming them, from the
    node join: each HCA with the ports the port reports give, else without a port."""
    from topolint.model.node_join import node_join

    views = []
    for node in context.topology_nodes:
        if node.name in covered:
            continue
        join = node_join(node)
        if not join.hcas:
            continue
        ports: dict[str, list] = {}
        for port in sorted(join.fabric.ports.values(), key=lambda p: p.key):
            ports.setdefault(port.hca, []).append(port)
        sources = sorted({fact.loc.path for fact in join.hcas.values() if fact.loc is not None})
        view = TopologyView(node.name, ", ".join(sources) or "its outputs")
        for name, fact in sorted(join.hcas.items()):
            if name in ports:
                view.hcas.extend(Hca(name, port.port, port.reports[0].loc) for port in ports[name])
            else:
                view.hcas.append(Hca(name, None, fact.loc))
        views.append(view)
    return views


def _port_states(context) -> Iterator[Hit]:
    """Entries whose HCAs exist in ibstat/ibv_devinfo but have no Active port NCCL could use."""
    nodes = [(node, view) for node, view in fabric_nodes(context) if view.ports]
    for _, setting in literal_settings(context):
        if setting.name != "NCCL_IB_HCA" or not setting.value or check_value(setting.name, setting.value):
            continue
        exclude, exact, entries = parse_iflist(setting.value)
        for node, view in nodes:
            ports = sorted(view.ports.values(), key=lambda p: p.key)

            def selected(port) -> bool:
                hit = any((port.hca == e if exact else port.hca.startswith(e)) and (want is None or want == port.port)
                          for e, want in entries)
                return not hit if exclude else hit

            chosen = [p for p in ports if selected(p) and p.state is not None]
            if not chosen or any(p.active for p in chosen):
                continue  # no port named (the name checks below), or NCCL has an Active one
            states = "; ".join(f"{p.label} is {p.state}" for p in chosen)
            hit = setting_hit(setting, problems=f"no port it selects is Active ({states})",
                              hcas=", ".join(sorted({p.hca for p in ports})), topology=f"node {node.name}")
            hit.variant = "state"
            hit.evidence.extend(report_line(p, "state", f"State: {p.state}") for p in chosen)
            yield hit
            break
