"""NVLinks from an hwloc export's ``NVLinkBandwidth`` matrix, stated as NCCL's dump states them
(one ``nvlink`` per GPU and target with a ``count`` and the target's class), so NVL001/NVL002
judge an hwloc-only node the way they judge an NCCL dump.

What hwloc writes (hwloc/topology-nvml.c hwloc_nvml_discover, hwloc >= 2.5): for each active
NVLink of each GPU (nvmlDeviceGetNvLinkState) the peer found by nvmlDeviceGetNvLinkRemotePciInfo
is another GPU (its NVML OS device), an NVSwitch (its PCI device, given subtype ``NVSwitch`` by
hwloc__nvml_get_peer_obj_by_pci) or, for an IBM NPU, the GPU's first ancestor with a cpuset (a
Package on POWER8). Each link adds its per-link bandwidth to both sides of the matrix, once; the
diagonal is an artificial 1000000. The per-link bandwidth (MB/s, one direction) is hwloc's own
table by NVML link version, which changed between releases:

- 2.5.0 to 2.8.x: NVLink 1 = 20000, 2 = 25000; other versions' links are left out;
- 2.9.0: versions 3 and 4 = 50000;
- 2.9.1 to 2.11.x: versions 2 to 4 = 25000;
- 2.12.0 on (commit 8d00b43df): 1 = 20000, 2.0 to 4.0 = 25000, 5.0 (Blackwell) = 50000.

So the link count is the bandwidth divided by the per-link bandwidth of the GPU's generation
(from its PCI device id, else its GPUModel name). Where the release may have used another unit
(A100/H100 under 2.9.0; Blackwell where NVML reports an older version number) the unit kept is
the first for which every value of the GPU's row divides evenly and the sum stays within the
generation's link count. Where no unit fits, or the generation is unknown, ``count`` stays
unknown and ``bw_mbps`` keeps the bandwidth.

NCCL's dump names each target by bus id with its sysfs class (src/graph/xml.cc
ncclTopoGetXmlFromGpu, "Fill target classes"), and src/graph/topo.cc kvDictPciClass maps
0x068000 to an NVSwitch and 0x068001 to the CPU (ncclTopoAddNvLinks ignores a CPU link's target
and uses the GPU's local CPU). hwloc gives no bus id for the CPU side, so that target is None.
"""

from __future__ import annotations

import re

from topolint.model.facts import CPU_CLASS, GPU_CLASS, NVSWITCH_CLASS, NvLink, build
from topolint.model.host import HwlocNvlinkMatrix, HwlocObject, HwlocTopology

# NVLink generation by PCI id (GP100, GV100, GA100, GH100, GB100 parts).
GENERATION_BY_ID = {
    "0x10de:0x15f7": 1, "0x10de:0x15f8": 1, "0x10de:0x15f9": 1,
    "0x10de:0x1db1": 2, "0x10de:0x1db4": 2, "0x10de:0x1db5": 2, "0x10de:0x1db6": 2, "0x10de:0x1db8": 2,
    "0x10de:0x1df6": 2,
    "0x10de:0x20b0": 3, "0x10de:0x20b2": 3, "0x10de:0x20b5": 3, "0x10de:0x20f1": 3,
    "0x10de:0x2330": 4, "0x10de:0x2331": 4, "0x10de:0x2335": 4,
    "0x10de:0x2901": 5,
}
# ... and by NVML's product name (hwloc's GPUModel info), for ids not in the table.
GENERATION_BY_NAME = (
    (re.compile(r"\bP100\b"), 1), (re.compile(r"\bV100S?\b"), 2), (re.compile(r"\bA(?:100|800)\b"), 3),
    (re.compile(r"\bG?H(?:100|200|800)\b"), 4), (re.compile(r"\bG?B(?:100|200|300)\b"), 5),
)
# Links per GPU (P100 4, V100 6, A100 12, H100/H200 18, B200 18): a count above it means the unit is wrong.
MAX_LINKS = {1: 4, 2: 6, 3: 12, 4: 18, 5: 18}


def generation(pci_id: str | None, gpu_model: str | None) -> int | None:
    if pci_id in GENERATION_BY_ID:
        return GENERATION_BY_ID[pci_id]
    return next((gen for pattern, gen in GENERATION_BY_NAME if gpu_model and pattern.search(gpu_model)), None)


def link_units(gen: int, release: str | None) -> tuple[int, ...]:
    """Per-link bandwidths (MB/s) hwloc may have written for a GPU of this generation, the likely first."""
    if gen == 1:
        return (20000,)
    if gen == 2:
        return (25000,)
    if gen in (3, 4):
        return (50000, 25000) if re.match(r"2\.9\.0(?![0-9])", release or "") else (25000, 50000)
    return (50000, 25000)  # 25000 where NVML reports Blackwell's links as an older version number


def link_unit(mbps: list[int], gen: int | None, release: str | None) -> int | None:
    """The per-link unit that divides every value of a GPU's row within the generation's link count."""
    if gen is None:
        return None
    for unit in link_units(gen, release):
        if all(v % unit == 0 for v in mbps) and sum(mbps) // unit <= MAX_LINKS[gen]:
            return unit
    return None


def target_class(peer: HwlocObject) -> str | None:
    if peer.kind == "OSDev":
        return GPU_CLASS
    if peer.kind == "PCIDev":
        # hwloc__nvml_get_peer_obj_by_pci: a bridge-class (0x06) NVIDIA device is an NVSwitch
        if peer.subtype == "NVSwitch" or ((peer.pci_type or "").startswith("06") and "[10de:" in peer.pci_type):
            return NVSWITCH_CLASS
        return GPU_CLASS if (peer.pci_type or "").startswith("03") else None
    return CPU_CLASS if peer.kind not in ("Bridge", "Misc") else None


def _row_links(matrix: HwlocNvlinkMatrix, values: list, gen: int | None, release: str | None) -> list[NvLink]:
    unit = link_unit([v.mbps for v in values], gen, release)
    links = []
    for value in values:
        peer = matrix.objects[value.target]
        tclass = target_class(peer)
        if tclass is None:
            continue
        links.append(build(NvLink, target=peer.bus_id if tclass != CPU_CLASS else None,
                           count=value.mbps // unit if unit else None, tclass=tclass, bw_mbps=value.mbps,
                           attrs={}, loc=value.loc))
    return links


def gpu_nvlinks(hwloc: HwlocTopology, pci_ids: dict[str, str | None]) -> dict[str, list[NvLink]]:
    """GPU bus id -> its NVLinks, for the GPUs (``pci_ids``: bus id -> ``0xvvvv:0xdddd``) that are
    rows of the export's NVLinkBandwidth matrix. GPUs missing from it are missing from the result."""
    found: dict[str, list[NvLink]] = {}
    for matrix in hwloc.nvlink_matrices:
        rows: dict[int, list] = {}
        for value in matrix.values:
            rows.setdefault(value.source, []).append(value)
        for row, obj in enumerate(matrix.objects):
            if obj.kind != "OSDev" or obj.bus_id not in pci_ids or obj.bus_id in found:
                continue
            gen = generation(pci_ids[obj.bus_id], obj.gpu_model)
            found[obj.bus_id] = _row_links(matrix, rows.get(row, []), gen, hwloc.release)
    return found
