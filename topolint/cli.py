"""Command line: `topolint check`, `topolint rules`, `topolint rule CODE`.

Exit codes: 0 no findings at or above the fail level; 1 findings; 2 usage error or an input
that could not be read (TL001), whatever the selection. Heavy modules load lazily.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from topolint import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    pass


def _split(values: list[str] | None) -> list[str]:
    return [part for value in values or [] for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topolint",
        description="Static topology analyzer and NCCL config linter for multi-node, multi-GPU training.",
    )
    parser.add_argument("--version", action="version", version=f"topolint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="check topology dumps, node bundles and cluster folders")
    check.add_argument("paths", nargs="+", metavar="PATH", help="files, folders, or - for stdin")
    check.add_argument("--node", help="node name for the files named on the command line")
    check.add_argument("--stdin-filename", help="the path to report for input read from stdin")
    check.add_argument("--select", action="append", help="rules to enable: code, prefix, category, slug or ALL")
    check.add_argument("--extend-select", action="append", default=[], help="rules to enable on top of the selection")
    check.add_argument("--ignore", action="append", default=[], help="rules to disable")
    check.add_argument("--preview", action="store_true", help="enable preview (heuristic) rules")
    check.add_argument("--format", action="append", choices=["full", "concise", "json", "sarif", "github"],
                       help="output format (repeatable; pair with --output)")
    check.add_argument("-o", "--output", action="append", help="output file for the matching --format (- = stdout)")
    check.add_argument("--fail-level", choices=["error", "warning", "info"], default=None,
                       help="lowest severity that makes the exit code 1 (default: warning)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings are reported")
    check.add_argument("--nccl-version", default=None, help="NCCL version to assume (default: newest known)")
    check.add_argument("--topology", metavar="PATH", default=None,
                       help="a dump, matrix, node folder or cluster folder to check config files against")
    check.add_argument("--project-root", type=Path, default=None,
                       help="root that SARIF paths are relative to (default: current directory)")
    check.add_argument("--rule-dir", action="append", type=Path, default=[],
                       help="folder of site rule definitions (*.toml) to load besides the built-in ones")
    check.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the result cache (also TOPOLINT_NO_CACHE=1)")
    check.add_argument("--cache-dir", type=Path, default=None,
                       help="where the result cache lives (default: .topolint_cache in the project root)")
    check.add_argument("-v", "--verbose", action="store_true", help="list skipped files and rules that did not run")
    settings = check.add_argument_group("configuration, suppressions and baseline")
    settings.add_argument("--config", type=Path, default=None,
                          help="configuration file (.topolint.toml or a pyproject.toml with [tool.topolint]); "
                               "default: the nearest one from the working directory upwards")
    settings.add_argument("--isolated", action="store_true", help="read no configuration file")
    settings.add_argument("--extend-exclude", action="append", default=[],
                          help="glob of files or folders to skip, on top of the configured excludes")
    settings.add_argument("--force-exclude", action="store_true",
                          help="apply excludes to files named on the command line too (for pre-commit)")
    settings.add_argument("--require-suppression-reason", action="store_true",
                          help="honour only suppression comments that give a reason")
    settings.add_argument("--baseline", type=Path, default=None,
                          help="JSON baseline: findings it holds are reported as baselined, not as new")
    settings.add_argument("--update-baseline", action="store_true",
                          help="write the current findings to --baseline (entries that no longer match drop out)")

    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    rules.add_argument("--rule-dir", action="append", type=Path, default=[])

    _add_estimate_parser(commands)

    rule = commands.add_parser("rule", help="explain one rule")
    rule.add_argument("code", help="rule code or slug, e.g. NUMA001 or gpu-nic-cross-socket")
    rule.add_argument("--rule-dir", action="append", type=Path, default=[])
    return parser


def _add_estimate_parser(commands) -> None:
    est = commands.add_parser("estimate", help="expected collective bandwidth per algorithm, and its bottleneck")
    est.add_argument("paths", nargs="+", metavar="PATH", help="topology dumps, node folders or a cluster folder")
    est.add_argument("--nodes", type=int, default=None, help="node count (default: the nodes given)")
    est.add_argument("--gpus-per-node", type=int, default=None, help="GPUs used per node (default: all)")
    est.add_argument("--collective", default="allreduce",
                     choices=["allreduce", "allgather", "reducescatter", "broadcast", "alltoall"])
    est.add_argument("--size", default=None, help="bytes per rank, e.g. 8G (default 8G)")
    est.add_argument("--sizes", default=None, help="a range, doubling: 1M..8G")
    est.add_argument("--servers", type=int, default=None, help="parameter servers (default: one per node)")
    est.add_argument("--colocated", action="store_true", help="parameter servers run on the worker nodes")
    est.add_argument("--nvlinks", type=int, default=None,
                     help="NVLinks per GPU to NVSwitches, for static topology files that state none")
    est.add_argument("--no-nvls", action="store_true", help="NVLink SHARP multicast is not available")
    est.add_argument("--collnet", action="store_true", help="the fabric offers CollNet/SHARP (NCCL_COLLNET_ENABLE=1)")
    est.add_argument("--oversubscription", type=float, default=1.0, help="fabric leaf-to-spine oversubscription")
    est.add_argument("--algorithm", default=None, help="only this NCCL algorithm (as NCCL_ALGO=...)")
    est.add_argument("--nccl-version", default=None, help="NCCL version to assume (default: newest known)")
    est.add_argument("--format", choices=["text", "json", "markdown"], default="text")


def command_estimate(args) -> int:
    from topolint.commands.estimate import EstimateUsageError, parse_sizes, render, run_estimate
    from topolint.estimate import Options
    from topolint.model.nccl_version import NEWEST, NcclVersion, VersionError

    if (args.nodes is not None and args.nodes < 1) or (args.gpus_per_node is not None and args.gpus_per_node < 1):
        raise UsageError("--nodes and --gpus-per-node must be at least 1")
    try:
        version = NcclVersion.parse(args.nccl_version or NEWEST)
        sizes = parse_sizes(args.size, args.sizes)
        options = Options(nvls=False if args.no_nvls else None, collnet=args.collnet, servers=args.servers,
                          colocated=args.colocated, oversubscription=max(1.0, args.oversubscription),
                          algorithm=(args.algorithm or "").lower() or None, nvlinks=args.nvlinks)
        run = run_estimate(args.paths, sizes, args.nodes, args.gpus_per_node, args.collective, version, options)
    except (VersionError, EstimateUsageError) as exc:
        raise UsageError(str(exc)) from None
    for problem in run.problems:
        print(f"topolint: {problem.code}: {problem.path}:{problem.line}: {problem.message}", file=sys.stderr)
    if run.estimates:
        sys.stdout.write(render(args.format, run))
    return EXIT_ERROR if run.unreadable or not run.estimates else EXIT_CLEAN


def _load_rules(dirs: list[Path]):
    from topolint.engine.rule import load_rules

    for directory in dirs:
        if not directory.is_dir():
            raise UsageError(f"--rule-dir {directory}: not a directory")
    try:
        return load_rules(dirs)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # a malformed site rule file (TOML syntax)
        raise UsageError(f"cannot load rule definitions: {exc}") from None


def _outputs(args) -> list[tuple[str, str]]:
    formats = args.format or ["full"]
    outputs = args.output or []
    if outputs and len(outputs) != len(formats):
        raise UsageError(f"{len(formats)} --format but {len(outputs)} --output: give one --output per --format")
    return list(zip(formats, outputs or ["-"] * len(formats)))


def _configured(args, loaded, rules: list):
    """Merge the configuration under the command line: the selection, per-file ignores and rules
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
        select=_split(args.select) if args.select else config.select,
        extend_select=config.extend_select + _split(args.extend_select),
        ignore=config.ignore + _split(args.ignore),
        preview=args.preview or config.preview,
    ).enabled(rules)
    return rules, chosen, per_file


