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
from topolint.inputs.config_names import walk_dot_file, walk_dot_folder
from topolint.inputs.cluster_sniff import CLUSTER_FORMATS, LLDPCTL
from topolint.model.scheduler import K8S_NODES
from topolint.inputs.sniff import INVENTORY, sniff
from topolint.inputs.source import InputBudget, InputError, SourceFile, open_regular, read_source, read_stream
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
class ClusterFile:
    """A file of the cluster, not of one node (inputs/cluster_sniff.py): the fabric as cabled, an
    LLDP neighbour table. Parsed when collected; the cluster stage reads ``facts``."""

    format: str
    facts: object
    source: SourceFile
    host: str | None = None  # the node whose folder held it (an lldpctl's local end); None: the cluster's


@dataclass
class Collection:
    nodes: list[NodeModel] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # shown with --verbose
    configs: list = field(default_factory=list)  # ConfigFile: infra files (model/config.py), not nodes
    topology_nodes: list[NodeModel] = field(default_factory=list)  # from --topology, for config rules
    unparsed: dict = field(default_factory=dict)  # path -> SourceFile read as text but not parsed (TL001)
    internal_errors: list = field(default_factory=list)  # (input, "parser FORMAT", exception, node): parser bugs
    cluster_files: list[ClusterFile] = field(default_factory=list)  # fabric files: the cluster stage's
    # With collect(lazy=True): parses a node's pending machine outputs. The runner calls it just
    # before checking the node and drops the facts after, so a cluster's facts are never all in
    # memory at once (a 2,000-node folder: issue 7).
    materialize: object = None
    # The files named or found by walking the named folders (as given, not resolved): the only
    # files --fix and --add-noqa write (engine/writes.py); sourced files are not among them.
    checked: list[str] = field(default_factory=list)


def content_format(path: str, text: str, hint: str | None = None) -> str | None:
    """The format of a file by name, shebang and content, as a folder walk and a named file see it."""
    named = config_names.by_name(path)
    if named == config_names.YAML:  # a topology.yaml or a node object is YAML by name, not a manifest
        from topolint.inputs.scheduler_sniff import scheduler_format

        found = scheduler_format(text)
        if found:
            return found
    fmt = config_names.refine(named, path, text) or config_names.shebang(text) or sniff(text)
    if fmt is None and named is None:
        from topolint.inputs.scheduler_sniff import scheduler_format

        fmt = scheduler_format(text, path)  # a hostfile of host names alone is known by its name
    return fmt or hint


CLUSTER_TOP = "(cluster)"  # the pseudo node the top files of a cluster folder are loaded for
LOCAL_END_FORMATS = {LLDPCTL, K8S_NODES}  # a labels block names no node: the folder's node is it  # found in a node's folder, the node is its local end


@lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    """os.path.realpath of an absolute, normalised folder, its parent resolved once for all its
    siblings (realpath would lstat every component again for each of a cluster's node folders)."""
    parent, name = os.path.split(folder)
    if not name or parent == folder or folder.count(os.sep) > 64:  # the recursion stays shallow
        return os.path.realpath(folder)
    joined = os.path.join(_real_folder(parent), name)
    return os.path.realpath(joined) if os.path.islink(joined) else joined


@lru_cache(maxsize=4096)
def _shown_folder(folder: str, cwd: str) -> str:
    real, here = _real_folder(folder), _real_folder(cwd)
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


def _walk_files(folder: Path, exclude=None, onerror=None, hidden=None) -> list[str]:
    """Files below ``folder``, sorted, as path strings (a cluster walk names thousands).
    Symlinked folders are not followed (no loops); ``onerror`` gets each folder that cannot be
    listed, ``hidden`` each dot folder that is not entered (only .github is)."""
    found = []
    for root, dirs, files in os.walk(folder, onerror=onerror):
        if hidden is not None:
            for name in sorted(d for d in dirs if d.startswith(".") and not walk_dot_folder(d)):
                hidden(os.path.join(root, name))
        dirs[:] = sorted(d for d in dirs if (not d.startswith(".") or walk_dot_folder(d))
                         and not (exclude and exclude(os.path.join(root, d))))
        found.extend(os.path.join(root, f) for f in sorted(files)
                     if (not f.startswith(".") or walk_dot_file(f)) and not (exclude and exclude(os.path.join(root, f))))
    return found


