"""NUMA005: two NUMA nodes (cpu elements) of one host claim overlapping CPU affinity masks."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import MAX_GROUP_MEMBERS, FindingGroup, Hit, Related, capped_evidence
from topolint.model.node import cpu_entity
from topolint.model.numbers import CpuSet, cpulist, cpumask

NEEDS = ("complete topology or matrix",)
MAX_RANGES = 8
MAX_NAMED = 8  # names a message lists before it counts the rest


class Parameters(CheckParameters):
    pass


def cpu_list(cpus: CpuSet) -> tuple[int, str]:
    """The number of CPUs in ``cpus`` and their list in cpulist form (``0-15,32-47``), cut after
    MAX_RANGES ranges."""
    ranges = cpus.intervals
    text = CpuSet(ranges[:MAX_RANGES]).text()
    if len(ranges) > MAX_RANGES:
        text += f",... ({len(ranges)} ranges)"
    return len(cpus), text


def numa_name(cpu) -> str:
    return f"NUMA {cpu.numa_id}" if cpu.numa_id is not None else f"cpu #{cpu.index}"


def join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def check(context, params: Parameters) -> Iterator[Hit]:
    yield from _xml_hits(context)
    yield from _matrix_hits(context)


def _matrix_hits(context) -> Iterator[Hit]:
    """GPUs on different NUMA nodes that report overlapping CPU affinity (not in cgroup views:
    those are TL005). NUMA nodes come from the NUMA Affinity column, else from SYS/SOC between
    GPUs that no PCIe relation joins."""
    from topolint.checks._matrix import gpu_text, matrix_contexts
    for mc in matrix_contexts(context.node, complete_only=True, shared=context.shared):
        view = mc.view
        rows = [r for r in mc.matrix.rows if r.kind == "gpu" and r.cpu_affinity]
        sets = {r.label: cpulist(r.cpu_affinity) or CpuSet() for r in rows}
        reported: set = set()
        for j, row in enumerate(rows):
            numa = view.numa(row.label)
            group = ("numa", numa) if numa is not None else ("socket", view.socket_groups[row.label])
            if group in reported:
                continue
            earlier = [o for o in rows[:j] if sets[o.label] & sets[row.label]
                       and view.different_numa(o.label, row.label)]
            if not earlier:
                continue
            reported.add(group)
            same = [r for r in rows[j:] if (("numa", view.numa(r.label)) if view.numa(r.label) is not None
                                             else ("socket", view.socket_groups[r.label])) == group]
            shared = CpuSet()
            for o in earlier:
                shared |= sets[o.label] & sets[row.label]
            count, ranges = cpu_list(shared)
            where_text = f"NUMA {numa}" if numa is not None else f"the socket of {gpu_text(row.label)}"
            other = earlier[0]
            other_numa = view.numa(other.label)
            fields = {
                "gpus": join([gpu_text(r.label) for r in same]),
                "numa": where_text,
                "affinity": row.cpu_affinity,
                "others": join([gpu_text(o.label) for o in earlier]),
                "other_numa": f"NUMA {other_numa}" if other_numa is not None else "the other socket",
                "other_affinity": other.cpu_affinity,
                "count": count,
                "cpus": ranges,
                "file": mc.matrix.path,
            }
            why = (f"NUMA Affinity {row.numa_affinity} vs {other.numa_affinity}" if numa is not None
                   and other_numa is not None else
                   f"{view.rel(other.label, row.label)} between {other.label} and {row.label}, and no PCIe "
                   f"relation (PIX/PXB/PHB/NODE) joins their sides of the matrix")
            evidence = [f"{row.loc.path}:{row.loc.line}: {row.label} CPU Affinity {row.cpu_affinity}",
                        f"{other.loc.path}:{other.loc.line}: {other.label} CPU Affinity {other.cpu_affinity}",
                        f"different NUMA nodes: {why}"]
            related = [Related(location=o.loc, entity=mc.gpu_entity(o.label),
                               message=f"{gpu_text(o.label)} claims the same CPUs") for o in earlier[:4]]
            yield Hit(entity=cpu_entity(context.node.name, numa, view.socket_groups[row.label]),
                      location=row.loc, fields=fields, evidence=evidence, related=related, variant="matrix")


def _xml_hits(context) -> Iterator[Hit]:
    """One finding per CPU that overlaps earlier ones, when one does; when several do, one
    finding for them all (a FindingGroup whose entity is the first's), so the output grows with
    the CPUs, not with their pairs. Overlaps are found through the first claimer of each CPU id:
    linear in the masks' CPUs, never every pair of masks."""
    for topology in context.node.topologies:
        masks = [(cpu, cpumask(cpu.affinity)) for cpu in topology.cpus]
        masks = [(cpu, mask) for cpu, mask in masks if mask]
        by_host: dict[str, list] = {}
        for cpu, mask in masks:
            by_host.setdefault(cpu.host_hash or "", []).append((cpu, mask))
        for host_masks in by_host.values():
            later = _overlapping(host_masks)
            if later:
                yield _xml_hit(context, topology, host_masks, later)


def _overlapping(masks: list) -> list[int]:
    """Indexes of the masks that share a CPU with an earlier one, in order."""
    claimed: set[int] = set()
    later = []
    for j, (_, mask) in enumerate(masks):
        ids = [c for low, high in mask.intervals for c in range(low, high + 1)]
        if not claimed.isdisjoint(ids):
            later.append(j)
        claimed.update(ids)
    return later


def _xml_hit(context, topology, masks: list, later: list[int]) -> Hit:
    j = later[0]
    cpu, mask = masks[j]
    earlier = [(other, other_mask & mask) for other, other_mask in masks[:j] if other_mask & mask]
    shared = CpuSet()
    for _, overlap in earlier:
        shared |= overlap
    count, ranges = cpu_list(shared)
    own, _ = cpu_list(mask)
    others = [o for o, _ in earlier]
    names = [numa_name(o) for o in others[:MAX_NAMED]]
    if len(others) > MAX_NAMED:
        names.append(f"{len(others) - MAX_NAMED} more")
    fields = {
        "numa": numa_name(cpu),
        "affinity": cpu.affinity,
        "others": join(names),
        "other_affinity": others[0].affinity,
        "count": count,
        "cpus": ranges,
        "own_count": own,
        "file": topology.path,
    }
    evidence = [f"{cpu.loc.path}:{cpu.loc.line}: cpu numaid={cpu.numa_id} affinity=\"{cpu.affinity}\" "
                f"({own} CPUs)"]
    evidence += capped_evidence(
        (f"{o.loc.path}:{o.loc.line}: cpu numaid={o.numa_id} affinity=\"{o.affinity}\" shares "
         f"{cpu_list(overlap)[0]} CPUs ({cpu_list(overlap)[1]})" for o, overlap in earlier), noun="more cpu elements")
    related = [
        Related(location=o.loc, entity=cpu_entity(context.node.name, o.numa_id, o.index),
                message=f"{numa_name(o)} claims the same CPUs")
        for o in others[:MAX_GROUP_MEMBERS]
    ]
    entity = cpu_entity(context.node.name, cpu.numa_id, cpu.index)
    group = None
    if len(later) > 1:
        members = [masks[k][0] for k in later]
        group = FindingGroup.of("members", (cpu_entity(context.node.name, m.numa_id, m.index) for m in members),
                                key="cpu-affinity-overlap")
        evidence.append(f"{len(members)} cpu elements overlap earlier ones: "
                        + ", ".join(numa_name(m) for m in members[:MAX_NAMED])
                        + (f" and {len(members) - MAX_NAMED} more" if len(members) > MAX_NAMED else ""))
    return Hit(entity=entity, location=cpu.loc, fields=fields, evidence=evidence, related=related, group=group)
