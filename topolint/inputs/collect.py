"""Turn command-line paths into nodes.

Files named together form one node; a folder with recognised files at its top is one node; a
folder of subfolders is a cluster, one node per subfolder named after it. Folder walks skip
files they do not recognise (listed with --verbose); a file named explicitly that matches no
format is TL002; anything recognised or named that cannot be read is TL001.
"""

from __future__ import annotations

import os
from functools import lru_cache
import sys
from dataclasses import dataclass, field
from pathlib import Path

from topolint.inputs import config_names
from topolint.inputs.config_names import walk_dot_file
from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile, decode_input, read_source
from topolint.model.facts import GraphFile
from topolint.model.node import NodeModel
from topolint.parsers.registry import parse


@dataclass
class InputProblem:
    code: str  # TL001 or TL002
    path: str
    line: int
    column: int
    message: str
    node: str


@dataclass
class Collection:
    nodes: list[NodeModel] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # shown with --verbose
    configs: list = field(default_factory=list)  # ConfigFile: infra files (model/config.py), not nodes
    topology_nodes: list[NodeModel] = field(default_factory=list)  # from --topology, for config rules
    unparsed: dict = field(default_factory=dict)  # path -> SourceFile read as text but not parsed (TL001)


@lru_cache(maxsize=4096)
def _shown_folder(folder: str, cwd: str) -> str:
    real, here = os.path.realpath(folder), os.path.realpath(cwd)
    if real == here:
        return ""
    if real.startswith(here.rstrip(os.sep) + os.sep):
        return Path(os.path.relpath(real, here)).as_posix()
    return Path(real).as_posix()


def display_path(path: Path | str) -> str:
    """Relative to the working directory when below it, POSIX separators, else absolute.
    Folders are resolved (symlinks followed) once each: a walk names thousands of files."""
    folder, name = os.path.split(os.path.abspath(path))
    shown = _shown_folder(folder, os.getcwd())
    return f"{shown.rstrip('/')}/{name}" if shown else name


def _walk_files(folder: Path, exclude=None) -> list[str]:
    """Files below ``folder``, sorted, as path strings (a cluster walk names thousands)."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (exclude and exclude(os.path.join(root, d))))
        found.extend(os.path.join(root, f) for f in sorted(files)
                     if (not f.startswith(".") or walk_dot_file(f)) and not (exclude and exclude(os.path.join(root, f))))
    return found


class _Collector:
    def __init__(self, exclude=None, defer: bool = False) -> None:
        self.result = Collection()
        self.exclude = exclude  # Path -> bool: files and folders a folder walk skips (config excludes)
        self.defer = defer  # leave machine outputs unparsed until the result cache was asked

    def load(self, source: SourceFile | None, path: str, node: NodeModel, explicit: bool,
             loader=None, hint: str | None = None) -> None:
        """``hint``: the format a bundle manifest names, for outputs no content identifies."""
        try:
            if source is None:
                source = loader()
            fmt = config_names.by_name(path) or config_names.shebang(source.text) or sniff(source.text) or hint
            if fmt is None:
                if explicit:
                    self.problem("TL002", path, 1, 0, "matches no known input format "
                                 "(expected an NCCL topology or graph XML)", node.name)
                else:
                    self.result.notes.append(f"{path}: skipped, not a recognised format")
                return
            source.format = fmt
            if fmt not in config_names.CONFIG_FORMATS:
                node.sources[source.path] = source
                node.pending.append((fmt, source, explicit))
                if not self.defer:
                    self.materialize(node)
                return
            self.config(parse(fmt, source), source, path, node)
        except InputError as exc:
            if source is not None:
                self.result.unparsed[source.path] = source  # reports can still show the line
            self.unreadable(exc, path, node, explicit)

    def unreadable(self, exc: InputError, path: str, node: NodeModel, explicit: bool) -> None:
        if explicit or _recognisable(exc):
            self.problem("TL001", exc.path, exc.line, exc.column, exc.message, node.name)
        else:
            self.result.notes.append(f"{path}: skipped, {exc.message}")

    def materialize(self, node: NodeModel) -> None:
        """Parse the node's machine outputs that are still pending."""
        pending, node.pending = node.pending, []
        for fmt, source, explicit in pending:
            try:
                facts = parse(fmt, source)
            except InputError as exc:
                self.result.unparsed[source.path] = node.sources.pop(source.path)
                self.unreadable(exc, source.path, node, explicit)
                continue
            node.add(facts)
            if isinstance(facts, GraphFile):
                from topolint.parsers.nccl_graph_xml import summarise

                node.notes.append(f"{source.path}: NCCL graph XML ({summarise(facts)})")
                self.result.notes.append(node.notes[-1])
            for note in getattr(facts, "verbose_notes", lambda: [])():  # what a parsed file says for --verbose
                node.notes.append(f"{source.path}: {note}")
                self.result.notes.append(node.notes[-1])

    def settle(self, cache) -> None:
        """Parse what the cache cannot answer for: changed nodes, and nodes with config files.
        A run with config files is not cached at all: their settings (NCCL_NET_GDR_LEVEL) can
        change what node rules conclude."""
        for node in self.result.nodes:
            if not node.pending:
                continue
            if not self.result.configs and all(s.format not in config_names.CONFIG_FORMATS for s in node.sources.values()):
                node.cache_key = cache.key(node)
                node.cached = cache.get(node.cache_key)
                if node.cached is not None:
                    node.pending = []
                    self.result.notes.extend(node.cached["collect_notes"])
                    continue
            self.materialize(node)

    def config(self, config, source: SourceFile, path: str, node: NodeModel) -> None:
        """Infra files go to Collection.configs; their sources stay with the node for reports."""
        for skipped in config.skipped:
            self.result.notes.append(f"{path}:{skipped.line}: skipped, {skipped.reason}")
        if config.format == "helm-template":
            return
        if not config.has_content():
            self.result.notes.append(f"{path}: skipped, {config.format} file with no NCCL settings or launch options")
            return
        node.sources[source.path] = source
        self.result.configs.append(config)
        self.result.notes.append(f"{path}: {config.format} config, {len(config.settings)} NCCL settings, "
                                 f"{len(config.launch)} launch facts")

    def problem(self, code: str, path: str, line: int, column: int, message: str, node: str) -> None:
        self.result.problems.append(InputProblem(code, path, line, column, message, node))

    def load_file(self, real: Path | str, node: NodeModel, explicit: bool, hint: str | None = None) -> None:
        path = display_path(real)
        self.load(None, path, node, explicit, loader=lambda: read_source(path, real), hint=hint)

    def walk(self, folder: Path) -> list[str]:
        return _walk_files(folder, self.exclude)

    def bundle(self, folder: Path) -> NodeModel | None:
        """A node bundle (inputs/bundle.py) when the folder has a manifest."""
        from topolint.inputs import bundle

        manifest = bundle.manifest_in(folder)
        return bundle.load_bundle(self, folder, manifest, display_path) if manifest else None

    def folder(self, folder: Path) -> list[NodeModel]:
        node = self.bundle(folder)
        if node is not None:
            return [node]
        with os.scandir(folder) as entries:  # d_type from the listing: no stat per entry
            visible = [(Path(e.path), e.is_dir()) for e in entries
                       if (not e.name.startswith(".") or walk_dot_file(e.name))
                       and not (self.exclude and self.exclude(e.path))]
        top_files = sorted(p for p, is_dir in visible if not is_dir)
        subfolders = sorted(p for p, is_dir in visible if is_dir)
        if any(_quick_sniff(p) for p in top_files) or not subfolders:
            node = NodeModel(name=folder.resolve().name)
            for path in _walk_files(folder, self.exclude):
                self.load_file(path, node, explicit=False)
            return [node]
        for path in top_files:
            self.result.notes.append(f"{display_path(path)}: skipped, not a recognised format")
        nodes = []
        for sub in subfolders:
            node = self.bundle(sub)
            if node is not None:
                nodes.append(node)
                continue
            node = NodeModel(name=sub.name)
            for path in _walk_files(sub, self.exclude):
                self.load_file(path, node, explicit=False)
            nodes.append(node)
        return nodes


