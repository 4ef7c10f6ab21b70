"""Command line: argument parsing and dispatch; each command's logic is in topolint/commands/.

Adding a command: a function that declares its arguments, and one line in COMMANDS naming it
and the ``module:function`` that runs it (imported only when that command runs, so start-up
pays only for what it uses). Exit codes are in topolint/commands/__init__.py.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from pathlib import Path

from topolint import __version__
from topolint.commands import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError  # noqa: F401 (re-exported)
from topolint.commands.fix import add_fix_arguments


def _job_count(text: str) -> int:
    from topolint.model.numbers import decimal

    value = decimal(text)
    if value is None or not 0 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"expected a number of processes from 0 to 1024, got {text!r}")
    return value


def _inventory_target(text: str) -> str:
    """--inventory PATH as typed: a trailing slash says "folder" (a Path would drop it)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file (NODE.json) or a folder")
    return text


def _check_arguments(commands) -> argparse.ArgumentParser:
    check = commands.add_parser("check", help="check topology dumps, node bundles and cluster folders")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files, folders, or - for stdin (default: .)")
    check.add_argument("--node", help="node name for the files named on the command line")
    check.add_argument("--stdin-filename", help="the path to report for input read from stdin")
    check.add_argument("--select", action="append", help="rules to enable: code, prefix, category, slug or ALL")
    check.add_argument("--extend-select", action="append", default=[], help="rules to enable on top of the selection")
    check.add_argument("--ignore", action="append", default=[], help="rules to disable")
    check.add_argument("--preview", action="store_true", help="enable preview (heuristic) rules")
    check.add_argument("--format", "--output-format", dest="format", action="append",
                       choices=["full", "concise", "json", "sarif", "github", "html", "markdown"],
                       help="output format (repeatable; pair with --output); html: one self-contained page with "
                            "each node drawn; markdown: a GitHub job summary")
    check.add_argument("-o", "--output", action="append", help="output file for the matching --format (- = stdout)")
    check.add_argument("--fail-level", choices=["error", "warning", "info"], default=None,
                       help="lowest severity that makes the exit code 1 (default: warning)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings are reported")
    shown = check.add_argument_group("what is printed")
    shown.add_argument("--show-level", choices=["error", "warning", "info"], default="info",
                       help="lowest severity printed (default: info, everything); the exit code still "
                            "follows --fail-level")
    shown.add_argument("-q", "--quiet", action="store_true",
                       help="print the findings only: no summary line, no notes on stderr")
    shown.add_argument("--statistics", action="store_true",
                       help="print how many findings each rule reported instead of the findings")
    shown.add_argument("--show-settings", action="store_true",
                       help="print the settings the run would use (configuration resolved) and exit")
    shown.add_argument("--show-files", action="store_true",
                       help="print the files the run would check, with their format and node, and exit")
    shown.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                       help="colour the full and concise formats (auto: on a terminal; NO_COLOR and "
                            "FORCE_COLOR are honoured)")
    check.add_argument("--nccl-version", default=None, help="NCCL version to assume (default: newest known)")
    check.add_argument("--topology", metavar="PATH", default=None,
                       help="a dump, matrix, node folder or cluster folder to check config files against")
    check.add_argument("--project-root", type=Path, default=None,
                       help="root that SARIF paths are relative to (default: current directory)")
    check.add_argument("--rule-dir", action="append", type=Path, default=[],
                       help="folder of site rule definitions (*.toml) to load besides the built-in ones")
    check.add_argument("--profile", metavar="NAME", default=None,
                       help="judge every node against this profile (docs/profiles.md; `topolint profile --list` "
                            "names them); default: [profiles] in the configuration, else the profile a node matches")
    check.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the result cache (also TOPOLINT_NO_CACHE=1)")
    check.add_argument("--cache-dir", type=Path, default=None,
                       help="where the result cache lives (default: .topolint_cache in the project root)")
    check.add_argument("--max-total-input", metavar="SIZE", default=None,
                       help="bytes one run reads, all inputs together (default 8G; K, M, G suffixes)")
    check.add_argument("-j", "--jobs", type=_job_count, default=-1, metavar="N",
                       help="processes that check nodes (default: up to 4 for runs of 256 nodes or more, on Linux; "
                            "0: one per CPU); output is the same, memory grows with each")
    check.add_argument("--inventory", metavar="PATH", type=_inventory_target, default=None,
                       help="write each node's inventory (docs/fleet.md): PATH.json is the file of the run's one "
                            "node; any other PATH is a folder with NODE.json per node; `topolint check FOLDER` "
                            "reads them back")
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
    settings.add_argument("--baseline-missing", choices=["error", "empty"], default="error",
                          help="a --baseline file that does not exist: error (exit 2, the default) or empty (every "
                               "finding is new: a first CI run before the baseline is committed)")
    settings.add_argument("--cross-file", choices=["include", "exclude", "only"], default="include",
                          help="findings that involve several files (settings against a topology, a dump "
                               "against a matrix): include (default), exclude (the per-file pre-commit hook) or "
                               "only (the project hook)")
    settings.add_argument("--update-baseline", action="store_true",
                          help="write the current findings to --baseline (entries that no longer match drop out)")
    add_fix_arguments(check)
    return check


