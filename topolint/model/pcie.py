"""PCIe link speeds as NCCL reads them (kvDictPciGen, prefix match; unknown reads as Gen3)."""

from __future__ import annotations

from topolint.model.nccl_version import NcclVersion
from topolint.model.numbers import c_int, decimal_fraction, remembered, strtol_prefix

# Spellings and values (100 Mb/s per lane) come from the version table (pci_speeds row).
GEN3 = 60
GENERATION_BY_VALUE = {15: 1, 30: 2, 60: 3, 120: 4, 240: 5, 480: 6}
GT_PER_GENERATION = {1: "2.5", 2: "5.0", 3: "8.0", 4: "16.0", 5: "32.0", 6: "64.0"}
GENERATION_OF_GTS = {decimal_fraction(gts): generation for generation, gts in GT_PER_GENERATION.items()}


def gts_generation(gts: float | None) -> int | None:
    """The PCIe generation of a link speed in GT/s as lspci prints it (``16GT/s``: 4), or None."""
    return GENERATION_OF_GTS.get(gts) if gts is not None else None


@remembered  # a cluster has a handful of speed texts
def speed_value(link_speed: str | None, version: NcclVersion) -> int | None:
    """NCCL's per-lane value for ``link_speed``, or None when NCCL would not recognise it."""
    if link_speed is None:
        return None
    for spelling, value in version.behaviour("pci_speeds"):  # kvDictPciGen of that version
        if link_speed.startswith(spelling):
            return value
    return None


def read_speed(link_speed: str | None, version: NcclVersion) -> int:
    """The value NCCL actually uses: unknown or empty strings become Gen3."""
    return speed_value(link_speed, version) or GEN3


@remembered  # a cluster has a handful of width texts
def nccl_width(link_width: str | None) -> int | None:
    """The lane count NCCL reads from ``link_width``: ``xmlGetAttrInt`` is ``strtol(str, NULL, 0)``
    kept in a C int (src/graph/xml.h), so ``010`` is 8 and ``16x`` is 16; None when no digit."""
    width = strtol_prefix(link_width)
    return None if width is None else c_int(width)


def read_width(link_width: str | None) -> int:
    """NCCL treats a zero width as x16 (src/graph/topo.cc ncclTopoAddPci: ``if (width == 0) width
    = 16``); a missing, unreadable or negative one is taken as x16 too."""
    width = nccl_width(link_width) or 0
    return width if width > 0 else 16


def link_bandwidth_gbs(link_speed: str | None, link_width: str | None, version: NcclVersion) -> float:
    """GB/s as NCCL computes a PCI link: width x speed / 80 (x16 Gen4 = 24)."""
    return read_width(link_width) * read_speed(link_speed, version) / 80.0


def generation(link_speed: str | None, version: NcclVersion) -> int | None:
    value = speed_value(link_speed, version)
    return GENERATION_BY_VALUE.get(value) if value else None
