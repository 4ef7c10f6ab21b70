"""`topolint check`: collect the inputs, run the rules, then suppressions, selection and baseline.

``run_check(CheckOptions)`` does the work and prints nothing; ``topolint.check()`` (api.py) and
the command line (``cli(args)``: output files, stderr notes, the exit code) are thin layers
over it. Heavy modules load inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from topolint.commands import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError

if TYPE_CHECKING:
    from topolint.engine.finding import Finding
    from topolint.reporters import Report

SEVERITIES = ("error", "warning", "info")
DRAWING_FORMATS = ("html", "markdown")  # formats that draw the nodes (drawing/views.py)
DRAWN_FORMATS = ("nccl-topo-xml", "hwloc", "nvidia-smi-topo")  # the inputs a node is drawn from
MAX_DRAWN_NODES = 32  # a report draws at most this many nodes: those with the most severe findings first
KEPT_VIEWS = 2 * MAX_DRAWN_NODES  # drawings a run keeps: suppressions and cross-node findings may reorder them


def split_selectors(values: Iterable[str] | str | None) -> list[str]:
    """Selectors from repeated, comma-separated options: ["NUMA,ENV001", "TL"] -> [NUMA, ENV001, TL]."""
    if isinstance(values, str):
        values = [values]
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


@dataclass
class CheckOptions:
    """Everything a check run depends on; the command-line flags of the same names fill it."""

    paths: list[str] = field(default_factory=lambda: ["."])
    node: str | None = None
    stdin_filename: str | None = None
    select: list[str] | None = None  # None: the configured selection (default: every stable rule)
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    preview: bool = False
    fail_level: str | None = None  # None: the configured one, else "warning"
    nccl_version: str | None = None
    topology: str | None = None
    project_root: Path | None = None
    rule_dirs: list[Path] = field(default_factory=list)
    cache: bool = True
    cache_dir: Path | None = None
    config: Path | None = None
    isolated: bool = False
    extend_exclude: list[str] = field(default_factory=list)
    force_exclude: bool = False
    require_suppression_reason: bool = False
    baseline: Path | None = None
    update_baseline: bool = False
    cross_file: str = "include"  # include, exclude or only (the pre-commit hooks: see is_cross_file)
    baseline_missing: str = "error"  # a --baseline file that does not exist: "error" (exit 2) or "empty"
    topology_findings: bool = False  # report the topology's own findings too (topolint live)
    max_total_input: int | None = None  # bytes one run reads (inputs.source.MAX_TOTAL_INPUT_BYTES)
    jobs: int = 1  # processes checking nodes (engine/parallel.py); 0: one per CPU
    inventory: Path | None = None  # --inventory: build every node's inventory (CheckResult.inventories)
    progress: object = None  # commands/progress.py RunProgress: the command line's progress line on a terminal
    # Draw the nodes while they are checked (html and markdown reports, topolint graph): None, or the
    # drawing/views.py DrawingRequest fields besides the version ({} for its defaults). The result
    # cache does not answer such a run (a drawing needs the node's facts); it still writes it.
    drawings: dict | None = None


@dataclass(frozen=True)
class Summary:
    """Counts of what a run reported; suppressed and baselined findings are not in the severities."""

    error: int = 0
    warning: int = 0
    info: int = 0
    suppressed: int = 0  # by a comment or annotation in the file
    baselined: int = 0
    unreadable: bool = False  # an input could not be read (TL001): the exit code is 2

    @property
    def total(self) -> int:
        return self.error + self.warning + self.info


@dataclass
class CheckResult:
    """The outcome of one check run: typed findings, their summary and what the CLI prints."""

    findings: list[Finding]  # the selected findings, sorted; suppressed and baselined ones flagged
    report: Report  # what the reporters render (``render(fmt)``)
    fail_level: str
    nccl_version: str
    config_path: Path | None = None
    notes: list[str] = field(default_factory=list)  # skipped files, rules that did not run (--verbose)
    messages: list[str] = field(default_factory=list)  # always worth saying: baseline, hidden TL001
    # path -> fail level, for files whose configuration sets another one than the run's own
    fail_levels: dict[str, str] = field(default_factory=dict)
    reason_required: set[str] = field(default_factory=set)  # files whose suppressions need a reason
    inventories: dict = field(default_factory=dict)  # node -> fleet Inventory, with CheckOptions.inventory
    options: CheckOptions | None = None  # what ran
    plan: Plan | None = None  # the run's own (root) plan
    plans: object = None  # Plans: each folder's configuration (the excludes the inputs were read with)
    checked_paths: list[str] = field(default_factory=list)  # files named or walked: what --fix may write
    not_written: list = field(default_factory=list)  # engine/writes.py NotWritten: TL006, the exit code is 2
    # With CheckOptions.drawings: node -> its unmarked drawing (drawing/views.py Picture), for the
    # nodes with the most severe findings; how many nodes could be drawn in all.
    views: dict = field(default_factory=dict)
    views_made: int = 0
    drawable: list = field(default_factory=list)  # nodes holding a topology, hwloc export or matrix (by format)
    problems: list = field(default_factory=list)  # InputProblem (TL001/TL002) from reading the inputs

    @property
    def active(self) -> list[Finding]:
        return [f for f in self.findings if not f.suppressed]

    @property
    def summary(self) -> Summary:
        active = self.active
        hidden = [f for f in self.findings if f.suppressed]
        return Summary(
            **{level: sum(1 for f in active if f.severity == level) for level in SEVERITIES},
            suppressed=sum(1 for f in hidden if f.suppression != "external"),
            baselined=sum(1 for f in hidden if f.suppression == "external"),
            unreadable=self.report.unreadable,
        )

    @property
    def failing(self) -> bool:
        """A finding at or above the fail level."""
        from topolint.engine.selection import at_or_above

        levels, level = self.fail_levels, self.fail_level
        return any(at_or_above(f, levels.get(f.path, level)) for f in self.active)

    def exit_code(self, exit_zero: bool = False) -> int:
        if self.report.unreadable or self.report.internal_errors or self.not_written:
            return EXIT_ERROR
        return EXIT_FINDINGS if self.failing and not exit_zero else EXIT_CLEAN

    def render(self, fmt: str = "full") -> str:
        from dataclasses import replace

        from topolint.reporters import render

        report = self.report
        if fmt in DRAWING_FORMATS and self.options is not None and self.options.drawings is not None:
            pictures, not_drawn = drawings(self, self.active)
            report = replace(report, pictures=pictures, not_drawn=not_drawn)
        return render(fmt, report)


def _configured(options: CheckOptions, loaded, rules: list):
    """Merge the configuration under the options: the selection, per-file ignores and rules
    with severities and parameters applied. UsageError names the config file and key."""
    from topolint.config import ConfigError, check_rule_settings, key_name
    from topolint.engine import selection

    config = loaded.config
    for key in ("select", "extend_select", "ignore"):
        for token in getattr(config, key) or []:
            try:
                selection.resolve(token, rules)
            except selection.SelectionError as exc:
                raise UsageError(f"{key_name(loaded, key.replace('_', '-'))}: {exc}") from None
    per_file: dict[str, set[str]] = {}
    for pattern, tokens in config.per_file_ignores.items():
        per_file[pattern] = set()
        for token in tokens:
            try:
                per_file[pattern] |= selection.resolve(token, rules)[0]
            except selection.SelectionError as exc:
                raise UsageError(f"{key_name(loaded, 'per-file-ignores.' + pattern)}: {exc}") from None
    try:
        rules = check_rule_settings(loaded, rules)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    chosen = selection.Selection(
        select=split_selectors(options.select) if options.select else config.select,
        extend_select=config.extend_select + split_selectors(options.extend_select),
        ignore=config.ignore + split_selectors(options.ignore),
        preview=options.preview or config.preview,
    ).enabled(rules)
    return rules, chosen, per_file


def _paths(options: CheckOptions, plans) -> list[str]:
    """The named paths, less those the excludes cover where --force-exclude (or force-exclude in
    the configuration that governs the path) is on."""
    kept = []
    for raw in options.paths:
        if raw == "-" and not options.stdin_filename:
            kept.append(raw)
            continue
        named = Path(options.stdin_filename) if raw == "-" else Path(raw)
        excluder = plans.named_excludes(named)
        if not (excluder.force and excluder.named(named)):
            kept.append(raw)
    return kept


def is_cross_file(finding, needs: dict[str, tuple]) -> bool:
    """Whether a finding comes from more than one file: its rule reads two kinds of input
    (settings against a topology, a dump against a matrix) or it points at a line in another
    file. A check of one file alone cannot report it: the project-wide pre-commit hook's share."""
    return len(needs.get(finding.code, ())) > 1 or any(r.location.path != finding.path for r in finding.related)


