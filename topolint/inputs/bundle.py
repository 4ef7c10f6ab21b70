"""Node bundles: a folder that ``topolint collect`` wrote (docs/bundles.md), read as one node.

The manifest says which file holds which command's output and how each command ended. A listed
file is read as if named on the command line (a file that looks like a known format but does
not parse is TL001); a command that failed, timed out, was missing or not permitted is missing
evidence (TL005), never a clean result; files the manifest does not list are read as a folder
walk reads them and listed in the notes, never dropped silently.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from topolint.inputs.config_names import walk_dot_file
from topolint.inputs.source import InputError, read_source
from topolint.model.node import NodeModel
from topolint.parsers.bundle_manifest import MANIFEST_NAME, parse_manifest
from topolint.parsers.registry import PARSERS

_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def manifest_in(folder: Path) -> Path | None:
    """The manifest of a bundle folder, when it has one (a regular file, not a link)."""
    path = folder / MANIFEST_NAME
    try:
        return path if stat.S_ISREG(os.lstat(path).st_mode) else None
    except OSError:
        return None


def _entries(folder: Path) -> dict[str, os.DirEntry]:
    """The bundle's top-level entries by name (d_type from the listing: no stat per file)."""
    with os.scandir(folder) as listing:
        return {entry.name: entry for entry in listing}


def load_bundle(collector, folder: Path, manifest: Path, display_path) -> NodeModel:
    """One node from a bundle folder; ``collector`` is inputs.collect's _Collector."""
    shown = display_path(manifest)
    base = shown[: -len(MANIFEST_NAME)]  # the folder as reports show it, with its trailing "/"
    try:
        source = read_source(shown, manifest)
        facts = parse_manifest(source, base.rstrip("/") or ".")
        entries = _entries(folder)
    except InputError as exc:
        node = NodeModel(name=folder.resolve().name)
        collector.problem("TL001", exc.path, exc.line, exc.column, exc.message, node.name)
        for path in collector.walk(folder):  # still read what is there, as a folder of files
            if Path(path).name != MANIFEST_NAME:
                collector.load_file(path, node, explicit=False)
        return node
    except OSError:
        entries = {}
    host = facts.host if facts.host and _HOST.fullmatch(facts.host) else folder.resolve().name
    node = NodeModel(name=host)
    source.format = "bundle-manifest"
    node.sources[source.path] = source
    node.bundle = facts
    listed = {MANIFEST_NAME}
    for command in facts.commands:
        listed.add(command.file)
        if command.status != "ok":
            note = f"{shown}:{command.loc.line}: {' '.join(command.argv) or command.file} {command.status}" + (
                f" ({command.message})" if command.message else "") + ": missing evidence, not a clean result"
            collector.result.notes.append(note)
            continue
        entry = entries.get(command.file)
        if entry is None or not entry.is_file(follow_symlinks=False):
            collector.problem("TL001", shown, command.loc.line, command.loc.column,
                              f"the manifest lists {command.file}, which is not a regular file in the bundle",
                              node.name)
            continue
        # A format no parser reads yet is skipped like a folder walk skips it (listed in the notes).
        known = command.format is None or command.format in PARSERS
        path = base + command.file
        collector.load(None, path, node, known, loader=lambda p=path, real=entry.path: read_source(p, real),
                       hint=command.format if known else None)
    for name in sorted(set(entries) - listed):
        entry = entries[name]
        if (name.startswith(".") and not walk_dot_file(name)) or (collector.exclude and collector.exclude(entry.path)):
            continue
        paths = collector.walk(Path(entry.path)) if entry.is_dir(follow_symlinks=False) else (
            [entry.path] if entry.is_file(follow_symlinks=False) else [])
        for path in paths:
            facts.unknown_files.append(os.path.relpath(path, folder))
            collector.result.notes.append(f"{display_path(path)}: not listed in the bundle manifest {shown}; "
                                          "read as a folder walk reads files")
            collector.load_file(path, node, explicit=False)
    return node
