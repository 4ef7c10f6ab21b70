"""Node checks in worker processes (``--jobs``), merged back in node order.

Each worker is a fork of the run: it inherits the collection (sources read, nothing parsed),
parses one node, runs the node's rules, and sends back only what that changed: findings, notes,
rules that ran, internal errors, what parsing added to the collection (TL001 problems, notes,
parser bugs, sources that turned out unreadable) and the node's inventory, which the cluster
stage reads in the parent (docs/fleet.md). The parent applies them node by node in the
order the sequential loop would, so every output is byte-identical whatever the job count.
Where fork is not available, or the run is too small to gain, nodes are checked in-process.

Memory: each worker is a copy of the run (the sources it inherits are shared until touched) that
also holds one node's facts at a time; a 2,000-node benchmark cluster peaked at ~250 MB with one
job and ~650 MB (all processes together, PSS) with two. Hence the command line's default, AUTO,
starts workers only for runs large enough to gain (AUTO_NODES_PER_JOB nodes a worker), at most
AUTO_MAX_JOBS of them, and only on Linux (elsewhere fork is unsafe or unusual): a pre-commit run,
a node or a small cluster stays in one process. ``--jobs N`` asks for N whatever the run.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from dataclasses import dataclass, field

from topolint.engine.internal import Described, describe

# Below this many nodes to check per worker, starting the workers costs more than they save.
MIN_NODES_PER_JOB = 16
AUTO = -1  # the command line's default ``--jobs``: workers only where a run gains (usable)
AUTO_MAX_JOBS = 4  # each worker is one more process in memory (~200 MB on a 2,000-node cluster)
AUTO_NODES_PER_JOB = 128  # a worker's start (fork, pool) is repaid only over many nodes


def job_count(requested: int) -> int:
    """``--jobs 0``: one per CPU this process may run on (AUTO is left to usable)."""
    if requested > 0 or requested == AUTO:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def usable(jobs: int, nodes: int) -> int:
    """The workers worth starting for ``nodes`` nodes (``jobs`` as job_count answers it, or AUTO):
    0 to check them in-process."""
    per_job = MIN_NODES_PER_JOB
    if jobs == AUTO:
        if not sys.platform.startswith("linux"):
            return 0
        jobs, per_job = min(job_count(0), AUTO_MAX_JOBS), AUTO_NODES_PER_JOB
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    workers = min(jobs, nodes // per_job)
    return workers if workers >= 2 else 0


@dataclass
class NodeOutcome:
    findings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    ran: set = field(default_factory=set)
    internal_errors: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # collection.problems added while parsing (TL001)
    collection_notes: list = field(default_factory=list)
    parser_errors: list = field(default_factory=list)  # (input, "parser FORMAT", Described, node)
    node_notes: list = field(default_factory=list)
    dropped: list = field(default_factory=list)  # sources parsing removed from the node
    unparsed: list = field(default_factory=list)  # paths parsing moved to collection.unparsed
    inventory: object = None  # the node's fleet inventory, for the cluster stage in the parent
    view: object = None  # RunOptions.node_view's value for the node (its drawing)


_WORK: tuple | None = None  # (nodes, check_node): set before the fork, inherited by the workers


def _check_one(index: int) -> NodeOutcome:
    nodes, check_node = _WORK
    node = nodes[index]
    collection = check_node.collection
    marks = (len(collection.problems), len(collection.notes), len(collection.internal_errors), len(node.notes))
    sources, unparsed = set(node.sources), set(collection.unparsed)
    result = check_node(node)
    return NodeOutcome(
        findings=result.findings, notes=result.notes, ran=result.ran.get(node.name, set()),
        internal_errors=result.internal_errors, problems=collection.problems[marks[0]:],
        collection_notes=collection.notes[marks[1]:],
        parser_errors=[(path, rule, Described(describe(exc)), name)
                       for path, rule, exc, name in collection.internal_errors[marks[2]:]],
        node_notes=node.notes[marks[3]:], dropped=sorted(sources - set(node.sources)),
        unparsed=[path for path in collection.unparsed if path not in unparsed],
        inventory=result.inventories.get(node.name), view=result.views.get(node.name))


def outcomes(nodes: list, check_node, workers: int):
    """NodeOutcome of each node, in order, from ``workers`` forked processes. ``check_node(node)``
    parses the node and returns its RunResult (it carries the collection it parses into)."""
    global _WORK
    _WORK = (nodes, check_node)
    context = multiprocessing.get_context("fork")
    chunk = max(1, len(nodes) // (workers * 8))
    try:
        with context.Pool(workers) as pool:
            yield from pool.imap(_check_one, range(len(nodes)), chunksize=chunk)
    finally:
        _WORK = None


def apply(outcome: NodeOutcome, node, collection, result) -> None:
    """What the worker's check of ``node`` changed, applied here as if it had run here."""
    result.findings.extend(outcome.findings)
    result.notes.extend(outcome.notes)
    result.ran.setdefault(node.name, set()).update(outcome.ran)
    result.internal_errors.extend(outcome.internal_errors)
    if outcome.inventory is not None:
        result.inventories[node.name] = outcome.inventory
    if outcome.view is not None:
        result.views[node.name] = outcome.view
    collection.problems.extend(outcome.problems)
    collection.notes.extend(outcome.collection_notes)
    collection.internal_errors.extend(outcome.parser_errors)
    node.notes.extend(outcome.node_notes)
    dropped = {path: node.sources.pop(path) for path in outcome.dropped}
    for path in outcome.unparsed:
        source = dropped.get(path) or node.sources.get(path)
        if source is not None:
            collection.unparsed[path] = source
    node.pending = []