def _rule_needs(rules: list) -> dict[str, tuple]:
    from topolint.checks import load_check

    needs = {}
    for rule in rules:
        if rule.check != "inputs":
            try:
                needs[rule.code] = tuple(load_check(rule.check).NEEDS)
            except ValueError:
                needs[rule.code] = ()  # prepare() reports a check that does not exist
    return needs


def _rule_dirs(options: CheckOptions, loaded) -> list[Path]:
    from topolint.config import key_name

    rule_dirs = list(options.rule_dirs)
    for folder in loaded.config.rule_dirs:
        if not loaded.resolve(folder).is_dir():
            raise UsageError(f"{key_name(loaded, 'rule-dirs')}: {folder}: not a directory")
        rule_dirs.append(loaded.resolve(folder))
    return rule_dirs


def _load_baseline(options: CheckOptions):
    from topolint.engine.baseline import Baseline, BaselineError

    if options.baseline is None:
        return None
    try:
        return Baseline.load(options.baseline, missing_ok=options.update_baseline or options.baseline_missing == "empty")
    except BaselineError as exc:
        raise UsageError(f"{exc}; --baseline-missing=empty treats it as empty") from None


def _apply_baseline(options: CheckOptions, baseline, findings, everything, chosen, inputs) -> str:
    """Mark baselined findings (and rewrite the file with --update-baseline); the note for stderr."""
    from topolint.engine.baseline import BaselineError

    if options.update_baseline:
        summary = baseline.update(findings, chosen, inputs)
        try:
            baseline.write()
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
        baseline.apply(findings)
        return f"topolint: baseline {options.baseline} updated: {summary}"
    if not baseline.path.exists():  # --baseline-missing=empty: a first run, before the baseline is made
        return (f"topolint: baseline {options.baseline} does not exist: treated as empty, so every finding is "
                f"new (--baseline-missing=empty); create it with --update-baseline")
    matched = baseline.apply(findings)
    stale = baseline.stale(everything, chosen, inputs)
    note = f"topolint: baseline {options.baseline}: {matched} findings baselined"
    if stale:
        note += f", {len(stale)} entries no longer match (--update-baseline drops them)"
    return note


