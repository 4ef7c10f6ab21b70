"""Host facts: what lspci, the kernel (cmdline, dmesg), virtualisation probes, numactl and hwloc
say about one node, and the manifest of a node bundle. Every value keeps its source position.

A fact a source does not give is None (unknown), never a default: ``Capabilities: <access
denied>`` leaves a device's link and ACS state unknown, not absent.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from topolint.model.facts import Fact, Location, _nones, build, location, packed_loc
from topolint.model.numbers import hex_int
from topolint.model.schema import Field

_TOKEN = re.compile(r"\S+")
LspciKind = Literal["verbose", "excerpt", "tree", "list"]


class PciLinkState(Fact):
    """One ``LnkCap:`` or ``LnkSta:`` line. ``speed_flag`` / ``width_flag`` are lspci's own
    annotations (``ok``, ``downgraded``; newer lspci prints both, older ones only a downgrade)."""

    speed_gts: Optional[float] = None
    speed_text: Optional[str] = None  # as printed: "2.5GT/s", "unknown"
    width: Optional[int] = None
    speed_flag: Optional[str] = None
    width_flag: Optional[str] = None
    loc: Location


class AcsControl(Fact):
    """An ``ACSCtl:`` line: each flag as printed (``ReqRedir+`` -> True)."""

    flags: dict[str, bool] = {}
    loc: Location

    @property
    def redirects(self) -> bool:
        """P2P redirect to the root complex: ReqRedir or CmpltRedir (SrcValid alone does not)."""
        return bool(self.flags.get("ReqRedir") or self.flags.get("CmpltRedir"))


class LspciDevice(Fact):
    """One device of an lspci output. ``address`` is None for lines with no device header (a
    grep excerpt): such a device is judged on what its lines say and attributed to nothing."""

    # Slots, not a dict, and loc packed: a device per lspci -t line of some 40 bytes (issue 20);
    # every field but loc defaults to None, declared in _field_specs (a slot has no class default).
    __slots__ = ("address", "class_name", "class_code", "vendor_id", "device_id", "description", "port_type",
                 "numa_node", "numa_loc", "driver", "secondary_bus", "subordinate_bus", "lnk_cap", "lnk_sta",
                 "lnk_cap2_max_gts", "acs_ctl", "capabilities_denied", "parent", "_path", "_at")
    _state_names = (*__slots__[:-2], "loc")
    _field_specs = {**dict.fromkeys(__slots__[:-2], Field(default=None)), "loc": Field()}
    address: Optional[str]  # normalised: 0000:17:00.0
    class_name: Optional[str]  # "3D controller", "PCI bridge"
    class_code: Optional[str]  # "0302" with -nn
    vendor_id: Optional[str]  # "10de" with -nn
    device_id: Optional[str]
    description: Optional[str]  # the rest of the header line
    port_type: Optional[str]  # "Endpoint", "Root Port", "Upstream Port", "Downstream Port", ...
    numa_node: Optional[int]
    numa_loc: Optional[Location]
    driver: Optional[str]
    secondary_bus: Optional[int]  # a bridge's "Bus: primary=, secondary=, subordinate="
    subordinate_bus: Optional[int]
    lnk_cap: Optional[PciLinkState]
    lnk_sta: Optional[PciLinkState]
    lnk_cap2_max_gts: Optional[float]  # LnkCap2 "Supported Link Speeds: 2.5-32GT/s" -> 32
    acs_ctl: Optional[AcsControl]
    capabilities_denied: Optional[Location]  # "Capabilities: <access denied>" (not root)
    parent: Optional[str]  # the bridge above (from bus numbers or the tree)
    loc: Location = packed_loc()

    @property
    def domain(self) -> Optional[str]:
        return self.address.rsplit(":", 2)[0] if self.address else None

    @property
    def bus(self) -> Optional[int]:
        return hex_int(self.address.rsplit(":", 2)[1]) if self.address else None


class LspciFile(Fact):
    """An lspci output: ``-vvv`` blocks, a header-less excerpt, a ``-t`` tree or one-line list."""

    path: str
    kind: LspciKind
    has_ids: bool = False  # -nn: [vendor:device] ids on the header lines
    devices: list[LspciDevice] = []

    def by_address(self) -> dict[str, LspciDevice]:
        return {d.address: d for d in self.devices if d.address}


class KernelValue(Fact):
    """A value the kernel printed or was given, where it was printed."""

    value: str
    loc: Location


class KernelLog(Fact):
    """IOMMU and virtualisation lines of a ``dmesg`` (or ``journalctl -k``) output."""

    path: str
    default_domain: Optional[KernelValue] = None  # "Translated", "Passthrough" (iommu: Default domain type)
    iommu_lines: list[KernelValue] = []  # DMAR / AMD-Vi / iommu lines, for evidence
    hypervisor: Optional[KernelValue] = None  # "KVM" from "Hypervisor detected: KVM"
    dmi: Optional[KernelValue] = None  # "DMI: Dell Inc. PowerEdge XE9680/..., BIOS ..."
    cmdline: Optional[KernelValue] = None  # "Command line: ..."
    cpu_vendor: Optional[KernelValue] = None  # "Intel" from DMAR, "AMD" from AMD-Vi


class KernelCmdline(Fact):
    """``/proc/cmdline``: its line; ``parameters`` gives each with its column. The line is kept
    and its parameters made when read: a fact per parameter of a few bytes is twenty times the
    line (issue 20), and one rule reads them once."""

    path: str
    line: int = 1
    text: str = ""

    @property
    def parameters(self) -> list[KernelValue]:
        return [build(KernelValue, value=m.group(0), loc=location(self.path, self.line, m.start() + 1))
                for m in _TOKEN.finditer(self.text)]


class VirtEvidence(Fact):
    """What a virtualisation probe said: ``systemd-detect-virt`` ("none", "kvm", ...) or the DMI
    product name (``/sys/class/dmi/id/product_name``)."""

    path: str
    probe: Literal["systemd-detect-virt", "dmi-product-name"]
    value: KernelValue


class NumaNode(Fact):
    """One node of ``numactl -H``. ``cpus`` is the cpulist text ("" for a CPU-less node: HBM,
    CXL or GPU memory)."""

    # Slots: a node per two lines of a few dozen bytes, up to 1,024 of them (issue 20)
    __slots__ = ("node_id", "cpus", "size_mb", "free_mb", "loc")
    _field_specs = _nones("cpus", "size_mb", "free_mb")
    node_id: int
    cpus: Optional[str]
    size_mb: Optional[int]
    free_mb: Optional[int]
    loc: Location


class NumaTable(Fact):
    """A ``numactl -H`` (``--hardware``) output."""

    path: str
    available: Optional[int] = None  # the "available: N nodes" count
    nodes: list[NumaNode] = []
    distances: dict[int, list[int]] = {}
    partial: bool = False  # fewer node lines than "available" says (a cut paste)
    loc: Location


class HwlocObject(Fact):
    """An hwloc object that topolint reads: a NUMA node, a package, a PCI device or bridge, an
    OS device (GPU, NIC) with the PCI device it hangs off."""

    kind: str  # hwloc type: NUMANode, Package, Bridge, PCIDev, OSDev
    index: Optional[int] = None  # os_index
    gp_index: Optional[int] = None  # hwloc's global persistent index, what distance matrices name
    name: Optional[str] = None  # OS device name: mlx5_0, ib0, nvml0, cuda0
    subtype: Optional[str] = None  # OSDev subtype: CUDA, NVML, OpenFabrics, NVSwitch
    osdev_class: Optional[str] = None  # from osdev_type: openfabrics, network, gpu, coproc, storage, dma, memory
    bus_id: Optional[str] = None  # PCI address of PCIDev/Bridge (or the OSDev's PCI parent)
    parent_bus_id: Optional[str] = None  # the PCI object above a PCIDev/Bridge (None: under a host bridge)
    pci_type: Optional[str] = None  # "0302 [10de:1db5] [10de:1212] a1"
    link_speed_gbs: Optional[float] = None  # hwloc's pci_link_speed (GB/s)
    numa_nodes: list[int] = []  # the NUMA nodes local to it (its nearest parents')
    cpuset: Optional[str] = None
    gpu_model: Optional[str] = None  # a GPU OS device's GPUModel info: "Tesla V100-SXM3-32GB-H"
    loc: Location


class HwlocBandwidth(Fact):
    """One nonzero value off the diagonal of hwloc's ``NVLinkBandwidth`` matrix: the summed
    bandwidth (MB/s, one direction) of the active NVLinks from ``source`` (row) to ``target``
    (column). ``loc`` is the value in its ``<u64values>`` element."""

    source: int  # positions in HwlocNvlinkMatrix.objects
    target: int
    mbps: int
    loc: Location


class HwlocNvlinkMatrix(Fact):
    """hwloc's ``NVLinkBandwidth`` distances (``distances2hetero``, or ``distances2`` when every
    peer is a GPU): the objects it names in order (NVML GPU OS devices, NVSwitch PCI devices,
    the CPU side of IBM NPU links), where each row starts, and its nonzero off-diagonal values."""

    objects: list[HwlocObject] = []
    row_locs: list[Location] = []
    values: list[HwlocBandwidth] = []
    loc: Location


class HwlocTopology(Fact):
    """An hwloc / lstopo XML export."""

    path: str
    version: Optional[str] = None
    numa_nodes: list[HwlocObject] = []
    pci: list[HwlocObject] = []
    os_devices: list[HwlocObject] = []
    release: Optional[str] = None  # the hwlocVersion info (the hwloc that wrote it), when kept
    nvlink_matrices: list[HwlocNvlinkMatrix] = []
    loc: Location


BundleStatus = Literal["ok", "failed", "timeout", "missing", "denied", "skipped"]


class BundleCommand(Fact):
    """One command of a node bundle's manifest: what ran, how it ended, which file holds it."""

    file: str
    argv: list[str] = []
    status: BundleStatus
    exit_code: Optional[int] = None
    seconds: Optional[float] = None
    format: Optional[str] = None  # the format collect expected (for outputs no content names)
    message: Optional[str] = None  # why it failed: the end of stderr, "not installed", ...
    loc: Location


class BundleManifest(Fact):
    """``topolint-bundle.json``: the host, the time, tool versions and each command's outcome."""

    path: str
    folder: str
    host: Optional[str] = None
    collected_at: Optional[str] = None
    topolint_version: Optional[str] = None
    tools: dict[str, str] = {}
    commands: list[BundleCommand] = []
    unknown_files: list[str] = []  # files in the bundle the manifest does not list
    loc: Location

    @property
    def failed(self) -> list[BundleCommand]:
        return [c for c in self.commands if c.status not in ("ok", "skipped")]
