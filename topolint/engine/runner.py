"""Run every rule over every node, then turn hits into findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from topolint.checks import check_needs, load_check
from topolint.engine.explain import link_explanations
from topolint.engine.finding import Finding, Hit, entity_fingerprint
from topolint.engine.internal import InternalError, describe, node_input
from topolint.engine.rule import RuleDefinition, RuleError
from topolint.inputs.collect import Collection
from topolint.model.facts import Location, build
from topolint.model.nccl_version import NcclVersion
from topolint.model.node import NodeModel, file_entity


@dataclass
class RunOptions:
    nccl_version: NcclVersion
    gdr_level: str | None = None  # a configured NCCL_NET_GDR_LEVEL, when one is known
    extra_variables: tuple[str, ...] = ()  # NCCL_* names to accept as known (config extra-variables)
    jobs: int = 1  # processes that check nodes (engine/parallel.py); 0: one per CPU
    inventories: bool = False  # build every node's inventory, even with no cluster stage (--inventory)
    progress: Any = None  # commands/progress.py RunProgress (a terminal), told of each node and the cluster stage
    # Where nccl_version came from: "option" (--nccl-version), "config" (nccl-version) or "default"
    # (the newest known, which evidence in the inputs may replace: model/nccl_in_force.py).
    nccl_version_origin: str = "default"
    nccl_version_named: str = ""  # "--nccl-version", "nccl-version in .topolint.toml"
    profiles: Any = None  # profiles.choice.ProfileChoice: each node's profile (--profile, [profiles], matched)
    # Called with each checked node while its facts are in memory (a picklable callable: it runs in
    # the workers too); what it returns is kept in RunResult.views, for at most views_kept nodes,
    # those with the most severe findings (the drawings: drawing/views.py DrawingRequest).
    node_view: Any = None
    views_kept: int = 0


class CheckContext:
    """What a check sees: one node, the NCCL version assumed, and NCCL's graph on demand."""

    def __init__(self, node: NodeModel | None, options: RunOptions, configs: list | None = None,
                 topology_nodes: list[NodeModel] | None = None, cluster=None):
        self.node = node
        self.cluster = cluster  # fleet.cluster.ClusterModel, for the cluster stage's checks (NEEDS "cluster", ...)
        self.options = options
        self.configs = configs or []  # ConfigFile (model/config.py), for checks with NEEDS "config"
        self.topology_nodes = topology_nodes or []  # --topology nodes: config checks, and PERF expectations
        self._systems: dict[int, Any] = {}
        self.shared: dict[str, Any] = {}  # what several checks derive alike, computed once per context
        self.notes: list[str] = []  # why a check said nothing (--verbose); the runner collects them

    @property
    def version(self) -> NcclVersion:
        """The NCCL version the checks of this node judge with: ``node_version()``'s; for the
        config checks (no node), the configured one (settings use ``nccl_in_force``)."""
        if self.node is None:
            return self.options.nccl_version
        return self.node_version().version

    @property
    def configured(self):
        from topolint.model.nccl_in_force import Configured

        options = self.options
        return Configured(options.nccl_version, options.nccl_version_origin, options.nccl_version_named)

    def node_version(self):
        """The version in force on this node (its NCCL log's version line, unless configured)."""
        found = self.shared.get("nccl_in_force:node")
        if found is None:
            from topolint.model.nccl_in_force import for_node

            found = self.shared["nccl_in_force:node"] = for_node(self.node, self.configured)
        return found

    def nccl_in_force(self, config, setting):
        """The version in force for one setting: the NCCL its job loads (model/nccl_in_force.py)."""
        from topolint.model.nccl_in_force import JobIndex, for_setting

        index = self.shared.get("nccl_in_force:jobs")
        if index is None:
            index = self.shared["nccl_in_force:jobs"] = JobIndex(self.configs)
        key = ("nccl_in_force", id(setting))
        found = self.shared.get(key)
        if found is None:
            found = self.shared[key] = for_setting(index, config, setting, self.configured)
        return found

    def system(self, topology):
        from topolint.model.system import System  # networkx loads only when a rule needs a graph

        key = id(topology)
        if key not in self._systems:
            self._systems[key] = System(topology, self.version)
        return self._systems[key]

    def completion(self, topology):
        """``topology`` completed from this node's facts, as NCCL completes a static file at run
        time (model/completion.py; a dump comes back as it is). Rules about the file as written
        read ``topology``; rules about the node read ``.topology`` of this and name its
        ``assumptions`` in their evidence."""
        from topolint.model.completion import complete

        return complete(self.node, topology)


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran: dict[str, set[str]] = field(default_factory=dict)  # node name -> codes of the rules that ran on it
    internal_errors: list[InternalError] = field(default_factory=list)  # bugs in checks (engine/internal.py)
    inventories: dict[str, Any] = field(default_factory=dict)  # node name -> fleet.inventory.Inventory
    views: dict[str, Any] = field(default_factory=dict)  # node name -> RunOptions.node_view's value
    views_made: int = 0  # nodes that gave a view, kept or not