@dataclass
class Plan:
    """The settings of a run, resolved from the options over the configuration, before any input is read."""

    loaded: object  # config.LoadedConfig
    rules: list  # every loaded rule, with configured severities and parameters
    chosen: set[str]  # the codes selected
    per_file: dict[str, set[str]]
    version: object  # NcclVersion
    fail_level: str
    require_reason: bool
    excludes: object  # config.Excluder
    topology: str | None
    rule_dirs: list[Path]
    project_root: Path
    cache_dir: Path | None  # None: the cache is off


def plan_check(options: CheckOptions, loaded=None, rule_sets: dict | None = None) -> Plan:
    """Resolve the configuration (``loaded``, else the run's own), rules and selection; UsageError
    names what cannot be used. ``rule_sets`` remembers the rules loaded per set of rule folders."""
    from topolint.commands.rules import load_rule_set
    from topolint.config import ConfigError, discover, excluder
    from topolint.engine import selection
    from topolint.engine.cache import CACHE_DIR_NAME, cache_disabled_by_environment
    from topolint.model.nccl_version import NEWEST, NcclVersion, VersionError

    if loaded is None:
        try:
            loaded = discover(options.config, options.isolated)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    config = loaded.config
    rule_dirs = _rule_dirs(options, loaded)
    topology = options.topology  # --topology wins over the config
    if topology is None and config.topology:
        topology = str(loaded.resolve(config.topology))
    if options.update_baseline and options.baseline is None:
        raise UsageError("--update-baseline needs --baseline FILE")
    if options.update_baseline and options.cross_file != "include":
        raise UsageError("--update-baseline needs every finding: drop --cross-file")
    if options.cross_file not in ("include", "exclude", "only"):
        raise UsageError(f"cross_file {options.cross_file!r}: expected include, exclude or only")
    if options.baseline_missing not in ("error", "empty"):
        raise UsageError(f"--baseline-missing {options.baseline_missing!r}: expected error or empty")
    dirs_key = tuple(rule_dirs)
    rules = rule_sets.get(dirs_key) if rule_sets is not None else None
    if rules is None:
        rules = load_rule_set(rule_dirs)
        if rule_sets is not None:
            rule_sets[dirs_key] = rules
    try:
        version = NcclVersion.parse(options.nccl_version or config.nccl_version or NEWEST)
        rules, chosen, per_file = _configured(options, loaded, rules)
    except (VersionError, selection.SelectionError) as exc:
        raise UsageError(str(exc)) from None
    if options.paths.count("-") > 1:
        raise UsageError("stdin (-) can be named only once")
    project_root = options.project_root or Path.cwd()
    cache_on = options.cache and not cache_disabled_by_environment()
    return Plan(
        loaded=loaded, rules=rules, chosen=chosen, per_file=per_file, version=version,
        fail_level=options.fail_level or config.fail_level or "warning",
        require_reason=options.require_suppression_reason or config.require_suppression_reason,
        excludes=excluder(loaded, list(options.extend_exclude), force=options.force_exclude),
        topology=topology, rule_dirs=rule_dirs, project_root=project_root,
        cache_dir=(options.cache_dir or project_root / CACHE_DIR_NAME) if cache_on else None,
    )


