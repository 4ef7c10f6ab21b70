"""Bounded subprocesses (commands/_processes.py) for ``collect`` and ``live``, against stand-in
executables written into tmp_path: a ``setsid`` grandchild holding the pipes (the command hangs,
or exits at once), a stderr flood, a stdout flood, output without newlines, a descendant that
ignores SIGTERM, and one that cannot be stopped (a test hook refuses its signals, as for a
setuid process). Memory is measured in a child process (its VmHWM), floods are bounded so the
old code fails without exhausting the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from topolint.commands import _processes, collect
from topolint.commands.collect import CollectCommand, run_command
from topolint.commands.live import run_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="descendants are found through /proc")

ESCAPE = """
import os, sys, time, signal
# A grandchild in its own session (out of the command's process group) holding stdout and stderr.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        if IGNORE_TERM:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open(PIDFILE, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(8)
        os._exit(0)
    os._exit(0)
while not os.path.exists(PIDFILE) or not open(PIDFILE).read():
    time.sleep(0.01)
print("hello", flush=True)
time.sleep(HANG)
"""


def _script(folder: Path, name: str, body: str, **values) -> Path:
    path = folder / name
    head = "".join(f"{k} = {v!r}\n" for k, v in values.items())
    path.write_text(f"#!{sys.executable}\n{head}{textwrap.dedent(body)}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None


def _gone(pid: int, within: float = 2.0) -> bool:
    end = time.monotonic() + within
    while _state(pid) not in (None,) and time.monotonic() < end:
        time.sleep(0.02)
    return _state(pid) is None  # neither running nor a zombie left to this process


def _zombie_children() -> list[int]:
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if fields[1] == str(me) and fields[0] == "Z":
                found.append(int(name))
    return found


def _pid(pidfile: Path) -> int:
    return int(pidfile.read_text())


def _kill(pid: int) -> None:
    """Clean up after a test: kill and, when this process adopted it, reap it."""
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


@pytest.mark.parametrize("hang", [30, 0])
def test_collect_stops_a_setsid_grandchild_holding_its_pipes(tmp_path, hang):
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, "escapes", ESCAPE, PIDFILE=str(pidfile), HANG=hang, IGNORE_TERM=True)
    start = time.monotonic()
    outcome = run_command([str(script)], tmp_path / "out.txt", timeout=1.0, grace=0.5)
    elapsed = time.monotonic() - start
    grandchild = _pid(pidfile)
    try:
        assert elapsed < 3.5, f"collect waited {elapsed:.1f} s for a pipe an escaped grandchild held"
        assert _gone(grandchild), "the escaped grandchild was left running (or left a zombie)"
        assert (tmp_path / "out.txt").read_text() == "hello\n"
        if hang:
            assert outcome.status == "timeout"
        else:  # exited at once: its output is complete; reading stopped --grace after it exited
            assert outcome.status == "ok" and "reading stopped 0.5 s after it exited" in outcome.message
        assert not outcome.left_running
        assert not _zombie_children()
        assert _processes._Subreaper().available and _subreaper_now() == 0, "the subreaper setting was not restored"
    finally:
        _kill(grandchild)


def _subreaper_now() -> int:
    import ctypes

    value = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(value), 0, 0, 0)
    return value.value


def test_a_descendant_that_cannot_be_stopped_is_named_in_the_manifest(tmp_path, monkeypatch):
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, "escapes", ESCAPE, PIDFILE=str(pidfile), HANG=30, IGNORE_TERM=False)
    real = _processes._signal

    def refuse(pid: int, signum: int) -> None:  # stands for a setuid descendant: EPERM
        if pidfile.exists() and pidfile.read_text() and pid == _pid(pidfile):
            raise PermissionError(1, "Operation not permitted")
        real(pid, signum)

    monkeypatch.setattr(_processes, "_signal", refuse)
    row = CollectCommand(file="escapes.txt", argv=(str(script),), timeout=1.0, needs="a test")
    start = time.monotonic()
    result = collect.collect(tmp_path / "bundle", [row], grace=0.5)
    elapsed = time.monotonic() - start
    grandchild = _pid(pidfile)
    try:
        entry = result.manifest["commands"][0]
        assert elapsed < 4.5, f"reading went on {elapsed:.1f} s while the grandchild held the pipe"
        assert entry["status"] == "timeout"
        assert entry["left_running"] == [f"pid {grandchild} (escapes)"]
        assert f"could not stop pid {grandchild} (escapes)" in entry["message"]
        on_disk = json.loads((tmp_path / "bundle" / "topolint-bundle.json").read_text())
        assert on_disk["commands"][0]["left_running"] == entry["left_running"]
    finally:
        _kill(grandchild)


def _peak_kb(tmp_path: Path, code: str) -> tuple[dict, int]:
    """Run ``code`` (which sets ``result``) in a child Python; its result and VmHWM in kB."""
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(code) + textwrap.dedent("""
        import json
        peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
        print(json.dumps({"result": result, "peak_kb": int(peak)}))
        """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(driver)], capture_output=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answer = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return answer["result"], answer["peak_kb"]


FLOOD = """
import sys
block = (b"x" * 1023 + b"\\n") if NEWLINES else b"x" * 1024
chunk = block * 1024
for _ in range(MIB):
    getattr(sys, STREAM).buffer.write(chunk)
