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

from topolint.commands import EXIT_CLEAN, EXIT_FINDINGS

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

    @property
    def count(self) -> int:
        return sum(self.fixed.values())


def _real_paths(result) -> dict:
    return {path: source.real_path for path, source in result.report.sources.items()}


def fix_check(options, unsafe: bool = False, write: bool = True) -> FixRun:
    from topolint.commands.check import run_check
    from topolint.engine.fixes import fix_files

    result = run_check(options)
    run = FixRun(result)
    for _ in range(MAX_PASSES):
        outcome = fix_files(result.findings, _real_paths(result), unsafe, write)
        run.hidden_unsafe = outcome.hidden_unsafe
        run.skipped = outcome.skipped
        if not write:
            run.diffs, run.fixed = outcome.diffs, outcome.fixed
            return run
        for path, count in outcome.fixed.items():
            run.fixed[path] = run.fixed.get(path, 0) + count
        if not outcome.fixed:
            break
        result = run_check(options)
        run.result = result
    return run


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
        return EXIT_CLEAN
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
