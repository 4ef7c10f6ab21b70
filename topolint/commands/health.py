"""`topolint health`: topolint on the node itself, as a scheduler's health check (docs/health-checks.md).

It collects the node's outputs (``topolint collect``'s table, within a time budget) or reads a
bundle already collected, checks them, writes the node's inventory for the fleet step when asked
(``--inventory``), and answers in the contract of the caller (``--mode``):

- ``slurm``: Slurm's HealthCheckProgram. Slurm ignores the program's exit code and kills it
  after 60 s, so the node is judged within ``--budget`` seconds (default 50) and ``--drain``
  runs ``scontrol update NodeName=HOST State=DRAIN Reason=...`` itself for error findings. Exit
  0 fit, 1 unfit, 2 could not judge (for the log: Slurm reads none of them).
- ``prolog``: Slurm's Prolog. A non-zero exit drains the node and requeues the job, so only an
  unfit node exits 1; a node topolint could not judge exits 0 (it says why on stderr): a broken
  collection must not drain the cluster.
- ``npd``: a Kubernetes node-problem-detector custom plugin. Exit 0 OK, 1 problem, 2 unknown;
  stdout is one line (the message NPD shows), at most ``--max-output`` characters.

Unfit means a finding at or above ``--fail-level`` (default: error). Values from the inputs are
written with their control characters escaped, and the one-line outputs stay one line.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from topolint.commands import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError

MODES = ("slurm", "prolog", "npd")
DEFAULT_BUDGET = 50.0  # seconds: Slurm kills a HealthCheckProgram after 60 s
CHECK_RESERVE = 8.0  # seconds of the budget kept for the check, the inventory and scontrol
SCONTROL_TIMEOUT = 10.0
SCONTROL_GRACE = 2.0  # seconds reading goes on after scontrol ended (collect's GRACE)
SCONTROL_OUTPUT_CAP = 64 * 1024  # bytes of each stream kept: only one line of it is shown
NPD_MAX_OUTPUT = 80  # node-problem-detector's default max_output_length for custom plugins
REASON_MAX = 200  # Slurm keeps a drain reason whole; a log line stays readable
FIT, UNFIT, UNKNOWN = "fit", "unfit", "unknown"


@dataclass
class HealthVerdict:
    """What the health check found: ``state`` fit, unfit or unknown, the findings that make the
    node unfit (at or above the fail level), and why it could not judge (``unknown``)."""

    state: str
    node: str
    failing: list = field(default_factory=list)  # Finding
    total: int = 0  # findings of every severity
    why: str = ""  # for unknown: what went wrong
    drained: str | None = None  # what scontrol did, with --drain
    inventory: str | None = None  # what was written, with --inventory
    seconds: float = 0.0

    def line(self) -> str:
        """One line for a log, a drain reason or NPD: the first failing finding and how many more."""
        if self.state == UNKNOWN:
            return one_line(f"topolint: could not judge node {self.node}: {self.why}")
        if self.state == FIT:
            return one_line(f"topolint: node {self.node} fit ({self.total} findings below the fail level)"
                            if self.total else f"topolint: node {self.node} fit")
        first = self.failing[0]
        more = f" (+{len(self.failing) - 1} more)" if len(self.failing) > 1 else ""
        return one_line(f"topolint: {first.code} {first.message}{more}")


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as one line with input values' control characters escaped, cut to ``limit``."""
    from topolint.reporters._text import visible

    shown = visible(" ".join(text.split()))
    if limit is not None and len(shown) > limit:
        shown = shown[:max(limit - 3, 0)] + "..."
    return shown


def host_name(given: str | None = None) -> str:
    """The Slurm node name: --node, else SLURMD_NODENAME (slurmd sets it for its scripts), else
    the short host name."""
    return given or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def drain(node: str, reason: str, timeout: float = SCONTROL_TIMEOUT) -> str:
    """``scontrol update NodeName=NODE State=DRAIN Reason=REASON``, run without a shell; what it did."""
    from topolint.commands._processes import Stream, run

    argv = ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={one_line(reason, REASON_MAX)}"]
    # The bounded runner: byte caps, the deadline, and reading stopped SCONTROL_GRACE s after it
    # ended, whatever it left holding its pipes.
    out, err = Stream(SCONTROL_OUTPUT_CAP), Stream(SCONTROL_OUTPUT_CAP)
    try:
        ran = run(argv, env=dict(os.environ), stdout=out, stderr=err, timeout=timeout, grace=SCONTROL_GRACE)
    except FileNotFoundError:
        return "scontrol not found on PATH: the node was not drained"
    except OSError as exc:
        return f"scontrol could not run ({exc.strerror or exc}): the node was not drained"
    if ran.interrupted:
        raise KeyboardInterrupt
    if ran.timed_out:
        return f"scontrol did not finish within {timeout:g} s: the node may not be drained"
    if ran.exit_code != 0:
        said = bytes(err.kept or out.kept).decode("utf-8", "replace")
        error = one_line(said, 120)
        return f"scontrol exited {ran.exit_code}{': ' + error if error else ''}: the node may not be drained"
    return f"drained {node} (scontrol update NodeName={node} State=DRAIN)"


