"""What ``nvidia-smi -q`` (``-a``) and ``nvidia-smi --query-gpu=... --format=csv`` say about each
GPU: its identity (product name, PCI bus id, UUID, serial, module id) and its NVLink fabric
(the Fabric section: State, Status, CliqueId, ClusterUUID, Health). Every value keeps its line.

A value nvidia-smi prints as ``N/A`` or ``Not Supported`` (``[N/A]`` in CSV) is stated as
printed but says nothing: ``Stated.value`` is None for it. A GPU outside a multi-node NVLink
system (a standalone GH200, an HGX board without NVLink Switch trays) prints its Fabric fields
so, or a ClusterUUID of all zeros: no NVLink domain shared with other nodes.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from topolint.model.facts import Fact, Location, packed_loc
from topolint.model.schema import Field

_NOT_STATED = frozenset({"", "n/a", "not supported", "not applicable", "[n/a]", "[not supported]"})
_ZERO_UUID = re.compile(r"[0-]+")


def not_stated(text: str | None) -> bool:
    return text is None or text.strip().lower() in _NOT_STATED


class Stated(Fact):
    """One field as printed, and the line (column: the value's) that prints it."""

    # These three have slots, not a dict, and their defaults in _field_specs; a Stated's loc is
    # packed (facts.packed_loc): a CSV row is a GPU, its fabric and a Stated per cell in some 60
    # bytes (issue 20).
    __slots__ = ("text", "_path", "_at")
    _state_names = ("text", "loc")
    _field_specs = {"loc": Field()}
    text: str
    loc: Location = packed_loc()

    @property
    def value(self) -> str | None:
        """The text, or None when nvidia-smi says it has no value (N/A, Not Supported)."""
        return None if not_stated(self.text) else self.text


class GpuFabric(Fact):
    """The Fabric section of one GPU (or the fabric.* columns of a CSV row)."""

    __slots__ = ("loc", "state", "status", "clique_id", "cluster_uuid", "health_summary", "health_bandwidth")
    _field_specs = dict.fromkeys(__slots__[1:], Field(default=None))
    loc: Location  # the ``Fabric`` line, or the CSV row
    state: Optional[Stated]  # Not Supported, Not Started, In Progress, Completed
    status: Optional[Stated]  # Success, or what went wrong ("Insufficient Resources")
    clique_id: Optional[Stated]
    cluster_uuid: Optional[Stated]
    health_summary: Optional[Stated]  # Healthy, Unhealthy, Limited Capacity (newer drivers)
    health_bandwidth: Optional[Stated]  # Full, Degraded, ...

    @property
    def stated(self) -> bool:
        """Whether any field says something (all N/A: a GPU without a multi-node NVLink fabric)."""
        return any(f is not None and f.value is not None for f in
                   (self.state, self.status, self.clique_id, self.cluster_uuid, self.health_summary))

    @property
    def domain(self) -> str | None:
        """``CLUSTERUUID/CLIQUEID`` of the NVLink domain the GPU is in; None when it states none: an
        all-zero ClusterUUID (an HGX board's own NVSwitches) is no domain shared across nodes."""
        uuid = self.cluster_uuid.value if self.cluster_uuid is not None else None
        if uuid is None or _ZERO_UUID.fullmatch(uuid):
            return None
        clique = self.clique_id.value if self.clique_id is not None else None
        return f"{uuid.lower()}/{clique if clique is not None else '-'}"


class QueriedGpu(Fact):
    """One GPU block of ``nvidia-smi -q`` (``GPU 00000000:DB:00.0``) or one CSV row."""

    __slots__ = ("index", "index_stated", "bus_id", "name", "uuid", "serial", "module_id", "fabric", "loc")
    _field_specs = {"index_stated": Field(default=False), **dict.fromkeys(__slots__[2:8], Field(default=None))}
    index: int  # the CSV's index column, else the block's position in the file (nvidia-smi's order)
    index_stated: bool  # the index is printed (CSV index column, -q Minor Number is no index)
    bus_id: Optional[str]  # normalised 0000:db:00.0; None when the output names none
    name: Optional[Stated]  # Product Name
    uuid: Optional[Stated]
    serial: Optional[Stated]
    module_id: Optional[Stated]
    fabric: Optional[GpuFabric]
    loc: Location


class GpuQueryFile(Fact):
    """An ``nvidia-smi -q`` output (``kind`` "query"; "excerpt" for a grep of it without GPU
    headers) or an ``nvidia-smi --query-gpu`` CSV ("csv")."""

    path: str
    kind: Literal["query", "excerpt", "csv"]
    driver: Optional[Stated] = None
    attached: Optional[int] = None  # "Attached GPUs : N": fewer than the node's in a cgroup (Slurm job) view
    gpus: list[QueriedGpu] = []