def _format(template: str, fields: dict[str, Any], rule: RuleDefinition) -> str:
    try:
        return template.format(**fields)
    except (KeyError, IndexError) as exc:
        raise RuleError(f"{rule.source}: template field {exc} not provided by check {rule.check}") from None


def to_finding(rule: RuleDefinition, node: str, hit: Hit) -> Finding:
    messages, fixes = rule.messages, rule.fixes
    fields = {**rule.parameters, **hit.fields}
    # A group of members is reported on its first member: its baselines and suppressions still match.
    entity = hit.group.members[0] if hit.group is not None and hit.group.kind == "members" else hit.entity
    return Finding(
        code=rule.code,
        slug=rule.slug,
        category=rule.category,
        severity=hit.severity or rule.severity,
        message=_format(messages.get(hit.variant, messages["default"]), fields, rule),
        path=hit.location.path,
        line=hit.location.line,
        column=hit.location.column,
        node=node,
        entity=entity,
        fix=_format(fixes.get(hit.variant, fixes["default"]), fields, rule),
        related=list(hit.related),
        evidence=list(hit.evidence),
        fingerprint=entity_fingerprint(rule.code, entity, hit.variant),
        autofix=hit.autofix,
        group=hit.group,
    )


def input_findings(rules: dict[str, RuleDefinition], collection: Collection) -> list[Finding]:
    findings = []
    for problem in collection.problems:
        hit = Hit(
            entity=file_entity(problem.node, problem.path),
            location=build(Location, path=problem.path, line=problem.line, column=problem.column),
            fields={"path": problem.path, "line": problem.line, "problem": problem.message},
        )
        findings.append(to_finding(rules[problem.code], problem.node, hit))
    return findings


def _is_default(field, value) -> bool:
    default = field.get_default(call_default_factory=True)
    return type(value) is type(default) and value == default


def prepare(rules: list[RuleDefinition]) -> list[tuple]:
    """Each rule with its check module and typed parameters; RuleError names a bad definition."""
    prepared = []
    for rule in rules:
        if rule.check == "inputs":
            continue
        try:
            module = load_check(rule.check)
            model = module.Parameters
            fields = model.model_fields
            given = [k for k, v in rule.parameters.items() if k not in fields or not _is_default(fields[k], v)]
            needs_validation = given or any(f.is_required() for f in fields.values())
            # Values that are the typed defaults, or plainly of the declared types, need no pydantic
            # (nor its schema build: a quarter of a second on every run that checks nodes).
            parameters = model.model_validate_plain(rule.parameters) if needs_validation else model.model_construct()
            if parameters is None:
                parameters = model(**rule.parameters)
            prepared.append((rule, module, parameters))
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise RuleError(f"{rule.source}: {exc}") from None
    return prepared


def _hits(rule: RuleDefinition, module, context, params, result: RunResult, where: str) -> list[Hit]:
    """The check's hits, or none and an internal error when it raises: a bug in one rule costs that
    rule's result on that input, not the run (RuleError, a bad definition, stays a usage error)."""
    try:
        return list(module.check(context, params))
    except RuleError:
        raise
    except Exception as exc:  # noqa: BLE001 - any bug: reported as an internal error, exit 2
        result.internal_errors.append(InternalError(where, rule.code, describe(exc)))
        return []


