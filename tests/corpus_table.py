"""The committed corpus tables (tests/*_corpus_expectations.tsv): one row per corpus file, the codes
that must fire, the codes (or CODE:severity pairs) that must not, and why."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from conftest import run_cli


def read_table(path: Path) -> dict[str, tuple[set[str], set[str]]]:
    rows = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if row:
                rows[row[0]] = (_codes(row[1]), _codes(row[2]))
    return rows


def _codes(text: str) -> set[str]:
    return {c for c in text.split(",") if c and c != "-"}


def assert_expectations(name: str, path: Path, must: set[str], must_not: set[str]) -> None:
    """``topolint check FILE --select ALL --preview`` fires what ``must`` says and nothing of ``must_not``."""
    result = run_cli("check", path, "--select", "ALL", "--preview", "--format", "json", "--isolated")
    assert "Traceback" not in result.stderr
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    findings = json.loads(result.stdout)["findings"]
    fired = {f["code"] for f in findings} | {f"{f['code']}:{f['severity']}" for f in findings}
    assert must <= fired, f"{name}: expected {sorted(must - fired)}; fired {sorted(fired)}"
    assert not (must_not & fired), f"{name}: {sorted(must_not & fired)} must not fire"
