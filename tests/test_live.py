"""`topolint live` against stand-in executables (tests/standins): all_reduce_perf prints recorded-
style output for each scenario (STANDIN_MODE); srun stands in for a site launcher. Exact findings
are asserted; every failure is exit 2 with nothing left running."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from topolint.commands.live import LiveError, LiveOptions, build_argv, find_binary, run_live

STANDINS = ROOT / "tests" / "standins"
H100 = "fixtures/estimate/hgx-h100-8gpu-8x400g.xml"


@pytest.fixture
def mode(monkeypatch):
    def choose(name: str) -> None:
        monkeypatch.setenv("STANDIN_MODE", name)
    return choose


def _live(tmp_path, *extra):
    result = run_cli("live", "--nccl-tests", STANDINS, "--gpus", "8", "--sizes", "1G..8G", "-o", tmp_path / "out",
                     "--format", "json", *extra)
    assert "Traceback" not in result.stderr
    findings = json.loads(result.stdout)["findings"] if result.exit_code != 2 else None
    return result, findings


def _codes(findings) -> list[tuple[str, int]]:
    return [(f["code"], f["line"]) for f in findings]


def test_healthy_run_confirms_the_estimate(tmp_path, mode):
    mode("healthy")
    result, findings = _live(tmp_path, "--topology", H100)
    assert result.exit_code == 0 and findings == []
    # The estimate's figure is the bandwidth model's (topolint/estimate); the verdict is what is tested.
    verdict = re.search(r"plateau 468.2 GB/s at 8 GiB is (\d+)% of ([\d.]+) GB/s \(topolint estimate \(nvls\) on ", result.stderr)
    assert verdict and 80 <= int(verdict.group(1)) <= 110, result.stderr
    out = tmp_path / "out"
    assert (out / "nccl-tests.txt").read_text().count("NCCL INFO") > 10  # NCCL_DEBUG=INFO captured
    report = (out / "report.txt").read_text()
    assert report.startswith("# ") and "nccl-tests.txt:55: all_reduce_perf: plateau 468.2" in report
    assert report.endswith("All checks passed.\n")


def test_low_plateau_refutes_it(tmp_path, mode):
    mode("low")
    result, findings = _live(tmp_path, "--topology", H100)
    assert result.exit_code == 1 and _codes(findings) == [("PERF001", 55)]
    low = re.search(r"91.4 GB/s at 8 GiB is (\d+)% of the ([\d.]+) GB/s expected \(topolint estimate", findings[0]["message"])
    assert low and int(low.group(1)) < 33


def test_without_a_topology_the_gpu_model_sets_the_expectation(tmp_path, mode):
    mode("low")
    result, findings = _live(tmp_path)
    assert _codes(findings) == [("PERF001", 55)] and "H100 SXM5 NVSwitch board" in findings[0]["message"]


def test_wrong_results(tmp_path, mode):
    mode("wrong")
    result, findings = _live(tmp_path, "--topology", H100)
    assert result.exit_code == 1 and _codes(findings) == [("PERF006", 55)]


def test_socket_fallback_through_a_stand_in_launcher(tmp_path, mode, monkeypatch):
    mode("socket")
    argv_file = tmp_path / "srun-argv.json"
    monkeypatch.setenv("STANDIN_ARGV_FILE", str(argv_file))
    launcher = f"{STANDINS / 'srun'} -N2 --ntasks-per-node=8 --export='ALL,TAG=a b'"
    result, findings = _live(tmp_path, "--topology", H100, "--launcher", launcher)
    assert result.exit_code == 1
    assert sorted(c for c, _ in _codes(findings)) == ["PERF001", "PERF003"]
    socket = next(f for f in findings if f["code"] == "PERF003")
    assert socket["entity"] == "live/netdev/eth0" and "NET/IB : No device found." in socket["message"]
    # The launcher string is split like a shell would, never run by one: the quoted word stays one.
    recorded = json.loads(argv_file.read_text())
    assert recorded[1:4] == ["-N2", "--ntasks-per-node=8", "--export=ALL,TAG=a b"]
    assert recorded[5:] == ["-b", "1073741824", "-e", "8589934592", "-f", "2", "-c", "1", "-g", "1"]


def test_multi_node_healthy_run_through_the_launcher(tmp_path, mode):
    mode("healthy")
    result, findings = _live(tmp_path, "--topology", H100, "--launcher", f"{STANDINS / 'srun'} -N2 --ntasks-per-node=8")
    assert result.exit_code == 0 and findings == []
    assert re.search(r"is \d+% of [\d.]+ GB/s \(topolint estimate \(nvls_tree\)", result.stderr), result.stderr


def test_crash_is_a_clear_error(tmp_path, mode):
    mode("crash")
    result, _ = _live(tmp_path)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("topolint live: error: all_reduce_perf exited with status 1: hgx01: Test NCCL failure")


def test_garbage_output_is_a_clear_error(tmp_path, mode):
    mode("garbage")
    result, _ = _live(tmp_path)
    assert result.exit_code == 2 and "is not nccl-tests output" in result.stderr


def test_missing_binary(tmp_path):
    result = run_cli("live", "--nccl-tests", tmp_path, "--gpus", "8", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "all_reduce_perf not found" in result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")  # a zombie is dead


@pytest.mark.parametrize("scenario", ["hang", "hang_ignore_term"])
def test_hang_past_the_timeout_leaves_nothing_running(tmp_path, mode, monkeypatch, scenario):
    mode(scenario)
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("STANDIN_PIDFILE", str(pidfile))
    start = time.monotonic()
    result, _ = _live(tmp_path, "--timeout", "1.5", "--grace", "0.5")
    assert time.monotonic() - start < 20
    assert result.exit_code == 2 and "ran past --timeout 1.5 s" in result.stderr and "SIGKILL after 0.5 s" in result.stderr
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), pids


def test_non_mpi_build_under_a_launcher_is_reported(tmp_path, mode):
    mode("non_mpi")
    result, findings = _live(tmp_path, "--launcher", f"{STANDINS / 'srun'} -N2 --ntasks-per-node=2")
    assert [(f["code"], f["severity"]) for f in findings] == [("PERF002", "info")]
    assert findings[0]["message"].startswith("4 copies of a 1-rank all_reduce_perf run on 2 host(s)")


def test_progress_per_size_and_isolation_settings(tmp_path, mode):
    mode("healthy")
    shown = []
    options = LiveOptions(nccl_tests=str(STANDINS), gpus=8, sizes="1G..8G", output_dir=tmp_path / "out",
                          isolate="network", progress=shown.append)
    result = run_live(options)
    assert shown == ["      1 GiB  busbw 362.48 GB/s", "      2 GiB  busbw 422.89 GB/s", "      4 GiB  busbw 453.1 GB/s",
                     "      8 GiB  busbw 468.2 GB/s"]
    assert result.environment == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH,ENV,TUNING",
                                  "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
    nvlink = LiveOptions(isolate="nvlink")
    from topolint.commands.live import environment

    assert environment(nvlink)["NCCL_P2P_LEVEL"] == "NVL" and environment(nvlink)["NCCL_SHM_DISABLE"] == "1"


def test_mpirun_without_nccl_debug_forwarding_is_warned_about():
    from topolint.commands.live import launcher_warnings

    assert launcher_warnings(LiveOptions(launcher="mpirun -np 16 -H a:8,b:8"))
    assert not launcher_warnings(LiveOptions(launcher="mpirun -np 16 -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS"))
    assert not launcher_warnings(LiveOptions(launcher="srun -N2 --ntasks-per-node=8"))


def test_argv_and_binary_lookup(tmp_path):
    binary = find_binary("all_reduce_perf", str(STANDINS))
    assert binary == STANDINS / "all_reduce_perf"
    argv = build_argv(binary, LiveOptions(gpus=4, sizes="1M..2G"))
    assert argv == [str(binary), "-b", "1048576", "-e", "2147483648", "-f", "2", "-c", "1", "-g", "4"]
    with pytest.raises(LiveError):
        build_argv(binary, LiveOptions(gpus=4, sizes="8G..1M"))


# ---- live judged against the estimate (issue 21) ------------------------------------------------------
HGX_MATRIX = "nvidia-smi-topo/hgx-h100-nv18-10nic-tabs-partial_nccl-issue-1264.txt"


def _estimate_of(topology: str, algorithm: str, protocol: str | None = None, nodes: int = 1) -> float:
    """What `topolint estimate` gives on the same node, NCCL version and GPU model as the run."""
    from topolint.estimate import Options, estimate
    from topolint.inputs.collect import collect

    est = estimate(collect([topology]).nodes, nodes=nodes, size=8 << 30, version="2.27.3",
                   options=Options(gpu_sm=90, algorithm=algorithm, protocol=protocol))
    return est.algorithm(algorithm).busbw_GBps


def test_live_on_a_matrix_is_judged_against_the_estimates_algorithm(tmp_path, mode, corpus, json_validator):
    """An HGX H100 topo -m matrix: live expected 370.8 GB/s (18 NVLinks x 20.6) and called 469
    GB/s 127%, while estimate selects NVLS on the same node. Now the same estimate: NVLS, since the
    log shows NVLS channels, assumed (no TUNING line), and what was compared is in the JSON."""
    mode("healthy")
    matrix = str(corpus / HGX_MATRIX)
    result, _ = _live(tmp_path, "--topology", matrix)
    document = json.loads(result.stdout)
    assert result.exit_code == 0 and json_validator.is_valid(document)
    last = document["measurements"][-1]
    assert (last["collective"], last["size"], last["algorithm"], last["protocol"], last["assumed"]) == (
        "allreduce", 8 << 30, "nvls", "Simple", True)
    assert last["expected_busbw_GBps"] == pytest.approx(_estimate_of(matrix, "nvls"), abs=0.01)
    assert 0.9 <= last["ratio"] <= 1.1 and last["busbw_GBps"] == 468.2
    assert [m["size"] for m in document["measurements"]] == [1 << 30, 2 << 30, 4 << 30, 8 << 30]
    verdict = re.search(r"plateau 468.2 GB/s at 8 GiB is (\d+)% of ([\d.]+) GB/s \(topolint estimate \(nvls\)",
                        result.stderr)
    assert verdict and float(verdict.group(2)) == pytest.approx(last["expected_busbw_GBps"], abs=0.05)
    assert "allreduce 8 GiB: busbw 468.2 GB/s" in result.stderr and "(nvls/Simple, assumed)" in result.stderr
    assert "SM90" in result.stderr  # the output's GPU model gave the SM the matrix does not state


def test_the_algorithm_nccl_logged_is_the_one_judged(tmp_path, mode, monkeypatch):
    """TUNING lines say NCCL ran the ring with Simple: each size is judged against the ring's
    Simple estimate, not assumed; on two nodes, against the two-node estimate."""
    mode("healthy")
    monkeypatch.setenv("STANDIN_ALGO", "RING/SIMPLE")
    result, _ = _live(tmp_path, "--topology", H100, "--launcher", f"{STANDINS / 'srun'} -N2 --ntasks-per-node=8")
    measurements = json.loads(result.stdout)["measurements"]
    assert {(m["algorithm"], m["protocol"], m["assumed"]) for m in measurements} == {("ring", "Simple", False)}
    assert measurements[-1]["expected_busbw_GBps"] == pytest.approx(
        _estimate_of(H100, "ring", "Simple", nodes=2), abs=0.01)
    assert "(ring/Simple, as the log says)" in result.stderr


def test_gpu_count_from_the_topology_when_nvidia_smi_is_absent(tmp_path, mode, monkeypatch, corpus):
    mode("healthy")
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(os.path.realpath(os.sys.executable))  # the stand-in's interpreter, no nvidia-smi
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    options = LiveOptions(nccl_tests=str(STANDINS), topology=str(corpus / HGX_MATRIX), sizes="1G..8G",
                          output_dir=tmp_path / "out")
    assert build_argv(STANDINS / "all_reduce_perf", options)[-2:] == ["-g", "8"]
    with pytest.raises(LiveError, match="give --gpus N"):
        build_argv(STANDINS / "all_reduce_perf", LiveOptions(sizes="1G..8G"))


def test_without_a_topology_measurements_have_no_expectation(tmp_path, mode):
    mode("healthy")
    result, _ = _live(tmp_path)
    measurements = json.loads(result.stdout)["measurements"]
    assert measurements and all(m["expected_busbw_GBps"] is None and m["ratio"] is None for m in measurements)


@pytest.fixture(scope="module")
def json_validator():
    import jsonschema

    schema = json.loads((ROOT / "docs" / "json-output.schema.json").read_text(encoding="utf-8"))
    return jsonschema.validators.validator_for(schema)(schema)
