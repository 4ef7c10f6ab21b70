"""The training-step view: a step's gradient communication, how much of it hides behind the
backward pass, and whether more nodes make training faster.

Gradients are all-reduced in buckets as they fill in reverse layer order, DDP-style
(torch/nn/parallel/distributed.py: the first bucket is capped at 1 MiB,
``dist._DEFAULT_FIRST_BUCKET_BYTES``, so it starts early; later ones at ``bucket_cap_mb``, 25 MiB
by default). Gradients are taken to appear at an even rate over the backward pass; the
collectives run one after another on NCCL's stream, each timed by the collectives model
(``estimate_sizes``). The last bucket fills when backward ends and cannot overlap.

Compression and synchronisation move data as they really do: top-k is an allgather of the kept
values and their int32 indices from every rank (its volume grows with the rank count; it is not
an all-reduce of fewer bytes); a lower precision scales the all-reduce; synchronising every K
steps divides the traffic per step by K and is local SGD, a different optimisation, not only a
faster one. The per-GPU batch is fixed (weak scaling): N nodes process N times the samples of one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from topolint.estimate.model import estimate_sizes
from topolint.estimate.results import Options

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}
FIRST_BUCKET_BYTES = 1 << 20  # torch DDP: dist._DEFAULT_FIRST_BUCKET_BYTES
INDEX_BYTES = 4  # top-k indices as int32
BUSY_FLOOR = 0.5  # below this GPU busy fraction, with communication exposed, a step is communication-bound


@dataclass(frozen=True)
class TrainingSpec:
    params: float
    grad_dtype: str = "fp32"
    topk: float | None = None  # fraction of gradient elements each rank sends
    sync_every: int = 1
    backward_ms: float = 0.0
    forward_ms: float = 0.0
    bucket_mb: float = 25.0

    @property
    def gradient_bytes(self) -> int:
        return int(self.params * DTYPE_BYTES[self.grad_dtype])

    def buckets(self) -> list[int]:
        """Bucket sizes in bytes, in the order they fill (DDP: first 1 MiB, then bucket_mb MiB)."""
        total, cap = self.gradient_bytes, max(1, int(self.bucket_mb * (1 << 20)))
        sizes = [min(total, FIRST_BUCKET_BYTES)]
        left = total - sizes[0]
        while left > 0:
            sizes.append(min(cap, left))
            left -= sizes[-1]
        return sizes


@dataclass
class AlgorithmStep:
    name: str
    comm_ms: float  # all buckets one after another, nothing overlapped
    exposed_ms: float  # per step, after overlap and sync_every

    def as_dict(self) -> dict:
        return {"name": self.name, "comm_ms": round(self.comm_ms, 3), "exposed_ms": round(self.exposed_ms, 3)}


@dataclass
class StepEstimate:
    nodes: int
    gpus: int
    wire_bytes_per_rank: int  # what one rank hands the collectives per synchronising step
    collective: str
    selected: str | None  # NCCL's choice for the largest bucket
    comm_ms: float
    exposed_ms: float
    step_ms: float
    gpu_busy: float
    throughput: float  # samples per ms, relative unit: GPUs / step_ms
    scaling_efficiency: float | None = None
    beats_previous: bool | None = None
    algorithms: list[AlgorithmStep] = field(default_factory=list)
    bottleneck: object | None = None  # Bottleneck of the selected algorithm, largest bucket

    @property
    def communication_bound(self) -> bool:
        return self.exposed_ms > 0 and self.gpu_busy < BUSY_FLOOR

    def as_dict(self) -> dict:
        return {"nodes": self.nodes, "gpus": self.gpus, "wire_bytes_per_rank": self.wire_bytes_per_rank,
                "collective": self.collective, "selected": self.selected, "comm_ms": round(self.comm_ms, 3),
                "exposed_ms": round(self.exposed_ms, 3), "step_ms": round(self.step_ms, 3),
                "gpu_busy": round(self.gpu_busy, 4), "throughput_gpus_per_s": round(1000 * self.throughput, 4),
                "scaling_efficiency": None if self.scaling_efficiency is None else round(self.scaling_efficiency, 4),
                "beats_previous": self.beats_previous, "communication_bound": self.communication_bound,
                "algorithms": [a.as_dict() for a in self.algorithms],
                "bottleneck": self.bottleneck.as_dict() if self.bottleneck else None}


def _wire(spec: TrainingSpec, bucket: int, ranks: int) -> tuple[str, int]:
    """The collective and its nccl-tests size for one bucket (allgather sizes are the whole output)."""
    if spec.topk is None:
        return "allreduce", bucket
    elements = bucket // DTYPE_BYTES[spec.grad_dtype]
    kept = max(1, math.ceil(elements * spec.topk))
    return "allgather", ranks * kept * (DTYPE_BYTES[spec.grad_dtype] + INDEX_BYTES)


def _overlap(spec: TrainingSpec, buckets: list[int], times_ms: list[float]) -> float:
    """Communication left after backward ends: bucket i is ready when its share of the backward
    pass is done, and starts when it is ready and the previous collective has finished."""
    total, done, end = sum(buckets), 0, 0.0
    for size, duration in zip(buckets, times_ms):
        done += size
        ready = spec.backward_ms * done / total
        end = max(ready, end) + duration
    return max(0.0, end - spec.backward_ms)


def step(models, nodes: int, spec: TrainingSpec, gpus_per_node: int | None = None, version=None,
         options: Options | None = None) -> StepEstimate:
    buckets = spec.buckets()
    compute = spec.forward_ms + spec.backward_ms
    probe = estimate_sizes(models, nodes, gpus_per_node, "allreduce", sorted(set(buckets)), version, options)
    ranks, gpus = probe[0].inputs["ranks"], probe[0].inputs["ranks"]
    if ranks <= 1:
        return StepEstimate(nodes, gpus, 0, "none", None, 0.0, 0.0, compute, 1.0 if compute else 0.0,
                            gpus / compute if compute else 0.0)
    wires = [_wire(spec, b, ranks) for b in buckets]
    collective = wires[0][0]
    sizes = sorted({size for _, size in wires})
    if collective == "allreduce":
        by_size = {e.inputs["size_bytes"]: e for e in probe}
    else:
        by_size = dict(zip(sizes, estimate_sizes(models, nodes, gpus_per_node, collective, sizes, version, options)))
    largest = by_size[max(size for _, size in wires)]
    per_bucket = [by_size[size] for _, size in wires]
    algorithms = []
    names = [a.name for a in largest.algorithms]
    for name in ["selected"] + names:
        times = [(e.selected_estimate if name == "selected" else e.algorithm(name)).time_us / 1000 for e in per_bucket]
        algorithms.append(AlgorithmStep(name, sum(times) / spec.sync_every,
                                        _overlap(spec, buckets, times) / spec.sync_every))
    chosen = algorithms[0]
    step_ms = compute + chosen.exposed_ms
    wire_bytes = sum(size // (ranks if collective == "allgather" else 1) for _, size in wires)
    return StepEstimate(nodes, gpus, wire_bytes, collective, largest.selected, chosen.comm_ms, chosen.exposed_ms,
                        step_ms, compute / step_ms if step_ms else 0.0, gpus / step_ms if step_ms else 0.0,
                        algorithms=algorithms,
                        bottleneck=largest.selected_estimate.bottleneck if largest.selected_estimate else None)


def sweep(models, node_counts: list[int], spec: TrainingSpec, gpus_per_node: int | None = None, version=None,
          options: Options | None = None) -> list[StepEstimate]:
    """One StepEstimate per node count, with scaling efficiency against one node (per-GPU throughput
    relative to one node's) and whether each count beats the previous one in total throughput."""
    rows = [step(models, n, spec, gpus_per_node, version, options) for n in node_counts]
    base = step(models, 1, spec, gpus_per_node, version, options) if node_counts[0] != 1 else rows[0]
    per_gpu = base.throughput / base.gpus if base.gpus else 0.0
    for previous, row in zip([None] + rows, rows):
        row.scaling_efficiency = (row.throughput / row.gpus) / per_gpu if per_gpu else None
        row.beats_previous = None if previous is None else row.throughput > previous.throughput
    return rows
