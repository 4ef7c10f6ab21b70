"""PCIE001: a GPU, NIC or switch port whose PCIe link trained below what both ends support
(lspci LnkSta against LnkCap, and lspci's own ``(downgraded)`` tag, which alone, without the
LnkCap line, is info: lspci compared the status with the device's own capability).

The other end of the link counts: a Gen4 device below a Gen5 port runs at Gen4 by design, so a
downgrade down to what the other end's LnkCap allows is not this rule. Width loss is a warning;
a speed drop at full width is info for a GPU (GPUs lower the link speed when idle) and for a
device with no header line (a pasted excerpt: its kind is unknown). Devices off the GPU/NIC data
path (storage, USB, BMC video, 1 GbE management NICs) are info; switch management endpoints
are exempt. ``Capabilities: <access denied>`` leaves the link unknown: nothing is judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._host import PciTree, lspci_unjudged, pci_tree
from topolint.checks._topology import where
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity, pci_entity

NEEDS = ("lspci",)
_ON_DATA_PATH = {"gpu", "fabric-nic", "switch-port", "root-port"}
_KIND_LABEL = {"gpu": "GPU", "fabric-nic": "NIC", "nic": "NIC", "switch-port": "switch port",
               "root-port": "root port", "other": "device", "unknown": "device"}


class Parameters(CheckParameters):
    pass


def device_label(device, kind: str) -> str:
    if device.address is None:
        return f"an unnamed device (line {device.loc.line})"
    return f"{_KIND_LABEL.get(kind, 'device')} {device.address}"


def entity(node: str, device, kind: str, path: str) -> str:
    if device.address is None:
        return pci_entity(node, f"unknown@{path}:{device.loc.line}")
    return gpu_entity(node, device.address) if kind == "gpu" else pci_entity(node, device.address)


def _limits(device, other) -> tuple[float | None, int | None]:
    """What the link can reach: the lower LnkCap of the two ends (one end when the other is unknown)."""
    speeds = [c.speed_gts for c in (device.lnk_cap, other.lnk_cap if other else None) if c and c.speed_gts]
    widths = [c.width for c in (device.lnk_cap, other.lnk_cap if other else None) if c and c.width]
    return (min(speeds) if speeds else None), (min(widths) if widths else None)


def _shortfall(device, other) -> tuple[bool, bool]:
    cap, sta = device.lnk_cap, device.lnk_sta
    speed_limit, width_limit = _limits(device, other)
    if other is None:  # only lspci's own tags and this end's LnkCap
        slow = sta.speed_flag == "downgraded" or bool(sta.speed_gts and cap.speed_gts and sta.speed_gts < cap.speed_gts)
        narrow = sta.width_flag == "downgraded" or bool(sta.width and cap.width and sta.width < cap.width)
        return slow, narrow
    return (bool(sta.speed_gts and speed_limit and sta.speed_gts < speed_limit),
            bool(sta.width and width_limit and sta.width < width_limit))


def _variant(kind: str, slow: bool, narrow: bool) -> tuple[str, str | None]:
    if kind not in _ON_DATA_PATH and kind != "unknown":
        return "off_path", "info"
    if narrow:
        return ("width", None) if kind != "unknown" else ("unknown_width", None)
    if kind == "gpu":
        return "gpu_speed", "info"
    if kind == "unknown":
        return "unknown_speed", "info"
    return "default", None


def _sta_line(sta) -> str:
    return (f"{where(sta.loc)}: LnkSta: Speed {sta.speed_text}" + (f" ({sta.speed_flag})" if sta.speed_flag else "")
            + f", Width x{sta.width}" + (f" ({sta.width_flag})" if sta.width_flag else ""))


def _evidence(device, other, tree: PciTree) -> list[str]:
    cap, sta = device.lnk_cap, device.lnk_sta
    lines = [f"{where(cap.loc)}: LnkCap: Speed {cap.speed_text}, Width x{cap.width}", _sta_line(sta)]
    if other is not None:
        lines.append(f"{where(other.lnk_cap.loc)}: the other end of the link, {other.address}, supports "
                     f"Speed {other.lnk_cap.speed_text}, Width x{other.lnk_cap.width}")
    elif device.address is None:
        lines.append(f"{tree.lspci.path} has no device line above line {device.loc.line}: the device and the other "
                     "end of its link are unknown (lspci -vvv of the whole node settles them)")
    else:
        lines.append("the other end of this link is not in the input: the downgrade may be what it supports")
    if device.numa_node is not None:
        lines.append(f"{where(device.numa_loc)}: NUMA node {device.numa_node}")
    return lines


def _marked(sta) -> str | None:
    """What lspci itself marks "(downgraded)" on a LnkSta line, speed and width each by name."""
    slow, narrow = sta.speed_flag == "downgraded", sta.width_flag == "downgraded"
    if slow and narrow:
        return f"both the speed {sta.speed_text} and the width x{sta.width}"
    if slow:
        return f"the speed {sta.speed_text}"
    return f"the width x{sta.width}" if narrow else None


def _annotated_hit(node: str, device, tree: PciTree) -> Hit | None:
    """A LnkSta line that lspci marked "(downgraded)" without its LnkCap line in the input (an
    excerpt). lspci prints the mark when the link status is below the device's own LnkCap
    (pciutils ls-caps.c cap_express_link, link_compare: "downgraded" from 3.6.0; from 3.8.0 only
    as " (downgraded)" and not for root ports, downstream ports and PCIe bridges): evidence that
    this end trained below what it supports, while what the other end supports stays unknown."""
    sta = device.lnk_sta
    marked, narrow = _marked(sta), sta.width_flag == "downgraded"
    kind = tree.kind(device)
    if marked is None or kind in ("management", "hypervisor"):
        return None
    other = tree.other_end(device)
    other_cap = other.lnk_cap if other is not None else None
    if other_cap is not None and (sta.speed_flag != "downgraded" or sta.speed_gts == other_cap.speed_gts) and (
            sta.width_flag != "downgraded" or sta.width == other_cap.width):
        return None  # the other end supports no more: the link runs at what it allows (not this rule)
    fields = {"device": device_label(device, kind), "speed": sta.speed_text, "width": sta.width,
              "marked": marked, "path": tree.lspci.path, "address": device.address or f"line {sta.loc.line}",
              "idle": "; GPUs lower the link speed when idle" if kind == "gpu" and not narrow else "",
              "unknown": "its LnkCap line and the other end of the link are not in the input" if other_cap is None
              else f"its LnkCap line is not in the input (the other end, {other.address}, supports "
                   f"{other_cap.speed_text} x{other_cap.width})"}
    evidence = [_sta_line(sta),
                "lspci marks a LnkSta value (downgraded) when it is below the device's own LnkCap (pciutils "
                "ls-caps.c link_compare)",
                f"no LnkCap line for this device in {tree.lspci.path}: by how much is unknown"]
    if other_cap is None:
        evidence.append("the other end of this link is not in the input: the downgrade may be what it supports")
    return Hit(entity=entity(node, device, kind, tree.lspci.path), location=sta.loc, fields=fields,
               evidence=evidence, variant="annotated", severity="info")


def link_hits(node: str, tree: PciTree) -> Iterator[Hit]:
    for device in tree.lspci.devices:
        cap, sta = device.lnk_cap, device.lnk_sta
        if sta is None or device.capabilities_denied is not None:
            continue
        if cap is None:
            if sta.width and sta.speed_gts:
                hit = _annotated_hit(node, device, tree)
                if hit is not None:
                    yield hit
            continue
        if not sta.width or not sta.speed_gts:
            continue  # no link (an empty slot: x0, speed unknown)
        kind = tree.kind(device)
        if kind in ("management", "hypervisor"):
            continue  # switch management endpoints are exempt; virtual links are made up
        other = tree.other_end(device)
        if device.port_type in ("Root Port", "Downstream Port") and other is not None and other.lnk_sta is not None:
            continue  # the device below reports this link (once per link)
        slow, narrow = _shortfall(device, other)
        if not (slow or narrow):
            continue
        variant, severity = _variant(kind, slow, narrow)
        speed_limit, width_limit = _limits(device, other)
        fields = {"device": device_label(device, kind), "speed": sta.speed_text, "width": sta.width,
                  "cap_speed": f"{speed_limit:g}GT/s" if speed_limit else cap.speed_text,
                  "cap_width": width_limit or cap.width, "path": tree.lspci.path,
                  "address": device.address or f"line {sta.loc.line}",
                  "supported": "both ends of its link support" if other is not None else "it supports"}
        yield Hit(entity=entity(node, device, kind, tree.lspci.path), location=sta.loc, fields=fields,
                  evidence=_evidence(device, other, tree), variant=variant, severity=severity)


def check(context, params: Parameters) -> Iterator[Hit]:
    for lspci in context.node.lspci:
        context.notes.extend(lspci_unjudged(lspci, "link states"))
        if lspci.kind in ("verbose", "excerpt"):
            yield from link_hits(context.node.name, pci_tree(context, lspci))
