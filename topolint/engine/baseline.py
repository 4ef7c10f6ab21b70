"""Baselines: accept the findings a project has today, report only new ones.

File format (JSON, sorted, deterministic, so it diffs well in review)::

    {"version": 1, "tool": "topolint",
     "entries": [{"code": "NUMA001", "entity": "dgx01/gpu/0000:87:00.0",
                  "fingerprint": "3f2a9c0d5b7e1a44", "path": "topo/dgx01.xml"}]}

An entry matches a finding by rule code and fingerprint, which hashes the rule, the entity
(host, PCI address, NIC port, variable and scope) and the kind of problem, never the line, so
baselined findings survive edits that move them. ``path`` (relative to the baseline file's
folder) is for people reading the file and for deciding which entries a partial run may drop.
A matched finding is kept, marked suppressed with ``suppression = "external"``: SARIF shows it
as ``baselineState: unchanged`` with an accepted external suppression, other formats hide it.

``update`` rewrites the entries for what this run checked (its enabled rules, its input files)
and keeps the rest, so running on part of a project does not forget the other part.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from topolint.engine.finding import Finding

BASELINE_VERSION = 1


class BaselineError(ValueError):
    """A baseline file that cannot be read; the message names the file."""


@dataclass(frozen=True, order=True)
class Entry:
    code: str
    entity: str
    fingerprint: str
    path: str

    @property
    def key(self) -> tuple[str, str]:
        return self.code, self.fingerprint


@dataclass
class UpdateSummary:
    kept: int
    added: int
    removed: int

    def __str__(self) -> str:
        total = self.kept + self.added
        return f"{total} {'entry' if total == 1 else 'entries'} ({self.added} added, {self.removed} removed)"


def _relative(path: str, base: Path) -> str:
    if path == "-":
        return path
    absolute = (Path.cwd() / path).resolve()
    try:
        return absolute.relative_to(base.resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()


class Baseline:
    def __init__(self, path: Path, entries: list[Entry] | None = None):
        self.path = path
        self.entries = sorted(set(entries or []))

    @classmethod
    def load(cls, path: Path, missing_ok: bool = False) -> "Baseline":
        if not path.exists():
            if missing_ok:
                return cls(path)
            raise BaselineError(f"--baseline {path}: no such file (create it with --update-baseline)")
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BaselineError(f"--baseline {path}: cannot read: {exc}") from None
        if not isinstance(document, dict) or document.get("version") != BASELINE_VERSION:
            raise BaselineError(f"--baseline {path}: not a topolint baseline (version {BASELINE_VERSION})")
        entries = []
        for i, raw in enumerate(document.get("entries", [])):
            try:
                entries.append(Entry(**{k: str(raw[k]) for k in ("code", "entity", "fingerprint", "path")}))
            except (KeyError, TypeError):
                raise BaselineError(f"--baseline {path}: entries[{i}] needs code, entity, fingerprint "
                                    "and path") from None
        return cls(path, entries)

    def entry_for(self, finding: Finding) -> Entry:
        return Entry(finding.code, finding.entity, finding.fingerprint, _relative(finding.path, self.path.parent))

    def apply(self, findings: list[Finding]) -> int:
        """Mark findings the baseline holds as suppressed ("external"); returns how many."""
        keys = {e.key for e in self.entries}
        matched = 0
        for finding in findings:
            if not finding.suppressed and (finding.code, finding.fingerprint) in keys:
                finding.suppressed = True
                finding.suppression = "external"
                matched += 1
        return matched

    def stale(self, findings: list[Finding], checked_codes: set[str], input_paths: list[str]) -> list[Entry]:
        """Entries for what this run checked that matched no finding (``--update-baseline`` drops them)."""
        checked_paths = {_relative(p, self.path.parent) for p in input_paths}
        current = {(f.code, f.fingerprint) for f in findings}
        return [e for e in self.entries
                if e.code in checked_codes and e.path in checked_paths and e.key not in current]

    def update(self, findings: list[Finding], checked_codes: set[str], input_paths: list[str]) -> UpdateSummary:
        """Replace the entries for what this run checked with its active findings."""
        checked_paths = {_relative(p, self.path.parent) for p in input_paths}
        keep = [e for e in self.entries if e.code not in checked_codes or e.path not in checked_paths]
        new = {self.entry_for(f) for f in findings
               if not (f.suppressed and f.suppression == "inSource") and f.code in checked_codes}
        old = set(self.entries)
        result = set(keep) | new
        summary = UpdateSummary(kept=len(old & result), added=len(result - old), removed=len(old - result))
        self.entries = sorted(result)
        return summary

    def text(self) -> str:
        document = {"version": BASELINE_VERSION, "tool": "topolint", "entries": [asdict(e) for e in self.entries]}
        return json.dumps(document, indent=2, sort_keys=False) + "\n"

    def write(self) -> None:
        try:
            self.path.write_text(self.text(), encoding="utf-8")
        except OSError as exc:
            raise BaselineError(f"cannot write baseline {self.path}: {exc.strerror or exc}") from None