class _Collector:
    def __init__(self, exclude=None, defer: bool = False, budget: InputBudget | None = None,
                 lazy: bool = False) -> None:
        self.result = Collection()
        self.lazy = lazy
        self.budget = budget or InputBudget()
        self.exclude = exclude  # Path -> bool: files and folders a folder walk skips (config excludes)
        self.defer = defer  # leave machine outputs unparsed until the result cache was asked
        self.spawned: dict[int, list[NodeModel]] = {}  # id(node found in) -> nodes read from inventory files
        # Dockerfiles with nothing to check but the NCCL of their image: kept aside until a compose
        # service builds one (absolute path -> (config, source, path, node, the note that skipped it)).
        self.dormant: dict[str, tuple] = {}
        self.cluster_seen: dict[tuple, str] = {}  # (format, host, content) -> the path read: a copy is read once

    def load(self, source: SourceFile | None, path: str, node: NodeModel, explicit: bool,
             loader=None, hint: str | None = None) -> None:
        """``hint``: the format a bundle manifest names, for outputs no content identifies."""
        fmt = None
        try:
            if source is None:
                source = loader()
                if not self.budget.charge(source):
                    self.over_budget(path, node)
                    return
            fmt = content_format(path, source.text, hint)
            if fmt is None:
                if explicit:
                    self.problem("TL002", path, 1, 0, "matches no known input format "
                                 "(expected an NCCL topology or graph XML)", node.name)
                else:
                    self.result.notes.append(f"{path}: skipped, not a recognised format")
                return
            source.format = fmt
            if fmt in CLUSTER_FORMATS:
                self.cluster_file(source, fmt, node)
                return
            if fmt == INVENTORY:
                self.inventory(source, node)
                return
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
        except Exception as exc:  # noqa: BLE001 - a parser bug: an internal error (exit 2), the run goes on
            self.parser_bug(path, fmt, exc, node, source)

    def cluster_file(self, source: SourceFile, fmt: str, node: NodeModel | None) -> None:
        """A fabric file goes to the cluster stage, parsed now (InputError: TL001 at its line). The
        same content again (every node's bundle holding the subnet's ibnetdiscover) is read once."""
        host = node.name if node is not None and fmt in LOCAL_END_FORMATS and node.name != CLUSTER_TOP else None
        key = (fmt, host, hash(source.text))
        if key in self.cluster_seen:
            self.result.notes.append(f"{source.path}: not read again, the same {fmt} output as {self.cluster_seen[key]}")
            return
        facts = parse(fmt, source)
        self.cluster_seen[key] = source.path
        if host is not None:
            facts.host = host
        self.result.cluster_files.append(ClusterFile(fmt, facts, source, host))
        summary = getattr(facts, "summary", None)
        self.result.notes.append(f"{source.path}: {fmt} output for the cluster stage" + (f" ({summary()})" if summary else ""))

    def inventory(self, source: SourceFile, found_in: NodeModel) -> None:
        """An inventory file is a node of its own, named as the inventory says, read now: the
        cluster stage reads it in this process (docs/fleet.md). It takes the place of the node
        whose files it was found among when that node has no other file."""
        inventory = parse(INVENTORY, source)  # InputError: TL001 at its line
        node = NodeModel(name=inventory.node, inventory=inventory)
        node.sources[source.path] = source
        self.spawned.setdefault(id(found_in), []).append(node)

    def place_inventories(self) -> None:
        """Inventory nodes into the node list, each after the node it was found in (dropped when
        nothing else was), in file order. A node the run also reads from its own files, or from an
        earlier inventory, keeps that one (a note says which file was not used)."""
        if not self.spawned:
            return
        raw = {node.name for node in self.result.nodes if node.sources}
        placed, seen = [], set()
        for node in self.result.nodes:
            if node.sources or id(node) not in self.spawned:
                placed.append(node)
            for spawned in self.spawned.get(id(node), []):
                path = next(iter(spawned.sources))
                if spawned.name in raw or spawned.name in seen:
                    self.result.notes.append(f"{path}: inventory of node {spawned.name} not used: the run "
                                             f"reads that node {'from its own files' if spawned.name in raw else 'from an earlier inventory'}")
                    continue
                seen.add(spawned.name)
                placed.append(spawned)
        self.result.nodes = placed

    def parser_bug(self, path: str, fmt: str | None, exc: Exception, node: NodeModel, source) -> None:
        self.result.internal_errors.append((path, f"parser {fmt or 'sniff'}", exc, node.name))
        node.sources.pop(path, None)
        if source is not None:
            self.result.unparsed[source.path] = source

    def over_budget(self, path: str, node: NodeModel) -> None:
        if self.budget.refused == 1:
            self.problem("TL001", path, 1, 0, f"not read: the run's inputs passed the total input limit of "
                         f"{self.budget.limit} bytes (--max-total-input raises it); later files are not read either",
                         node.name)

    def unreadable(self, exc: InputError, path: str, node: NodeModel, explicit: bool) -> None:
        if explicit or _recognisable(exc, path):
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
            except Exception as exc:  # noqa: BLE001 - a parser bug: an internal error (exit 2)
                self.parser_bug(source.path, fmt, exc, node, source)
                continue
            node.add(facts)
            if isinstance(facts, GraphFile):
                from topolint.parsers.nccl_graph_xml import summarise

                node.notes.append(f"{source.path}: NCCL graph XML ({summarise(facts)})")
                self.result.notes.append(node.notes[-1])
            elif fmt in ("nccl-tests", "nccl-log"):
                from topolint.parsers.nccl_tests import summarise as summarise_measured

                node.notes.append(f"{source.path}: {fmt} ({summarise_measured(facts)})")
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
                node.cached = cache.get(node.cache_key) if node.cache_key is not None else None
                if node.cached is not None:
                    node.pending = []
                    self.result.notes.extend(node.cached["collect_notes"])
                    continue
            if not self.lazy:
                self.materialize(node)

    def config(self, config, source: SourceFile, path: str, node: NodeModel) -> None:
        """Infra files go to Collection.configs; their sources stay with the node for reports."""
        for skipped in config.skipped:
            self.result.notes.append(f"{skipped.path or path}:{skipped.line}: skipped, {skipped.reason}")
        if config.format == "helm-template":
            return
        if not config.has_content():
            note = f"{path}: skipped, {config.format} file with no NCCL settings or launch options"
            if config.format == "dockerfile" and config.nccl_sources:
                self.dormant[os.path.abspath(config.path)] = (config, source, path, node, note)
            self.result.notes.append(note)
            return
        self.keep(config, source, path, node)

    def keep(self, config, source: SourceFile, path: str, node: NodeModel) -> None:
        node.sources[source.path] = source
        for sourced in config.included:  # shell `source`: findings point into these files too
            sourced.format = sourced.format or "shell"
            node.sources.setdefault(sourced.path, sourced)
        self.result.configs.append(config)
        self.result.notes.append(f"{path}: {config.format} config, {len(config.settings)} NCCL settings, "
                                 f"{len(config.launch)} launch facts")

    def revive_built(self) -> None:
        """The Dockerfiles a compose service builds say which NCCL the service runs with: kept as
        configs even when they set nothing themselves (model/nccl_in_force.py)."""
        if not self.dormant:
            return
        for config in list(self.result.configs):
            for source in config.nccl_sources if config.format == "compose" else ():
                path = source.ref.rpartition("#")[0] if source.kind == "build" else ""
                found = self.dormant.pop(os.path.abspath(path), None) if path else None
                if found is not None:
                    self.result.notes.remove(found[4])
                    self.keep(*found[:4])
                    self.result.notes.append(f"{found[2]}: read for the NCCL of the compose service it builds "
                                             f"({source.where()})")

    def problem(self, code: str, path: str, line: int, column: int, message: str, node: str) -> None:
        self.result.problems.append(InputProblem(code, path, line, column, message, node))

    def load_file(self, real: Path | str, node: NodeModel, explicit: bool, hint: str | None = None) -> None:
        path = display_path(real)
        self.result.checked.append(os.fspath(real))
        self.load(None, path, node, explicit, loader=lambda: read_source(path, real), hint=hint)

    def walk(self, folder: Path) -> list[str]:
        return _walk_files(folder, self.exclude, self.unlistable, self.hidden)

    def hidden(self, path: str) -> None:
        """A dot folder the walk does not enter: said with --verbose, never skipped silently."""
        self.result.notes.append(f"{display_path(path)}/: skipped, a hidden folder (of the dot folders only .github "
                                 "is read; name a file in it to check it)")

    def unlistable(self, error: OSError) -> None:
        """A folder that cannot be listed is TL001: the files in it would be lost silently."""
        path = display_path(error.filename) if error.filename else "?"
        self.problem("TL001", path, 1, 0, f"cannot list folder: {error.strerror or error}", "-")

    def bundle(self, folder: Path) -> NodeModel | None:
        """A node bundle (inputs/bundle.py) when the folder has a manifest."""
        from topolint.inputs import bundle

        manifest = bundle.manifest_in(folder)
        return bundle.load_bundle(self, folder, manifest, display_path) if manifest else None

    def folder(self, folder: Path) -> list[NodeModel]:
        node = self.bundle(folder)
        if node is not None:
            return [node]
        try:
            with os.scandir(folder) as entries:  # d_type from the listing: no stat per entry
                listed = list(entries)
            visible = [(Path(e.path), e.is_dir()) for e in listed
                       if (not e.name.startswith(".") or (walk_dot_folder(e.name) if e.is_dir() else walk_dot_file(e.name)))
                       and not (self.exclude and self.exclude(e.path))]
        except OSError as exc:
            self.unlistable(exc)
            return []
        top_files = sorted(p for p, is_dir in visible if not is_dir)
        subfolders = sorted(p for p, is_dir in visible if is_dir)
        sniffed = {p: _quick_sniff(p) for p in top_files} if subfolders else {}
        if any(fmt and fmt not in CLUSTER_FORMATS for fmt in sniffed.values()) or not subfolders:
            node = NodeModel(name=folder.resolve().name)
            for path in self.walk(folder):
                self.load_file(path, node, explicit=False)
            return [node]
        top = NodeModel(name=CLUSTER_TOP)  # the cluster's own files (fabric): none of its nodes
        for path in top_files:
            if sniffed.get(path):
                self.load_file(path, top, explicit=False)
            else:
                self.result.notes.append(f"{display_path(path)}: skipped, not a recognised format")
        for entry in sorted(listed, key=lambda e: e.name):
            if entry.name.startswith(".") and not walk_dot_folder(entry.name) and entry.is_dir():
                self.hidden(entry.path)
        nodes = []
        for sub in subfolders:
            node = self.bundle(sub)
            if node is not None:
                nodes.append(node)
                continue
            node = NodeModel(name=sub.name)
            for path in self.walk(sub):
                self.load_file(path, node, explicit=False)
            nodes.append(node)
        return nodes


