"""Node facts that change a link: the topology as the estimate should see it.

An NCCL dump states what NCCL read when it was written, and some fields are maxima, not the
current state (NICs' and bridges' PCIe links are their capability: health-tools.md 1.15). Other
inputs of the same node say what is true now; each changes one link and lowers the estimate
only where it is lower than the topology says:
- ``ibstat``/``ibv_devinfo``: a port that is not Active carries nothing; an Active port's rate
  replaces a higher speed in the XML (NCCL takes the speed from the device at run time).
- ``ethtool``: the same for a socket interface's speed.
- ``lspci -vvv``: a link's LnkSta (what it trained at) replaces a faster speed or width.
- ``nvidia-smi nvlink -s``: inactive NVLinks are taken off that GPU (GPU index = device index).
Each change is reported with the line that states it. Nothing else is guessed.
"""

from __future__ import annotations

from topolint.model.fabric import EthtoolFile, PortsFile
from topolint.model.facts import TopologyFile
from topolint.model.pcie import GT_PER_GENERATION, generation, read_width


def refine(node, topology: TopologyFile, notes: list[str]) -> TopologyFile:
    """``topology`` with the changes the node's other facts imply (a copy; the input is kept)."""
    update = {}
    nics = _nics(node, topology, notes)
    if nics is not None:
        update["nics"] = nics
    pci = _pci(node, topology, notes)
    if pci is not None:
        update["pci"] = pci
    gpus = _gpus(node, topology, notes)
    if gpus is not None:
        update["gpus"] = gpus
    return topology.model_copy(update=update) if update else topology


def _where(loc) -> str:
    return f"{loc.path}:{loc.line}"


def _nics(node, topology: TopologyFile, notes: list[str]):
    ports = {(p.hca, p.port): p for f in node.fabric if isinstance(f, PortsFile) for p in f.ports}
    links = {link.interface: link for f in node.fabric if isinstance(f, EthtoolFile) for link in f.links
             if link.interface}
    if not ports and not links:
        return None
    changed, nics = False, []
    for nic in topology.nics:
        nets = []
        for net in nic.nets:
            port = ports.get((net.name, net.port or 1))
            link = links.get(net.name)
            if port is not None and not port.active:
                notes.append(f"{net.name} port {net.port or 1}: {port.state or 'not active'} "
                             f"({_where(port.at('state'))}); it carries no traffic")
                changed = True
                continue
            speed = None
            if port is not None and port.rate_gbps:
                speed, where = int(port.rate_gbps * 1000), port.at("rate")
            elif link is not None and link.speed_mbps:
                speed, where = link.speed_mbps, link.at("speed")
            if speed and net.speed_mbps and speed < net.speed_mbps:
                notes.append(f"{net.name}: runs at {speed} Mb/s ({_where(where)}), not the {net.speed_mbps} "
                             f"the topology states ({_where(net.loc)})")
                net = net.model_copy(update={"speed_mbps": speed})
                changed = True
            nets.append(net)
        if nic.nets and not nets:
            continue  # every port down: the NIC is gone (an empty <nic> would read as a default one)
        nics.append(nic.model_copy(update={"nets": nets}) if nets != nic.nets else nic)
    return nics if changed else None


def _pci(node, topology: TopologyFile, notes: list[str]):
    states = {d.address: d.lnk_sta for f in node.lspci for d in f.devices if d.address and d.lnk_sta}
    if not states:
        return None
    from topolint.model.nccl_version import NEWEST, NcclVersion

    version = NcclVersion.parse(NEWEST)
    changed, pci = False, []
    for device in topology.pci:
        state = states.get(device.bus_id)
        if state is None:
            pci.append(device)
            continue
        update = {}
        gen_now = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}.get(state.speed_gts or 0.0)
        gen_xml = generation(device.link_speed, version)
        if gen_now and gen_xml and gen_now < gen_xml:
            update["link_speed"] = f"{GT_PER_GENERATION[gen_now]} GT/s PCIe"
        if state.width and state.width < read_width(device.link_width):
            update["link_width"] = str(state.width)
        if update:
            notes.append(f"PCIe {device.bus_id}: trained at {state.speed_text or '?'} x{state.width or '?'} "
                         f"({_where(state.loc)}), below the topology's {device.link_speed} x{device.link_width}")
            device = device.model_copy(update=update)
            changed = True
        pci.append(device)
    return pci if changed else None


def _gpus(node, topology: TopologyFile, notes: list[str]):
    status = {g.index: g for s in node.nvlink_status for g in s.gpus}
    if not status:
        return None
    changed, gpus = False, []
    for gpu in topology.gpus:
        seen = status.get(gpu.dev) if gpu.dev is not None else None
        lost = len(seen.inactive) if seen is not None else 0
        if seen is not None and seen.all_inactive:
            lost = sum(link.count or 0 for link in gpu.nvlinks)
        if not lost or not gpu.nvlinks:
            gpus.append(gpu)
            continue
        links, left = [], lost
        for link in sorted(gpu.nvlinks, key=lambda x: -(x.count or 0)):
            take = min(left, link.count or 0)
            left -= take
            if (link.count or 0) - take > 0:
                links.append(link.model_copy(update={"count": (link.count or 0) - take}))
        notes.append(f"GPU {gpu.dev}: {lost} NVLinks inactive ({_where(seen.loc)}); taken off its NVLink bandwidth")
        gpus.append(gpu.model_copy(update={"nvlinks": links}))
        changed = True
    return gpus if changed else None
