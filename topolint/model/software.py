"""What a node runs: versions of the NVIDIA driver, CUDA, OFED and the kernel, the kernel modules
loaded and their versions (parsers/versions.py), each with the line that states it. The
inventory's software part (fleet/build.py) and FLEET003 read these."""

from __future__ import annotations

from typing import Literal, Optional

from topolint.model.facts import Fact, Location

Component = Literal["driver", "cuda", "nvml", "ofed", "kernel"]


class SoftwareVersion(Fact):
    component: Component
    version: str
    loc: Location


class KernelModule(Fact):
    """A loaded module (``/proc/modules``, ``lsmod``), or a module's version (``/sys/module/M/version``)."""

    name: str
    version: Optional[str] = None
    loc: Location


class SoftwareFile(Fact):
    """One version output. ``tool`` names it: nvidia-driver-version, nvidia-smi-version,
    ofed-info, kernel-version, kernel-modules, module-versions."""

    path: str
    tool: str
    versions: list[SoftwareVersion] = []
    modules: list[KernelModule] = []  # kernel-modules: every module loaded; module-versions: those listed

    def version(self, component: str) -> Optional[SoftwareVersion]:
        return next((v for v in self.versions if v.component == component), None)