def _quick_sniff(path: Path) -> str | None:
    """The format a file's name or head names (None: none): a folder's top files decide whether it is
    a node (machine outputs or configs at its top) or a cluster (subfolders, and the cluster's own files)."""
    try:
        with os.fdopen(open_regular(str(path), path), "rb") as handle:
            head = handle.read(65536)
        text = head.decode("utf-8", errors="replace")
        return content_format(path.name, text)
    except (OSError, InputError):
        return None


def _recognisable(exc: InputError, path: str) -> bool:
    """A folder walk reports read errors only for files it recognised: malformed content of a
    known format, and files it knows by name or by the start of their content that cannot be
    read whole (NUL byte, not UTF-8, over the size limit, no permission). FIFOs, devices and
    sockets are skipped (listed with --verbose)."""
    from topolint.inputs.cluster_sniff import MALFORMED as CLUSTER_MALFORMED
    from topolint.inputs.fabric_sniff import MALFORMED as FABRIC_MALFORMED

    if exc.special:
        return False
    if config_names.by_name(path) or (exc.head and (config_names.shebang(exc.head) or sniff(exc.head))):
        return True
    if exc.head is None and exc.message.startswith("cannot read") and _looks_like_input(path):
        return True
    return exc.message.startswith(("malformed XML", "malformed YAML", "Python syntax error",
                                    "malformed nvidia-smi nvlink", "malformed nvidia-smi -q",
                                    "malformed nvidia-smi --query-gpu", "malformed nccl-tests output",
                                    "malformed NCCL log") + FABRIC_MALFORMED + CLUSTER_MALFORMED)