def _quick_sniff(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
        text = head.decode("utf-8", errors="replace")
        return bool(config_names.by_name(path.name) or config_names.shebang(text) or sniff(text))
    except OSError:
        return False


def _recognisable(exc: InputError) -> bool:
    """A folder walk reports read errors only for files it recognised (malformed XML)."""
    from topolint.inputs.fabric_sniff import MALFORMED as FABRIC_MALFORMED

    return exc.message.startswith(("malformed XML", "malformed YAML", "Python syntax error",
                                    "malformed nvidia-smi nvlink", "malformed nccl-tests output",
                                    "malformed NCCL log") + FABRIC_MALFORMED)


def collect(paths: list[str], node_name: str | None = None, stdin_filename: str | None = None,
            stdin=None, exclude=None, topology: str | None = None, cache=None) -> Collection:
    """``exclude`` (Path -> bool) applies to what folder walks find; the caller filters the paths
    it names (``--force-exclude``). ``topology`` (``--topology``: a dump, a matrix, a node folder
    or a cluster folder) is read as nodes that config rules check settings against."""
    if topology is not None:
        result = collect(paths, node_name, stdin_filename, stdin, exclude, cache=cache)
        known = collect([topology], exclude=exclude)
        result.topology_nodes = [n for n in known.nodes if n.available()]
        result.nodes.extend(n for n in known.nodes if n.available())
        result.problems.extend(known.problems)
        result.notes.extend(known.notes)
        result.configs.extend(known.configs)
        return result
    collector = _Collector(exclude, defer=cache is not None)
    named_files: list[str] = []
    for raw in paths:
        if raw == "-" or Path(raw).is_file():
            named_files.append(raw)
        elif Path(raw).is_dir():
            collector.result.nodes.extend(collector.folder(Path(raw)))
        else:
            collector.problem("TL001", raw, 1, 0, "no such file or directory", node_name or "-")
    if named_files:
        first = named_files[0]
        default_name = Path(stdin_filename or "stdin").stem if first == "-" else Path(first).stem
        node = NodeModel(name=node_name or default_name)
        for raw in named_files:
            if raw == "-":
                path = stdin_filename or "-"
                stream = stdin if stdin is not None else sys.stdin.buffer
                collector.load(None, path, node, True,
                               loader=lambda p=path: SourceFile(p, decode_input(p, stream.read())))
            else:
                collector.load_file(Path(raw), node, explicit=True)
        collector.result.nodes.insert(0, node)
    if cache is not None:
        collector.settle(cache)
    return collector.result