class Plans:
    """The plan of each configuration a run meets (ruff's per-file configuration): the run's own
    (``root``, from ``--config``, ``--isolated`` or the working directory) and, folder by folder,
    the nearest configuration file's, each resolved under the same command line. Rules are loaded
    once per set of rule folders; each folder's configuration is looked up once."""

    def __init__(self, options: CheckOptions, root: Plan | None = None):
        from topolint.config import ConfigTree

        self.options = options
        self.rule_sets: dict = {}
        self.root = root or plan_check(options, rule_sets=self.rule_sets)
        self.tree = ConfigTree(self.root.loaded, fixed=options.config is not None or options.isolated,
                               searched_from=Path.cwd())
        self._plans = {id(self.root.loaded): self.root}
        self._excluders: dict[str, object] = {}
        from topolint.inputs.by_config import Folders

        self.folders = Folders(self.governing)  # each input's folder asked once a run

    def plan(self, loaded) -> Plan:
        found = self._plans.get(id(loaded))
        if found is None:
            found = self._plans[id(loaded)] = plan_check(self.options, loaded, self.rule_sets)
        return found

    def for_folder(self, folder: str) -> Plan:
        return self.plan(self.governing(folder))

    def governing(self, folder: str):
        """The configuration of ``folder``; ConfigError (a nested file that cannot be used) becomes a usage error."""
        from topolint.config import ConfigError

        try:
            return self.tree.for_folder(folder)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None

    @property
    def excludes(self):
        """What folder walks skip: each entry by its folder's configuration (the run's, when fixed)."""
        return self.root.excludes if self.tree.fixed else self._exclude

    def _exclude(self, path) -> bool:
        folder = os.path.dirname(path)
        found = self._excluders.get(folder)
        if found is None:
            found = self._excluders[folder] = self.for_folder(folder).excludes
        return found(path)

    def tree_path(self, path: str):
        """The configuration that governs a named file or folder."""
        from topolint.config import ConfigError

        try:
            return self.tree.for_path(path)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None

    def named_excludes(self, path: Path):
        return self.root.excludes if self.tree.fixed else self.for_folder(str(path.parent)).excludes


def _run_options(options: CheckOptions, plan: Plan):
    from topolint.engine.runner import RunOptions

    config = plan.loaded.config
    origin, named = ("option", "--nccl-version") if options.nccl_version else \
        ("config", f"nccl-version in {plan.loaded.path.name if plan.loaded.path else 'the configuration'}") \
        if config.nccl_version else ("default", "")
    node_view = None
    if options.drawings is not None:
        from topolint.drawing.views import DrawingRequest

        node_view = DrawingRequest(plan.version, **options.drawings)
    return RunOptions(nccl_version=plan.version, extra_variables=tuple(config.extra_variables),
                      jobs=options.jobs, nccl_version_origin=origin, nccl_version_named=named,
                      inventories=options.inventory is not None, progress=options.progress,
                      node_view=node_view, views_kept=KEPT_VIEWS)


class _Caches:
    """The result cache seen through each node's configuration: a node is keyed by the rules and
    options of the configuration that governs it, so editing a nested configuration invalidates
    exactly the nodes below it. Nodes checked against a topology are not cached (what their
    measurements are judged against depends on it)."""

    def __init__(self, plans: Plans, answers: bool = True):
        from topolint.engine.cache import ResultCache

        self.plans, self.answers = plans, answers  # answers False: entries are written, never read
        root = plans.root
        self.root = ResultCache(root.cache_dir, root.rules, _run_options(plans.options, root))
        self._by_plan = {id(root): self.root}

    def key(self, node) -> str | None:
        from topolint.engine.cache import ResultCache

        loaded = self.plans.folders.of_node(node) if not self.plans.tree.fixed else None
        plan = self.plans.plan(loaded) if loaded is not None else self.plans.root
        if plan.topology is not None:
            return None
        cache = self._by_plan.get(id(plan))
        if cache is None:
            cache = self._by_plan[id(plan)] = ResultCache(plan.cache_dir, plan.rules,
                                                          _run_options(self.plans.options, plan))
        return cache.key(node)

    def get(self, key: str):
        return self.root.get(key) if self.answers else None

    def put(self, *args, **kwargs) -> None:
        self.root.put(*args, **kwargs)

    def findings(self, entry: dict) -> list:
        return self.root.findings(entry)


def _collect(options: CheckOptions, plans: Plans, cache=None, lazy: bool = False, budget=None):
    from topolint.inputs.collect import collect

    return collect(_paths(options, plans), node_name=options.node, stdin_filename=options.stdin_filename,
                   exclude=plans.excludes, cache=cache, budget=budget, lazy=lazy)


