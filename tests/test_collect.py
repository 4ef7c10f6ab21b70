"""`topolint collect` against stand-in executables on PATH, and node bundles read by `check`.

The stand-ins are small scripts in a temporary bin/: one prints a real-looking matrix, one hangs
(and leaves a child holding its pipe), one fails, one is refused; every other tool of the table
is missing. Nothing here needs a GPU, lspci or root.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli, stand_in

from topolint.commands.collect import collect, load_table, run_command
from topolint.parsers.bundle_manifest import MANIFEST_NAME

MATRIX = FIXTURES / "rules" / "NUMA001" / "good_matrix.txt"


_stand_in = stand_in


@pytest.fixture
def stand_ins(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stand_in(bin_dir, "nvidia-smi", f"""
if sys.argv[1:] == ["topo", "-m"]:
    sys.stdout.write(open({str(MATRIX)!r}).read())
elif sys.argv[1:] == ["--version"]:
    print("NVIDIA-SMI version  : 570.86.15")
else:
    print("NVML: Unable to retrieve NVLink information", file=sys.stderr); sys.exit(3)
""")
    # Hangs, and its child keeps stdout open: only killing the process group ends it.
    _stand_in(bin_dir, "dmesg", "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                "time.sleep(60)")
    _stand_in(bin_dir, "numactl", "print('libnuma: This system does not support NUMA policy', file=sys.stderr); "
                                  "sys.exit(1)")
    _stand_in(bin_dir, "systemd-detect-virt", "print('none'); sys.exit(1)")
    _stand_in(bin_dir, "cat", "print('dmesg: read kernel buffer failed: Operation not permitted', "
                              "file=sys.stderr); sys.exit(1)")
    (bin_dir / "lspci").write_text("not executable\n", encoding="utf-8")  # present, but may not run
    (bin_dir / "lspci").chmod(0o644)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _table(hang_after: float = 1.5, others: float = 30.0):
    """The shipped table with short timeouts for the hanging stand-in (dmesg) and generous ones for
    the rest: a loaded CI machine may take seconds to start a Python stand-in."""
    import dataclasses

    return [dataclasses.replace(c, timeout=hang_after if c.argv[0] == "dmesg" else others) for c in load_table()]


def _by_file(result) -> dict[str, dict]:
    return {c["file"]: c for c in result.manifest["commands"]}


def test_collect_records_every_outcome_and_keeps_going(stand_ins, tmp_path):
    out = tmp_path / "bundle"
    start = time.monotonic()
    result = collect(out, _table())
    assert time.monotonic() - start < 20, "a hung command was not killed"
    commands = _by_file(result)
    assert commands["nvidia-smi-topo.txt"]["status"] == "ok"
    assert (out / "nvidia-smi-topo.txt").read_text() == MATRIX.read_text()
    assert commands["dmesg.txt"]["status"] == "timeout"
    assert commands["numactl-H.txt"]["status"] == "failed"
    assert commands["numactl-H.txt"]["exit_code"] == 1
    assert "does not support NUMA" in commands["numactl-H.txt"]["message"]
    assert commands["systemd-detect-virt.txt"]["status"] == "ok"  # exit 1 with "none" is its success
    assert commands["cmdline.txt"]["status"] == "denied"  # stderr says "Operation not permitted"
    assert commands["lspci-vvv.txt"]["status"] == "denied"  # not executable
    assert commands["lstopo.xml"]["status"] == "missing"
    assert not (out / "lstopo.xml").exists(), "a command that never started leaves no file"
    assert commands["nvidia-smi-nvlink.txt"]["status"] == "failed"
    assert commands["nvidia-smi-q.txt"]["argv"] == ["nvidia-smi", "-q"]
    assert "nccl-topo-dump.xml" not in commands, "the NCCL dump is off by default"
    assert result.manifest["tools"]["nvidia-smi"].startswith("NVIDIA-SMI version")
    # Each command's argv is recorded as run, never a shell string.
    assert commands["lspci-vvv.txt"]["argv"] == ["lspci", "-vvv", "-D", "-nn"]
    on_disk = json.loads((out / MANIFEST_NAME).read_text())
    assert on_disk == result.manifest


def test_nccl_dump_option_runs_only_when_asked_and_passes_the_gpu_count(stand_ins, tmp_path):
    _stand_in(stand_ins, "all_reduce_perf", """