def _rules_arguments(commands) -> argparse.ArgumentParser:
    rules = commands.add_parser("rules", help="list the rules (--variables: the environment variables topolint knows)")
    rules.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    rules.add_argument("--rule-dir", action="append", type=Path, default=[])
    rules.add_argument("--variables", action="store_true",
                       help="list the NCCL_* variables ENV001 knows instead: the NCCL releases that read each "
                            "(from NCCL's sources at its release tags), its status and its reader")
    return rules


def _rule_arguments(commands) -> argparse.ArgumentParser:
    rule = commands.add_parser("rule", help="explain one rule")
    rule.add_argument("code", help="rule code or slug, e.g. NUMA001 or gpu-nic-cross-socket")
    rule.add_argument("--rule-dir", action="append", type=Path, default=[])
    return rule


def _completion_arguments(commands) -> argparse.ArgumentParser:
    completion = commands.add_parser("completion", help="print a shell completion script",
                                     description="Print a completion script: eval \"$(topolint completion bash)\" "
                                                 "in ~/.bashrc; zsh and fish likewise.")
    completion.add_argument("shell", choices=["bash", "zsh", "fish"])
    return completion


def _collect_arguments(commands) -> argparse.ArgumentParser:
    collect = commands.add_parser("collect", help="run this node's commands and write a node bundle")
    collect.add_argument("-o", "--output", type=Path, default=None,
                         help="bundle folder to write (default: topolint-bundle-HOSTNAME; must be new or empty)")
    collect.add_argument("--nccl-dump", action="store_true",
                         help="also capture an NCCL topology dump (runs nccl-tests' all_reduce_perf once)")
    collect.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every command's timeout")
    collect.add_argument("--grace", type=float, default=2.0,
                         help="seconds to read a command's output after it ended or was killed (default 2)")
    return collect


def _estimate_arguments(commands) -> argparse.ArgumentParser:
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
    est.add_argument("--nic-gbps", type=float, default=None, help="speed of NICs the input states none for, Gb/s")
    est.add_argument("--gpu-sm", type=int, default=None, help="SM of GPUs the input states none for, e.g. 90")
    est.add_argument("--pcie-gen", type=int, choices=[3, 4, 5, 6], default=None,
                     help="PCIe generation for nvidia-smi topo -m input (default: 4, stated as assumed)")
    est.add_argument("--no-nvls", action="store_true", help="NVLink SHARP multicast is not available")
    est.add_argument("--collnet", action="store_true", help="the fabric offers CollNet/SHARP (NCCL_COLLNET_ENABLE=1)")
    est.add_argument("--oversubscription", type=float, default=1.0, help="fabric leaf-to-spine oversubscription")
    est.add_argument("--nodes-per-leaf", type=int, default=None,
                     help="nodes under one leaf switch (no oversubscription up to this many)")
    est.add_argument("--algorithm", default=None, help="only this NCCL algorithm (as NCCL_ALGO=...)")
    est.add_argument("--nccl-version", default=None, help="NCCL version to assume (default: newest known)")
    est.add_argument("--format", choices=["text", "json", "markdown", "html"], default="text",
                     help="html: a self-contained page with the node drawn, the bottleneck and the channel orders")
    step = est.add_argument_group("training step (gradient synchronisation per step)")
    step.add_argument("--model-params", default=None, help="parameters, e.g. 10B or 350M: turns on the step view")
    step.add_argument("--grad-dtype", choices=["fp32", "bf16", "fp16", "int8"], default="fp32")
    step.add_argument("--compress", default=None, help="topk:FRACTION, e.g. topk:0.01 (an allgather of values and indices)")
    step.add_argument("--sync-every", type=int, default=1, help="synchronise gradients every K steps (local SGD)")
    step.add_argument("--compute-ms", type=float, default=0.0, help="the backward pass, ms (gradients appear during it)")
    step.add_argument("--forward-ms", type=float, default=0.0, help="the forward pass and the rest of the step, ms")
    step.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket size, MiB (the first is 1 MiB)")
    step.add_argument("--sweep", default=None, help="node counts: 1..64 (doubling) or 1,2,3,4")
    return est