_INPUT_SUFFIXES = (".xml", ".txt", ".log", ".out", ".yaml", ".yml", ".json", ".sh", ".sbatch", ".env",
                   ".conf", ".py", ".toml")


def _looks_like_input(path: str) -> bool:
    """A file a walk cannot open at all is reported when its name says what it holds."""
    return path.lower().endswith(_INPUT_SUFFIXES) or "topo" in os.path.basename(path).lower()


def collect(paths: list[str], node_name: str | None = None, stdin_filename: str | None = None,
            stdin=None, exclude=None, cache=None, budget: InputBudget | None = None, lazy: bool = False) -> Collection:
    """``exclude`` (Path -> bool) applies to what folder walks find; the caller filters the paths
    it names (``--force-exclude``). ``cache``: nodes it answers for are not parsed (its ``key``
    may be None: that node is not cached). ``lazy``: machine outputs stay unparsed until
    ``Collection.materialize(node)`` (the runner's job). A topology that config files are checked
    against is collected on its own (commands/check.py): it is context, not a checked path."""
    collector = _Collector(exclude, defer=cache is not None or lazy, budget=budget, lazy=lazy)
    collector.result.materialize = collector.materialize if lazy else None
    named_files: list[str] = []
    for raw in paths:
        if raw == "-" or (os.path.lexists(raw) and not os.path.isdir(raw)):
            named_files.append(raw)  # FIFOs, devices and link loops too: reading says what they are
        elif os.path.isdir(raw):
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
                collector.load(None, path, node, True, loader=lambda p=path: read_stream(p, stream))
            else:
                collector.load_file(Path(raw), node, explicit=True)
        if node.sources or node.pending or not collector.result.cluster_files:
            collector.result.nodes.insert(0, node)  # fabric files named alone are the cluster's, no node
    collector.place_inventories()
    collector.revive_built()
    if any(config.format == "envfile" for config in collector.result.configs):
        from topolint.inputs import env_consumers

        env_consumers.settle(collector.result)
    if cache is not None:
        collector.settle(cache)
    return collector.result
