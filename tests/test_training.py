"""The training-step view (topolint estimate --model-params): the field guide's claims, checked
where they hold, on documented-hardware fixtures (fixtures/estimate, scripts/gen_estimate_fixtures.py)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli
from topolint.commands.estimate import EstimateUsageError, parse_compress, parse_sweep
from topolint.estimate import Options, estimate
from topolint.estimate.training import FIRST_BUCKET_BYTES, TrainingSpec, step, sweep
from topolint.inputs.collect import collect

GIGABIT = FIXTURES / "estimate" / "hgx-h100-8gpu-1gbe.xml"
H100 = FIXTURES / "estimate" / "hgx-h100-8gpu-8x400g.xml"
BYTEPS_TCP = FIXTURES / "estimate" / "byteps-8xv100-nvlink-20g-tcp.xml"
# A 10B-parameter step: 6 x 10^10 FLOP per token; 10^6 tokens on 8 GPUs at 4 x 10^14 FLOP/s each is
# about 19 s of compute, rounded to 20 s of backward pass (the forward pass left out, which only
# favours the gigabit cluster).
TEN_B_STEP_MS = 20000


def nodes(path):
    return collect([str(path)]).nodes


def test_buckets_follow_ddp():
    spec = TrainingSpec(params=100e6, bucket_mb=25)  # 400 MB of fp32 gradients
    sizes = spec.buckets()
    assert sizes[0] == FIRST_BUCKET_BYTES
    assert set(sizes[1:-1]) == {25 << 20}
    assert sum(sizes) == spec.gradient_bytes == 400_000_000


def test_10b_over_gigabit_is_slower_than_one_machine_and_gpus_idle():
    """Guide: 10B parameters over 1 GbE across machines are slower than one 8-GPU machine; a GPU
    under 50% busy while communication is exposed; the output names the gigabit port."""
    one, two = sweep(nodes(GIGABIT), [1, 2], TrainingSpec(10e9, backward_ms=TEN_B_STEP_MS))
    assert two.throughput < one.throughput and two.beats_previous is False
    assert two.gpu_busy < 0.5 and two.exposed_ms > 0 and two.communication_bound
    assert two.bottleneck.entity.endswith("/nic/eth0:0")
    assert not one.communication_bound


def test_int8_and_sync_every_10_make_two_gigabit_machines_faster():
    """Guide: syncing every 5-10 steps and 8-bit gradients change that. With 20 s steps it holds for
    int8 with sync every 10; int8 every 5, or fp32 every 10, are still slower (docs/estimate.md)."""
    def gain(dtype, k):
        one, two = sweep(nodes(GIGABIT), [1, 2], TrainingSpec(10e9, dtype, None, k, TEN_B_STEP_MS))
        return two.throughput / one.throughput

    assert gain("int8", 10) > 1
    assert gain("int8", 5) < 1 and gain("fp32", 10) < 1
    assert gain("fp32", 1) < gain("fp32", 10) < gain("int8", 10)


def test_topk_is_an_allgather_that_grows_with_ranks():
    spec = TrainingSpec(1e9, "fp32", 0.01, backward_ms=0)
    small = step(nodes(H100), 2, spec)
    large = step(nodes(H100), 16, spec)
    assert small.collective == large.collective == "allgather"
    # each rank sends 1% of the values plus int32 indices: 8 of 400 MB, whatever the rank count
    assert small.wire_bytes_per_rank == large.wire_bytes_per_rank
    assert large.wire_bytes_per_rank == pytest.approx(0.01 * 1e9 * 8, rel=0.01)
    # ... but every rank receives all of them: time grows with the rank count
    assert large.comm_ms > 4 * small.comm_ms


def test_ps_vs_ring_at_16_64_256_gpus():
    """Guide: a parameter server's hub saturates beyond tens of nodes. One server: its time grows
    with the workers; one server per worker (BytePS): constant and ahead of the ring, which stays
    flat (bandwidth-optimal)."""
    times = {}
    for gpus in (16, 64, 256):
        hub = estimate(nodes(BYTEPS_TCP), gpus // 8, size=400 << 20, options=Options(servers=1))
        spread = estimate(nodes(BYTEPS_TCP), gpus // 8, size=400 << 20)
        times[gpus] = (hub.selected_estimate.time_us, hub.algorithm("parameter_server").time_us,
                       spread.algorithm("parameter_server").time_us)
    ring16, hub16, spread16 = times[16]
    ring256, hub256, spread256 = times[256]
    assert hub256 / hub16 == pytest.approx(16, rel=0.05)
    assert hub256 > 10 * ring256
    assert spread256 == pytest.approx(spread16, rel=0.01) and spread256 < ring256 / 1.5
    assert ring256 < 1.5 * ring16
    # at 8 GPUs (one node) there is no network to serve: no parameter-server estimate
    assert "parameter_server" not in [a.name for a in estimate(nodes(BYTEPS_TCP), 1, size=400 << 20).algorithms]


def test_smaller_buckets_pay_latency_larger_ones_leave_a_tail():
    """Guide: smaller buckets (5-10 MB) overlap sooner but pay more latency. The sum of the
    collectives grows as buckets shrink; the exposed tail after backward grows with the last
    bucket when buckets are large; at 5 MB on 4 H100 nodes the latency outweighs the overlap."""
    results = {mb: step(nodes(H100), 4, TrainingSpec(1e9, backward_ms=60, bucket_mb=mb)) for mb in (5, 10, 25, 100)}
    assert results[5].comm_ms > results[10].comm_ms > results[25].comm_ms > results[100].comm_ms
    assert results[100].exposed_ms > results[25].exposed_ms
    assert results[5].exposed_ms > results[25].exposed_ms


def test_parse_sweep_and_compress():
    assert parse_sweep("1..64", None) == [1, 2, 4, 8, 16, 32, 64]
    assert parse_sweep("1..6", None) == [1, 2, 4, 6]
    assert parse_sweep("3,1,2", None) == [1, 2, 3]
    assert parse_sweep(None, 4) == [4]
    assert parse_compress("topk:0.01") == 0.01
    for bad in ("powersgd:4", "topk:2", "topk:x"):
        with pytest.raises(EstimateUsageError):
            parse_compress(bad)


def test_cli_step_view_text_and_json():
    text = run_cli("estimate", GIGABIT, "--model-params", "10B", "--compute-ms", "20000", "--sweep", "1,2")
    assert text.exit_code == 0, text.stderr
    assert "communication-bound" in text.stdout and "eth0" in text.stdout
    assert "NO" in text.stdout.splitlines()[4]
    body = json.loads(run_cli("estimate", GIGABIT, "--model-params", "10B", "--compute-ms", "20000", "--sweep", "1,2",
                              "--grad-dtype", "int8", "--sync-every", "10", "--format", "json").stdout)
    rows = body["training"]["rows"]
    assert [r["beats_previous"] for r in rows] == [None, True]
    assert any("local SGD" in a for a in body["training"]["assumptions"])
    bad = run_cli("estimate", GIGABIT, "--model-params", "ten")
    assert bad.exit_code == 2 and "--model-params" in bad.stderr


def test_step_json_matches_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "estimate.schema.json").read_text(encoding="utf-8"))
    out = run_cli("estimate", H100, "--model-params", "7B", "--compute-ms", "900", "--sweep", "1..4",
                  "--compress", "topk:0.01", "--format", "json").stdout
    jsonschema.validate(json.loads(out), schema)


def test_communication_bound_rows_name_the_findings_behind_them(tmp_path):
    """A port down (NET003 from check) and a slow rail: when the step is communication-bound the
    output names the rail that bounds it and the finding on the port that is gone."""
    from tests.test_estimate import IBSTAT

    node = tmp_path / "node17"
    node.mkdir()
    (node / "topo.xml").write_text(H100.read_text(encoding="utf-8"), encoding="utf-8")
    (node / "ibstat.txt").write_text(IBSTAT, encoding="utf-8")
    out = run_cli("estimate", node, "--model-params", "10B", "--compute-ms", "100", "--sweep", "1,4")
    assert out.exit_code == 0, out.stderr
    assert "communication-bound" in out.stdout and "node17/nic/mlx5_1:1" in out.stdout
    assert "topology finding:" in out.stdout and "NET003" in out.stdout
