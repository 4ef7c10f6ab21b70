"""What a device is, from what lspci, nvidia-smi or hwloc call it: PCI ids and kinds of lspci
devices, the model of a GPU (its SM, so NCCL's per-NVLink bandwidth) and, for the SXM parts of
HGX/DGX boards, the NVLinks each GPU has to the NVSwitches.

Sources: topolint/data/pci_devices.toml (by PCI id: name, kind, PCIe capability, SM); NVIDIA's
compute capability table (https://developer.nvidia.com/cuda-gpus and /cuda-legacy-gpus) for the
SM of a model named in words; perf-reference.md 1.1 for the boards' links per GPU (A100 SXM4 12,
H100/H200 SXM5, B200, B300 18). The completion (model/completion.py) and the checks read these;
nothing here reads an input.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from topolint.model.host import LspciDevice

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEVICES = Path(__file__).resolve().parent.parent / "data" / "pci_devices.toml"

# Vendors whose devices only hypervisors present (QEMU/Red Hat, virtio, Hyper-V, VMware, Xen),
# and the TI bridge IBM Cloud and KVM put above passed-through GPUs.
HYPERVISOR_VENDORS = {"1b36", "1af4", "1414", "15ad", "5853"}
HYPERVISOR_IDS = {"104c:8232"}
_HYPERVISOR_NAMES = re.compile(r"\b(?:QEMU|Virtio|Hyper-V|VMware|Xen Platform)\b", re.IGNORECASE)
_VENDOR_NAMES = {"NVIDIA Corporation": "10de", "Mellanox Technologies": "15b3"}
_DEVICE_BY_NAME = re.compile(r"(NVIDIA Corporation|Mellanox Technologies) Device ([0-9a-fA-F]{4})\b")
_FABRIC_NIC = re.compile(r"Mellanox|ConnectX|BlueField|Elastic Fabric|E810|BCM575|P2100|P1400|Thor", re.IGNORECASE)
_MANAGEMENT = re.compile(r"management endpoint|Switch management", re.IGNORECASE)
GPU_VENDORS = {"10de", "1002"}


def pci_ids(device: LspciDevice) -> str | None:
    """``vvvv:dddd`` from ``-nn`` ids, or from lspci's ``NVIDIA Corporation Device 2330`` naming."""
    return _pci_ids(device.vendor_id, device.device_id, device.description)


def _pci_ids(vendor_id: str | None, device_id: str | None, description: str | None) -> str | None:
    if vendor_id and device_id:
        return f"{vendor_id}:{device_id}"
    match = _DEVICE_BY_NAME.search(description or "")
    return f"{_VENDOR_NAMES[match.group(1)]}:{match.group(2).lower()}" if match else None


def _vendor(ids: str | None, description: str) -> str | None:
    if ids:
        return ids.split(":")[0]
    return next((v for name, v in _VENDOR_NAMES.items() if description.startswith(name)), None)


def device_kind(device: LspciDevice) -> str:
    """gpu, fabric-nic, nic, switch-port, root-port, management, hypervisor, other, or unknown
    (a device with no header line)."""
    if device.address is None:
        return "unknown"
    return _kind(device.class_code, device.class_name, device.description, device.vendor_id, device.device_id,
                 device.port_type)


# A kind depends on these few short strings alone, and the nodes of a cluster repeat them.
@lru_cache(maxsize=4096)
def _kind(code: str | None, name: str | None, text: str | None, vendor_id: str | None, device_id: str | None,
          port_type: str | None) -> str:
    code, name, text = code or "", name or "", text or ""
    if _is_hypervisor(vendor_id, device_id, text):
        return "hypervisor"
    if _MANAGEMENT.search(text):
        return "management"
    if code.startswith("03") or name in ("VGA compatible controller", "3D controller", "Display controller"):
        vendor = _vendor(_pci_ids(vendor_id, device_id, text), text)
        return "gpu" if vendor in GPU_VENDORS or text.startswith(("NVIDIA", "Advanced Micro Devices")) else "other"
    if code.startswith("02") or name in ("Ethernet controller", "Infiniband controller", "Network controller"):
        return "fabric-nic" if code == "0207" or name == "Infiniband controller" or _FABRIC_NIC.search(text) \
            else "nic"
    if port_type == "Root Port":
        return "root-port"
    if port_type in ("Upstream Port", "Downstream Port"):
        return "switch-port"
    return "other"


def is_hypervisor_device(device: LspciDevice) -> bool:
    return _is_hypervisor(device.vendor_id, device.device_id, device.description)