def _prepare_runnable(rules: list[RuleDefinition], collection: Collection) -> tuple[list[tuple], dict]:
    """prepare() for the config checks and the node checks some node has the inputs of; and every
    check's NEEDS. A run of config files alone so imports none of the hardware checks."""
    needs: dict[str, tuple] = {}
    for rule in rules:
        if rule.check != "inputs":
            found = check_needs(rule.check)
            try:
                needs[rule.code] = found if found is not None else tuple(load_check(rule.check).NEEDS)
            except ValueError as exc:  # no such check
                raise RuleError(f"{rule.source}: {exc}") from None
    cluster = cluster_stage_possible(collection)
    if any(node.pending for node in collection.nodes):  # a lazy collection: inputs known once parsed
        return prepare([r for r in rules if r.code in needs
                        and (cluster or not is_cluster_check(needs[r.code]))]), needs
    offered = [node.available() for node in collection.nodes if node.cached is None]
    runnable = [r for r in rules if r.code in needs and (
        "config" in needs[r.code] or (cluster and is_cluster_check(needs[r.code]))
        or any(all(n in available for n in needs[r.code]) for available in offered))]
    return prepare(runnable), needs


def cluster_stage_possible(collection: Collection) -> bool:
    """Whether the cluster stage can run: it compares nodes, two at least, or reads the files of
    the cluster (the fabric as cabled). A run of one node neither imports the cross-node checks
    nor builds what only they read."""
    return len(collection.nodes) >= 2 or bool(collection.cluster_files)


def run(rules: list[RuleDefinition], collection: Collection, options: RunOptions, cache=None) -> RunResult:
    result = RunResult()
    # A run the cache answers entirely needs no check module (nor what they import), except the
    # cross-node checks: they compare the inventories the cache entries keep, on every run.
    fresh = collection.configs or any(node.cached is None for node in collection.nodes) \
        or cluster_stage_possible(collection)
    prepared, needs = (_prepare_runnable(rules, collection) if fresh else ([], {}))
    if collection.configs and options.gdr_level is None:
        from topolint.checks._config import configured_gdr_level

        options.gdr_level, note = configured_gdr_level(collection.configs)
        if note:
            result.notes.append(note)
    by_code = {p[0].code: p for p in prepared}
    # (rule, module, params); module None: no node has its inputs, so it was not imported.
    node_rules = [(r, *(by_code[r.code][1:] if r.code in by_code else (None, None))) for r in rules
                  if r.code in needs and "config" not in needs[r.code] and not is_cluster_check(needs[r.code])]
    unreadable = _UnreadableNodes(collection)
    keep = {id(node) for node in collection.topology_nodes}  # config rules read them after the loop
    checker = _NodeChecker(rules, node_rules, needs, collection, options)
    # Cached entries always keep the inventory: a later cluster run of the same node reads it there.
    checker.inventories = options.inventories or cache is not None or (
        cluster_stage_possible(collection) and any(is_cluster_check(n) for n in needs.values()))
    from_workers = _worker_outcomes(checker, collection, options)
    views = _KeptViews(options.views_kept)
    for index, node in enumerate(collection.nodes):
        if options.progress is not None:
            options.progress.node(index, len(collection.nodes))
        if node.cached is not None:  # unchanged since a run the cache remembers
            result.findings.extend(cache.findings(node.cached))
            result.notes.extend(node.cached["notes"])
            result.ran.setdefault(node.name, set()).update(node.cached["ran"])
            if checker.inventories and node.cached.get("inventory") is not None:
                result.inventories[node.name] = node.cached["inventory"]
            continue
        first_finding, first_note = len(result.findings), len(result.notes)
        errors_before = len(result.internal_errors)
        if from_workers is not None and _worth_a_worker(node):
            from topolint.engine import parallel

            parallel.apply(next(from_workers), node, collection, result)
        else:
            checker.into(node, result)
        if node.name in result.views:
            views.keep(node.name, index, result.findings[first_finding:], result)
        if cache is not None and node.cache_key and node.name not in unreadable.names() \
                and len(result.internal_errors) == errors_before:
            cache.put(node.cache_key, result.findings[first_finding:], result.notes[first_note:],
                      result.ran[node.name], node.notes, result.inventories.get(node.name))
        if collection.materialize is not None and id(node) not in keep:
            _release_facts(node)
    if from_workers is not None:
        from_workers.close()  # the workers end here, not when the generator is collected
    if options.progress is not None:
        options.progress.node(len(collection.nodes), len(collection.nodes))
    run_config_checks(prepared, collection, options, result)
    run_cluster_checks(prepared, collection, options, result)
    if not cluster_stage_possible(collection):
        result.notes.extend(f"{rule.code} not run: the run has one node, nothing to compare it with"
                            for rule in rules if rule.code in needs and is_cluster_check(needs[rule.code]))
    # Input problems last: a lazy collection finds some (TL001) only when it parses a node.
    result.findings[:0] = input_findings({r.code: r for r in rules}, collection)
    result.internal_errors[:0] = [InternalError(path, rule, describe(exc))
                                  for path, rule, exc, _ in collection.internal_errors]
    result.findings.sort(key=Finding.sort_key)
    link_explanations(result.findings)  # PERF findings name the findings that explain them
    return result


