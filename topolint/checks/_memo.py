"""Views several checks derive alike from one node's facts, computed once per node.

A node's checks share one ``CheckContext`` and its ``shared`` table (engine/runner.py), which
lives exactly as long as the node is checked: the facts do not change meanwhile, so a view
(a topology's NVLink pattern, a GPU's nearest NIC, an lspci device's kind) is derived by the first
check that needs it and read by the others. MatrixContext (checks/_matrix.py) follows the same
idea for ``topo -m`` matrices. Answers are shared, so checks read them and never change them.

Some answers depend only on values that the nodes of a cluster repeat (a matrix's cells, not its
file or lines): across_nodes shares those between nodes, under a key of exactly those values, as
model/system.py shares NCCL's paths under System.signature.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any


def per_node(shared: dict, question: str, source: Any, answer: Callable[[], Any]) -> Any:
    """``answer()`` for ``question`` about ``source`` (a fact object of the node), computed on the
    first ask of the node's checks. The table keeps ``source`` alive beside the answer, so its
    id is not reused for another object while the node is checked."""
    key = (question, id(source))
    found = shared.get(key)
    if found is None:
        found = shared[key] = (source, answer())
    return found[1]


_ACROSS: OrderedDict = OrderedDict()
_ACROSS_LIMIT = 64


def across_nodes(question: str, content: tuple, answer: Callable[[], Any]) -> Any:
    """``answer()`` for ``question`` about ``content``, shared by every node whose facts have the
    same content: the nodes of a cluster repeat one matrix, one NVLink pattern. ``content`` must
    hold everything the answer depends on (values only: no locations, no node names), and the
    answer must not hold anything of one node. The latest few contents are kept."""
    key = (question, content)
    found = _ACROSS.get(key)
    if found is None:
        found = _ACROSS[key] = answer()
        while len(_ACROSS) > _ACROSS_LIMIT:
            _ACROSS.popitem(last=False)  # the oldest content
    return found