import os
open(os.environ["NCCL_TOPO_DUMP_FILE"], "w").write('<system version="1"></system>\\n')
print(" ".join(sys.argv[1:]))
""")
    result = collect(tmp_path / "b", _table(), options=frozenset({"nccl-dump"}))
    dump = _by_file(result)["nccl-topo-dump.xml"]
    assert dump["status"] == "ok"
    assert dump["argv"][-2:] == ["-g", "8"]  # the matrix stand-in shows 8 GPUs
    assert (tmp_path / "b" / "nccl-topo-dump.xml").read_text().startswith("<system")


def test_run_command_kills_the_whole_process_group(tmp_path):
    script = tmp_path / "hang"
    _stand_in(tmp_path, "hang", "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                "time.sleep(60)")
    start = time.monotonic()
    outcome = run_command([str(script)], tmp_path / "out.txt", timeout=1.0)
    assert outcome.status == "timeout"
    assert time.monotonic() - start < 10


def test_table_rows_are_complete():
    table = load_table()
    files = [c.file for c in table]
    assert len(files) == len(set(files))
    for command in table:
        assert command.argv and command.timeout > 0 and command.needs, command.file
        assert "/" not in command.file
        assert not any(" " in a for a in command.argv[:1]), "argv[0] is a program name, not a shell line"


def test_check_reads_a_bundle_as_one_node_and_reports_missing_evidence(stand_ins, tmp_path):
    out = tmp_path / "node17"
    collect(out, _table())
    (out / "notes.txt").write_text("rack 4, slot 2\n", encoding="utf-8")
    result = run_cli("check", "node17", "--format", "json", "--select", "ALL", "-v", cwd=tmp_path)
    findings = json.loads(result.stdout)["findings"]
    partial = {f["entity"].rsplit("/", 1)[1]: f for f in findings if f["code"] == "TL005"}
    host = os.uname().nodename
    assert {f["node"] for f in findings} == {host}, "the node is named after the manifest's host"
    assert set(partial) == {"dmesg.txt", "numactl-H.txt", "cmdline.txt", "lspci-vvv.txt", "lspci-tv.txt",
                            "lstopo.xml", "nvidia-smi-nvlink.txt", "nvidia-smi-q.txt", "dmi-product-name.txt",
                            # the fabric rows: not on the stand-ins' PATH (per-interface rows are skipped)
                            "ibstat.txt", "ibv_devinfo.txt", "ibdev2netdev.txt", "show_gids.txt", "ip-addr.json",
                            "ip-route.json", "mountinfo.txt",
                            # the version rows (FLEET003): cat is refused, ofed_info and grep are missing
                            "nvidia-driver-version.txt", "ofed-info.txt", "proc-version.txt", "modules.txt",
                            "module-versions.txt"}
    assert "timed out" in partial["dmesg.txt"]["message"]
    assert partial["dmesg.txt"]["path"] == "node17/topolint-bundle.json"
    assert partial["dmesg.txt"]["line"] > 1
    # The matrix was read: its rules ran on this node.
    assert "NUMA001 not run" not in result.stderr
    assert "node17/notes.txt: not listed in the bundle manifest" in result.stderr


def test_a_cluster_folder_of_bundles_is_one_node_per_bundle(stand_ins, tmp_path):
    for name in ("a", "b"):
        collect(tmp_path / "cluster" / name, _table())
        manifest = tmp_path / "cluster" / name / MANIFEST_NAME
        manifest.write_text(manifest.read_text().replace(f'"host": "{os.uname().nodename}"', f'"host": "gpu-{name}"'))
    result = run_cli("check", "cluster", "--format", "json", cwd=tmp_path)
    assert {f["node"] for f in json.loads(result.stdout)["findings"]} == {"gpu-a", "gpu-b"}


def test_a_broken_manifest_is_tl001_and_the_files_are_still_read(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / MANIFEST_NAME).write_text('{"topolint_bundle": 1,\n  "commands": [\n    {"file": "../x", "status": "ok"}\n  ]\n}\n')
    (bundle / "topo.txt").write_text(MATRIX.read_text())
    result = run_cli("check", "b", "--format", "concise", "-v", cwd=tmp_path)
    assert result.exit_code == 2
    assert "b/topolint-bundle.json:3: TL001" in result.stdout
    assert "not a plain file name" in result.stdout
    assert "NUMA001 not run" not in result.stderr


def test_a_listed_file_that_is_absent_is_tl001_at_its_manifest_line(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / MANIFEST_NAME).write_text('{"topolint_bundle": 1, "host": "n1",\n  "commands": [\n'
                                        '    {"file": "nvidia-smi-topo.txt", "argv": ["nvidia-smi", "topo", "-m"], '
                                        '"status": "ok", "format": "nvidia-smi-topo"}\n  ]\n}\n')
    result = run_cli("check", "b", "--format", "concise", cwd=tmp_path)
    assert result.exit_code == 2
    assert "b/topolint-bundle.json:3:1: TL001" in result.stdout
    assert "not a regular file in the bundle" in result.stdout


def test_collect_cli_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    result = run_cli("collect", "-o", "x", cwd=tmp_path)
    assert result.exit_code == 2
    assert "not an empty folder" in result.stderr
