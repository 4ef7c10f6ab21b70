"""Keys made of fact values, for answers shared by the nodes of a cluster (System.signature,
checks/_memo.py across_nodes)."""

from __future__ import annotations


class Values(tuple):
    """A tuple of fact values that hashes once: such a key is looked up several times a node, and
    a tuple hashes all its items again on every lookup."""

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = tuple.__hash__(self)
            return self._hash

    def __reduce__(self):
        return (Values, (tuple(self),))  # a hash belongs to its process (string hashes are salted)