def _budget(options: CheckOptions):
    from topolint.inputs.source import InputBudget

    return InputBudget(options.max_total_input) if options.max_total_input else InputBudget()


class _Topologies:
    """Each topology a configuration names (or --topology), read once: the context config rules and
    PERF expectations read. Its own findings are reported only where it is also a checked path
    (then it is read as one), or with ``CheckOptions.topology_findings``; its input problems are."""

    def __init__(self, budget):
        self.budget = budget
        self._read: dict[str, object] = {}

    def read(self, plan: Plan):
        from topolint.inputs.collect import collect

        found = self._read.get(plan.topology)
        if found is None:
            found = self._read[plan.topology] = collect([plan.topology], exclude=plan.excludes, budget=self.budget)
            found.nodes = [n for n in found.nodes if n.available()]
        return found


@dataclass
class _Part:
    """What the inputs one configuration governs gave."""

    plan: Plan
    findings: list  # selected
    everything: list  # before the selection (what the baseline's stale entries are judged by)
    sources: dict
    run: object  # RunResult
    notes: list[str]
    unreadable: bool
    problems: list  # InputProblem: files named or recognised that could not be checked


def run_check(options: CheckOptions) -> CheckResult:
    """Check ``options.paths``; UsageError for options, configuration or rules that cannot be used.

    Each input is checked under the configuration that governs it (``Plans``): inputs of one
    configuration are checked together, as one run was before, and the parts are merged."""
    from topolint.engine.finding import Finding
    from topolint.inputs.by_config import split

    plans = Plans(options)
    root = plans.root
    baseline = _load_baseline(options)
    # A drawing needs the node's facts: a drawing run is not answered by the cache (it still writes it).
    cache = _Caches(plans, answers=options.drawings is None) if root.cache_dir is not None else None
    budget = _budget(options)
    collection = _collect(options, plans, cache, lazy=True, budget=budget)  # nodes parsed one at a time by the runner
    parts_in = split(collection, plans.folders) if not plans.tree.fixed else [(root.loaded, collection)]
    topologies = _Topologies(budget)
    topology_notes: list[str] = []
    parts, reported = [], set()
    for loaded, part in parts_in:
        plan = plans.plan(loaded)
        if plan.topology is not None:
            known = topologies.read(plan)
            part.topology_nodes = known.nodes
            if id(known) not in reported:  # a topology that cannot be read is TL001 once
                reported.add(id(known))
                part.problems.extend(known.problems)
                topology_notes.extend(known.notes)
                if options.topology_findings:
                    part.nodes.extend(known.nodes)
        parts.append(_check_part(options, plan, part, cache))
    findings = [f for part in parts for f in part.findings]
    everything = [f for part in parts for f in part.everything]
    if len(parts) > 1:
        findings.sort(key=Finding.sort_key)
        findings = _unique(findings)
    sources = {path: src for part in parts for path, src in part.sources.items()}
    chosen = set().union(*(part.plan.chosen for part in parts))
    messages = []
    if baseline is not None:
        problems = [p.path for part in parts for p in part.problems]
        messages.append(_apply_baseline(options, baseline, findings, everything, chosen, list(sources) + problems))
    unreadable = any(part.unreadable for part in parts)
    if unreadable and not any(f.code == "TL001" for f in findings):
        # Never let the selection (or --cross-file only) hide why the exit code is 2.
        messages += [f"topolint: error: {f.path}:{f.line}: {f.message}"
                     for part in parts for f in part.run.findings if f.code == "TL001"]
    return _result(options, plans, parts, findings, sources, collection, topology_notes, messages, unreadable)