class _NodeChecker:
    """Parse one node (a lazy collection's) and run its rules: here, or in a worker process."""

    def __init__(self, rules, node_rules, needs: dict, collection: Collection, options: RunOptions):
        self.rules, self.node_rules, self.needs = rules, node_rules, needs
        self.collection, self.options = collection, options
        self.input_codes = {r.code for r in rules if r.check == "inputs"}  # TL001 and kin: from collect
        self._plans: dict[frozenset, list[tuple]] = {}
        self.inventories = False  # build each node's inventory once its rules ran (the cluster stage reads them)
        self._configs_by_path: dict | None = None

    def configs_of(self, node: NodeModel) -> list:
        """The config files among the node's own files (a bundle's nccl.conf): by path, not by a
        scan of the run's configs for every node (a cluster of bundles has one on every node)."""
        if self._configs_by_path is None:
            self._configs_by_path = {c.path: c for c in self.collection.configs}
        return [self._configs_by_path[path] for path in node.sources if path in self._configs_by_path]

    def plan(self, available: set[str]) -> list[tuple]:
        """(rule, module, params, missing) for each node rule, in order; ``missing``: the inputs
        the rule needs and the node lacks, as its note names them ("" when it runs). The nodes
        of a cluster mostly have the same kinds of input: they share one plan."""
        key = frozenset(available)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = [
                (rule, module, params, ", ".join(need for need in self.needs[rule.code] if need not in available))
                for rule, module, params in self.node_rules]
        return plan

    def into(self, node: NodeModel, result: RunResult) -> None:
        if node.inventory is not None:  # read from an inventory file: the cluster stage's input only
            result.ran.setdefault(node.name, set(self.input_codes))
            result.inventories[node.name] = node.inventory
            return
        if node.pending and self.collection.materialize is not None:
            self.collection.materialize(node)  # a lazy collection: parsed now, dropped after its checks
        every = node.topologies
        node.topologies = _check_node(node, self, self.collection, self.options, result)
        try:  # the inventory (so the cluster stage) and the drawing leave out what NCCL would not load
            if self.inventories:
                _add_inventory(node, self.configs_of(node), result)
            if self.options.node_view is not None:
                _add_view(node, self.options.node_view, result)
        finally:
            node.topologies = every

    def __call__(self, node: NodeModel) -> RunResult:
        """In a worker: the node's result; its facts are dropped as the parent drops them."""
        result = RunResult()
        self.into(node, result)
        _release_facts(node)
        return result


def _worker_outcomes(checker: _NodeChecker, collection: Collection, options: RunOptions):
    """The outcomes of the nodes to check, in order, from worker processes; None to check them
    here: one job, a collection parsed up front, --topology nodes, or too few nodes to gain."""
    if options.jobs == 1 or collection.materialize is None or collection.topology_nodes:
        return None
    todo = [node for node in collection.nodes if node.cached is None and _worth_a_worker(node)]
    if not todo:  # a run the cache answers: not even multiprocessing is imported
        return None
    from topolint.engine import parallel

    workers = parallel.usable(parallel.job_count(options.jobs), len(todo))
    return parallel.outcomes(todo, checker, workers) if workers else None


