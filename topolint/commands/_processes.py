"""One bounded way to run a command and read what it prints (``collect``, ``collect_each``, ``live``).

- **Argv only**, no shell, stdin from /dev/null, in its own session and process group.
- **Each stream has a byte cap**: what arrives is written to its sink (a file, or memory) up to
  the cap; past it the pipe is still read (so the command is never blocked on a full pipe) and
  the bytes are counted, not kept. Lines handed to ``on_line`` are bounded too (a stream
  without newlines never grows memory).
- **A deadline**: past ``timeout`` the command is stopped: SIGTERM first when ``terminate`` is
  set (a launcher needs time to stop its remote tasks), SIGKILL ``grace`` seconds later, or
  SIGKILL at once. Its process group gets the signal, and so does every descendant that left
  the group: on Linux the runner is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``) while
  the command runs, so a ``setsid`` or double-forked descendant is re-parented to this process
  instead of init, can be found, killed and reaped. What is still alive afterwards is named
  (``left_running``).
- **Reading stops** ``grace`` seconds after the command ended (exited, or was killed), whatever
  still holds its pipes: a descendant that could not be stopped never keeps the caller waiting.

Only the processes this run adopted are reaped (waitpid on their pids, never ``waitpid(-1)``),
so children the caller started itself are left to it; the subreaper setting is restored after
each run.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

CHUNK = 65536
LINE_MAX = 65536  # longest line handed to on_line; a longer one is cut to this length
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37
_POLL = 0.05  # seconds between checks of the command while nothing arrives


class Stream:
    """Where one stream goes: ``sink`` (a binary file) or memory (``sink=None``), at most ``cap``
    bytes kept; ``on_line(text)`` for each line (cut at LINE_MAX), also past the cap."""

    def __init__(self, cap: int, sink=None, on_line=None):
        self.cap, self.sink, self.on_line = cap, sink, on_line
        self.kept = bytearray() if sink is None else None
        self.written = 0  # bytes kept
        self.seen = 0  # bytes read from the pipe
        self._line = bytearray()
        self._cut = False  # the current line passed LINE_MAX

    @property
    def truncated(self) -> bool:
        return self.seen > self.written

    def feed(self, data: bytes) -> None:
        self.seen += len(data)
        room = self.cap - self.written
        if room > 0:
            part = data[:room]
            if self.sink is None:
                self.kept += part
            else:
                self.sink.write(part)
                self.sink.flush()
            self.written += len(part)
        if self.on_line is not None:
            self._lines(data)

    def _lines(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end + 1]
            if not self._cut:
                self._line += piece[:LINE_MAX - len(self._line)]
                self._cut = len(self._line) >= LINE_MAX and not self._line.endswith(b"\n")
            if end < 0:
                return
            self._emit()
            start = end + 1

    def _emit(self) -> None:
        if self._line:
            self.on_line(self._line.decode("utf-8", "replace"))
        self._line = bytearray()
        self._cut = False

    def close(self) -> None:
        if self.on_line is not None:
            self._emit()

    def report(self) -> dict:
        """For a manifest or report: bytes kept and bytes read."""
        return {"kept": self.written, "read": self.seen}


@dataclass
class Ran:
    """How a run ended."""

    exit_code: int | None  # None: killed by a signal the runner sent, or never ended
    timed_out: bool = False
    interrupted: bool = False  # Ctrl-C while it ran (the command was stopped as on a timeout)
    seconds: float = 0.0
    held_open: bool = False  # its pipes were still open ``grace`` seconds after it ended
    left_running: list[str] = field(default_factory=list)  # "pid 123 (name)" that could not be stopped


# ---- processes (Linux /proc; elsewhere only the group is known) -------------------------------------
def _signal(pid: int, signum: int) -> None:
    """os.kill; a test replaces it to stand for a descendant that refuses to die."""
    os.kill(pid, signum)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _table() -> dict[int, tuple[int, int, str, str]]:
    """pid -> (ppid, pgid, state, name) of every process /proc shows; {} without /proc."""
    from topolint.model.numbers import decimal

    found = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        pid = decimal(name)
        if pid is None:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        head, _, tail = text.rpartition(")")
        fields = tail.split()
        ppid, pgid = (decimal(fields[1]), decimal(fields[2])) if len(fields) >= 3 else (None, None)
        if ppid is not None and pgid is not None:
            found[pid] = (ppid, pgid, fields[0], head.partition("(")[2][:64])
    return found


def _children(table) -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        tree.setdefault(ppid, []).append(pid)
    return tree


def _alive(entry) -> bool:
    return entry is not None and entry[2] not in ("Z", "X", "x")


class _Subreaper:
    """This process as the child subreaper while a command runs (Linux), then as it was."""

    def __init__(self):
        self.previous: int | None = None
        self._prctl = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                self._ctypes = ctypes
                self._prctl = ctypes.CDLL(None, use_errno=True).prctl
            except (OSError, AttributeError):
                self._prctl = None

    @property
    def available(self) -> bool:
        return self._prctl is not None

    def __enter__(self):
        if self._prctl is not None:
            value = self._ctypes.c_int(0)
            if self._prctl(_PR_GET_CHILD_SUBREAPER, self._ctypes.byref(value), 0, 0, 0) == 0:
                self.previous = value.value
                if self._prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                    self.previous = None
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None and not self.previous:
            self._prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


class _Family:
    """The command's processes: its group, its descendants (while their parents live) and what
    this process adopted since the run began (children it did not have before, but the command)."""

    def __init__(self, process: subprocess.Popen, before: set[int]):
        self.process, self.before, self.me = process, before, os.getpid()
        self.refused: dict[int, str] = {}

    def members(self, table) -> set[int]:
        tree = _children(table)
        roots = {pid for pid in tree.get(self.me, []) if pid not in self.before and pid != self.process.pid}
        if self.process.returncode is None:
            roots.add(self.process.pid)
        found, todo = set(), list(roots)
        while todo:
            pid = todo.pop()
            if pid not in found:
                found.add(pid)
                todo.extend(tree.get(pid, []))
        found |= {pid for pid, entry in table.items() if entry[1] == self.process.pid}  # the group
        found.discard(self.me)
        return found

    def adopted(self, table) -> list[int]:
        return [pid for pid, entry in table.items()
                if entry[0] == self.me and pid not in self.before and pid != self.process.pid]

    def signal(self, signum: int, table=None) -> None:
        """``signum`` to the group and to every member found."""
        _signal_group(self.process.pid, signum)
        table = _table() if table is None else table
        for pid in sorted(self.members(table)):
            if _alive(table.get(pid)) or (pid == self.process.pid and not table):
                self._send(pid, signum, table)

    def _send(self, pid: int, signum: int, table) -> None:
        try:
            _signal(pid, signum)
        except ProcessLookupError:
            pass
        except PermissionError:
            self.refused[pid] = table[pid][3] if pid in table else "?"

    def reap(self, table=None) -> None:
        """waitpid the zombies this run adopted (never the command itself: Popen reaps it)."""
        table = _table() if table is None else table
        for pid in self.adopted(table):
            if not _alive(table.get(pid)):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def kill_all(self, within: float) -> None:
        """SIGKILL the group and every member until none is alive (each round reaches what the
        last one orphaned) or ``within`` seconds have passed."""
        end = time.monotonic() + within
        while True:
            self.process.poll()
            table = _table()
            if not table:  # no /proc: the group is all that can be reached
                _signal_group(self.process.pid, signal.SIGKILL)
                return
            self.reap(table)
            live = [p for p in self.members(table) if _alive(table.get(p)) and p not in self.refused]
            if not live or time.monotonic() >= end:
                return
            self.signal(signal.SIGKILL, table)
            time.sleep(0.01)

    def left_running(self) -> list[str]:
        table = _table()
        self.reap(table)
        live = {p for p in self.members(table) if _alive(table.get(p))}
        if self.process.returncode is None and self.process.poll() is None:
            live.add(self.process.pid)
        return [f"pid {p} ({table[p][3] if p in table else '?'})" for p in sorted(live)]


# ---- the run ----------------------------------------------------------------------------------------
def run(argv: list[str], *, env: dict[str, str], stdout: Stream | None, stderr: Stream, timeout: float,
        grace: float, terminate: bool = False) -> Ran:
    """Run ``argv`` bounded as the module says; ``stdout=None`` sends it to /dev/null. Raises
    OSError when it cannot start (nothing is then left running)."""
    start = time.monotonic()
    before = _own_children()
    with _Subreaper():
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE if stdout is not None else subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, env=env, start_new_session=True)
        family = _Family(process, before)
        streams = {process.stderr: stderr}
        if stdout is not None:
            streams[process.stdout] = stdout
        ran = Ran(None)
        try:
            _read(process, family, streams, ran, start + timeout, grace, terminate)
        finally:
            family.kill_all(within=max(0.2, min(grace, 1.0)))
            for pipe, stream in streams.items():
                pipe.close()
                stream.close()
        ran.left_running = family.left_running()
    family.reap()  # what was orphaned to this process just before the subreaper was turned off
    ran.exit_code = process.returncode
    ran.seconds = round(time.monotonic() - start, 3)
    return ran


def _own_children() -> set[int]:
    me = os.getpid()
    return {pid for pid, entry in _table().items() if entry[0] == me}


def _read(process, family: _Family, streams: dict, ran: Ran, deadline: float, grace: float,
          terminate: bool) -> None:
    """Read until the command ended and its pipes closed, stopping it past ``deadline`` (or on
    Ctrl-C); reading stops ``grace`` seconds after it ended or was killed."""
    selector = selectors.DefaultSelector()
    for pipe, stream in streams.items():
        selector.register(pipe.fileno(), selectors.EVENT_READ, stream)
    until = None  # when reading stops
    kill_at = None  # SIGKILL then (after a SIGTERM)
    stopping = False
    try:
        while True:
            try:
                now = time.monotonic()
                if until is None and process.poll() is not None:
                    until = now + grace
                if until is not None and (not selector.get_map() or now >= until):
                    ran.held_open = bool(selector.get_map())
                    return
                if not stopping and (now >= deadline or ran.interrupted):
                    stopping = True
                    ran.timed_out = not ran.interrupted
                    if terminate:
                        family.signal(signal.SIGTERM)
                        kill_at = now + grace
                    else:
                        family.signal(signal.SIGKILL)
                        until = now + grace
                elif kill_at is not None and until is None and now >= kill_at:
                    family.signal(signal.SIGKILL)
                    until = now + grace
                wait = _POLL if stopping else min(_POLL, max(0.0, deadline - now))
                _pump(selector, process, wait)
            except KeyboardInterrupt:
                ran.interrupted = True
    finally:
        selector.close()


def _pump(selector, process, wait: float) -> None:
    if not selector.get_map():
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        return
    for key, _ in selector.select(wait):
        try:
            data = os.read(key.fd, CHUNK)
        except OSError:
            data = b""
        if data:
            key.data.feed(data)
        else:
            selector.unregister(key.fd)
