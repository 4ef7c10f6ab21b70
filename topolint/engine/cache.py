"""A result cache for node checks, so re-checking an unchanged cluster costs little more than
reading it (as ruff's cache does for unchanged files).

An entry holds the findings, notes and rules-that-ran of one node, keyed by everything they
depend on: the node's name and files (path, format, text), the rule definitions as loaded
(site rules and configured parameters included), the run options, and topolint's own code
(version plus size and mtime of every module). Suppression, selection, severity overrides and
the baseline apply after the rules, so they are not part of the key. Nodes with config files
or unreadable inputs are never cached. ``--no-cache`` or TOPOLINT_NO_CACHE=1 turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import fields
from functools import cached_property
from pathlib import Path

import topolint
from topolint.engine.finding import Finding, Related
from topolint.engine.fixes import Fix
from topolint.model.facts import Location, build

CACHE_DIR_NAME = ".topolint_cache"
FORMAT_VERSION = 1


def cache_disabled_by_environment() -> bool:
    return os.environ.get("TOPOLINT_NO_CACHE", "") not in ("", "0")


def _code_fingerprint() -> str:
    from topolint.engine.rule import builtin_rules_dir

    digest = hashlib.sha256(topolint.__version__.encode())
    for root in (Path(topolint.__file__).resolve().parent, builtin_rules_dir()):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".toml", ".json") and "__pycache__" not in path.parts:
                stat = path.stat()
                digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _rules_fingerprint(rules) -> str:
    rows = [[r.code, r.check, r.severity, r.status, r.parameters, r.messages, r.fixes] for r in rules]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


def _finding_dict(finding: Finding) -> dict:
    data = {f.name: getattr(finding, f.name) for f in fields(finding) if f.name not in ("related", "autofix")}
    data["autofix"] = finding.autofix.cache_dict() if finding.autofix else None
    data["related"] = [
        {"location": {"path": r.location.path, "line": r.location.line, "column": r.location.column},
         "entity": r.entity, "message": r.message}
        for r in finding.related
    ]
    return data


class ResultCache:
    def __init__(self, directory: Path, rules, options):
        self.directory = directory
        self._rules, self._options = rules, options
        self._ready = False

    @cached_property
    def salt(self) -> str:
        # Computed on the first key: a run with config files asks for none and skips the code walk.
        options = self._options
        return json.dumps([FORMAT_VERSION, _code_fingerprint(), _rules_fingerprint(self._rules),
                           str(options.nccl_version), options.gdr_level, list(options.extra_variables)])

    def key(self, node) -> str:
        digest = hashlib.sha256(self.salt.encode())
        digest.update(f"\0{node.name}\0".encode())
        for path in sorted(node.sources):
            source = node.sources[path]
            digest.update(f"{path}\0{source.format}\0{len(source.text)}\0".encode())
            digest.update(source.text.encode())
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # missing or damaged: compute again

    def put(self, key: str, findings: list[Finding], notes: list[str], ran: set[str],
            collect_notes: list[str]) -> None:
        entry = {"findings": [_finding_dict(f) for f in findings], "notes": notes, "ran": sorted(ran),
                 "collect_notes": collect_notes}
        path = self._path(key)
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as handle:
                json.dump(entry, handle)
            os.replace(handle.name, path)
        except OSError:
            pass  # a read-only tree: run without caching

    def _prepare(self) -> None:
        if self._ready:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by topolint: its result cache.\n*\n", encoding="utf-8")
        self._ready = True

    @staticmethod
    def findings(entry: dict) -> list[Finding]:
        restored = []
        for data in entry["findings"]:
            related = [Related(location=build(Location, **r["location"]), entity=r["entity"], message=r["message"])
                       for r in data.pop("related")]
            autofix = Fix.from_dict(data.pop("autofix", None))
            restored.append(Finding(related=related, autofix=autofix, **data))
        return restored
