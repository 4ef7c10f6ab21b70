"""nccl-tests output and NCCL_DEBUG=INFO logs: what the parsers read from real and hand-written files."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, run_cli

from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.model.measured import MeasuredFile
from topolint.parsers.nccl_log import parse_nccl_log
from topolint.parsers.nccl_tests import parse_nccl_tests, parse_row
from topolint.model.facts import Location

SAMPLES = FIXTURES / "measured"


def _tests(path) -> MeasuredFile:
    return parse_nccl_tests(SourceFile(str(path), path.read_text(encoding="utf-8")))


def _log(path) -> MeasuredFile:
    return parse_nccl_log(SourceFile(str(path), path.read_text(encoding="utf-8")))


def _validate(measured: MeasuredFile) -> None:
    """Parser output is built without validation; it must still satisfy the pydantic schema."""
    MeasuredFile.model_validate(measured.model_dump())


def test_every_corpus_table_and_log_is_sniffed_and_parses(corpus):
    for folder, fmt, parse in (("nccl-tests", "nccl-tests", _tests), ("nccl-log", "nccl-log", _log)):
        for path in sorted((corpus / folder).iterdir()):
            assert sniff(path.read_text(encoding="utf-8")) == fmt, path.name
            _validate(parse(path))


def test_bare_metal_h200_header_devices_rows_and_footer(corpus):
    measured = _tests(corpus / "nccl-tests" / "h200-2node-baremetal-good-475GBps_nccl-tests-issue-256.txt")
    (run,) = measured.runs
    assert run.header["nThread"] == 1 and run.header["nGpus"] == 1 and run.header["maxBytes"] == 17179869184
    assert run.step_kind == "factor" and run.header["warmup"] == 5
    assert len(run.devices) == 16 and run.hosts == ["fs-207", "fs-208"]
    assert (run.devices[8].rank, run.devices[8].host, run.devices[8].bus, run.devices[8].model) == (8, "fs-208", "0x18", "NVIDIA H200")
    assert [r.size for r in run.rows] == [1073741824, 3221225472, 9663676416]
    last = run.rows[-1]
    assert (last.out_of_place.busbw, last.in_place.busbw, last.out_of_place.wrong, last.root) == (488.81, 486.84, 0, -1)
    assert (run.out_of_bounds, run.out_of_bounds_verdict, run.avg_busbw) == (0, "OK", 475.782)
    assert run.rows[0].loc.line == 26 and run.avg_busbw_loc.line == 30
    assert measured.command is not None and "mpirun -np 16" in measured.command.message


def test_mpi_tags_interleaved_info_lines_and_old_bus_column(corpus):
    measured = _tests(corpus / "nccl-tests" / "aws-g4dn-2node-T4-efa-1nic-with-nccl-info_aws-do-eks.txt")
    (run,) = measured.runs
    assert [(d.host, d.bus, d.model) for d in run.devices] == [
        ("test-nccl-efa-worker-0", "0x35", "Tesla T4"), ("test-nccl-efa-worker-1", "0xf5", "Tesla T4")]
    assert len(run.rows) == 31 and run.rows[-1].in_place.busbw == 3.12
    log = measured.log
    assert [v.message for v in log.versions] == ["2.12.7"]
    assert {n.message for n in log.networks} == {"AWS Libfabric"}
    sends = [c for c in log.channels if c.direction == "send"]
    assert len(sends) == 4 and all(c.net == "AWS Libfabric" and c.net_device == 0 and not c.gdr for c in sends)
    assert {(i.rank, i.bus_id, i.host) for i in log.inits} == {(0, "35000", "test-nccl-efa-worker-0"),
                                                               (1, "f5000", "test-nccl-efa-worker-1")}
    # The MPI tag is cut before columns are counted: the channel's message starts after "[0] NCCL INFO ".
    channel = log.channels[0]
    assert channel.loc.column == len("[1,1]<stdout>:test-nccl-efa-worker-1:21:26 [0] NCCL INFO ") + 1


def test_pastes_without_hash_and_na_wrong_column(corpus):
    (run,) = _tests(corpus / "nccl-tests" / "gcp-a3-mega-2x8xH100-tcpxo-allgather-188GBps_dstack.txt").runs
    assert run.header["iters"] == 200 and run.header["validation"] == 0
    assert all(p.wrong is None and p.wrong_text == "N/A" for r in run.rows for p in r.placements())
    assert run.rows[-1].redop == "none" and run.avg_busbw == 146.948
    (first,) = _tests(corpus / "nccl-tests" / "gcp-a3-mega-2x8xH100-allreduce-8B-8G_a3mega-ztan-fork.txt").runs
    assert len(first.devices) == 16 and first.devices[0].bus == "0000:04:00"  # its '#' was lost too


def test_blank_line_inside_the_table_and_zero_size_rows(corpus):
    (run,) = _tests(corpus / "nccl-tests" / "h200-2node-kvm-vm-passthrough-bad-27GBps_nccl-tests-issue-256.txt").runs
    assert len(run.rows) == 6 and run.rows[-1].size == 8153726976
    (socket,) = _tests(corpus / "nccl-tests" / "aws-eks-mpijob-efa-disabled-socket-0.73GBps_aws-do-eks.txt").runs
    assert socket.rows[0].size == 0 and len(socket.rows) == 31


def test_older_columns_without_root_and_error_column():
    (run,) = _tests(SAMPLES / "old-2.8-no-root-error-column.txt").runs
    assert run.old_columns and [d.group for d in run.devices] == [None] * 4
    row = run.rows[-1]
    assert row.root is None and row.out_of_place.error == 0.0 and row.out_of_place.wrong is None
    assert row.in_place.busbw == 117.66


def test_several_collectives_in_one_file_and_wrong_counts():
    runs = _tests(SAMPLES / "two-collectives-wrong-results.txt").runs
    assert [r.collective for r in runs] == ["all_reduce_perf", "all_gather_perf"]
    assert [r.version for r in runs] == ["2.17.1", "2.17.1"] and runs[0].nccl_library == 22105
    assert runs[0].rows[0].in_place.wrong == 512 and runs[0].out_of_bounds_verdict == "FAILED"
    assert [len(r.rows) for r in runs] == [2, 2] and runs[1].rows[0].out_of_place.wrong is None


def test_json_report():
    (run,) = _tests(SAMPLES / "json-report-8xH100.json").runs
    assert run.collective == "all_reduce_perf" and run.nccl_library == 22703
    assert len(run.devices) == 8 and run.devices[3].bus == "0000:1b:00" and run.devices[3].model == "NVIDIA H100 80GB HBM3"
    assert [r.size for r in run.rows] == [1073741824, 2147483648] and run.rows[0].root == -1
    assert round(run.rows[1].out_of_place.busbw, 1) == 370.3 and run.avg_busbw == 365.1
    assert run.rows[1].loc.line == 1 and run.rows[1].loc.column > run.rows[0].loc.column > 1


def test_row_layouts():
    loc = Location(path="x", line=1)
    in_place_only = parse_row("1024 256 float sum -1 12.5 0.08 0.14 0".split(), loc)
    assert in_place_only.out_of_place is None and in_place_only.in_place.busbw == 0.14
    stamped = parse_row("1024 256 float sum -1 12.5 0.08 0.14 0 12.0 0.09 0.15 0 2026-11-30 10:00:00".split(), loc)
    assert stamped.root == -1 and stamped.in_place.busbw == 0.15
    assert parse_row("1024 256 float sum -1 12.5 0.08".split(), loc) is None


def test_a_broken_row_is_tl001_with_its_line():
    with pytest.raises(InputError) as caught:
        _tests(SAMPLES / "malformed-row.txt")
    assert caught.value.line == 4 and "malformed nccl-tests output" in caught.value.message
    result = run_cli("check", SAMPLES / "malformed-row.txt", "--format", "concise")
    assert result.exit_code == 2 and "malformed-row.txt:4:" in result.stdout and "TL001" in result.stdout


def test_log_channels_transports_settings_and_topology_print(corpus):
    shm = _log(corpus / "nccl-log" / "aws-g6e-48xlarge-4xL40S-1node-shm-fallback_nccl2.27.3_training-on-eks.log")
    log = shm.log
    assert {c.transport for c in log.channels} == {"SHM"} and log.channels[0].detail == "SHM/direct/direct"
    assert [v.message for v in log.versions][:1] == ["2.27.3"]
    assert ("NCCL_P2P_LEVEL", "NVL") in {(s.name, s.value) for s in log.settings}
    assert {(c.nranks, c.nnodes, c.local_ranks) for c in log.comms} == {(4, 1, 4)}
    paths = [t for t in log.topology if t.kind == "path" and t.node_type == "GPU" and t.path_from != f"GPU/{t.node_id}"]
    assert paths and {t.path_type for t in paths} == {"PHB"}
    gpus = {t.node_id for t in log.topology if t.kind == "link" and t.node_type == "GPU"}
    assert gpus == {"0-9e000", "0-a0000", "0-a2000", "0-a4000"}
    vm = _log(corpus / "nccl-log" / "h200-kvm-vm-topo-print-pci-0.2-bottleneck_nccl-tests-issue-256.log").log
    uplinks = [t for t in vm.topology if t.link_type == "PCI" and t.node_type == "PCI"]
    assert uplinks and {t.bandwidth for t in uplinks} == {0.2} and uplinks[0].info == "104c823200000000"
    assert all(c.gdr and c.net == "IB" and c.direction == "receive" for c in vm.channels)


def test_log_rdma_attempts_are_failures_not_optional_plugin_noise(corpus):
    ec2 = _log(corpus / "nccl-log" / "aws-p4d-24xlarge-ec2-4rank-ofi-topofile-p2p_nccl2.27.7_training-on-eks.log").log
    messages = {a.message for a in ec2.rdma_attempts}
    assert "NET/OFI aws-ofi-nccl initialization failed" in messages
    assert any(m.startswith("NCCL_IB_DISABLE set by environment to 1") for m in messages)
    assert {n.message for n in ec2.networks} == {"Socket"}
    assert {(d.net, d.name) for d in ec2.net_devices} == {("Socket", "ens32")}
    assert any(w.message == "NET/OFI Initializing plugin failed" for w in ec2.warnings)
    healthy = _log(corpus / "nccl-log" / "aws-p4d-4pods-same-host-1gpu-each-via-efa-not-nvlink_nccl2.27.3_training-on-eks.log").log
    assert any("ncclCollNetPlugin_v9" in p.message for p in healthy.plugin_lines)
    assert healthy.rdma_attempts == []
    assert all(c.gdr and c.net == "Libfabric" for c in healthy.channels)


def test_rings_and_trees(corpus):
    log = _tests(corpus / "nccl-tests" / "aws-g4dn-2node-T4-efa-1nic-with-nccl-info_aws-do-eks.txt").log
    assert [r.message for r in log.rings] == ["0   1", "0   1"]
    assert log.trees[0].message == "[0] -1/-1/-1->1->0 [1] 0/-1/-1->1->-1" and log.trees[0].host == "test-nccl-efa-worker-1"


def test_timestamped_warnings_with_plugin_signatures(corpus):
    log = _log(corpus / "nccl-log" / "aws-eks-4pod-efa-handshake-failure-rc103_nccl2.27.3_training-on-eks.log").log
    assert len(log.warnings) == 2 and "RC: 103" in log.warnings[0].message and log.warnings[0].host == "llama-3-8b-node-0-0"


def test_a_file_without_nccl_lines_is_not_a_log():
    with pytest.raises(InputError):
        parse_nccl_log(SourceFile("x.log", "hello\nworld\n"))
    assert sniff("hello NCCL world\nNCCL_DEBUG=INFO python train.py\n") is None


def test_hostile_inputs_are_escaped_bounded_or_tl001(tmp_path):
    escaped = _log_text("evil\x1b7:1:2 [0] NCCL INFO Using network \x1b]0;pwned\x07Socket\n")
    assert escaped.networks[0].message == "\\x1b]0;pwned\\x07Socket" and escaped.networks[0].host == "evil\\x1b7"
    nested = tmp_path / "nested.json"
    nested.write_text('{"version":3,"nccl_version":1,"results":' + "[" * 100000 + "]" * 100000 + '}')
    result = run_cli("check", nested, "--format", "concise")
    assert result.exit_code == 2 and "TL001" in result.stdout and "Traceback" not in result.stderr
    long_line = tmp_path / "long.log"
    long_line.write_text("host:1:2 [0] NCCL INFO Channel 00/0 : " + "9" * 2_000_000 + "\n")
    assert _log(long_line).log.channels == []
    huge = tmp_path / "huge-number.txt"
    huge.write_text("#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
                    + "9" * 40 + "  1  float  sum  -1  1.0  1.0  1.0  0  1.0  1.0  1.0  0\n")
    assert run_cli("check", huge, "--format", "concise").exit_code == 2


def _log_text(text: str):
    return parse_nccl_log(SourceFile("x.log", text)).log