def judge(paths: list[str] | None = None, *, node: str | None = None, budget: float = DEFAULT_BUDGET,
          fail_level: str = "error", bundle: Path | None = None, inventory: str | None = None,
          config: Path | None = None, isolated: bool = False, table=None) -> HealthVerdict:
    """Check the node: ``paths`` (a bundle or outputs already collected), else a collection now
    into ``bundle`` (kept) or a temporary folder, within ``budget`` seconds from the call."""
    start = time.monotonic()
    name = host_name(node)
    temporary, cut = None, []
    try:
        if not paths:
            if bundle is None:
                temporary = bundle = Path(tempfile.mkdtemp(prefix="topolint-health-"))
            elif bundle.exists() and (not bundle.is_dir() or any(bundle.iterdir())):
                raise UsageError(f"--bundle {bundle} exists and is not an empty folder")
            from topolint.commands.collect import collect

            collected = collect(bundle, table, deadline=start + max(budget - CHECK_RESERVE, budget / 2))
            cut = [c["file"] for c in collected.manifest["commands"] if c["status"] == "skipped"]
            paths = [str(bundle)]
        verdict = _checked(paths, name, node, fail_level, inventory, config, isolated)
        if cut and verdict.state != UNKNOWN:
            verdict.why = f"the time budget ended the collection: {len(cut)} commands not run ({', '.join(cut[:3])}" \
                          + (", ...)" if len(cut) > 3 else ")")
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    verdict.seconds = round(time.monotonic() - start, 3)
    if verdict.state != UNKNOWN and verdict.seconds > budget:
        verdict.why = f"the check took {verdict.seconds:g} s, past the budget of {budget:g} s"
    return verdict


def _checked(paths, name, node, fail_level, inventory, config, isolated) -> HealthVerdict:
    from topolint.commands.check import CheckOptions, run_check
    from topolint.engine.selection import at_or_above

    # The inventory is built whether or not it is written: it says whether the node showed any machine facts.
    options = CheckOptions(paths=list(paths), node=node, fail_level=fail_level, cache=False, config=config,
                           isolated=isolated, inventory=Path(inventory or os.devnull))
    result = run_check(options)
    active = result.active
    if not node and len(result.inventories) == 1:
        name = next(iter(result.inventories))  # as the check named it: the bundle's host, the folder
    verdict = HealthVerdict(FIT, name, total=len(active))
    if inventory:
        verdict.inventory = _write_inventory(result, inventory)
    if result.report.unreadable or result.report.internal_errors:
        unreadable = next((f for f in active if f.code == "TL001"), None)
        verdict.state = UNKNOWN
        verdict.why = f"{unreadable.path}:{unreadable.line}: {unreadable.message}" if unreadable else \
            "an internal error stopped the check"
        return verdict
    if not any(_machine_facts(i) for i in result.inventories.values()):
        verdict.state, verdict.why = UNKNOWN, "no machine facts: nothing the node's commands printed could be read"
        return verdict
    verdict.failing = [f for f in active if at_or_above(f, fail_level)]
    if verdict.failing:
        verdict.state = UNFIT
    return verdict


def _machine_facts(inventory) -> bool:
    """Whether an inventory states any hardware (a bundle whose every command failed states none)."""
    return bool(inventory.gpus or inventory.nics or inventory.gpu_count or inventory.numa_nodes)


def _write_inventory(result, target: str) -> str:
    from topolint.fleet.files import InventoryTargetError, write_inventories

    try:
        return write_inventories(result.inventories, target)
    except InventoryTargetError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        return f"cannot write inventory {target}: {exc.strerror or exc}"


def exit_code(mode: str, verdict: HealthVerdict) -> int:
    """The exit code of ``mode`` for ``verdict`` (docs/health-checks.md, "Exit codes")."""
    if verdict.state == UNFIT:
        return EXIT_FINDINGS
    if verdict.state == UNKNOWN:
        return EXIT_CLEAN if mode == "prolog" else EXIT_ERROR  # a prolog that cannot judge lets the job run
    return EXIT_CLEAN


def cli(args) -> int:
    """`topolint health --mode slurm|prolog|npd [PATH] [--drain] [--inventory PATH] [--budget S]`."""
    mode = args.mode
    if args.drain and mode == "npd":
        raise UsageError("--drain is for Slurm (--mode slurm or prolog); node-problem-detector sets the node's "
                         "condition from the exit code")
    if not args.budget > 0:
        raise UsageError("--budget must be a positive number of seconds")
    try:
        verdict = judge(args.paths, node=args.node, budget=args.budget, fail_level=args.fail_level,
                        bundle=args.bundle, inventory=args.inventory, config=args.config, isolated=args.isolated)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - a health check answers in its contract, never a traceback
        from topolint.engine.internal import describe

        verdict = HealthVerdict(UNKNOWN, host_name(args.node), why=f"internal error: {describe(exc)}")
    if args.drain and verdict.state == UNFIT:
        verdict.drained = drain(host_name(args.node), verdict.line())
    return _answer(mode, verdict, args)


def _answer(mode: str, verdict: HealthVerdict, args) -> int:
    if mode == "npd":  # stdout: the one line NPD shows; nothing else
        sys.stdout.write(one_line(verdict.line(), args.max_output) + "\n")
        return exit_code(mode, verdict)
    for finding in verdict.failing:
        print(one_line(f"{finding.path}:{finding.line}: {finding.code} [{finding.severity}] {finding.message}"))
    print(verdict.line())
    for note in (verdict.drained, verdict.inventory, verdict.why if verdict.state != UNKNOWN else None):
        if note:
            print(f"topolint: {one_line(note)}", file=sys.stderr)
    if verdict.state == UNKNOWN and mode == "prolog":
        print("topolint: exit 0: a prolog that cannot judge the node lets the job run", file=sys.stderr)
    return exit_code(mode, verdict)