def _worth_a_worker(node: NodeModel) -> bool:
    """A node read from an inventory file has nothing to parse or check: it stays here (a worker
    would only copy the inventories it touches)."""
    return node.inventory is None


def _check_node(node: NodeModel, checker: _NodeChecker, collection: Collection, options: RunOptions,
                result: RunResult) -> list:
    """Run the node's rules; the node's topology files NCCL would load (all but TOPO004's)."""
    # fabric rules read NCCL_IB_TC and friends; PERF rules judge against --topology
    context = CheckContext(node, options, collection.configs, topology_nodes=collection.topology_nodes)
    ran = result.ran.setdefault(node.name, set(checker.input_codes))
    where = node_input(node)  # what an internal error names
    every, refused = node.topologies, _refused_topologies(node, context)
    kept = [t for t in every if id(t) not in refused]
    plan = checker.plan(node.available())
    if refused:  # the other rules see the node without the files NCCL would not load
        from topolint.parsers.nccl_log import printable  # a path from the inputs, control characters escaped

        node.topologies = kept
        plan_kept = checker.plan(node.available())
        node.topologies = every
        why = "; ".join(f"{printable(t.path)} is past NCCL's XML limits ({refused[id(t)]})"
                        for t in every if id(t) in refused)
    else:
        plan_kept = plan
    try:
        for i, (rule, module, params, missing) in enumerate(plan):
            limits_rule = rule.check == "xml_limits"
            if refused and not limits_rule:
                if plan_kept[i][3] and not missing:
                    result.notes.append(f"{rule.code} not run on node {node.name}: {why}: NCCL would not load it "
                                        f"(TOPO004)")
                    continue
                missing = plan_kept[i][3]
            if missing:
                result.notes.append(f"{rule.code} not run on node {node.name}: no {missing} input")
                continue
            node.topologies = every if limits_rule else kept
            _run_rule(rule, module, params, node, context, result, ran, where)
    finally:
        node.topologies = every
    for topology in kept:  # --verbose: what the node's facts filled in its static files
        if topology.kind == "static":
            result.notes.extend(f"completion: {note}" for note in context.completion(topology).notes())
    return kept


def _refused_topologies(node: NodeModel, context: CheckContext) -> dict[int, str]:
    """id -> why, for each topology file past NCCL's own limits (TOPO004): NCCL would not load it."""
    if not node.topologies:
        return {}
    from topolint.checks.xml_limits import past_limits

    version = context.version
    found = {}
    for topology in node.topologies:
        why = past_limits(topology, version)
        if why is not None:
            found[id(topology)] = why
    return found


def _run_rule(rule, module, params, node: NodeModel, context: CheckContext, result: RunResult, ran: set,
              where) -> None:
    extra = None
    if getattr(module, "PROFILE", None):  # a template: unset parameters come from the node's profile
        from topolint.profiles.params import profiled

        extra = profiled(module, params, context)
        if extra.params is None:
            result.notes.append(f"{rule.code} not run on node {node.name}: {extra.note}")
            return
        params = extra.params
    ran.add(rule.code)
    for hit in _hits(rule, module, context, params, result, where):
        if extra is not None and extra.fields:
            hit.fields = {**extra.fields, **hit.fields}
            hit.evidence.extend(extra.evidence)
        result.findings.append(to_finding(rule, node.name, hit))
    if context.notes:  # --verbose shows a selected rule's notes
        result.notes.extend(f"{rule.code} {note}" for note in context.notes)
        context.notes.clear()


def _add_view(node: NodeModel, node_view, result: RunResult) -> None:
    try:
        view = node_view(node)
    except Exception as exc:  # noqa: BLE001 - a bug in a drawing: exit 2, the findings still stand
        result.internal_errors.append(InternalError(node_input(node), "drawing", describe(exc)))
        return
    if view is not None:
        result.views[node.name] = view


_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


