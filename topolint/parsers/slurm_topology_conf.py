"""Slurm ``topology.conf`` (topology.conf(5)) into a TopologyFile, and the same lines as
``scontrol show topology`` prints them.

topology/tree: ``SwitchName=s1 Switches=s[2-3] Nodes=gpu[001-032] LinkSpeed=...``, one switch a
line; topology/block: ``BlockName=b1 Nodes=...`` and ``BlockSizes=18[,36,...]``. Parameter names
are case insensitive, ``#`` starts a comment, a line ending in ``\\`` continues on the next.
Node and switch names are hostlist expressions (model/hostlist.py). A file with both switch and
block lines (a site with NVLink racks and a tree beside them) gives two topologies. ``scontrol
show topology`` adds ``Level=``, ``BlockIndex=`` and ``BlockSize=``: read and ignored.
"""

from __future__ import annotations

import sys

from topolint.model.numbers import decimal

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build, location
from topolint.model.hostlist import EMPTY, Budget
from topolint.model.scheduler import TOPOLOGY_CONF, BlockLine, SwitchLine, Topology, TopologyFile
from topolint.parsers._hostlists import hosts_kept
from topolint.parsers._lines import lines_of

_FIRST = {"switchname": "switch", "blockname": "block", "blocksizes": "sizes"}
_KEYS = {
    "switch": {"switches", "nodes", "linkspeed", "level"},
    "block": {"nodes", "blockindex", "blocksize"},
    "sizes": set(),
}
WHAT = "topology.conf"


def _logical_lines(text: str):
    """(line number, text without its comment) of each non-blank line, continuations joined."""
    pending, start = "", 0
    for number, raw in enumerate(lines_of(text), start=1):
        body = raw.split("#", 1)[0]
        if not pending:
            start = number
        if body.rstrip().endswith("\\"):
            pending += body.rstrip()[:-1] + " "
            continue
        joined, pending = pending + body, ""
        if joined.strip():
            yield start, joined, raw
    if pending.strip():
        yield start, pending, pending


def _pairs(path: str, number: int, text: str) -> list[tuple[str, str, int]]:
    """``Key=Value`` tokens: (lowered key, value, 1-based column of the value)."""
    pairs, index = [], 0
    for token in text.split():
        index = text.index(token, index)
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise InputError(path, number, f"malformed {WHAT}: expected Key=Value; found {token[:60]!r}", index + 1)
        pairs.append((key.lower(), value, index + len(key) + 2))
        index += len(token)
    return pairs


def parse_topology_conf(source: SourceFile) -> TopologyFile:
    path = source.path
    budget = Budget()
    switches: list[SwitchLine] = []
    blocks: list[BlockLine] = []
    sizes: list[int] = []
    sizes_loc = None
    first_line = None
    for number, text, _raw in _logical_lines(source.text):
        pairs = _pairs(path, number, text)
        kind = _FIRST.get(pairs[0][0])
        if kind is None:
            raise InputError(path, number, f"malformed {WHAT}: a line starts with SwitchName=, BlockName= or "
                                           f"BlockSizes=; found {pairs[0][0]!r}", 1)
        first_line = first_line or number
        seen = {}
        for key, value, column in pairs[1:]:
            if key not in _KEYS[kind]:
                raise InputError(path, number, f"malformed {WHAT}: {key!r} is not a parameter of "
                                               f"{pairs[0][0]} lines", column)
            if key in seen:
                raise InputError(path, number, f"malformed {WHAT}: {key} given twice on one line", column)
            seen[key] = (value, column)
        name, column = pairs[0][1], pairs[0][2]
        loc = location(path, number, column)
        if kind == "sizes":
            sizes, sizes_loc = _sizes(path, number, name, column), loc
            continue
        if not name:
            raise InputError(path, number, f"malformed {WHAT}: {pairs[0][0]} without a name", column)
        nodes = hosts_kept(seen["nodes"][0], path, number, seen["nodes"][1], budget, WHAT)[0] \
            if "nodes" in seen else EMPTY
        if kind == "switch":
            children = hosts_kept(seen["switches"][0], path, number, seen["switches"][1], budget, WHAT)[0] \
                if "switches" in seen else EMPTY
            switches.append(build(SwitchLine, name=name, nodes=nodes, switches=children,
                                  link_speed=_speed(seen), loc=loc))
        else:
            if "nodes" not in seen:
                raise InputError(path, number, f"malformed {WHAT}: block {name} has no Nodes=", column)
            blocks.append(build(BlockLine, name=name, nodes=nodes, loc=loc))
    return build(TopologyFile, path=path, format=TOPOLOGY_CONF,
                 topologies=_topologies(path, first_line or 1, switches, blocks, sizes, sizes_loc))


def _speed(seen: dict) -> str | None:
    found = seen.get("linkspeed")
    return None if found is None else sys.intern(found[0])  # a few speeds, one a switch line


def _sizes(path: str, number: int, text: str, column: int) -> list[int]:
    sizes = []
    for part in text.split(","):
        if not part.strip().isdigit() or not part.strip().isascii() or len(part.strip()) > 9:
            raise InputError(path, number, f"malformed {WHAT}: BlockSizes takes node counts (18 or 18,36); "
                                           f"found {text[:60]!r}", column)
        sizes.append(decimal(part))
    return sizes


def _topologies(path, first_line, switches, blocks, sizes, sizes_loc) -> list[Topology]:
    both = bool(switches) and bool(blocks or sizes)
    found = []
    if switches:
        found.append(build(Topology, name="topology.conf" if not both else "topology.conf (tree)", kind="tree",
                           cluster_default=not both, switches=switches, loc=switches[0].loc))
    if blocks or sizes:
        loc = blocks[0].loc if blocks else sizes_loc
        found.append(build(Topology, name="topology.conf" if not both else "topology.conf (block)", kind="block",
                           cluster_default=not both, blocks=blocks, block_sizes=sizes, block_sizes_loc=sizes_loc,
                           loc=loc))
    if not found:
        raise InputError(path, first_line, f"malformed {WHAT}: no switch or block")
    return found
