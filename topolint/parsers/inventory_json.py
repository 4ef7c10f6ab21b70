"""A node inventory file (``topolint check NODE --inventory FILE``; topolint/fleet/inventory.py,
docs/fleet.md): read with the model that wrote it, each value with its line."""

from __future__ import annotations

from topolint.fleet.inventory import MAX_INVENTORY_BYTES, InventoryError, read_inventory
from topolint.inputs.source import InputError, SourceFile

INVENTORY = "topolint-inventory"


def parse_inventory(source: SourceFile):
    if len(source.text) > MAX_INVENTORY_BYTES:
        raise InputError(source.path, 1, f"malformed inventory: over {MAX_INVENTORY_BYTES} bytes "
                                         "(a node's inventory is a few tens of KB)")
    try:
        return read_inventory(source.text, source.path)
    except InventoryError as exc:
        raise InputError(source.path, exc.line, exc.message, exc.column) from None