def _paths(args, excluder) -> list[str]:
    """The named paths, less those the excludes cover when --force-exclude is on."""
    if not excluder.force:
        return list(args.paths)
    kept = []
    for raw in args.paths:
        named = Path(args.stdin_filename) if raw == "-" and args.stdin_filename else Path(raw)
        if raw == "-" and not args.stdin_filename:
            kept.append(raw)
        elif not excluder.named(named):
            kept.append(raw)
    return kept


def command_check(args) -> int:
    from topolint.config import ConfigError, discover, excluder, key_name, per_file_ignored
    from topolint.engine import selection, suppression
    from topolint.engine.baseline import Baseline, BaselineError
    from topolint.engine.cache import CACHE_DIR_NAME, ResultCache, cache_disabled_by_environment
    from topolint.engine.finding import Finding
    from topolint.engine.rule import RuleError
    from topolint.engine.runner import RunOptions, run
    from topolint.inputs.collect import collect
    from topolint.model.nccl_version import NEWEST, NcclVersion, VersionError
    from topolint.reporters import Report, render

    try:
        loaded = discover(args.config, args.isolated)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    config = loaded.config
    rule_dirs = list(args.rule_dir)
    for folder in config.rule_dirs:
        if not loaded.resolve(folder).is_dir():
            raise UsageError(f"{key_name(loaded, 'rule-dirs')}: {folder}: not a directory")
        rule_dirs.append(loaded.resolve(folder))
    if config.topology and getattr(args, "topology", None) is None:
        args.topology = str(loaded.resolve(config.topology))  # --topology wins over the config
    if args.update_baseline and args.baseline is None:
        raise UsageError("--update-baseline needs --baseline FILE")
    rules = _load_rules(rule_dirs)
    try:
        version = NcclVersion.parse(args.nccl_version or config.nccl_version or NEWEST)
        rules, chosen, per_file = _configured(args, loaded, rules)
    except (VersionError, selection.SelectionError) as exc:
        raise UsageError(str(exc)) from None
    fail_level = args.fail_level or config.fail_level or "warning"
    require_reason = args.require_suppression_reason or config.require_suppression_reason
    outputs = _outputs(args)
    if args.paths.count("-") > 1:
        raise UsageError("stdin (-) can be named only once")
    if "-" in args.paths and not args.stdin_filename and any(f in ("sarif", "github") for f, _ in outputs):
        raise UsageError("reading stdin for sarif or github output needs --stdin-filename (the file's path in the repository)")
    excludes = excluder(loaded, args.extend_exclude, force=args.force_exclude)
    baseline = None
    if args.baseline is not None:
        try:
            baseline = Baseline.load(args.baseline, missing_ok=args.update_baseline)
        except BaselineError as exc:
            raise UsageError(str(exc)) from None

    options = RunOptions(nccl_version=version, extra_variables=tuple(config.extra_variables))
    cache = None
    if not (args.no_cache or cache_disabled_by_environment()):
        cache = ResultCache(args.cache_dir or (args.project_root or Path.cwd()) / CACHE_DIR_NAME, rules, options)
    collection = collect(_paths(args, excludes), node_name=args.node, stdin_filename=args.stdin_filename,
                         exclude=excludes, topology=args.topology, cache=cache)
    try:
        result = run(rules, collection, options, cache)
    except RuleError as exc:
        raise UsageError(f"bad rule definition: {exc}") from None
    unreadable = any(f.code == "TL001" for f in result.findings)
    sources = {path: src for node in collection.nodes for path, src in node.sources.items()}
    shown_sources = {**collection.unparsed, **sources}  # TL001 findings show their line too
    node_of = {path: node.name for node in collection.nodes for path in node.sources}
    # Suppressions see every finding (selected or not), so TL004 knows what each directive matched.
    everything = result.findings + suppression.apply(result.findings, sources, rules, node_of, result.ran,
                                                     require_reason)
    everything.sort(key=Finding.sort_key)
    for f in everything:
        if f.code in config.severity:
            f.severity = config.severity[f.code]
    if per_file:
        everything = [f for f in everything if not per_file_ignored(loaded, f.path, f.code, per_file)]
    findings = selection.apply(everything, chosen)
    if baseline is not None:
        inputs = list(sources) + [p.path for p in collection.problems]
        if args.update_baseline:
            summary = baseline.update(findings, chosen, inputs)
            try:
                baseline.write()
            except BaselineError as exc:
                raise UsageError(str(exc)) from None
            baseline.apply(findings)
            print(f"topolint: baseline {args.baseline} updated: {summary}", file=sys.stderr)
        else:
            matched = baseline.apply(findings)
            stale = baseline.stale(everything, chosen, inputs)
            note = f"topolint: baseline {args.baseline}: {matched} findings baselined"
            if stale:
                note += f", {len(stale)} entries no longer match (--update-baseline drops them)"
            print(note, file=sys.stderr)
    report = Report(
        findings=findings,
        rules=[r for r in rules if r.code in chosen],
        sources=shown_sources,
        project_root=(args.project_root or Path.cwd()).resolve(),
        nccl_version=str(version),
        unreadable=unreadable,
    )
    if unreadable and "TL001" not in chosen:
        # Never let the selection hide why the exit code is 2.
        for f in result.findings:
            if f.code == "TL001":
                print(f"topolint: error: {f.path}:{f.line}: {f.message}", file=sys.stderr)
    if args.verbose:
        rule_notes = [n for n in result.notes if n.split(" ", 1)[0] in chosen]
        if loaded.path:
            print(f"topolint: configuration from {loaded.path}", file=sys.stderr)
        for note in collection.notes + rule_notes:
            print(f"topolint: {note}", file=sys.stderr)
        print(f"topolint: assumed NCCL {version}", file=sys.stderr)
    for fmt, destination in outputs:
        text = render(fmt, report)
        if destination == "-":
            sys.stdout.write(text)
        else:
            try:
                Path(destination).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {destination}: {exc.strerror or exc}") from None
    if unreadable:
        return EXIT_ERROR
    failing = any(not f.suppressed and selection.at_or_above(f, fail_level) for f in findings)
    if failing and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _listed_rules(args):
    """Built-in rules plus site rules from --rule-dir and the discovered config's rule-dirs."""
    from topolint.config import ConfigError, discover

    try:
        loaded = discover(None, False)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return _load_rules([*args.rule_dir, *(loaded.resolve(folder) for folder in loaded.config.rule_dirs)])


