"""``topolint collect``: run the node's commands and write a node bundle (docs/bundles.md).

The commands are data (topolint/data/collect.toml): file name, argv, timeout, what each needs.
Each runs without a shell, with its own argv, in its own process group under a timeout (the
whole group is killed, so a hung child cannot keep the pipe open). A missing tool, a refused
permission, a failure or a timeout is recorded in the manifest and the next command runs: the
bundle says what it could not learn, and `topolint check` reports that as missing evidence.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from topolint import __version__
from topolint.parsers.bundle_manifest import FORMAT_VERSION, MANIFEST_NAME

TABLE = Path(__file__).resolve().parent.parent / "data" / "collect.toml"
STDERR_KEPT = 400  # characters of a failed command's stderr kept in the manifest
_DENIED = re.compile(r"permission denied|operation not permitted|must be root|access denied", re.I)
_GPU_ROW = re.compile(r"^GPU\d+\s", re.M)


@dataclass(frozen=True)
class CollectCommand:
    """One row of the command table."""

    file: str
    argv: tuple[str, ...]
    timeout: float
    needs: str = ""
    format: str | None = None
    ok_exit: tuple[int, ...] = (0,)
    version: tuple[str, ...] = ()
    option: str | None = None
    output: str = "stdout"
    dump_env: str | None = None


def load_table(path: Path = TABLE) -> list[CollectCommand]:
    import tomllib

    with path.open("rb") as handle:
        rows = tomllib.load(handle)["command"]
    return [CollectCommand(file=r["file"], argv=tuple(r["argv"]), timeout=float(r["timeout"]),
                           needs=r.get("needs", ""), format=r.get("format"), ok_exit=tuple(r.get("ok_exit", [0])),
                           version=tuple(r.get("version", ())), option=r.get("option"),
                           output=r.get("output", "stdout"), dump_env=r.get("dump_env")) for r in rows]


@dataclass
class Outcome:
    status: str  # ok, failed, timeout, missing, denied, skipped
    exit_code: int | None = None
    seconds: float = 0.0
    message: str | None = None


@dataclass
class CollectResult:
    folder: Path
    manifest: dict = field(default_factory=dict)

    @property
    def failed(self) -> list[dict]:
        return [c for c in self.manifest["commands"] if c["status"] not in ("ok", "skipped")]


def _environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"  # tools print untranslated text, which the parsers read
    env.update(extra or {})
    return env


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_command(argv: list[str], stdout_path: Path | None, timeout: float, ok_exit=(0,),
                env: dict[str, str] | None = None) -> Outcome:
    """Run ``argv`` (no shell) with stdout to ``stdout_path``; never raises for the command's sake.
    A command that could not start leaves no file behind."""
    outcome = _run(argv, stdout_path, timeout, ok_exit, env)
    if outcome.status in ("missing", "denied") and outcome.exit_code is None and stdout_path is not None:
        stdout_path.unlink(missing_ok=True)
    return outcome


def _run(argv: list[str], stdout_path: Path | None, timeout: float, ok_exit, env) -> Outcome:
    start = time.monotonic()
    sink = stdout_path.open("wb") if stdout_path is not None else subprocess.DEVNULL
    try:
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.PIPE,
                                       env=_environment(env), start_new_session=True)
        except FileNotFoundError:
            return Outcome("missing", message=f"{argv[0]}: not installed (not on PATH)")
        except PermissionError:
            return Outcome("denied", message=f"{argv[0]}: not permitted to execute")
        except OSError as exc:
            return Outcome("failed", message=f"{argv[0]}: {exc.strerror or exc}")
        try:
            _, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            return Outcome("timeout", seconds=round(time.monotonic() - start, 3),
                           message=f"killed after {timeout:g} s")
        finally:
            _kill_group(process)  # children it left behind
    finally:
        if stdout_path is not None:
            sink.close()
    seconds = round(time.monotonic() - start, 3)
    text = err.decode("utf-8", errors="replace").strip()[-STDERR_KEPT:] or None
    if process.returncode in ok_exit:
        return Outcome("ok", process.returncode, seconds)
    status = "denied" if text and _DENIED.search(text) else "failed"
    return Outcome(status, process.returncode, seconds, text or f"exit status {process.returncode}")


def _tool_version(argv: tuple[str, ...], timeout: float = 5.0) -> str | None:
    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=timeout, env=_environment(),
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).decode("utf-8", errors="replace").strip().splitlines()
    return lines[0][:200] if lines else None


def _gpu_count(folder: Path) -> int:
    try:
        text = (folder / "nvidia-smi-topo.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return len(_GPU_ROW.findall(text.split("\n\n", 1)[0]))


def _argv(command: CollectCommand, folder: Path) -> list[str] | None:
    if "{gpus}" not in command.argv:
        return list(command.argv)
    gpus = _gpu_count(folder)
    return [str(gpus) if a == "{gpus}" else a for a in command.argv] if gpus else None


def _run_one(command: CollectCommand, folder: Path, timeout_scale: float) -> tuple[list[str], Outcome]:
    if any(p in a for a in command.argv for p in ("{netdev}", "{rdma_netdev}")):
        from topolint.commands.collect_each import run_each  # once per interface (fabric rows)

        return run_each(command, folder, timeout_scale)
    argv = _argv(command, folder)
    if argv is None:
        return list(command.argv), Outcome("skipped", message="no GPUs seen by nvidia-smi topo -m")
    timeout = command.timeout * timeout_scale
    target = folder / command.file
    if command.output == "dump":
        outcome = run_command(argv, None, timeout, command.ok_exit, env={command.dump_env: str(target)})
        if outcome.status == "ok" and not target.is_file():
            outcome = Outcome("failed", outcome.exit_code, outcome.seconds, f"{command.dump_env} file was not written")
        return argv, outcome
    return argv, run_command(argv, target, timeout, command.ok_exit)


def manifest_text(manifest: dict) -> str:
    """The manifest as JSON with one command per line (the line a finding points at)."""
    head = {k: v for k, v in manifest.items() if k != "commands"}
    body = json.dumps(head, indent=2, sort_keys=False)[:-2]
    rows = ",\n".join("    " + json.dumps(c, sort_keys=False) for c in manifest["commands"])
    return f"{body},\n  \"commands\": [\n{rows}\n  ]\n}}\n"


def collect(out: Path, table: list[CollectCommand] | None = None, options: frozenset[str] = frozenset(),
            timeout_scale: float = 1.0, progress=None, deadline: float | None = None) -> CollectResult:
    """Run every command of ``table`` (default: topolint/data/collect.toml) whose option is on,
    writing the outputs and ``topolint-bundle.json`` into ``out``. ``progress(i, n, text)`` is
    called before and after each command. ``deadline`` (a ``time.monotonic()`` value; topolint
    health's time budget): no command runs past it, and those left when it comes are "skipped"."""
    rows = [c for c in (table if table is not None else load_table()) if c.option is None or c.option in options]
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {
        "topolint_bundle": FORMAT_VERSION,
        "host": socket.gethostname(),
        "collected_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "topolint_version": __version__,
        "root": hasattr(os, "geteuid") and os.geteuid() == 0,
        "tools": {},
        "commands": [],
    }
    for index, command in enumerate(rows, 1):
        if progress:
            progress(index, len(rows), f"{' '.join(command.argv)} ...")
        left = deadline - time.monotonic() if deadline is not None else None
        if left is not None and left <= 0.05:
            argv, outcome = list(command.argv), Outcome("skipped", message="the time budget was spent before it ran")
        else:
            scale = timeout_scale if left is None else min(timeout_scale, left / command.timeout)
            argv, outcome = _run_one(command, out, scale)
        entry = {"file": command.file, "argv": argv, "status": outcome.status, "exit_code": outcome.exit_code,
                 "seconds": outcome.seconds, "format": command.format, "needs": command.needs}
        if outcome.message:
            entry["message"] = outcome.message
        manifest["commands"].append(entry)
        left = deadline - time.monotonic() if deadline is not None else 5.0
        if command.version and command.argv[0] not in manifest["tools"] and outcome.status != "missing" \
                and left > 0.05:
            version = _tool_version(command.version, min(5.0, left))
            if version:
                manifest["tools"][command.argv[0]] = version
        if progress:
            progress(index, len(rows), f"{' '.join(command.argv)}: {outcome.status}"
                     + (f" ({outcome.message})" if outcome.status != "ok" and outcome.message else ""))
    (out / MANIFEST_NAME).write_text(manifest_text(manifest), encoding="utf-8")
    return CollectResult(out, manifest)


def terminal_progress(stream=None):
    """Progress lines on a terminal; None (silent) when stderr is not one."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def show(index: int, total: int, text: str) -> None:
        stream.write(f"\r\033[K[{index}/{total}] {text}" + ("" if text.endswith("...") else "\n"))
        stream.flush()

    return show


def command_collect(args) -> int:
    """CLI entry: ``topolint collect [-o DIR] [--nccl-dump] [--timeout-scale X]``."""
    out = args.output or Path(f"topolint-bundle-{socket.gethostname()}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"topolint: error: {out} exists and is not an empty folder", file=sys.stderr)
        return 2
    if not args.timeout_scale > 0:
        print("topolint: error: --timeout-scale must be positive", file=sys.stderr)
        return 2
    options = frozenset({"nccl-dump"} if args.nccl_dump else ())
    result = collect(out, options=options, timeout_scale=args.timeout_scale, progress=terminal_progress())
    commands = result.manifest["commands"]
    missing = result.failed
    print(f"wrote {out}/ ({len(commands) - len(missing)} of {len(commands)} commands ok); "
          f"check it with: topolint check {out}")
    for entry in missing:
        print(f"  {entry['file']}: {entry['status']}" + (f" ({entry['message']})" if entry.get("message") else ""))
    return 0
