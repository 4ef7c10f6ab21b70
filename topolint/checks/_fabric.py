"""Helpers the fabric checks share: the node's FabricView (built once per context), port
entities and evidence, the GPUs a port serves, and NCCL's RoCE marking."""

from __future__ import annotations

from topolint.engine.finding import Hit, Related
from topolint.model.fabric import virtual_interface  # noqa: F401 (the checks' name for it)
from topolint.model.fabric_view import FabricView, PortView
from topolint.model.node import nic_entity


def where(loc) -> str:
    return f"{loc.path}:{loc.line}"


def fabric(context) -> FabricView:
    view = context.shared.get("fabric")
    if view is None:
        view = context.shared["fabric"] = FabricView(context.node, context.version)
    return view


def port_fields(port: PortView) -> dict:
    return {"hca": port.hca, "port": port.port, "state": port.state or "?", "model": port.value("model") or "?",
            "link_layer": {"infiniband": "InfiniBand", "ethernet": "Ethernet (RoCE)"}.get(port.link_layer or "", "?"),
            "netdev": port.netdev or "NETDEV"}


def port_hit(context, port: PortView, location, **fields) -> Hit:
    """A hit on ``NODE/nic/HCA:PORT`` at ``location``, with the GPUs the port serves when a dump says."""
    hit = Hit(entity=nic_entity(context.node.name, port.hca, port.port), location=location,
              fields={**port_fields(port), **fields})
    gpus, net_loc, bus = fabric(context).gpus_served(context, port.hca, port.port)
    hit.fields["gpus"] = ", ".join(gpus) if gpus else "no GPU known"
    hit.fields["serves"] = f"; nearest NIC of {hit.fields['gpus']}" if gpus else ""
    if net_loc is not None and gpus and gpus[0].startswith("the GPU at"):  # lspci's tree, no dump
        hit.evidence.append(f"{where(net_loc)}: {port.hca} is at {bus}; lspci shows {', '.join(gpus)} under the "
                            "same PCIe switch")
    elif net_loc is not None:
        hit.related.append(Related(location=net_loc, entity=nic_entity(context.node.name, port.hca, port.port),
                                   message=f"{port.hca} ({bus or 'no PCI device'}) in the NCCL topology dump"))
        hit.evidence.append(f"{where(net_loc)}: the NCCL dump places {port.hca} at {bus or 'no PCI device'}; "
                            + (f"nearest NIC of {', '.join(gpus)}" if gpus else "nearest NIC of no GPU"))
    if port.netdev and port.netdev_source is not None:
        hit.evidence.append(f"{where(port.netdev_source)}: {port.label} is netdev {port.netdev}")
    return hit


def report_line(port: PortView, name: str, what: str) -> str:
    report = port.report_with(name)
    return f"{where(report.at(name))}: {report.hca} port {report.port} {what} ({report.tool})"


def matches_iflist(value: str, name: str) -> bool:
    """Whether an NCCL_SOCKET_IFNAME / NCCL_IB_HCA list selects ``name``: entries are prefixes unless
    the list starts with ``=``, ``^`` excludes (NCCL src/misc/utils.cc ``matchIfList``/``matchIf``)."""
    from topolint.model.nccl_env import parse_iflist

    exclude, exact, entries = parse_iflist(value)
    hit = any(name == entry if exact else name.startswith(entry) for entry, _ in entries if entry)
    return not hit if exclude else hit


def literal_env(context, name: str) -> list:
    """Literal settings of ``name`` in the config files that apply to the node: its own (a node
    bundle's nccl.conf), else the run's (an infra repository checked with the hardware)."""
    configs = getattr(context, "configs", []) or []
    by_name = _settings_index(configs)
    node = getattr(context, "node", None)
    own = {path for path in node.sources if path in by_name[1]} if node is not None else set()
    found = by_name[0].get(name, [])
    if own:
        return [s for s in found if s.path in own or s.loc.path in own]
    return list(found)


_SETTINGS_INDEX: list = [None, 0, ({}, set())]  # (configs list, its length, (name -> settings, config paths))


def _settings_index(configs: list) -> tuple[dict, set]:
    """The run's literal settings by name and its config paths, built once per run, not once per
    node: a cluster of bundles has a config file on every node."""
    if _SETTINGS_INDEX[0] is not configs or _SETTINGS_INDEX[1] != len(configs):
        by_name: dict[str, list] = {}
        for config in configs:
            for setting in config.settings:
                if setting.literal and setting.value is not None:
                    by_name.setdefault(setting.name, []).append(setting)
        _SETTINGS_INDEX[:] = [configs, len(configs), (by_name, {c.path for c in configs})]
    return _SETTINGS_INDEX[2]


def link_rate(mbps: float) -> str:
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps:g} Mb/s"


def running_address(interface) -> tuple[bool, str]:
    """Whether NCCL would take the interface (src/os/linux.cc ``ncclOsFindInterfaces``: IFF_RUNNING,
    and an IPv4 or non-loopback IPv6 address), and why not."""
    running = interface.up
    addresses = [a for a in interface.addresses if a.family == "inet" or (a.family == "inet6" and a.address != "::1")]
    if not running:
        return False, f"it is not running (state {interface.state or '?'}, flags {','.join(interface.flags) or '?'})"
    if not addresses:
        return False, "it has no IPv4 or IPv6 address"
    return True, ", ".join(f"{a.address}/{a.prefix}" if a.prefix is not None else a.address for a in addresses)


def fabric_nodes(context) -> list:
    """(node, FabricView) of the --topology nodes, for config rules."""
    return [(node, FabricView(node, context.version)) for node in context.topology_nodes if node.fabric]


def unset_hit(config, name: str, **fields) -> Hit | None:
    """A hit for ``name`` being unset in ``config``, at the file's first NCCL setting (a config
    with no setting has no line to point at: None)."""
    if not config.settings:
        return None
    first = min(config.settings, key=lambda s: (s.loc.line, s.loc.column))
    return Hit(entity=f"env/{name}@{config.path}#file", location=first.loc,
               fields={"name": name, "value": "(unset)", "path": config.path, "scope": "file", **fields},
               evidence=[f"{where(first.loc)}: {config.path} sets NCCL variables ({first.name} first) but not {name}"])
