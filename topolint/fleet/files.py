"""Writing inventories (``topolint check PATHS --inventory PATH``). What PATH is, by its name
alone, so one command line means one thing whatever the run finds:

- a PATH ending in ``.json`` is a file: the inventory of the run's one node (a run with several
  nodes is a usage error, and nothing is written);
- any other PATH is a folder (made when missing): one ``NODE.json`` per node, for one node too;
  an existing folder is a folder whatever its name.

Each file is written whole or not at all (a temporary file beside it, renamed over it), so a
reader never sees half an inventory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from topolint.fleet.inventory import Inventory, inventory_json


class InventoryTargetError(ValueError):
    """PATH cannot hold the run's inventories (nothing was written)."""


def _write_atomically(path: Path, text: str) -> None:
    handle = tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False,
                                         encoding="utf-8")
    try:
        with handle:
            handle.write(text)
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, path)
    except BaseException:
        os.unlink(handle.name)
        raise


def file_name(node: str) -> str:
    """``NODE.json``, with what a file name cannot hold replaced (node names never hold "/")."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in node).lstrip(".") or "node"
    return f"{safe}.json"


def names_a_file(target: str | Path) -> bool:
    """Whether ``--inventory`` names one node's file (``.json``, not an existing folder)."""
    text = str(target)
    return text.lower().endswith(".json") and not text.endswith(("/", os.sep)) and not Path(text).is_dir()


def write_inventories(inventories: dict[str, Inventory], target: str | Path) -> str:
    """Write them as ``target`` says (the module's doc); what was written, for stderr.
    InventoryTargetError when ``target`` cannot hold them; OSError when writing fails."""
    if not inventories:
        return f"no inventory to {target}: no node with machine facts"
    path = Path(target)
    if names_a_file(target):
        if len(inventories) > 1:
            raise InventoryTargetError(f"--inventory {target} names one node's file (.json), but the run has "
                                       f"{len(inventories)} nodes with an inventory: give a folder (a path "
                                       "not ending in .json) for one NODE.json each")
        (inventory,) = inventories.values()
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, inventory_json(inventory))
        return f"the inventory of node {inventory.node} to {path}"
    if path.exists() and not path.is_dir():
        raise InventoryTargetError(f"--inventory {target} is not a folder (a path ending in .json names one "
                                   "node's file; any other path, a folder of NODE.json files)")
    path.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for node, inventory in inventories.items():
        name = file_name(node)
        if name in names:  # two node names that map to one file name
            name = f"{name[:-5]}-{len(names)}.json"
        names[name] = node
        _write_atomically(path / name, inventory_json(inventory))
    count = len(inventories)
    return f"{count} inventor{'y' if count == 1 else 'ies'} to {path}{os.sep}"