def _check_part(options: CheckOptions, plan: Plan, collection, cache) -> _Part:
    """The rules, suppressions, severities, per-file ignores and selection of one configuration's inputs."""
    from topolint.config import per_file_ignored
    from topolint.engine import selection, suppression
    from topolint.engine.finding import Finding
    from topolint.engine.fixes import drop_stale_fixes
    from topolint.engine.rule import RuleError
    from topolint.engine.runner import run

    config, rules, chosen = plan.loaded.config, plan.rules, plan.chosen
    try:
        result = run(rules, collection, _run_options(options, plan), cache)
    except RuleError as exc:
        raise UsageError(f"bad rule definition: {exc}") from None
    unreadable = any(f.code == "TL001" for f in result.findings)
    sources = {path: src for node in collection.nodes for path, src in node.sources.items()}
    sources.update((f.source.path, f.source) for f in collection.cluster_files)  # fabric files
    for config_file in collection.configs:  # a script's sourced files show its findings' lines
        for sourced in config_file.included:
            sources.setdefault(sourced.path, sourced)
    node_of = {path: node.name for node in collection.nodes for path in node.sources}
    # Suppressions see every finding (selected or not), so TL004 knows what each directive matched.
    everything = result.findings + suppression.apply(result.findings, sources, rules, node_of, result.ran,
                                                     plan.require_reason)
    everything.sort(key=Finding.sort_key)
    everything = _unique(everything)  # a sourced file read on its own and from a script: one finding
    for f in everything:
        if f.code in config.severity:
            f.severity = config.severity[f.code]
    if plan.per_file:
        everything = [f for f in everything if not per_file_ignored(plan.loaded, f.path, f.code, plan.per_file)]
    findings = selection.apply(everything, chosen)
    if options.cross_file != "include":
        needs, wanted = _rule_needs([r for r in rules if r.code in chosen]), options.cross_file == "only"
        findings = [f for f in findings if is_cross_file(f, needs) == wanted]
    drop_stale_fixes(findings, sources)
    notes = [n for n in result.notes if n.split(" ", 1)[0] in chosen or n.startswith("completion: ")]
    part = _Part(plan=plan, findings=findings, everything=everything, sources={**collection.unparsed, **sources},
                 run=result, notes=notes, unreadable=unreadable, problems=collection.problems)
    return part


def _result(options, plans: Plans, parts: list, findings: list, sources: dict, collection, topology_notes: list,
            messages: list, unreadable: bool) -> CheckResult:
    from topolint.reporters import Report

    root = plans.root
    enabled = {}
    for part in parts:
        for rule in part.plan.rules:
            if rule.code in part.plan.chosen:
                enabled.setdefault(rule.code, rule)
    internal_errors = [error for part in parts for error in part.run.internal_errors]
    from topolint.engine.node_groups import group_across_nodes

    group_across_nodes(findings)  # the same finding on many nodes: one group (full and concise print it once)
    report = Report(
        findings=findings,
        rules=[enabled[code] for code in sorted(enabled)],
        sources=sources,  # TL001 findings show their line too
        project_root=root.project_root.resolve(),
        nccl_version=str(root.version),
        unreadable=unreadable,
        internal_errors=internal_errors,
    )
    messages += [error.line() for error in internal_errors]
    if len(collection.nodes) == 1 and collection.nodes[0].inventory is not None:
        alone = collection.nodes[0]
        messages.append(f"topolint: {next(iter(alone.sources))}: the inventory of node {alone.name} and no other "
                        "node to compare it with: the cross-node rules compare two nodes or more")
    notes = collection.notes + topology_notes + [n for part in parts for n in part.notes]
    notes += [f"configuration {part.plan.loaded.path} governs {len(part.sources)} files"
              for part in parts if part.plan is not root]
    levels = {f.path: part.plan.fail_level for part in parts if part.plan.fail_level != root.fail_level
              for f in part.findings}
    reasons = {path for part in parts if part.plan.require_reason for path in part.sources}
    inventories = {}
    if options.inventory is not None:  # what the nodes' own files gave (not inventories read back)
        read_back = {node.name for node in collection.nodes if node.inventory is not None}
        inventories = {name: inv for part in parts for name, inv in part.run.inventories.items()
                       if name not in read_back}
    views = {name: view for part in parts for name, view in part.run.views.items()}
    return CheckResult(findings=findings, report=report, fail_level=root.fail_level, nccl_version=str(root.version),
                       config_path=root.loaded.path, notes=notes, messages=messages, fail_levels=levels,
                       reason_required=reasons, inventories=inventories, options=options, plan=root, plans=plans,
                       views=views, views_made=sum(part.run.views_made for part in parts),
                       drawable=[node.name for node in collection.nodes
                                 if any(src.format in DRAWN_FORMATS for src in node.sources.values())],
                       problems=[problem for part in parts for problem in part.problems],
                       checked_paths=collection.checked)


def drawings(result: CheckResult, findings: list, limit: int = MAX_DRAWN_NODES) -> tuple[list, int]:
    """The nodes the run drew (CheckOptions.drawings) with ``findings`` marked (drawing/views.py
    Picture), the nodes with the most severe findings first, at most ``limit``; and how many
    drawable nodes were left out."""
    from topolint.drawing.marks import SEVERITY_RANK
    from topolint.drawing.views import marked

    worst: dict[str, int] = {}
    for f in findings:
        worst[f.node] = min(worst.get(f.node, 9), SEVERITY_RANK.get(f.severity, 9))
    order = {name: index for index, name in enumerate(result.views)}  # the run's node order
    names = sorted(result.views, key=lambda name: (worst.get(name, 9), order[name]))[:limit]
    return [marked(result.views[name], findings) for name in names], max(0, result.views_made - len(names))


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple] = set()
    kept = []
    for finding in findings:
        key = (*finding.sort_key(), finding.severity, finding.fingerprint)
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    return kept


