"""TOPO005: a pci busid listed twice, or one GPU's nvlink target listed twice.

NCCL does not merge duplicates: a second ``pci`` with the same busid creates a second graph
node for one device, and a second ``nvlink`` to the same target connects the same pair again,
which adds the bandwidth to the existing link (ncclTopoConnectNodes: ``link->bw += bw``).
The finding is at the second occurrence and points back at the first.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._topology import gpu_label, gpu_sort_key, where
from topolint.engine.finding import Hit, Related
from topolint.model.node import gpu_entity, pci_entity

NEEDS = ("topology",)


class Parameters(CheckParameters):
    pass


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    for topology in context.node.topologies:
        yield from _busids(node, topology)
        yield from _nvlinks(node, topology)


def _busids(node: str, topology) -> Iterator[Hit]:
    first: dict = {}
    for pci in topology.pci:
        if not pci.bus_id:
            continue  # no busid at all is TOPO002's empty attribute, not a duplicate
        if pci.bus_id not in first:
            first[pci.bus_id] = pci
            continue
        original = first[pci.bus_id]
        bridge = pci.kind == "bridge" and original.kind == "bridge"
        hit = Hit(
            entity=pci_entity(node, pci.bus_id),
            location=pci.loc,
            variant="busid_bridge" if bridge else "busid",
            fields={"bus": pci.bus_id, "first_line": original.loc.line},
            evidence=[f"{where(original.loc)}: first pci busid={original.attrs.get('busid', pci.bus_id)}",
                      f"{where(pci.loc)}: again pci busid={pci.attrs.get('busid', pci.bus_id)}"],
            related=[Related(location=original.loc, entity=pci_entity(node, original.bus_id),
                             message=f"first pci {original.bus_id}")],
        )
        if bridge:
            hit.severity = "info"  # lookups find the first bridge; its children still hang under one
        yield hit


def _nvlinks(node: str, topology) -> Iterator[Hit]:
    for gpu in sorted(topology.gpus, key=gpu_sort_key):
        first: dict = {}
        for link in gpu.nvlinks:
            if not link.target:
                continue
            if link.target not in first:
                first[link.target] = link
                continue
            original = first[link.target]
            counts = [c for c in (original.count, link.count) if c is not None]
            yield Hit(
                entity=gpu_entity(node, gpu.bus_id),
                location=link.loc,
                variant="nvlink",
                fields={
                    "gpu": gpu_label(gpu),
                    "gpu_bus": gpu.bus_id,
                    "target": link.target,
                    "first_line": original.loc.line,
                    "first_count": original.count if original.count is not None else "?",
                    "count": link.count if link.count is not None else "?",
                    "total": sum(counts) if len(counts) == 2 else "?",
                },
                evidence=[f"{where(original.loc)}: {gpu_label(gpu)} nvlink target={link.target} "
                          f"count={original.count}",
                          f"{where(link.loc)}: {gpu_label(gpu)} nvlink target={link.target} count={link.count}"],
                related=[Related(location=original.loc, entity=gpu_entity(node, gpu.bus_id),
                                 message=f"first nvlink of {gpu_label(gpu)} to {link.target}")],
            )