class _KeptViews:
    """The node views a run keeps: the ``limit`` nodes with the most severe findings, earlier
    nodes first among equals, so memory follows the limit, not the node count. Ranked by the
    findings as the node's rules gave them (before suppression and the cluster stage); the
    reporter ranks the kept ones again by the final findings."""

    def __init__(self, limit: int):
        self.limit = limit
        self.rank: dict[str, tuple[int, int]] = {}

    def keep(self, name: str, order: int, findings: list[Finding], result: RunResult) -> None:
        result.views_made += 1
        views = result.views
        worst = min((_SEVERITY_RANK.get(f.severity, 9) for f in findings), default=9)
        self.rank[name] = (worst, order)
        if len(views) > self.limit:
            dropped = max((n for n in views if n in self.rank), key=self.rank.__getitem__)
            del views[dropped]
            del self.rank[dropped]


class _UnreadableNodes:
    """Nodes with an input problem or a parser bug (never cached), as the collection grows."""

    def __init__(self, collection: Collection):
        self.collection = collection
        self.seen = (0, 0)
        self.found: set[str] = set()

    def names(self) -> set[str]:
        problems, errors = self.collection.problems, self.collection.internal_errors
        self.found.update(p.node for p in problems[self.seen[0]:])
        self.found.update(e[3] for e in errors[self.seen[1]:])
        self.seen = (len(problems), len(errors))
        return self.found


_FACT_LISTS = tuple(f.name for f in dataclass_fields(NodeModel)
                    if f.default_factory is list and f.name not in ("pending", "notes"))


def _release_facts(node: NodeModel) -> None:
    """Drop a checked node's parsed facts: reports need only its sources and its findings."""
    for name in _FACT_LISTS:
        setattr(node, name, [])


def one_per_setting(hits: list[Hit]) -> list[Hit]:
    """One hit per written setting and cause: a setting written once can apply to several scopes
    (a YAML anchor or merge key shared by services or replica types, a .env file that a compose
    service reads and that is checked on its own, a file sourced from two branches). The first
    hit stays and names the other scopes; the rest are the same finding again."""
    kept: dict[tuple, Hit] = {}
    others: dict[tuple, int] = {}  # how many scopes each kept hit stands for besides its own
    out = []
    for hit in hits:
        name = hit.fields.get("name")
        if not name or not hit.entity.startswith("env/"):
            out.append(hit)
            continue
        key = (hit.location.path, hit.location.line, hit.location.column, hit.variant, name)
        first = kept.get(key)
        if first is None:
            kept[key] = hit
            out.append(hit)
        elif hit.fields.get("scope") != first.fields.get("scope"):
            others[key] = others.get(key, 0) + 1
            if others[key] <= _SCOPES_NAMED:
                first.evidence.append(f"the same setting applies to scope {hit.fields.get('scope')} too")
    for key, count in others.items():
        if count > _SCOPES_NAMED:
            kept[key].evidence.append(f"... and to {count - _SCOPES_NAMED} more scopes")
    return out


_SCOPES_NAMED = 8


def run_config_checks(prepared: list[tuple], collection: Collection, options: RunOptions, result: RunResult) -> None:
    """Checks with NEEDS "config" run once over every config file, with the --topology nodes.

    A need other than "config" and "topology" names facts no parser provides yet; the check's
    ``UNAVAILABLE`` says why, for --verbose.
    """
    config_rules = [p for p in prepared if "config" in p[1].NEEDS]
    if not config_rules:
        return
    paths = {c.path for c in collection.configs}
    node_of = {path: node.name for node in collection.nodes for path in node.sources if path in paths}
    available = {"config"} if collection.configs else set()
    if collection.topology_nodes:
        available.add("topology")
        available.update(k for n in collection.topology_nodes for k in n.available())  # ports, gids, interfaces...
    context = CheckContext(None, options, collection.configs, collection.topology_nodes)
    for rule, module, params in config_rules:
        missing = [need for need in module.NEEDS if need not in available]
        if missing:
            reasons = {**getattr(module, "NEEDS_HELP", {}), **getattr(module, "UNAVAILABLE", {})}
            why = "; ".join(reasons.get(need, f"no {need} input" + (" (give --topology PATH)" if need == "topology" else ""))
                            for need in missing)
            result.notes.append(f"{rule.code} not run on config files: {why}")
            continue
        for name in set(node_of.values()):
            result.ran.setdefault(name, set()).add(rule.code)
        for hit in one_per_setting(_hits(rule, module, context, params, result, "the config files")):
            result.findings.append(to_finding(rule, node_of.get(hit.location.path, "-"), hit))
        result.notes.extend(f"{rule.code} {note}" for note in context.notes)  # e.g. why a finding has no fix
        context.notes.clear()