def command_rules(args) -> int:
    rules = _listed_rules(args)
    if args.format == "json":
        import json

        rows = [
            {"code": r.code, "slug": r.slug, "category": r.category, "severity": r.severity,
             "status": r.status, "summary": r.summary, "check": r.check}
            for r in rules
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif args.format == "markdown":
        from topolint.docs import rules_index_markdown

        sys.stdout.write(rules_index_markdown(rules))
    else:
        for r in rules:
            preview = " (preview)" if r.is_preview else ""
            sys.stdout.write(f"{r.code:<8} {r.slug:<32} {r.severity:<8} {r.summary}{preview}\n")
    return EXIT_CLEAN


def command_rule(args) -> int:
    rules = _listed_rules(args)
    wanted = args.code.strip()
    for r in rules:
        if r.code == wanted.upper() or r.slug == wanted.lower():
            from topolint.docs import rule_markdown

            sys.stdout.write(rule_markdown(r))
            return EXIT_CLEAN
    raise UsageError(f"unknown rule {wanted!r}; `topolint rules` lists them")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    handlers = {"check": command_check, "rules": command_rules, "rule": command_rule, "estimate": command_estimate}
    # A run is short and allocates many small acyclic objects (facts): the cycle collector's
    # passes over them cost a quarter of a large run and free nothing that refcounting does not.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return handlers[args.command](args)
    except UsageError as exc:
        print(f"topolint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    finally:
        if collecting:
            gc.enable()
