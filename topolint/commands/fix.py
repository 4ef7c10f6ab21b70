"""`topolint check --fix / --diff / --unsafe-fixes / --add-noqa`: the check run, then its fixes.

``fix_check(options, unsafe, write)`` applies (or, without ``write``, diffs) the fixes of a
check run and re-checks until nothing more applies, so the result describes the files as they
are afterwards; ``add_noqa(options)`` writes suppression directives for the current findings.
The command line adds the flags to ``topolint check`` (``add_fix_arguments``) and ``cli`` runs
them. Nothing here is imported unless one of the flags is given.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from topolint.commands import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

TL006 = "TL006"  # fix-not-written
MAX_PASSES = 8  # fixes of one pass never overlap; a later pass takes what an overlap held back


def add_fix_arguments(check) -> None:
    fixes = check.add_argument_group("fixes")
    fixes.add_argument("--fix", action="store_true", help="apply the safe fixes, then report what is left")
    fixes.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff: unsafe fixes too (renames and value edits change what NCCL reads)")
    fixes.add_argument("--diff", action="store_true", help="print the fixes --fix would apply as a diff; write nothing")
    fixes.add_argument("--add-noqa", action="store_true",
                       help="write a topolint suppression directive for each current finding")


def wants_fix_command(args) -> bool:
    return bool(getattr(args, "fix", False) or getattr(args, "diff", False) or getattr(args, "add_noqa", False))


@dataclass
class FixRun:
    result: object  # CheckResult after the fixes
    fixed: dict[str, int] = field(default_factory=dict)  # path -> edits applied
    diffs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    hidden_unsafe: int = 0
    not_written: list = field(default_factory=list)  # engine/writes.py NotWritten, one per file

    @property
    def count(self) -> int:
        return sum(self.fixed.values())


def fix_check(options, unsafe: bool = False, write: bool = True) -> FixRun:
    """Check, fix, check again until nothing more applies. A file that was not written (outside
    the checked paths, changed since it was checked, not writable) is left alone by the later
    passes too, and the final result carries TL006 for it (``CheckResult.not_written``: exit 2)."""
    from topolint.commands.check import run_check
    from topolint.engine.fixes import fix_files
    from topolint.engine.writes import CheckedPaths

    result = run_check(options)
    run = FixRun(result)
    left_alone: set[str] = set()
    for _ in range(MAX_PASSES):
        outcome = fix_files(result.findings, result.report.sources, unsafe, write,
                            CheckedPaths(result.checked_paths), left_alone)
        run.hidden_unsafe = outcome.hidden_unsafe
        run.skipped += outcome.skipped
        run.not_written += outcome.not_written
        left_alone.update(n.path for n in outcome.not_written)
        if not write:
            run.diffs, run.fixed = outcome.diffs, outcome.fixed
            return run
        for path, count in outcome.fixed.items():
            run.fixed[path] = run.fixed.get(path, 0) + count
        if not outcome.fixed:
            break
        result = run_check(options)
        run.result = result
    if run.not_written:
        report_not_written(run.result, run.not_written)
    return run


def not_written_message(missed) -> str:
    """TL006 as one stderr line, where no report shows it."""
    edits = f"{missed.count} edit{'s' if missed.count != 1 else ''}"
    return f"topolint: error: {missed.path}:{missed.line}: TL006 {edits} not written: {missed.reason()}"


def report_not_written(result, not_written: list) -> None:
    """TL006 for each file not written, in the result (where TL006 is selected; else a message, so
    the selection never hides why the exit code is 2); the findings whose fixes were not written
    lose their fix mark and say why, since --fix did not and will not apply them as things are."""
    from topolint.engine.finding import Finding, Hit
    from topolint.engine.runner import to_finding
    from topolint.model.facts import Location, build
    from topolint.model.node import file_entity

    result.not_written = list(not_written)
    rule = next((r for r in result.plan.rules if r.code == TL006), None) if result.plan is not None else None
    chosen = result.plan.chosen if result.plan is not None else set()
    by_path = {n.path: n for n in not_written}
    for finding in result.findings:
        edits = finding.autofix.edits if finding.autofix is not None else ()
        missed = next((by_path[e.path] for e in edits if e.path in by_path), None)
        if missed is not None:
            finding.autofix = None
            finding.evidence.append(missed.reason())
    added = []
    for missed in not_written:
        hit = Hit(entity=file_entity(missed.node, missed.path),
                  location=build(Location, path=missed.path, line=max(missed.line, 1), column=max(missed.column, 0)),
                  fields={"path": missed.path, "count": missed.count, "reason": missed.reason(),
                          "edits": f"{missed.count} edit{'s' if missed.count != 1 else ''}"},
                  variant=missed.why)
        if rule is not None and TL006 in chosen:
            added.append(to_finding(rule, missed.node, hit))
        else:
            result.messages.append(not_written_message(missed))
    if added:
        result.findings.extend(added)
        result.findings.sort(key=Finding.sort_key)
        result.report.findings = result.findings
        if not any(r.code == TL006 for r in result.report.rules):
            result.report.rules = sorted([*result.report.rules, rule], key=lambda r: r.code)


def cli(args, options, report) -> int:
    """Run the flags; ``report(result)`` prints a check result as ``topolint check`` does."""
    if args.add_noqa:
        from topolint.commands.noqa import add_noqa

        added = add_noqa(options)
        print(f"topolint: added {added.count} suppression directives in {len(added.files)} files", file=sys.stderr)
        if added.placeholders:
            from topolint.commands.noqa import REASON_PLACEHOLDER

            print(f"topolint: suppression reasons are required: {added.placeholders} directives say "
                  f"'{REASON_PLACEHOLDER}'; replace it with the reason", file=sys.stderr)
        for note in added.skipped:
            print(f"topolint: {note}", file=sys.stderr)
        for missed in added.not_written:
            print(not_written_message(missed), file=sys.stderr)
        return EXIT_ERROR if added.not_written else EXIT_CLEAN
    run = fix_check(options, unsafe=args.unsafe_fixes, write=not args.diff)
    for note in run.skipped:
        print(f"topolint: {note}", file=sys.stderr)
    hidden = (f"; {run.hidden_unsafe} more with --unsafe-fixes" if run.hidden_unsafe and not args.unsafe_fixes
              else "")
    if args.diff:
        sys.stdout.write("".join(run.diffs))
        print(f"topolint: would fix {run.count} findings in {len(run.fixed)} files{hidden}", file=sys.stderr)
        return EXIT_FINDINGS if run.fixed else EXIT_CLEAN
    print(f"topolint: fixed {run.count} findings in {len(run.fixed)} files{hidden}", file=sys.stderr)
    return report(run.result)
