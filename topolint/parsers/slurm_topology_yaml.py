"""Slurm ``topology.yaml`` (topology.yaml(5), Slurm 25.05+) into a TopologyFile: a list of named
topologies, each with ``cluster_default`` and exactly one of ``tree`` (``switches``: ``switch``,
``children``, ``nodes``), ``block`` (``block_sizes``, ``blocks``: ``block``, ``nodes``) or
``flat``. Partitions choose one by name (slurm.conf ``Topology=``); the first with
``cluster_default: true`` serves the rest. When topology.yaml exists Slurm ignores topology.conf.
Node and switch lists are hostlist expressions (model/hostlist.py), or YAML lists of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from topolint.model.numbers import decimal

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build, location
from topolint.model.hostlist import EMPTY, Budget
from topolint.model.scheduler import TOPOLOGY_YAML, BlockLine, SwitchLine, Topology, TopologyFile
from topolint.parsers._hostlists import hosts_at, hosts_kept
from topolint.parsers._yaml import compose_documents, each, get, is_map, is_seq, items, scalar, where

WHAT = "topology.yaml"
_KINDS = ("tree", "block", "flat")


def _fail(path: str, node, message: str) -> InputError:
    line, column = where(node) if node is not None else (1, 0)
    return InputError(path, line, f"malformed {WHAT}: {message}", column)


def _names(path: str, node, budget: Budget) -> Sequence[str]:
    """A hostlist expression (kept as its text, model/hostlist.py Hosts), or a list of them."""
    if not is_seq(node) and scalar(node) is not None:
        return hosts_kept(scalar(node), path, *where(node), budget, WHAT)[0]
    names: list[str] = []
    for part in node.value if is_seq(node) else [node]:
        text = scalar(part)
        if text is None:
            raise _fail(path, part, "expected a hostlist expression")
        line, column = where(part)
        names.extend(hosts_at(text, path, line, column, budget, WHAT))
    return names


def _known(path: str, node, allowed: set[str], what: str) -> dict:
    if not is_map(node):
        raise _fail(path, node, f"expected a mapping for {what}")
    found = {}
    for key, value in items(node):
        name = scalar(key)
        if name not in allowed:
            raise _fail(path, key, f"{name!r} is not a key of {what} (expected {', '.join(sorted(allowed))})")
        found[name] = value
    return found


def _tree(path: str, node, budget: Budget) -> list[SwitchLine]:
    switches_node = _known(path, node, {"switches"}, "tree").get("switches")
    if not is_seq(switches_node):
        raise _fail(path, switches_node or node, "tree needs a list of switches")
    switches = []
    for entry in each(switches_node):
        fields = _known(path, entry, {"switch", "children", "nodes", "link_speed"}, "a switch")
        name = scalar(fields.get("switch"))
        if not name:
            raise _fail(path, entry, "a switch needs a name (switch:)")
        line, column = where(fields["switch"])
        switches.append(build(SwitchLine, name=name,
                              nodes=_names(path, fields["nodes"], budget) if "nodes" in fields else EMPTY,
                              switches=_names(path, fields["children"], budget) if "children" in fields else EMPTY,
                              link_speed=scalar(fields.get("link_speed")), loc=location(path, line, column)))
    return switches


def _block(path: str, node, budget: Budget) -> tuple[list[BlockLine], list[int], object]:
    fields = _known(path, node, {"blocks", "block_sizes"}, "block")
    blocks = []
    for entry in fields["blocks"].value if is_seq(fields.get("blocks")) else ():
        entry_fields = _known(path, entry, {"block", "nodes"}, "a block")
        name = scalar(entry_fields.get("block"))
        if not name or "nodes" not in entry_fields:
            raise _fail(path, entry, "a block needs a name (block:) and nodes")
        line, column = where(entry_fields["block"])
        blocks.append(build(BlockLine, name=name, nodes=_names(path, entry_fields["nodes"], budget),
                            loc=location(path, line, column)))
    sizes_node = fields.get("block_sizes")
    sizes = []
    if sizes_node is not None:
        parts = sizes_node.value if is_seq(sizes_node) else [sizes_node]
        for part in parts:
            for piece in (scalar(part) or "").split(","):
                if not piece.strip().isdigit() or not piece.strip().isascii() or len(piece.strip()) > 9:
                    raise _fail(path, part, "block_sizes takes node counts")
                sizes.append(decimal(piece))
    return blocks, sizes, sizes_node


def parse_topology_yaml(source: SourceFile) -> TopologyFile:
    path = source.path
    documents = compose_documents(source)
    if len(documents) != 1 or not is_seq(documents[0]):
        raise _fail(path, documents[0] if documents else None, "expected one list of topologies")
    budget = Budget()
    topologies = []
    for entry in each(documents[0]):
        fields = _known(path, entry, {"topology", "cluster_default", *_KINDS}, "a topology")
        name = scalar(fields.get("topology"))
        if not name:
            raise _fail(path, entry, "a topology needs a name (topology:)")
        kinds = [kind for kind in _KINDS if kind in fields]
        if len(kinds) != 1:
            raise _fail(path, entry, f"topology {name} defines {len(kinds)} of tree, block and flat (exactly one)")
        default = (scalar(fields.get("cluster_default")) or "false").lower() in ("true", "yes", "on")
        line, column = where(fields["topology"])
        values = dict(name=name, kind=kinds[0], cluster_default=default, loc=location(path, line, column))
        if kinds[0] == "tree":
            values["switches"] = _tree(path, fields["tree"], budget)
        elif kinds[0] == "block":
            blocks, sizes, sizes_node = _block(path, fields["block"], budget)
            values.update(blocks=blocks, block_sizes=sizes,
                          block_sizes_loc=location(path, *where(sizes_node)) if sizes_node is not None else None)
        topologies.append(build(Topology, **values))
    if not topologies:
        raise _fail(path, documents[0], "no topology")
    return build(TopologyFile, path=path, format=TOPOLOGY_YAML, topologies=topologies)
