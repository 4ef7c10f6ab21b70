"""A result cache for node checks, so re-checking an unchanged cluster costs little more than
reading it (as ruff's cache does for unchanged files).

An entry holds the findings, notes and rules-that-ran of one node, keyed by everything they
depend on: the node's name and files (path, format, text), the rule definitions as loaded
(site rules and configured parameters included), the run options (the NCCL version and where it
was named, extra variables), and topolint's own code (version plus size and mtime of every
module). Configuration is found per file, so the rules and options are those of the
configuration that governs the node (commands/check.py ``_Caches``: one ``ResultCache`` per
configuration, one directory): editing a nested configuration changes the keys of exactly the
nodes below it. Suppression, selection, severity overrides and the baseline apply after the
rules, so they are not part of the key. Nodes with config files or unreadable inputs, and nodes
checked against a topology, are never cached. ``--no-cache`` or TOPOLINT_NO_CACHE=1 turns it off.
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
from topolint.engine.finding import Finding, FindingGroup, Related
from topolint.engine.fixes import Fix
from topolint.model.facts import Location, build

CACHE_DIR_NAME = ".topolint_cache"
FORMAT_VERSION = 2  # 2: entries keep the node's inventory (docs/fleet.md)
# An entry is ~14 KB a node; past this the oldest entries go (checked once per run that writes).
MAX_CACHE_BYTES = 256 * 1024 * 1024
MAX_ENTRY_BYTES = 16 * 1024 * 1024

# The shape of a cached finding. An entry that does not match (another version's format, a
# damaged or hand-edited file) is a miss, never an error.
_STR, _INT, _BOOL = (str,), (int,), (bool,)
_OPT_STR = (str, type(None))
_FINDING_FIELDS = {
    "code": _STR, "slug": _STR, "category": _STR, "severity": _STR, "message": _STR, "path": _STR,
    "line": _INT, "column": _INT, "node": _STR, "entity": _STR, "fix": _STR, "related": (list,),
    "evidence": (list,), "suppressed": _BOOL, "suppression": _OPT_STR, "justification": _OPT_STR,
    "fingerprint": _STR, "autofix": (dict, type(None)),
}
_OPTIONAL_FINDING_FIELDS = {"group": (dict,)}  # written only when set: older entries stay valid
_GROUP_FIELDS = {"id": _STR, "kind": _STR, "members": (list,), "total": _INT}
_LOCATION_FIELDS = {"path": _STR, "line": _INT, "column": _INT}
_EDIT_FIELDS = {"path": _STR, "start": (dict,), "end": (dict,), "content": _STR}


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
    data = {f.name: getattr(finding, f.name) for f in fields(finding)
            if f.name not in ("related", "autofix", "group")}
    if finding.group is not None:
        data["group"] = finding.group.as_dict()
    data["autofix"] = finding.autofix.cache_dict() if finding.autofix else None
    data["related"] = [
        {"location": {"path": r.location.path, "line": r.location.line, "column": r.location.column},
         "entity": r.entity, "message": r.message, **({"via": list(r.via)} if r.via is not None else {})}
        for r in finding.related
    ]
    return data


class ResultCache:
    def __init__(self, directory: Path, rules, options):
        self.directory = directory
        self._rules, self._options = rules, options
        self._ready = False
        self._pruned = False

    @cached_property
    def salt(self) -> str:
        # Computed on the first key: a run with config files asks for none and skips the code walk.
        options = self._options
        return json.dumps([FORMAT_VERSION, _code_fingerprint(), _rules_fingerprint(self._rules),
                           str(options.nccl_version), getattr(options, "nccl_version_origin", "default"),
                           getattr(options, "nccl_version_named", ""), options.gdr_level,
                           list(options.extra_variables),
                           options.profiles.key() if getattr(options, "profiles", None) is not None else ""])

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
        """The entry for ``key`` with its findings restored, or None: missing, unreadable, damaged,
        of another shape or nested absurdly deep, it is computed again."""
        path = self._path(key)
        try:
            if path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            entry = json.loads(path.read_text(encoding="utf-8"))
            if not _valid_entry(entry):
                return None
            entry["findings"] = self.findings(entry)
            if entry.setdefault("inventory", None) is not None:  # written only when the run built one
                from topolint.fleet.inventory import inventory_from_plain

                entry["inventory"] = inventory_from_plain(entry["inventory"])
        except (OSError, ValueError, RecursionError, TypeError, KeyError, AttributeError):
            return None
        return entry

    def put(self, key: str, findings: list[Finding], notes: list[str], ran: set[str],
            collect_notes: list[str], inventory=None) -> None:
        """``inventory``: the node's fleet inventory, when the run built one (the cluster stage of a
        warm run reads it from here)."""
        plain = None
        if inventory is not None:
            from topolint.fleet.inventory import inventory_plain

            plain = inventory_plain(inventory)
        entry = {"findings": [_finding_dict(f) for f in findings], "notes": notes, "ran": sorted(ran),
                 "collect_notes": collect_notes, "inventory": plain}
        path = self._path(key)
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as handle:
                json.dump(entry, handle)
            os.replace(handle.name, path)  # atomic: a concurrent run reads the old entry or this one
        except OSError:
            return  # a read-only tree, a file where a folder should be: run without caching
        if not self._pruned:
            self._pruned = True
            prune(self.directory)

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
        if all(isinstance(f, Finding) for f in entry["findings"]):
            return list(entry["findings"])  # restored when read
        restored = []
        for data in entry["findings"]:
            related = [Related(location=build(Location, **r["location"]), entity=r["entity"], message=r["message"],
                               via=tuple(r["via"]) if "via" in r else None)
                       for r in data.pop("related")]
            autofix = Fix.from_dict(data.pop("autofix", None))
            group = FindingGroup.from_dict(data.pop("group", None))
            restored.append(Finding(related=related, autofix=autofix, group=group, **data))
        return restored


def _fields_match(data, expected: dict) -> bool:
    return isinstance(data, dict) and all(
        isinstance(data.get(name), types) and not (bool in types) != (type(data.get(name)) is bool)
        for name, types in expected.items())


def _valid_fix(fix) -> bool:
    if fix is None:
        return True
    edits = fix.get("edits")
    return (isinstance(fix.get("message"), str) and isinstance(fix.get("applicability"), str)
            and isinstance(edits, list) and all(
                _fields_match(e, _EDIT_FIELDS) and all(_fields_match(e[end], {"line": _INT, "column": _INT})
                                                        for end in ("start", "end"))
                and isinstance(e.get("expected", ""), str) for e in edits))


def _valid_group(group) -> bool:
    return group is None or (_fields_match(group, _GROUP_FIELDS) and set(group) == set(_GROUP_FIELDS)
                             and all(isinstance(m, str) for m in group["members"]) and group["members"])


def _valid_entry(entry) -> bool:
    """True when ``entry`` has exactly the shape ``put`` writes."""
    if not isinstance(entry, dict) or set(entry) - {"inventory"} != {"findings", "notes", "ran", "collect_notes"}:
        return False
    if not all(isinstance(entry[k], list) and all(isinstance(x, str) for x in entry[k])
               for k in ("notes", "ran", "collect_notes")):
        return False
    findings = entry["findings"]
    return isinstance(findings, list) and all(
        _fields_match(f, _FINDING_FIELDS) and set(f) <= set(_FINDING_FIELDS) | set(_OPTIONAL_FINDING_FIELDS)
        and _valid_group(f.get("group"))
        and all(isinstance(e, str) for e in f["evidence"])
        and all(_fields_match(r, {"location": (dict,), "entity": _STR, "message": _STR})
                and _fields_match(r["location"], _LOCATION_FIELDS)
                and (isinstance(r.get("via", []), list) and all(isinstance(v, str) for v in r.get("via", [])))
                for r in f["related"])
        and _valid_fix(f["autofix"])
        for f in findings)


def prune(directory: Path, limit: int | None = None) -> None:
    """Remove the oldest entries (by modification time) until the cache is under 3/4 of
    ``limit`` bytes; nothing when it is under the limit. Errors (a concurrent run removing the
    same entry) are ignored."""
    limit = MAX_CACHE_BYTES if limit is None else limit
    entries = []
    try:
        for sub in os.scandir(directory):
            if sub.is_dir(follow_symlinks=False):
                for item in os.scandir(sub.path):
                    if item.name.endswith(".json") and item.is_file(follow_symlinks=False):
                        info = item.stat(follow_symlinks=False)
                        entries.append((info.st_mtime_ns, info.st_size, item.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, path in sorted(entries):
        if total <= limit * 3 // 4:
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass
