"""PCIE003: the IOMMU translates every DMA (default domain type Translated) on bare metal.

Only positive evidence counts (checks/_host.iommu_mode): dmesg's ``iommu: Default domain type:
Translated``, or a command line that is unambiguous for the CPU vendor dmesg shows. The absence
of ``iommu=pt`` is never evidence. On a node shown to be a VM nothing is reported; with no
evidence either way the finding is info and says what would settle it.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._host import iommu_mode, virtualisation, vm_unjudged
from topolint.engine.finding import Hit
from topolint.model.node import file_entity

NEEDS = ("dmesg or cmdline",)


class Parameters(CheckParameters):
    pass


_UNSETTLED = ("no input settles the IOMMU's default domain type (dmesg's `iommu: Default domain type` line, or a "
              "kernel command line unambiguous for the CPU vendor dmesg names; a missing iommu=pt is not evidence): "
              "not judged")


def check(context, params: Parameters) -> Iterator[Hit]:
    mode = iommu_mode(context.node)
    if mode.mode == "unknown":
        context.notes.append(_UNSETTLED if not mode.evidence else
                             f"{mode.evidence[0]}: a domain type topolint does not know: not judged")
        return
    if mode.mode != "translated":
        return
    virt = virtualisation(context.node)
    if virt.state == "vm":
        context.notes.append(vm_unjudged(virt, "its IOMMU settings"))  # a guest's IOMMU is the hypervisor's business
        return
    fields = {"source": "dmesg" if mode.source == "dmesg" else "the kernel command line",
              "path": mode.location.path}
    hit = Hit(entity=file_entity(context.node.name, mode.location.path), location=mode.location, fields=fields,
              evidence=[*mode.evidence, *virt.evidence])
    if virt.state == "unknown":
        hit.variant, hit.severity = "unknown_virt", "info"
        hit.evidence.append(f"whether this matters depends on bare metal: {virt.settle}")
    yield hit
