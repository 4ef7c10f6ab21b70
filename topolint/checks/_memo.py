"""Views several checks derive alike from one node's facts, computed once per node.

A node's checks share one ``CheckContext`` and its ``shared`` table (engine/runner.py), which
lives exactly as long as the node is checked: the facts do not change meanwhile, so a view
(a topology's NVLink pattern, a GPU's nearest NIC, an lspci device's kind) is derived by the first
check that needs it and read by the others. MatrixContext (checks/_matrix.py) follows the same
idea for ``topo -m`` matrices. Answers are shared, so checks read them and never change them.
"""

from __future__ import annotations

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
