"""What FLEET001 and FLEET003 share: every attribute of one kind compared across the nodes of
each group (fleet/groups.py), one hit per node whose value is not its group's majority.

With a majority (more than half of the nodes that state the attribute, in a group of three or
more), each other node is reported with its value and the majority's, and how many nodes hold
each. Without one (an even split, two nodes), every node of the split is reported as info,
saying so. The hits are O(values) to find: one pass groups the values, one counts them.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.engine.finding import Hit, Related
from topolint.fleet.attributes import UNSET, Value, values
from topolint.fleet.groups import MIN_MAJORITY_NODES, Group, Tally, group_name
from topolint.profiles.compare import profile_hits

MAX_LISTED = 8  # nodes an evidence line names before counting the rest


def _listed(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:MAX_LISTED])
    return shown + (f" and {len(nodes) - MAX_LISTED} more" if len(nodes) > MAX_LISTED else "")


def _said(value: Value, raw) -> str:
    return "unset" if raw == UNSET else value.attribute.say(raw)


def _origin(value: Value) -> str:
    """Where the node's value was read; an inventory file's line too when the run read one."""
    source = value.source
    at = source.kept_at
    if value.value == UNSET:
        return f"{source.where.path}: the node's NCCL settings do not set {value.part}"
    kept = f" (kept in {at[0]}:{at[1]})" if at is not None else ""
    return f"{source.origin}{kept}"


def _group_evidence(group: Group, node: str) -> list[str]:
    lines = [f"group {group.name}: {len(group.nodes)} nodes alike in GPU model and count and RDMA port models"]
    own = group.joined.get(node)
    if own is not None:
        lines.append(f"{node} is compared with group {group.name} though its own signature is {group_name(own)}: "
                     "a signature this rare that differs in one part is an odd node out, not a kind of node")
    return lines


def _subject(value: Value, node: str) -> str:
    return f"{node} {value.part}" if value.part else node


def _table(cluster) -> list[tuple[Group, dict[tuple, list[tuple[str, Value]]]]]:
    """Each group with its nodes' values by attribute key, in key order: one pass over every
    inventory, shared by FLEET001 and FLEET003."""
    table = cluster.shared.get("attributes")
    if table is None:
        env_names = frozenset(name for inventory in cluster.inventories.values() for name in inventory.nccl_env)
        table = []
        for group in cluster.groups:
            by_key: dict[tuple, list[tuple[str, Value]]] = {}
            for node in group.nodes:
                for value in values(cluster.inventories[node], env_names):
                    by_key.setdefault(value.key, []).append((node, value))
            table.append((group, {key: by_key[key] for key in sorted(by_key, key=repr)}))
        cluster.shared["attributes"] = table
    return table


def differing(context, kind: str) -> Iterator[Hit]:
    """Hits for every attribute of ``kind`` (fleet.attributes HARDWARE or CONFIG)."""
    cluster = context.cluster
    for group, by_key in _table(cluster):
        for found in by_key.values():
            if found[0][1].attribute.kind != kind:
                continue
            judged: set[str] = set()
            if len(group.nodes) < MIN_MAJORITY_NODES:  # too few for a majority: the profile is the expectation
                for node, hit in profile_hits(context, group, found):
                    judged.add(node)
                    if hit is not None:
                        yield hit
            found = [(node, value) for node, value in found if node not in judged]
            tally = Tally.of([value.value for _, value in found])
            if found and not tally.uniform:
                yield from _attribute_hits(cluster, group, found, tally)


def _attribute_hits(cluster, group: Group, found: list[tuple[str, Value]], tally: Tally) -> Iterator[Hit]:
    holders: dict[object, list[str]] = {}
    for node, value in found:
        holders.setdefault(value.value, []).append(node)
    majority = tally.majority
    example = {raw: next(v for n, v in found if n == nodes[0]) for raw, nodes in holders.items()}
    for node, value in found:
        if majority is not None and value.value == majority[0]:
            continue
        fields = {"subject": _subject(value, node), "node": node, "value": _said(value, value.value),
                  "group": group.name, "total": tally.total, "count": len(holders[value.value])}
        others = [(raw, nodes) for raw, nodes in holders.items() if raw != value.value]
        evidence = [f"{_origin(value)}: {fields['subject']}: {fields['value']}"]
        evidence += [f"{len(nodes)} of {tally.total} nodes: {_said(value, raw)} ({_listed(nodes)}; "
                     f"e.g. {_origin(example[raw])})" for raw, nodes in others]
        if majority is not None:
            evidence += _parts_differ(cluster, value, node, holders[majority[0]][0])
        evidence += _group_evidence(group, node)
        if majority is not None:
            raw, count = majority
            shown = _said(value, raw)
            verb = "leave it" if raw == UNSET else value.attribute.verb
            fields.update(majority=shown, majority_count=count, verb=verb)
            severity, variant = ("info", "info") if value.attribute.info else (None, "default")
            related = [Related(location=example[raw].source.where, entity=example[raw].entity(holders[raw][0]),
                               message=f"{holders[raw][0]}, one of the {count} nodes with {shown}")]
        else:
            fields["distribution"] = "; ".join(f"{count} with {_said(value, raw)}" for raw, count in tally.counts)
            severity, variant, related = "info", "no_majority", []
            why = "fewer than 3 nodes" if tally.total < 3 else "no value is held by more than half"
            evidence.append(f"no majority in group {group.name}: {why}, so no node is the odd one out")
        yield Hit(entity=value.entity(node), location=value.source.where, fields=fields, variant=variant,
                  severity=severity, evidence=evidence, related=related)


def _parts(inventory, key: tuple) -> list[str] | None:
    if key == ("system", "gpu_count"):
        return [gpu.key for gpu in inventory.gpus]
    if key == ("system", "nic_ports"):
        return [nic.name for nic in inventory.nics]
    return None


def _parts_differ(cluster, value: Value, node: str, other: str) -> list[str]:
    """For a count (GPUs, RDMA ports): which parts a node of the majority has that this one lacks."""
    mine, theirs = _parts(cluster.inventories[node], value.key), _parts(cluster.inventories[other], value.key)
    if mine is None or theirs is None:
        return []
    lacking = [part for part in theirs if part not in set(mine)]
    extra = [part for part in mine if part not in set(theirs)]
    lines = [f"{node} lacks {_listed(lacking)}, which {other} has"] if lacking else []
    return lines + ([f"{node} has {_listed(extra)}, which {other} does not"] if extra else [])