"""
PEAK_LIMIT_KB = 120 * 1024  # the interpreter and topolint's modules take ~40 MB; the floods are 256 MiB


def test_a_stderr_flood_does_not_grow_collect(tmp_path):
    flood = _script(tmp_path, "flood", FLOOD, STREAM="stderr", MIB=256, NEWLINES=True)
    result, peak = _peak_kb(tmp_path, f"""
        from pathlib import Path
        from topolint.commands.collect import run_command
        o = run_command([{str(flood)!r}], Path("out.txt"), timeout=20.0, grace=0.5)
        result = {{"status": o.status, "truncated": o.truncated, "message": o.message}}
        """)
    assert peak < PEAK_LIMIT_KB, f"collect peaked at {peak} kB reading a 256 MiB stderr flood"
    assert result["truncated"] == {"stderr": {"kept": collect.STDERR_CAP, "read": 256 << 20}}
    assert result["status"] == "ok"  # a noisy stderr is no failure


def test_a_stdout_flood_is_capped_kept_and_marked_in_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "STDOUT_CAP", 1 << 20)
    flood = _script(tmp_path, "flood", FLOOD, STREAM="stdout", MIB=64, NEWLINES=True)
    row = CollectCommand(file="flood.txt", argv=(str(flood),), timeout=20.0, needs="a test")
    result = collect.collect(tmp_path / "bundle", [row], grace=0.5)
    entry = result.manifest["commands"][0]
    kept = (tmp_path / "bundle" / "flood.txt").read_bytes()
    assert len(kept) == 1 << 20 and kept.startswith(b"x" * 1023 + b"\n"), "what was read up to the cap is kept"
    assert entry["truncated"] == {"stdout": {"kept": 1 << 20, "read": 64 << 20}}
    # A cut output is no evidence: check reports it as missing (TL005), never judges half a file.
    assert entry["status"] == "failed" and "output over the 1048576-byte cap" in entry["message"]


def test_live_output_without_newlines_does_not_grow_memory(tmp_path):
    flood = _script(tmp_path, "all_reduce_perf", FLOOD, STREAM="stdout", MIB=256, NEWLINES=False)
    result, peak = _peak_kb(tmp_path, f"""
        from pathlib import Path
        import topolint.commands.live as live
        live.OUTPUT_CAP = 1 << 20
        longest = []
        done = live.run_process([{str(flood)!r}], {{}}, Path("out.txt"), Path("err.txt"), 20.0, 0.5,
                                on_line=lambda line: longest.append(len(line)))
        result = {{"exit": done.exit_code, "truncated": done.truncated, "longest": max(longest or [0]),
                   "size": Path("out.txt").stat().st_size}}
        """)
    assert peak < PEAK_LIMIT_KB, f"live peaked at {peak} kB reading 256 MiB without a newline"
    assert result["size"] == 1 << 20
    assert result["truncated"] == {"out.txt": {"kept": 1 << 20, "read": 256 << 20}}
    assert result["longest"] <= _processes.LINE_MAX


def test_live_stops_a_descendant_that_ignores_sigterm_and_left_the_group(tmp_path):
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, "all_reduce_perf", ESCAPE, PIDFILE=str(pidfile), HANG=30, IGNORE_TERM=True)
    start = time.monotonic()
    finished = run_process([str(script)], {}, tmp_path / "out.txt", tmp_path / "err.txt", 1.0, 0.5)
    elapsed = time.monotonic() - start
    grandchild = _pid(pidfile)
    try:
        assert finished.timed_out
        assert elapsed < 4.0, elapsed
        assert _gone(grandchild), "a descendant out of the group that ignores SIGTERM was left running"
        assert not finished.left_running and not _zombie_children()
    finally:
        _kill(grandchild)


def test_live_report_marks_a_cut_stream(tmp_path, monkeypatch):
    from conftest import ROOT, run_cli

    import topolint.commands.live as live

    monkeypatch.setattr(live, "OUTPUT_CAP", 256 << 10)
    monkeypatch.setenv("STANDIN_MODE", "healthy")
    _script(tmp_path, "all_reduce_perf", """
        import subprocess, sys
        code = subprocess.call([STANDIN, *sys.argv[1:]])
        sys.stderr.buffer.write(b"noise\\n" * 100000)
        sys.exit(code)
        """, STANDIN=str(ROOT / "tests" / "standins" / "all_reduce_perf"))
    result = run_cli("live", "--nccl-tests", tmp_path, "--gpus", "8", "--sizes", "1G..8G", "-o", tmp_path / "out",
                     "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    note = "nccl-stderr.log: output over the 262144-byte cap: the first 262144 bytes kept, 600000 read"
    assert (tmp_path / "out" / "report.txt").read_text().startswith(f"# warning: {note}\n")
    assert f"topolint live: warning: {note}" in result.stderr
    assert (tmp_path / "out" / "nccl-stderr.log").stat().st_size == 256 << 10


def test_the_caps_are_what_check_reads():
    from topolint.commands import live
    from topolint.inputs.source import MAX_INPUT_BYTES

    assert collect.STDOUT_CAP == live.OUTPUT_CAP == MAX_INPUT_BYTES


GPU_LIST = ESCAPE.replace('print("hello", flush=True)',
                         'print("GPU 0: H100 (UUID: a)\\nGPU 1: H100 (UUID: b)", flush=True)')


def test_live_counts_gpus_through_the_bounded_runner(tmp_path, monkeypatch):
    """`nvidia-smi -L` that exits at once and leaves a grandchild holding its pipes: counted
    GRACE seconds after it exited (subprocess.run waited for the pipes until its timeout)."""
    from topolint.commands import live

    pidfile = tmp_path / "pid"
    _script(tmp_path, "nvidia-smi", GPU_LIST, PIDFILE=str(pidfile), HANG=0, IGNORE_TERM=True)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(live, "GPU_LIST_GRACE", 0.5, raising=False)
    monkeypatch.setattr(live, "GPU_LIST_TIMEOUT", 5.0, raising=False)
    start = time.monotonic()
    try:
        assert live.local_gpus(None) == 2
        assert time.monotonic() - start < 3.5
    finally:
        _kill(_pid(pidfile))


def test_health_drain_runs_scontrol_through_the_bounded_runner(tmp_path, monkeypatch):
    """scontrol that drained and exited, leaving a grandchild holding its pipes: the drain is
    said GRACE seconds later, not taken for a scontrol that did not finish."""
    from topolint.commands import health

    pidfile = tmp_path / "pid"
    _script(tmp_path, "scontrol", ESCAPE, PIDFILE=str(pidfile), HANG=0, IGNORE_TERM=True)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(health, "SCONTROL_GRACE", 0.5, raising=False)
    start = time.monotonic()
    try:
        assert health.drain("n1", "NVL004", timeout=3.0) == "drained n1 (scontrol update NodeName=n1 State=DRAIN)"
        assert time.monotonic() - start < 2.5
        assert _gone(_pid(pidfile)), "the escaped grandchild was left running"
    finally:
        _kill(_pid(pidfile))
