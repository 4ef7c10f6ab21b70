"""What the PCIe and IOMMU checks share: device kinds in lspci, the other end of a link, PCI ids,
whether a node is bare metal (from evidence only) and the IOMMU mode the kernel reports."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from topolint.checks._topology import where
from topolint.model.devices import device_kind, is_hypervisor_device, pci_ids  # noqa: F401 (re-exported)
from topolint.model.host import LspciDevice, LspciFile
from topolint.model.pcie import gts_generation as generation  # noqa: F401 (re-exported)

# VM product names (DMI) and systemd-detect-virt words that are containers, not VMs.
_VM_PRODUCTS = re.compile(r"KVM|QEMU|Standard PC \(|Virtual Machine|VMware|HVM domU|Google Compute Engine|"
                          r"OpenStack|BHYVE|Parallels|VirtualBox|Cloud Hypervisor", re.I)
CONTAINERS = {"docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "rkt", "wsl", "openvz", "proot", "pouch",
              "container-other"}


@dataclass
class PciTree:
    """Parents and children of one lspci file's devices (from bridge bus numbers or the tree)."""

    lspci: LspciFile
    by_address: dict[str, LspciDevice] = field(default_factory=dict)
    children: dict[str, list[LspciDevice]] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)  # id(device) -> device_kind, computed once

    @classmethod
    def of(cls, lspci: LspciFile) -> PciTree:
        tree = cls(lspci, lspci.by_address())
        for device in lspci.devices:
            if device.parent:
                tree.children.setdefault(device.parent, []).append(device)
        return tree

    def kind(self, device: LspciDevice) -> str:
        kind = self.kinds.get(id(device))
        if kind is None:
            kind = self.kinds[id(device)] = device_kind(device)
        return kind

    def ancestors(self, device: LspciDevice) -> list[LspciDevice]:
        out, seen = [], set()
        current = self.by_address.get(device.parent or "")
        while current is not None and current.address not in seen:
            seen.add(current.address)
            out.append(current)
            current = self.by_address.get(current.parent or "")
        return out

    def descendants(self, device: LspciDevice) -> list[LspciDevice]:
        out, stack, seen = [], list(self.children.get(device.address or "", [])), set()
        while stack:
            child = stack.pop()
            if child.address in seen:
                continue
            seen.add(child.address)
            out.append(child)
            stack.extend(self.children.get(child.address, []))
        return sorted(out, key=lambda d: d.address)

    def other_end(self, device: LspciDevice) -> LspciDevice | None:
        """The device at the other end of this device's link: the port above an endpoint or an
        upstream port; the first function below a downstream or root port."""
        if device.port_type in ("Root Port", "Downstream Port"):
            below = [d for d in self.children.get(device.address or "", []) if d.lnk_cap is not None]
            return min(below, key=lambda d: d.address) if below else None
        parent = self.by_address.get(device.parent or "")
        return parent if parent is not None and parent.lnk_cap is not None else None


def pci_tree(context, lspci: LspciFile) -> PciTree:
    """One PciTree per lspci file per run context: the PCIe checks share it."""
    trees = context.shared.setdefault("pci_trees", {})
    if id(lspci) not in trees:
        trees[id(lspci)] = PciTree.of(lspci)
    return trees[id(lspci)]


@dataclass
class Virtualisation:
    """``state`` is bare-metal, vm or unknown; ``evidence`` says which input said so."""

    state: str
    evidence: list[str]
    settle: str = "systemd-detect-virt (collected by `topolint collect`) would settle it"


def virtualisation(node) -> Virtualisation:
    """Bare metal only from positive evidence (systemd-detect-virt says none); a VM from any
    hypervisor sign (the probe, dmesg, a VM product name, hypervisor PCI devices)."""
    vm, bare = [], []
    for probe in node.virt:
        value = probe.value.value
        if probe.probe == "systemd-detect-virt":
            if value == "none":
                bare.append(f"{where(probe.value.loc)}: systemd-detect-virt says none (bare metal)")
            elif value not in CONTAINERS:
                vm.append(f"{where(probe.value.loc)}: systemd-detect-virt says {value}")
        elif _VM_PRODUCTS.search(value):
            vm.append(f"{where(probe.value.loc)}: DMI product name {value!r} is a virtual machine's")
    for log in node.kernel_logs:
        if log.hypervisor is not None:
            vm.append(f"{where(log.hypervisor.loc)}: dmesg: Hypervisor detected: {log.hypervisor.value}")
        if log.dmi is not None and _VM_PRODUCTS.search(log.dmi.value):
            vm.append(f"{where(log.dmi.loc)}: dmesg: DMI: {log.dmi.value}")
    for lspci in node.lspci:
        device = next((d for d in lspci.devices if d.address and is_hypervisor_device(d)), None)
        if device is not None:
            vm.append(f"{where(device.loc)}: {device.address} {device.description} is a hypervisor's device")
    if vm:
        return Virtualisation("vm", vm[:3])
    if bare:
        return Virtualisation("bare-metal", bare[:1])
    return Virtualisation("unknown", ["no input says whether this node is bare metal or a VM"])


