"""What NCCL's own load of a topology file gives (model/nccl_xml.py, model/nccl_graph.py): its
refusal or acceptance, once per node for every check that asks. TOPO001 reports the refusals a
live load makes too; the rules that describe the file's paths and links (NUMA001, NUMA002,
NVL001, ...) ask ``as_written`` whether to say that they describe a file NCCL will not load.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from topolint.checks._memo import per_node

# Attributes NCCL never fills in from the live system (NVML, sysfs): a file without them fails
# ncclTopoGetSystemFromXml even on the machine (src/graph/topo.cc ncclTopoAddNvLinks, ncclTopoAddC2c).
_NEVER_FILLED = ("of node nvlink not found", "of node c2c not found", "of node pcilink not found")


@dataclass(frozen=True)
class NcclLoad:
    """``error``: NCCL's refusal (TopologyRejected) or None; ``misreads``: the single-quoted
    values NCCL 2.26 and older read to the next double quote (model/nccl_xml.py Misread)."""
    error: object
    misreads: tuple

    @property
    def reported(self):
        """The refusal TOPO001 reports: the reader's (src/graph/xml.cc), or a missing attribute
        NCCL never fills in. Other graph-stage refusals may not happen on the machine, where NCCL
        fills the file's gaps from sysfs and NVML first (docs/nccl-fidelity.md)."""
        error = self.error
        if error is None:
            return None
        if error.stage == "xml" or any(marker in error.message for marker in _NEVER_FILLED):
            return error
        return None


def nccl_load(context, topology) -> NcclLoad:
    """NCCL's load of ``topology`` at the version in force, asked once per node."""
    version = context.version
    return per_node(context.shared, ("nccl load", version), topology, lambda: load_of(topology, version))


def load_of(topology, version) -> NcclLoad:
    """NCCL's load of ``topology`` at ``version`` (not remembered: ``nccl_load`` is)."""
    from topolint.model.nccl_graph import TopologyRejected, check_loads

    try:
        misreads = check_loads(topology, version)
    except TopologyRejected as error:
        return NcclLoad(error, tuple(error.misreads))
    return NcclLoad(None, tuple(misreads))


def as_written(context, topology) -> str | None:
    """The words a path or link finding about ``topology`` starts with when TOPO001 reports that
    NCCL refuses or misreads the file (its facts are then the file's, not what NCCL loads), or
    None when NCCL loads it as written."""
    load = nccl_load(context, topology)
    if load.reported is not None:
        return "NCCL will not load this file; as written, "
    if load.misreads:
        return "NCCL misreads this file; as written, "
    return None


def describes_the_file_as_written(check):
    """For a rule about a file's paths and links that keeps speaking when NCCL refuses or misreads
    the file: each hit located in such a file gets ``as_written`` (the words its message starts
    with, e.g. "NCCL will not load this file; as written, "), every other hit an empty one."""

    @wraps(check)
    def checked(context, params):
        topologies = {t.path: t for t in context.node.topologies} if context.node is not None else {}
        prefixes: dict[str, str] = {}
        for hit in check(context, params):
            path = hit.location.path
            if path not in prefixes:
                topology = topologies.get(path)
                prefixes[path] = (as_written(context, topology) or "") if topology is not None else ""
            hit.fields.setdefault("as_written", prefixes[path])
            yield hit

    return checked


def silent_on_files_nccl_refuses(code: str):
    """For a rule about what NCCL does with a loaded file (which NIC a channel uses, how much
    traffic a switch uplink carries): no hit in a file NCCL refuses or misreads, a note instead."""

    def decorate(check):
        @wraps(check)
        def checked(context, params):
            topologies = {t.path: t for t in context.node.topologies} if context.node is not None else {}
            silent: set[str] = set()
            for hit in check(context, params):
                topology = topologies.get(hit.location.path)
                if topology is not None and as_written(context, topology) is not None:
                    if topology.path not in silent:
                        silent.add(topology.path)
                        context.notes.append(f"{topology.path}: {code} says nothing about a file NCCL will not load "
                                             f"as written (TOPO001)")
                    continue
                yield hit

        return checked

    return decorate
