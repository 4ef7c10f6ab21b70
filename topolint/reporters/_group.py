"""A finding group (engine/finding.py FindingGroup) as every format shows it: the one place that
words a group, so a new kind of group is added here once.

Human formats (full, concise, github, html, markdown) list the members the group keeps and count the rest;
JSON and SARIF carry the group whole (``as_dict``), members exact.
"""

from __future__ import annotations

from topolint.engine.finding import FindingGroup

# What the members of each kind of group are, as the text names them.
MEMBER_NOUNS = {"members": ("member", "members"), "nodes": ("node", "nodes")}


def _count(group: FindingGroup) -> str:
    one, many = MEMBER_NOUNS.get(group.kind, ("member", "members"))
    return f"{group.total} {one if group.total == 1 else many}"


def group_line(group: FindingGroup) -> str:
    """``3 members: a, b and 1 more (group 0123abcd...)``: the full format's ``= group:`` line."""
    listed = ", ".join(group.members)
    rest = group.total - len(group.members)
    more = f" and {rest} more" if rest > 0 else ""
    return f"{_count(group)}: {listed}{more} (group {group.id})"


def group_suffix(group: FindingGroup) -> str:
    """What a one-line format adds to the finding's message: `` [group of 3 members]``."""
    return f" [group of {_count(group)}]"


def group_document(group: FindingGroup) -> dict:
    """The JSON value of a group (the JSON report's ``group``, SARIF's result property)."""
    return group.as_dict()


def repeated_note(total: int, repeated: int) -> str:
    """What a format that shows a "nodes" group once says of the rows it left out ("" when none)."""
    if not repeated:
        return ""
    rows = total - repeated
    return (f"{total} findings, {rows} row{'s' if rows != 1 else ''}: the same finding on several nodes is shown "
            "once, with its nodes")