def is_cluster_check(needs: tuple) -> bool:
    """A check of the cluster stage: its NEEDS start with "cluster" (fleet/cluster.py)."""
    return bool(needs) and needs[0] == "cluster"


def _add_inventory(node: NodeModel, configs: list, result: RunResult) -> None:
    """The node's inventory, built from its facts and its own config files before they are
    released (an internal error, not a lost run, when building it raises)."""
    from topolint.fleet.build import node_inventory

    try:
        inventory = node_inventory(node, configs)
    except Exception as exc:  # noqa: BLE001 - a bug in the inventory builder: exit 2, the run goes on
        result.internal_errors.append(InternalError(node_input(node), "inventory", describe(exc)))
        return
    if inventory is not None:
        result.inventories[node.name] = inventory


def _no_inventories(rule: RuleDefinition, result: RunResult, collection: Collection) -> str:
    return (f"{rule.code} not run on the cluster: {len(result.inventories)} of its {len(collection.nodes)} nodes "
            "show machine facts (an inventory), two are compared")


def cluster_model(collection: Collection, result: RunResult):
    """The ClusterModel the cluster checks read: the nodes' inventories in the run's node order,
    and what the cluster's own files say (fleet/cluster.py): the fabric graph of its fabric
    files, joined to those nodes."""
    from topolint.fleet.cluster import ClusterModel

    order = [node.name for node in collection.nodes if node.name in result.inventories]
    from topolint.inputs.cluster_sniff import FABRIC_FILE_FORMATS
    from topolint.model.scheduler import SCHEDULER_FORMATS

    cluster = ClusterModel(inventories={name: result.inventories[name] for name in order},
                           inputs=[(f.facts, f.host) for f in collection.cluster_files if f.format in SCHEDULER_FORMATS])

    fabric_files = [f.facts for f in collection.cluster_files if f.format in FABRIC_FILE_FORMATS]
    if fabric_files:
        from topolint.fleet.fabric_graph import fabric_graph

        cluster.fabric = fabric_graph(fabric_files, cluster.inventories)
    return cluster


def run_cluster_checks(prepared: list[tuple], collection: Collection, options: RunOptions, result: RunResult) -> None:
    """The cluster stage: checks with NEEDS ("cluster", ...) run once, after every node's rules,
    on a ClusterModel of the nodes' inventories (in this process: workers sent theirs back).

    A hit is about one node: its entity starts with the node's name (fleet/cluster.py)."""
    cluster_rules = [p for p in prepared if is_cluster_check(tuple(p[1].NEEDS))]
    if not cluster_rules or (len(result.inventories) < 2 and not collection.cluster_files):
        result.notes.extend(_no_inventories(rule, result, collection) for rule, _, _ in cluster_rules)
        return
    from topolint.fleet.cluster import node_of_entity

    cluster = cluster_model(collection, result)
    order = list(cluster.inventories)
    if options.progress is not None:
        options.progress.stage(f"comparing {len(order)} nodes")
    available = cluster.available()
    context = CheckContext(None, options, collection.configs, cluster=cluster)
    for rule, module, params in cluster_rules:
        missing = [need for need in module.NEEDS if need not in available]
        if missing == ["inventories"]:
            result.notes.append(_no_inventories(rule, result, collection))
            continue
        if missing:
            result.notes.append(f"{rule.code} not run on the cluster: no {', '.join(missing)} input")
            continue
        for name in order:
            result.ran.setdefault(name, set()).add(rule.code)
        for hit in _hits(rule, module, context, params, result, "the cluster"):
            result.findings.append(to_finding(rule, node_of_entity(hit.entity), hit))
        result.notes.extend(f"{rule.code} {note}" for note in context.notes)
        context.notes.clear()
