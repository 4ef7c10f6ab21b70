"""STOR001: an NFS mount (NFS, EFS, Azure Files) is reached over an interface that carries NCCL
traffic: the netdev of an RDMA port (ibdev2netdev, show_gids), or an interface NCCL_SOCKET_IFNAME
selects. The interface comes from the routes (ip route), else from the interface whose address
is the mount's ``clientaddr=``; without either the mount is not judged. A mount through a local
proxy (efs-proxy/stunnel: ``addr=127.0.0.1``) hides the real path: info.

Other network filesystems (Lustre, GPFS, Weka, BeeGFS, CIFS) are not judged: their options do
not name the addresses used.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._fabric import fabric, literal_env, matches_iflist, where
from topolint.engine.finding import Hit
from topolint.model.fabric import netdev_entity
from topolint.model.node import file_entity

NEEDS = ("mounts",)
NFS_TYPES = ("nfs", "nfs4")
LOCALHOST = ("127.0.0.1", "::1", "localhost")


class Parameters(CheckParameters):
    pass


def _nccl_interfaces(context, view) -> dict[str, tuple[str, str]]:
    """interface -> (why NCCL traffic uses it, the evidence line)."""
    found = {}
    for port in view.ports.values():
        if port.netdev:
            kind = "RoCE, NCCL's data runs on it" if port.link_layer == "ethernet" else "IPoIB on the port NCCL uses"
            reason = f"the netdev of RDMA port {port.label}: {kind}"
            source = f"{where(port.netdev_source)}: " if port.netdev_source is not None else ""
            found[port.netdev] = (reason, f"{source}{port.netdev} is {reason}")
    for setting in literal_env(context, "NCCL_SOCKET_IFNAME"):
        for name in view.interfaces:
            if matches_iflist(setting.value, name):
                reason = f"NCCL_SOCKET_IFNAME={setting.value} selects it"
                found.setdefault(name, (reason, f"{where(setting.loc)}: {reason}"))
    return found


def _interface_of(view, mount) -> tuple[str | None, str]:
    interface, why = view.route_to(mount.server) if view.routes or view.interfaces else (None, "no routes or interfaces")
    if interface is None and mount.options.get("clientaddr"):
        owner = view.interface_with_address(mount.options["clientaddr"])
        if owner is not None:
            return owner.name, f"clientaddr={mount.options['clientaddr']} is {owner.name}'s address"
    return interface, why


def check(context, params: Parameters) -> Iterator[Hit]:
    view = fabric(context)
    node = context.node.name
    nfs = [m for m in view.mounts if m.fstype in NFS_TYPES and m.server]
    nccl = _nccl_interfaces(context, view)
    by_interface: dict[str, list] = {}
    for mount in nfs:
        if mount.server in LOCALHOST:
            yield Hit(entity=file_entity(node, mount.loc.path) + f"#{mount.mountpoint}", location=mount.loc,
                      variant="proxy", severity="info",
                      fields={"mountpoint": mount.mountpoint, "source": mount.source, "port": mount.options.get("port", "?")},
                      evidence=[f"{where(mount.loc)}: {mount.source} on {mount.mountpoint} ({mount.fstype}, "
                                f"addr={mount.server}, port={mount.options.get('port', '?')}): a local proxy"])
            continue
        interface, why = _interface_of(view, mount)
        if interface is not None and interface in nccl:
            by_interface.setdefault(interface, []).append((mount, why))
    for interface, mounts in sorted(by_interface.items()):
        first, why = mounts[0]
        evidence = [f"{where(m.loc)}: {m.source} on {m.mountpoint} ({m.fstype}, server {m.server})" for m, _ in mounts]
        evidence += [why, nccl[interface][1]]
        yield Hit(entity=netdev_entity(node, interface), location=first.loc, evidence=evidence,
                  fields={"interface": interface, "mountpoint": first.mountpoint, "server": first.server,
                          "count": len(mounts), "more": f" and {len(mounts) - 1} more" if len(mounts) > 1 else "",
                          "reason": nccl[interface][0]})
