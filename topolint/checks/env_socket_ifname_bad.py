"""NET001: NCCL_SOCKET_IFNAME selects no interface NCCL can use on the --topology node (ip addr):
none matches, or every match is loopback or virtual, is not running, or has no address.

NCCL matches entries as prefixes unless the list starts with ``=`` and ``^`` excludes
(src/misc/utils.cc ``matchIfList``); it takes an interface only when it is running and has an
IPv4 or non-loopback IPv6 address (src/os/linux.cc ``ncclOsFindInterfaces``).
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import literal_settings, setting_hit
from topolint.checks._fabric import fabric_nodes, matches_iflist, running_address, virtual_interface, where
from topolint.engine.finding import Hit

NEEDS = ("config", "interfaces")
# What --verbose says when they are missing.
NEEDS_HELP = {"interfaces": "no interface facts: give --topology a node folder with `ip addr` (or `ip -j addr`) output"}


class Parameters(CheckParameters):
    pass


def _problems(value: str, view) -> tuple[list[str], list[str]]:
    """(problems, evidence) of the interfaces ``value`` selects; no problems when one is usable."""
    chosen = [i for name, i in sorted(view.interfaces.items()) if matches_iflist(value, name)]
    if not chosen:
        return [f"it matches no interface (there: {', '.join(sorted(view.interfaces)) or 'none'})"], []
    evidence, usable, reasons = [], [], []
    for interface in chosen:
        ok, why = running_address(interface)
        if ok and virtual_interface(interface.name):
            ok, why = False, "it is loopback or virtual (container, bridge, tunnel): not the node's network"
        evidence.append(f"{where(interface.loc)}: {interface.name}: {why}")
        if ok:
            usable.append(interface.name)
        else:
            reasons.append(f"{interface.name}: {why}")
    if usable:
        return [], evidence
    return [f"no interface it selects is usable ({'; '.join(reasons)})"], evidence


def check(context, params: Parameters) -> Iterator[Hit]:
    nodes = [(node, view) for node, view in fabric_nodes(context) if view.interfaces]
    for _, setting in literal_settings(context):
        if setting.name != "NCCL_SOCKET_IFNAME" or not setting.value or len(setting.value) < 2:
            continue  # NCCL ignores a value of one character (socket.cc: strlen(env) > 1)
        for node, view in nodes:
            problems, evidence = _problems(setting.value, view)
            if problems:
                hit = setting_hit(setting, node=node.name, problems="; ".join(problems),
                                  interfaces=", ".join(sorted(view.interfaces)))
                hit.evidence.extend(evidence)
                yield hit
                break