@dataclass
class IommuMode:
    mode: str  # translated, passthrough, off, unknown
    location: object | None = None
    evidence: list[str] = field(default_factory=list)
    source: str = ""


_PT = {"iommu=pt", "iommu.passthrough=1", "iommu.passthrough=on", "iommu.passthrough=y"}
_OFF = {"iommu=off", "intel_iommu=off", "amd_iommu=off"}
_TRANSLATED = {"iommu.passthrough=0", "iommu.passthrough=off", "iommu.passthrough=n"}


def _cmdline_parameters(node) -> list:
    params = [p for cmdline in node.cmdlines for p in cmdline.parameters]
    if not params:
        for log in node.kernel_logs:
            if log.cmdline is not None:
                params.append(log.cmdline)
    return params


def iommu_mode(node) -> IommuMode:
    """The IOMMU's default domain type from positive evidence: dmesg's ``iommu: Default domain
    type`` line; else a command line that is unambiguous for the CPU vendor dmesg names (Intel
    needs ``intel_iommu=on`` and ``iommu.passthrough=0``; AMD's IOMMU is on by default, so
    ``iommu.passthrough=0`` without ``amd_iommu=off``). Never from a missing ``iommu=pt``."""
    for log in node.kernel_logs:
        if log.default_domain is not None:
            value = log.default_domain.value.lower()
            mode = "translated" if value.startswith("translated") else "passthrough" if value.startswith(
                "passthrough") else "unknown"
            return IommuMode(mode, log.default_domain.loc,
                             [f"{where(log.default_domain.loc)}: dmesg: iommu: Default domain type: "
                              f"{log.default_domain.value}"], "dmesg")
    vendor = next((log.cpu_vendor for log in node.kernel_logs if log.cpu_vendor is not None), None)
    params = _cmdline_parameters(node)
    words = {p.value.split(" ")[0]: p for p in params}
    for param in params:
        for word in param.value.split():
            words.setdefault(word, param)
    if any(w in words for w in _PT | _OFF):
        found = next(words[w] for w in sorted(_PT | _OFF) if w in words)
        return IommuMode("passthrough" if found.value in _PT else "off", found.loc,
                         [f"{where(found.loc)}: kernel command line has {found.value}"], "cmdline")
    translated = next((words[w] for w in sorted(_TRANSLATED) if w in words), None)
    if translated is None or vendor is None:
        return IommuMode("unknown")
    evidence = [f"{where(translated.loc)}: kernel command line has {translated.value}",
                f"{where(vendor.loc)}: dmesg shows an {vendor.value} IOMMU ({'DMAR' if vendor.value == 'Intel' else 'AMD-Vi'})"]
    if vendor.value == "Intel":
        enabled = words.get("intel_iommu=on")
        if enabled is None:
            return IommuMode("unknown")  # whether VT-d is on by default depends on the kernel's build
        evidence.append(f"{where(enabled.loc)}: kernel command line has intel_iommu=on")
    return IommuMode("translated", translated.loc, evidence, "cmdline")


# ---- why a host rule says nothing (--verbose notes) ----------------------------------------------
def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def lspci_unjudged(lspci: LspciFile, what: str, devices: list[LspciDevice] | None = None) -> list[str]:
    """Why ``what`` (link states, ACS bits) in this lspci output goes unjudged: a list or a tree
    prints no capabilities; ``Capabilities: <access denied>`` (lspci without root) hides them."""
    if lspci.kind not in ("verbose", "excerpt"):
        return [f"{lspci.path}: an lspci {'tree' if lspci.kind == 'tree' else 'device list'} has no capability "
                f"lines: {what} not judged (`sudo lspci -vvv` settles it)"]
    denied = [d for d in (lspci.devices if devices is None else devices) if d.capabilities_denied is not None]
    if not denied:
        return []
    names = ", ".join(d.address or f"line {d.loc.line}" for d in denied[:4]) + (", ..." if len(denied) > 4 else "")
    return [f"{where(denied[0].capabilities_denied)}: Capabilities: <access denied> on {_plural(len(denied), 'device')} "
            f"({names}; lspci ran without root): {what} not judged (`sudo lspci -vvv` settles it)"]


def vm_unjudged(virt: Virtualisation, what: str) -> str:
    return f"not judged on a VM ({virt.evidence[0]}): {what} are the hypervisor's"