def settings(options: CheckOptions) -> dict[str, object]:
    """What a run with these options would use (``--show-settings``), key by key: the settings of the
    configuration that governs the first path (as ruff shows the settings a given file is checked with)."""
    plans = Plans(options)
    first = options.stdin_filename if options.paths[:1] == ["-"] and options.stdin_filename else options.paths[0]
    plan = plans.root if plans.tree.fixed or first == "-" else plans.plan(plans.tree_path(first))
    config = plan.loaded.config
    rules = {r.code: r for r in plan.rules}
    return {
        "configuration": str(plan.loaded.path) if plan.loaded.path else "(none: defaults)",
        "paths": list(options.paths),
        "select": sorted(plan.chosen),
        "fail-level": plan.fail_level,
        "nccl-version": str(plan.version),
        "topology": plan.topology or "(none)",
        "rule-dirs": [str(d) for d in plan.rule_dirs],
        "exclude": list(plan.excludes.patterns),
        "force-exclude": plan.excludes.force,
        "per-file-ignores": {pattern: sorted(codes) for pattern, codes in sorted(plan.per_file.items())},
        "severity": {code: rules[code].severity for code in sorted(config.severity) if code in rules},
        "rules": {code: dict(config.rules[code]) for code in sorted(config.rules)},
        "extra-variables": list(config.extra_variables),
        "require-suppression-reason": plan.require_reason,
        "cross-file": options.cross_file,
        "baseline": str(options.baseline) if options.baseline else "(none)",
        "cache-dir": str(plan.cache_dir) if plan.cache_dir is not None else "(off)",
    }


@dataclass(frozen=True)
class InputFile:
    """One file a run would check (``--show-files``)."""

    path: str
    format: str  # what its content was recognised as
    node: str  # the node it belongs to (config files: the node named after the paths)
    configuration: str = ""  # the configuration file that governs it, where several do


def input_files(options: CheckOptions) -> list[InputFile]:
    """The files a run would check, each with the format it was recognised as, sorted by path."""
    from topolint.inputs.by_config import split

    plans = Plans(options)
    collection = _collect(options, plans, budget=_budget(options))
    parts = split(collection, plans.folders) if not plans.tree.fixed else [(plans.root.loaded, collection)]
    files = set()
    for loaded, part in parts:
        governs = (str(loaded.path) if loaded.path else "(defaults)") if len(parts) > 1 else ""
        files |= {InputFile(path, source.format or "?", node.name, governs)
                  for node in part.nodes for path, source in node.sources.items()}
        # Files named or recognised that cannot be checked: TL001 (unreadable) or TL002 (no format).
        files |= {InputFile(p.path, "unreadable (TL001)" if p.code == "TL001" else "unrecognised (TL002)", p.node,
                            governs) for p in part.problems}
    return sorted(files, key=lambda f: (f.path, f.node))


# --- the command line -------------------------------------------------------------------------

def _outputs(args) -> list[tuple[str, str]]:
    formats = args.format or ["full"]
    outputs = args.output or []
    if outputs and len(outputs) != len(formats):
        raise UsageError(f"{len(formats)} --format but {len(outputs)} --output: give one --output per --format")
    return list(zip(formats, outputs or ["-"] * len(formats)))


def options_from_args(args) -> CheckOptions:
    return CheckOptions(
        paths=list(args.paths) or ["."], node=args.node, stdin_filename=args.stdin_filename,
        select=args.select, extend_select=args.extend_select, ignore=args.ignore, preview=args.preview,
        fail_level=args.fail_level, nccl_version=args.nccl_version, topology=args.topology,
        project_root=args.project_root, rule_dirs=list(args.rule_dir), cache=not args.no_cache,
        cache_dir=args.cache_dir, config=args.config, isolated=args.isolated,
        extend_exclude=args.extend_exclude, force_exclude=args.force_exclude,
        require_suppression_reason=args.require_suppression_reason, baseline=args.baseline,
        update_baseline=args.update_baseline, cross_file=args.cross_file,
        baseline_missing=getattr(args, "baseline_missing", "error"),
        max_total_input=_size(getattr(args, "max_total_input", None)),
        jobs=getattr(args, "jobs", 1), inventory=Path(args.inventory) if getattr(args, "inventory", None) else None,
    )


