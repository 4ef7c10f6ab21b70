"""Numbers from inputs are parsed only through topolint/model/numbers.py (issue 7, item 1).

A bare ``int(text)`` raises on ``inf``, superscript digits or 4,300 digits, accepts ``1_000`` and
``0o10`` that no C reader does, and reads ``010`` as 10 where NCCL's ``strtol(.., 0)`` reads 8.
This scan finds every ``int()`` / ``float()`` call in the package outside numbers.py; each one
must be in the reviewed list below, with why it never sees input text. A new call fails here:
route it through numbers.py (extend it if needed), or review it and add it with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import topolint

PACKAGE = Path(topolint.__file__).parent
NUMBERS = PACKAGE / "model" / "numbers.py"

# (file under topolint/, the call as written): why its argument is not text from an input.
REVIEWED = {
    ("checks/gigabit_link.py", "float(link.speed_mbps)"): "an int the ethtool parser read with numbers.decimal",
    ("checks/gigabit_link.py", "float(n.speed_mbps)"): "an int the topology parser read with numbers.strtol",
    ("checks/gpu_link_slow.py", 'int(model["pcie_gen"])'): "shipped device data (topolint/data/pci_devices.toml), not an input",
    ("checks/gpu_link_slow.py", 'int(model["lanes"])'): "shipped device data (topolint/data/pci_devices.toml), not an input",
    ("checks/_lspci_slow.py", 'int(model["pcie_gen"])'): "shipped device data (topolint/data/pci_devices.toml), not an input",
    ("checks/_lspci_slow.py", 'int(model["lanes"])'): "shipped device data (topolint/data/pci_devices.toml), not an input",
    ("checks/env_container_missing_rdma.py",
     "int(decimal_fraction(match.group(1)) * _UNITS[match.group(2).lower()])"): "a float from numbers.py, scaled",
    ("commands/collect.py", 'float(r["timeout"])'): "the collect command table shipped with topolint",
    ("estimate/training.py", "int(self.params * DTYPE_BYTES[self.grad_dtype])"): "arithmetic on validated numbers",
    ("estimate/training.py", "int(self.bucket_mb * (1 << 20))"): "arithmetic on validated numbers",
    ("estimate/first_principles.py", 'float("inf")'): "a constant",
    ("estimate/from_matrix.py", "int(a)"): "component labels the function itself made with str(i)",
    ("estimate/from_matrix.py", "int(b)"): "component labels the function itself made with str(i)",
    ("estimate/from_matrix.py", "int(i)"): "component labels the function itself made with str(i)",
    ("estimate/refine.py", "int(port.rate_gbps * 1000)"): "arithmetic on a rate ibstat's parser read",
    ("estimate/tuning.py", "int(math.log2(comm.nodes))"): "arithmetic on a count",
    ("estimate/tuning.py", "int(math.log2(size >> 6))"): "arithmetic on a size",
    ("inputs/config_names.py", "int(match.lastgroup[1:])"): "a regex group name the module built (n0, n1, ...)",
}


def _calls_in(name: str, text: str) -> set[tuple[str, str]]:
    return {(name, ast.get_source_segment(text, node)) for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float")}


def _calls() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != NUMBERS:
            found |= _calls_in(path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"))
    return found


def test_int_and_float_are_called_only_at_reviewed_sites():
    unreviewed = sorted(_calls() - set(REVIEWED))
    assert not unreviewed, (f"int()/float() outside topolint/model/numbers.py: {unreviewed}; parse input text "
                            "with numbers.py, or review the call and add it to REVIEWED with its reason")


def test_every_reviewed_site_still_exists():
    assert sorted(set(REVIEWED) - _calls()) == [], "remove reviewed sites that are gone"


def test_the_scan_finds_a_bare_int_on_text():
    """The scan itself: the pci_id that used to read vendor ids with int(.., 16) would be found."""
    before = 'def pci_id(pci):\n    return f"0x{int(pci.vendor, 16):04x}:0x{int(pci.device, 16):04x}"\n'
    assert _calls_in("checks/_topology.py", before) == {("checks/_topology.py", "int(pci.vendor, 16)"),
                                                        ("checks/_topology.py", "int(pci.device, 16)")}
