"""NET002: NCCL_IB_HCA names HCAs or ports the --topology does not have, or excludes them all."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import (
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
                        problems.append(f"{entry} matches no HCA")
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