def _live_arguments(commands) -> argparse.ArgumentParser:
    live = commands.add_parser("live", help="run nccl-tests and judge the measured bandwidth against the estimate")
    live.add_argument("--topology", metavar="PATH", default=None, help="the nodes' NCCL topology dump (the expectation)")
    live.add_argument("--nccl-tests", metavar="BIN_OR_DIR", default=None, help="all_reduce_perf or its folder")
    live.add_argument("--launcher", default=None, help='multi-node: "srun -N2 --ntasks-per-node=8" or "mpirun -np 16 -H ..."')
    live.add_argument("--collective", default="all_reduce", help="all_reduce (default), all_gather, reduce_scatter, ...")
    live.add_argument("--sizes", default="1M..8G", help="MIN..MAX, doubling (default 1M..8G)")
    live.add_argument("--timeout", default=900, help="seconds before the run is stopped (default 900)")
    live.add_argument("--grace", type=float, default=10.0, help="seconds between SIGTERM and SIGKILL (default 10)")
    live.add_argument("--isolate", choices=["nvlink", "network"], default=None, help="NVLink only, or network only")
    live.add_argument("--gpus", type=int, default=None, help="GPUs of this node (default: nvidia-smi -L)")
    live.add_argument("--nccl-version", default=None, help="NCCL version to assume when the log names none")
    live.add_argument("--format", choices=["full", "concise", "json", "sarif", "github"], default="full")
    live.add_argument("-o", "--output", type=Path, default=Path("topolint-live"),
                      help="folder for the raw output and the report (default: topolint-live)")
    return live


def _graph_arguments(commands) -> argparse.ArgumentParser:
    graph = commands.add_parser("graph", help="draw one node with its findings and the estimate's bottleneck",
                                description="Draw one node: its CPUs, PCIe switches, GPUs, NICs and NVLinks as the "
                                            "model holds them, the elements findings name highlighted and the paths "
                                            "they are about drawn, and the bottleneck of the estimate's all-reduce.")
    graph.add_argument("paths", nargs="+", metavar="PATH",
                       help="a topology dump, matrix, hwloc export, node folder or bundle (a cluster folder: see "
                            "--host); - for stdin")
    graph.add_argument("--format", choices=["svg", "html", "dot", "mermaid"], default="svg",
                       help="svg (default), html (a self-contained page), dot (Graphviz) or mermaid")
    graph.add_argument("-o", "--output", default="-", help="file to write (default: - for stdout)")
    graph.add_argument("--host", default=None,
                       help="the node to draw (default: the one with the most severe finding, then the first)")
    graph.add_argument("--nodes", type=int, default=None,
                       help="nodes like it the estimate's all-reduce spans (default: 2 where a NIC reaches a GPU, "
                            "else 1)")
    graph.add_argument("--no-estimate", action="store_true", help="draw the findings only, no bottleneck")
    graph.add_argument("--stdin-filename", default=None, help="the path to show for input read from stdin (-)")
    graph.add_argument("--nccl-version", default=None, help="NCCL version to assume (default: newest known)")
    graph.add_argument("--config", type=Path, default=None, help="configuration file for the checks")
    graph.add_argument("--isolated", action="store_true", help="read no configuration file")
    return graph


def _health_arguments(commands) -> argparse.ArgumentParser:
    health = commands.add_parser(
        "health", help="judge this node as a Slurm health check or prolog, or a node-problem-detector plugin",
        description="Collect this node's outputs (or read a bundle), check them and answer in the caller's "
                    "contract: docs/health-checks.md.")
    health.add_argument("paths", nargs="*", metavar="PATH",
                        help="a bundle or outputs already collected (default: collect them now)")
    health.add_argument("--mode", choices=["slurm", "prolog", "npd"], required=True,
                        help="slurm: HealthCheckProgram (use --drain: Slurm ignores the exit code); prolog: exit 1 "
                             "only for an unfit node (Slurm drains it and requeues the job); npd: "
                             "node-problem-detector custom plugin (exit 0 OK, 1 problem, 2 unknown; one line)")
    health.add_argument("--drain", action="store_true",
                        help="for an unfit node run `scontrol update NodeName=HOST State=DRAIN Reason=...`")
    health.add_argument("--node", help="the node's name (default: SLURMD_NODENAME, else the short host name)")
    health.add_argument("--budget", type=float, default=50.0, metavar="SECONDS",
                        help="finish within this many seconds (default 50: Slurm kills a health check at 60)")
    health.add_argument("--fail-level", choices=["error", "warning", "info"], default="error",
                        help="lowest severity that makes the node unfit (default: error)")
    health.add_argument("--bundle", type=Path, default=None,
                        help="keep the collected outputs in this new folder (default: a temporary one)")
    health.add_argument("--inventory", metavar="PATH", type=_inventory_target, default=None,
                        help="write the node's inventory for the fleet step (PATH.json, or a folder: NODE.json)")
    health.add_argument("--max-output", type=int, default=80, metavar="CHARS",
                        help="npd: the longest stdout line (default 80, NPD's max_output_length)")
    health.add_argument("--config", type=Path, default=None, help="configuration file for the checks")
    health.add_argument("--isolated", action="store_true", help="read no configuration file")
    return health


