"""One finding for many nodes: the same finding on several nodes of a run (same rule, same
entity below the node, same message once the node's own name is set aside, same severity)
shares a FindingGroup of kind "nodes" (engine/finding.py) listing those nodes.

Each node keeps its own Finding, entity and fingerprint (baselines and suppressions stay per
node); JSON and SARIF keep one result per node, each with the group. The full and concise
formats print a group once, on its first finding, with the node list (``shown_once``).
Findings that already stand for a group of members, suppressed ones and findings not about a
node's hardware (config files) are left alone.
"""

from __future__ import annotations

import re

from topolint.engine.finding import Finding, FindingGroup


def _key(finding: Finding) -> tuple | None:
    prefix = f"{finding.node}/"
    if finding.suppressed or finding.group is not None or not finding.entity.startswith(prefix):
        return None
    below = finding.entity[len(prefix):]
    # The node's own name in its message (FLEET001 starts with it) does not make it another finding.
    message = finding.message
    if finding.node in message:
        message = re.sub(rf"(?<![\w.-]){re.escape(finding.node)}(?![\w.-])", "\0", message)
    return (finding.code, below, message, finding.severity)


def group_across_nodes(findings: list[Finding]) -> None:
    """Give findings repeated on several nodes their shared group (in place, in report order)."""
    by_key: dict[tuple, list[Finding]] = {}
    for finding in findings:
        key = _key(finding)
        if key is not None:
            by_key.setdefault(key, []).append(finding)
    for key, same in by_key.items():
        nodes = list(dict.fromkeys(f.node for f in same))
        if len(nodes) < 2:
            continue
        group = FindingGroup.of("nodes", nodes, key="\0".join(key[:3]))
        for finding in same:
            finding.group = group


def shown_once(findings: list[Finding]) -> tuple[list[Finding], int]:
    """The findings a human format prints (a "nodes" group on its first finding only) and how
    many it leaves out."""
    seen: set[str] = set()
    shown = []
    for finding in findings:
        group = finding.group
        if group is not None and group.kind == "nodes" and not finding.suppressed:
            if group.id in seen:
                continue
            seen.add(group.id)
        shown.append(finding)
    return shown, len(findings) - len(shown)
