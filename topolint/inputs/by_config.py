"""Split a collection by the configuration that governs each input (per-file configuration, as ruff).

A config file (a script, Dockerfile, manifest...) belongs to the configuration nearest its own
folder. A node's machine outputs are checked together, so they belong to the configuration
nearest the folder that holds them all. A node whose config files fall under another
configuration keeps its outputs; each other configuration gets a node of the same name holding
just those files (entities and node names stay what they were). Input problems and parser bugs
go with the folder of the file they name. ``governing(folder)`` says which configuration a folder
has; ``Folders`` asks it once per folder.
"""

from __future__ import annotations

import os
from dataclasses import replace

from topolint.inputs.collect import Collection
from topolint.inputs.config_names import CONFIG_FORMATS
from topolint.model.node import NodeModel


class Folders:
    """``governing`` asked once per folder of the paths seen (display paths, relative to the working
    directory); one instance serves a whole run (the result cache's keys and the split)."""

    def __init__(self, governing):
        self.governing = governing
        self.seen: dict[str, object] = {}
        self._nodes: dict[int, tuple[NodeModel, object]] = {}

    def of_folder(self, folder: str) -> object:
        folder = folder or "."
        found = self.seen.get(folder)
        if found is None:
            found = self.seen[folder] = self.governing(folder)
        return found

    def of_path(self, path: str) -> object:
        return self.of_folder(os.path.dirname(path))

    def of_source(self, source) -> object:
        return self.of_path(source.path)  # as displayed: the path as named, or relative to the working directory

    def of_node(self, node: NodeModel) -> object:
        """The configuration of the folder that holds all of the node's machine outputs (of their
        common folder where they lie under several configurations' folders). None: it has none."""
        known = self._nodes.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        paths = [s.path for s in node.sources.values() if s.format not in CONFIG_FORMATS]
        folders = {os.path.dirname(p) for p in paths}
        found = [self.of_folder(folder) for folder in folders]
        if not found:
            home = None
        elif all(f is found[0] for f in found):
            home = found[0]
        else:
            home = self.governing(os.path.commonpath([os.path.abspath(p) for p in paths]))
        self._nodes[id(node)] = (node, home)
        return home


def split(collection: Collection, folders: Folders) -> list[tuple[object, Collection]]:
    """``(configuration, the part of the collection it governs)``, in the order the inputs come;
    the collection itself when one configuration governs everything. Notes stay with the whole."""
    keys: list[object] = []

    def key(found):
        if found is not None and not any(found is k for k in keys):
            keys.append(found)
        return found

    placed = []  # (node, home, [(configuration, sources)])
    for node in collection.nodes:
        home = key(folders.of_node(node))
        owners = {path: key(folders.of_source(source)) for path, source in node.sources.items()
                  if home is None or source.format in CONFIG_FORMATS}
        if all(owner is home for owner in owners.values()):
            placed.append((node, home, [(home, node.sources)]))  # the usual case: the node stays whole
            continue
        pieces: dict[int, tuple[object, dict]] = {}
        for path, source in node.sources.items():
            owner = owners.get(path, home)
            pieces.setdefault(id(owner), (owner, {}))[1][path] = source
        placed.append((node, home, list(pieces.values())))
    configs = [(key(folders.of_path(c.path)), c) for c in collection.configs]
    problems = [(key(folders.of_path(p.path)), p) for p in collection.problems]
    unparsed = [(key(folders.of_path(path)), path, source) for path, source in collection.unparsed.items()]
    errors = [(key(folders.of_path(e[0])), e) for e in collection.internal_errors]
    if len(keys) <= 1:
        return [(keys[0] if keys else folders.governing("."), collection)]
    parts = {id(k): Collection(materialize=collection.materialize) for k in keys}
    for node, home, pieces in placed:
        if len(pieces) <= 1:
            owner = pieces[0][0] if pieces else home
            parts[id(owner if owner is not None else keys[0])].nodes.append(node)
            continue
        for owner, sources in pieces:  # outputs and config files under different configurations
            part = parts[id(owner)].nodes
            part.append(replace(node, sources=sources) if owner is home else NodeModel(name=node.name, sources=sources))
    for owner, config in configs:
        parts[id(owner)].configs.append(config)
    for owner, problem in problems:
        parts[id(owner)].problems.append(problem)
    for owner, path, source in unparsed:
        parts[id(owner)].unparsed[path] = source
    for owner, error in errors:
        parts[id(owner)].internal_errors.append(error)
    return [(k, parts[id(k)]) for k in keys]