def _profile_arguments(commands) -> argparse.ArgumentParser:
    profile = commands.add_parser("profile", help="write a profile from a known-good node, or list the profiles",
                                  description="docs/profiles.md: --from NODE writes a profile of what that node "
                                              "shows, each value cited to its input file and line; --list names "
                                              "the built-in and site profiles.")
    profile.add_argument("--from", dest="source", metavar="NODE", default=None,
                         help="one node's folder (as `topolint collect` writes it)")
    profile.add_argument("--list", action="store_true", help="list the built-in and site profiles, one a line")
    profile.add_argument("--name", default=None,
                         help="the profile's name (default: the -o file's name, else node-NODENAME)")
    profile.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    profile.add_argument("--config", type=Path, default=None,
                         help="configuration file (profile-dirs, excludes); default: the nearest one")
    profile.add_argument("--isolated", action="store_true", help="read no configuration file")
    return profile


# name -> (declares its arguments, runs it)
COMMANDS = {
    "check": (_check_arguments, "topolint.commands.check:cli"),
    "rules": (_rules_arguments, "topolint.commands.rules:rules_cli"),
    "rule": (_rule_arguments, "topolint.commands.rules:rule_cli"),
    "completion": (_completion_arguments, "topolint.commands.completion:cli"),
    "collect": (_collect_arguments, "topolint.commands.collect:command_collect"),
    "estimate": (_estimate_arguments, "topolint.commands.estimate:cli"),
    "live": (_live_arguments, "topolint.commands.live:cli"),
    "graph": (_graph_arguments, "topolint.commands.graph:cli"),
    "health": (_health_arguments, "topolint.commands.health:cli"),
    "profile": (_profile_arguments, "topolint.profiles.genconf:cli"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``parser.commands`` maps each command to its subparser (for its usage in errors).
    ``only``: declare the arguments of that command alone (the one about to run), others by name."""
    parser = argparse.ArgumentParser(
        prog="topolint",
        description="Static topology analyzer and NCCL config linter for multi-node, multi-GPU training.",
    )
    parser.add_argument("--version", action="version", version=f"topolint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = {}
    for name, (add_arguments, _) in COMMANDS.items():
        parser.commands[name] = add_arguments(commands) if only in (None, name) else commands.add_parser(name)
    return parser


def _command_word(argv: list[str]) -> str | None:
    """The command the arguments name (the first word that is not an option), when it is one."""
    words = [arg for arg in argv if not arg.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


def _handler(command: str):
    module, function = COMMANDS[command][1].split(":")
    return getattr(importlib.import_module(module), function)


def _command_collect(args) -> int:
    from topolint.commands.collect import command_collect

    return command_collect(args)


def _write_what_the_terminal_cannot_encode_as_escapes() -> None:
    """A C or POSIX locale (cron, minimal CI images) gives Python an ASCII stdout, and values from
    inputs need not be ASCII: write what the encoding lacks as ``\\xe9`` escapes rather than fail
    the run. JSON and SARIF are ASCII already (\\u escapes); ``-o FILE`` is always UTF-8."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding not in ("utf8", "utf8sig") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    _write_what_the_terminal_cannot_encode_as_escapes()
    # pydantic looks for plugins in the metadata of every installed distribution the first time a
    # model is built (a tenth of a config-only check); the command line uses none.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=_command_word(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse leaves a subcommand's unknown flags to the top level, whose usage says nothing
        # about them: answer with the subcommand's usage instead (exit 2).
        (parser.commands.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    # A run is short and allocates many small acyclic objects (facts): the cycle collector's
    # passes over them cost a quarter of a large run and free nothing that refcounting does not.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _handler(args.command)(args)
    except UsageError as exc:
        print(f"topolint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - a bug outside any one input or rule: one line, exit 2
        from topolint.engine.internal import InternalError, describe

        print(InternalError("the run", f"topolint {args.command}", describe(exc)).line(), file=sys.stderr)
        return EXIT_ERROR
    finally:
        if collecting:
            gc.enable()
