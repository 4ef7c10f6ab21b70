"""Writing inventories (``topolint check PATHS --inventory PATH``): one node's to a file, several
nodes' to a folder, one ``NODE.json`` each. Each file is written whole or not at all (a
temporary file beside it, renamed over it), so a reader never sees half an inventory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from topolint.fleet.inventory import Inventory, inventory_json


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


def write_inventories(inventories: dict[str, Inventory], target: Path) -> str:
    """Write them; what was written, for stderr. A folder when ``target`` is one (or ends with a
    separator) or when there are several nodes; else the file itself."""
    if not inventories:
        return f"no inventory to {target}: no node with machine facts"
    as_folder = target.is_dir() or str(target).endswith(("/", os.sep)) or len(inventories) > 1
    if not as_folder:
        (inventory,) = inventories.values()
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, inventory_json(inventory))
        return f"the inventory of node {inventory.node} to {target}"
    target.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for node, inventory in inventories.items():
        name = file_name(node)
        if name in names:  # two node names that map to one file name
            name = f"{name[:-5]}-{len(names)}.json"
        names[name] = node
        _write_atomically(target / name, inventory_json(inventory))
    return f"{len(inventories)} inventories to {target}{'' if str(target).endswith('/') else '/'}"