def _size(text: str | None) -> int | None:
    """``--max-total-input``: bytes, or a count with a K, M or G suffix (powers of 1024)."""
    from topolint.model.numbers import decimal

    if text is None:
        return None
    scale = 1024 ** ("KMG".index(text[-1].upper()) + 1) if text[-1:].upper() in ("K", "M", "G") else 1
    number = decimal(text[:-1] if scale > 1 else text)
    if number is None or number <= 0:
        raise UsageError(f"--max-total-input {text!r}: expected a size such as 16G, 500M or 1000000")
    return number * scale


def _write(text: str, destination: str) -> None:
    if destination == "-":
        sys.stdout.write(text)
        return
    try:
        Path(destination).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {destination}: {exc.strerror or exc}") from None


def _show_settings(options: CheckOptions) -> str:
    import json

    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings(options).items())


def _show_files(options: CheckOptions) -> str:
    return "".join(f"{f.path}\t{f.format}\t{f.node}" + (f"\t{f.configuration}" if f.configuration else "") + "\n"
                   for f in input_files(options))


def displayed(result: CheckResult, args, destination: str, fmt: str) -> Report:
    """The report as this output shows it: --show-level, --quiet, colour on a terminal."""
    from dataclasses import replace

    from topolint.engine.rule import SEVERITY_ORDER
    from topolint.reporters.color import wants_color

    limit = SEVERITY_ORDER[args.show_level]
    shown = [f for f in result.findings if SEVERITY_ORDER.get(f.severity, 0) <= limit]
    not_shown = sum(1 for f in result.findings if not f.suppressed and SEVERITY_ORDER.get(f.severity, 0) > limit)
    color = fmt in ("full", "concise") and destination == "-" and wants_color(args.color, sys.stdout)
    return replace(result.report, findings=shown, quiet=args.quiet, color=color, not_shown=not_shown,
                   show_level=args.show_level, unsafe_fixes=getattr(args, "unsafe_fixes", False))


def cli(args) -> int:
    """`topolint check`: the run, its notes on stderr, each format to its output, the exit code."""
    options = options_from_args(args)
    outputs = _outputs(args)
    if args.show_settings or args.show_files:
        sys.stdout.write(_show_settings(options) if args.show_settings else _show_files(options))
        return EXIT_CLEAN
    if args.statistics and any(fmt not in ("full", "concise", "json") for fmt, _ in outputs):
        raise UsageError("--statistics prints a table (full or concise) or JSON; not sarif, github, html or markdown")
    if "-" in options.paths and not options.stdin_filename and any(f in ("sarif", "github") for f, _ in outputs):
        raise UsageError("reading stdin for sarif or github output needs --stdin-filename (the file's path in the repository)")
    if not args.statistics and any(fmt in DRAWING_FORMATS for fmt, _ in outputs):
        options.drawings = {}  # drawn while each node is checked
    from topolint.commands import fix

    if fix.wants_fix_command(args):
        return fix.cli(args, options, lambda result: _print_result(result, args, outputs))
    from topolint.commands.progress import terminal_run_progress

    options.progress = None if args.quiet else terminal_run_progress()
    try:
        result = run_check(options)
    finally:
        if options.progress is not None:
            options.progress.close()  # erased before the report and the notes
    return _print_result(result, args, outputs)


def _print_result(result: CheckResult, args, outputs) -> int:
    from dataclasses import replace

    if getattr(args, "inventory", None) is not None:
        from topolint.fleet.files import InventoryTargetError, write_inventories

        try:
            written = write_inventories(result.inventories, args.inventory)
        except InventoryTargetError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot write inventory {args.inventory}: {exc.strerror or exc}") from None
        if not args.quiet:
            print(f"topolint: wrote {written}", file=sys.stderr)
    for message in result.messages:
        if not args.quiet or message.startswith("topolint: error:"):  # --quiet keeps errors only
            print(message, file=sys.stderr)
    if args.verbose:
        if result.config_path:
            print(f"topolint: configuration from {result.config_path}", file=sys.stderr)
        for note in result.notes:
            print(f"topolint: {note}", file=sys.stderr)
        print(f"topolint: assumed NCCL {result.nccl_version}", file=sys.stderr)
    pictures = None
    for fmt, destination in outputs:
        report = displayed(result, args, destination, fmt)
        if fmt in DRAWING_FORMATS and not args.statistics:
            if pictures is None:  # drawn once for every output that shows them
                pictures = drawings(result, [f for f in report.findings if not f.suppressed])
            report = replace(report, pictures=pictures[0], not_drawn=pictures[1])
        if args.statistics:
            from topolint.reporters.statistics import render_statistics

            _write(render_statistics(report, fmt), destination)
        else:
            from topolint.reporters import render

            _write(render(fmt, report), destination)
    return result.exit_code(args.exit_zero)