@lru_cache(maxsize=4096)
def _is_hypervisor(vendor_id: str | None, device_id: str | None, description: str | None) -> bool:
    ids = _pci_ids(vendor_id, device_id, description)
    return bool((ids and (ids.split(":")[0] in HYPERVISOR_VENDORS or ids in HYPERVISOR_IDS))
                or _HYPERVISOR_NAMES.search(description or ""))


@lru_cache(maxsize=1)
def known_devices() -> dict[str, dict]:
    """``0xvvvv:0xdddd`` -> {name, kind, pcie_gen, lanes, sm} (topolint/data/pci_devices.toml)."""
    with DEVICES.open("rb") as handle:
        return {key.lower(): value for key, value in tomllib.load(handle).items()}


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as NCCL sees it: its SM (compute capability x 10) and, on an NVSwitch board,
    the NVLinks each GPU has to the switches (None: not an NVSwitch board part, or not known)."""

    name: str
    sm: int
    nvswitch_links: int | None = None


# Model names as nvidia-smi, hwloc (GPUModel) and lspci's descriptions print them, most specific
# first: the SXM board parts (with their links to NVSwitches), then the families by compute
# capability (developer.nvidia.com/cuda-gpus). PCIe and NVL cards of a family share its SM but
# have no NVSwitch.
_BOARDS = (
    (re.compile(r"\bA100[- ]SXM"), "A100 SXM4", 80, 12),
    (re.compile(r"\bH100 80GB HBM3\b|\bH100[- ]SXM"), "H100 SXM5", 90, 18),
    (re.compile(r"\bH200\b(?! NVL)"), "H200 SXM", 90, 18),
    (re.compile(r"\bB200\b"), "B200", 100, 18),
    (re.compile(r"\bB300\b"), "B300", 103, 18),
    (re.compile(r"\bGB200\b"), "GB200", 100, 18),
    (re.compile(r"\bGB300\b"), "GB300", 103, 18),
)
_FAMILIES = (
    (re.compile(r"\bRTX PRO \d{4} Blackwell|\bRTX 50[5-9]0\b"), 120),
    (re.compile(r"\bG?H(?:100|200|800|20)\b"), 90),
    (re.compile(r"\bL40S?\b|\bL4\b|\bRTX \d{4} Ada\b|\bRTX 40[5-9]0\b"), 89),
    (re.compile(r"\bA(?:100|800|30)\b"), 80),
    (re.compile(r"\bA(?:10G?|40|16|2)\b|\bRTX A\d{4}\b|\bRTX 30[5-9]0\b"), 86),
    (re.compile(r"\bT4\b|\bQuadro RTX\b|\bRTX 20[6-8]0\b"), 75),
    (re.compile(r"\bV100|\bTITAN V\b|\bGV100\b"), 70),
    (re.compile(r"\bP100\b|\bGP100\b"), 60),
    (re.compile(r"\bP40\b|\bP4\b"), 61),
)


@lru_cache(maxsize=256)
def gpu_model_by_name(text: str | None) -> GpuModel | None:
    """The model a name such as ``NVIDIA H100 80GB HBM3`` or ``Tesla V100-SXM2-32GB`` stands for."""
    if not text:
        return None
    for pattern, label, sm, links in _BOARDS:
        if pattern.search(text):
            return GpuModel(label, sm, links)
    for pattern, sm in _FAMILIES:
        match = pattern.search(text)
        if match:
            return GpuModel(match.group(0), sm)
    return None


def gpu_model_by_id(pci_id: str | None) -> GpuModel | None:
    """The model of a ``0x10de:0x2330`` PCI id in topolint/data/pci_devices.toml (with its SM)."""
    entry = known_devices().get((pci_id or "").lower())
    if entry is None or entry.get("kind") != "gpu" or not entry.get("sm"):
        return None
    board = gpu_model_by_name(entry["name"])
    return GpuModel(entry["name"], entry["sm"], board.nvswitch_links if board is not None else None)


def hex_pci_id(device: LspciDevice) -> str | None:
    """The device's ``0x10de:0x2330``: how topolint/data/pci_devices.toml and NCCL's XML write ids."""
    ids = pci_ids(device)
    return f"0x{ids.replace(':', ':0x')}" if ids else None


def lspci_gpu_model(device: LspciDevice) -> GpuModel | None:
    """A GPU's model from its lspci PCI id, else from the name lspci prints (``GH100 [H100 SXM5 80GB]``)."""
    return gpu_model_by_id(hex_pci_id(device)) or gpu_model_by_name(device.description)
