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


# The modules that let NICs read GPU memory (GPUDirect RDMA); nv_peer_mem: the Mellanox module
# before driver 470.
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")


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
    # kernel-modules: the first module loaded and the RDMA peer-memory ones (what is read of a
    # listing, issue 20: a fact per 20-byte line is 16 times the input), module_count all of them;
    # module-versions: those listed
    modules: list[KernelModule] = []
    module_count: int = 0

    def version(self, component: str) -> Optional[SoftwareVersion]:
        return next((v for v in self.versions if v.component == component), None)
