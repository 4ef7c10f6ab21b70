"""FLEET001 against the profile: in a group of like nodes too small for a majority (fewer than
three), a node's hardware value is compared with what its profile states instead (docs/fleet.md,
docs/profiles.md). A node whose profile states the attribute is judged by it, and not reported
for lack of a majority; one whose profile does not state it is left to the majority rule.

Compared: the GPU count and NUMA nodes (equal), each GPU's NVLinks and each Active RDMA port's
rate (at least what the profile states; a port's rate by the profile's HCA name globs).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator

from topolint.engine.finding import Hit


def _expected(profile, key: tuple):
    """(the profile's value for the attribute, the profile value's name, "equal" or "at least")."""
    kind, name = key[0], key[-1]
    if kind == "system" and name in ("gpu_count", "numa_nodes"):
        return profile.value(name), name, "equal"
    if kind == "gpu" and name == "nvlinks":
        return profile.value("nvlinks"), "nvlinks", "at least"
    if kind == "nic" and name == "rate_gbps":
        hca = key[1].rpartition(":")[0]
        for pattern, rate in (profile.value("port_gbps") or {}).items():
            if fnmatch.fnmatchcase(hca, pattern):
                return rate, "port_gbps", "at least"
    return None, None, None


def profile_hits(context, group, found: list) -> Iterator[tuple[str, Hit | None]]:
    """(node, hit or None) for each node of ``found`` its profile judges: a hit where it differs."""
    choice = getattr(context.options, "profiles", None)
    if choice is None or not found:
        return
    from topolint.profiles.reveal import inventory_shape

    inventories = context.cluster.inventories
    for node, value in found:
        chosen = choice.for_name(node, lambda: inventory_shape(inventories[node]))
        profile = chosen.profile
        if profile is None:
            continue
        expected, name, how = _expected(profile, value.key)
        if expected is None or not isinstance(value.value, (int, float)) or isinstance(value.value, bool):
            continue
        ok = value.value == expected if how == "equal" else value.value >= expected
        if ok:
            yield node, None
            continue
        said = value.attribute.say(value.value)
        subject = f"{node} {value.part}" if value.part else node
        fields = {"subject": subject, "node": node, "value": said, "group": group.name, "total": len(group.nodes),
                  "count": 1, "profile": profile.name, "expected": value.attribute.say(expected),
                  "verb": value.attribute.verb}
        evidence = [f"{value.source.origin}: {subject}: {said}",
                    f"profile {profile.name} ({profile.title}; {chosen.how}): {profile.cited(name)}",
                    f"group {group.name} has {len(group.nodes)} nodes, too few for a majority: the profile is the "
                    "expectation"]
        yield node, Hit(entity=value.entity(node), location=value.source.where, fields=fields, variant="profile",
                        evidence=evidence)
