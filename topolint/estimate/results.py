"""What an estimate is: its options, and per algorithm the bandwidth, time and bottleneck."""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.estimate.hardware import Bottleneck

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall")


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw x factor."""
    if ranks <= 1:
        return 1.0
    if collective == "allreduce":
        return 2 * (ranks - 1) / ranks
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (ranks - 1) / ranks
    return 1.0


@dataclass(frozen=True)
class Options:
    nvls: bool | None = None  # None: assume NVLink SHARP where the hardware has it (Hopper+, NVSwitch)
    collnet: bool = False  # a CollNet/SHARP fabric is declared
    servers: int | None = None  # parameter servers; None: one per worker node
    colocated: bool = False  # servers run on the worker nodes (BytePS "colocated")
    server_GBps: float | None = None  # each server's network bandwidth; None: a worker node's
    oversubscription: float = 1.0  # fabric: the leaf-to-spine ratio every inter-node byte may cross
    nodes_per_leaf: int | None = None  # nodes under one leaf switch: up to this many, no oversubscription
    algorithm: str | None = None  # NCCL_ALGO forced (one NCCL algorithm name)
    protocol: str | None = None  # NCCL_PROTO forced (LL, LL128, Simple)
    nvlinks: int | None = None  # NVLinks per GPU to NVSwitches, for files that state none (static files)
    nic_gbps: float | None = None  # speed of network devices a file states none for
    gpu_sm: int | None = None  # SM of GPUs a file states none for (partial files, matrices)
    pcie_gen: int | None = None  # PCIe generation of links a matrix cannot state
    gpu_sm_source: str | None = None  # where gpu_sm comes from when it is not an option (live: the output's GPU model)

    def fabric_ratio(self, nodes: int) -> float:
        """How much slower the fabric is than the NICs for a job on ``nodes`` nodes: the
        oversubscription once the job spans more than one leaf (every node when leaves are unknown)."""
        if nodes <= 1 or (self.nodes_per_leaf is not None and nodes <= self.nodes_per_leaf):
            return 1.0
        return max(1.0, self.oversubscription)


# How the estimate's JSON labels the channel orders it used: they are the packing of search.py.
CHANNEL_ORDER_SOURCE = ("topolint's approximation of NCCL's graph search (topolint/estimate/search.py, after "
                        "src/graph/search.cc ncclTopoCompute), not the channels NCCL itself builds")


@dataclass(frozen=True)
class AlgorithmEstimate:
    name: str
    protocol: str | None
    busbw_GBps: float
    algbw_GBps: float
    time_us: float
    bottleneck: Bottleneck
    model: str  # "nccl-tuning" or "first-principles"
    channels: int | None = None
    notes: tuple[str, ...] = ()
    orders: tuple = ()  # search.ChannelOrder per channel: NCCL's algorithms only

    def as_dict(self) -> dict:
        orders = {"source": CHANNEL_ORDER_SOURCE, "channels": [o.as_dict() for o in self.orders]} \
            if self.orders else None
        return {"name": self.name, "protocol": self.protocol, "busbw_GBps": round(self.busbw_GBps, 2),
                "algbw_GBps": round(self.algbw_GBps, 2), "time_us": round(self.time_us, 2),
                "channels": self.channels, "model": self.model, "bottleneck": self.bottleneck.as_dict(),
                "notes": list(self.notes), "channel_orders": orders}


@dataclass
class Estimate:
    inputs: dict
    algorithms: list[AlgorithmEstimate]
    selected: str | None  # what NCCL would pick
    fastest: str | None
    assumptions: list[str] = field(default_factory=list)
    # The nodes' hardware as the estimate read it (hardware.NodeHardware: the completed, refined
    # System of each distinct node), for whoever draws it; not part of as_dict.
    hardware: list = field(default_factory=list, repr=False, compare=False)

    def algorithm(self, name: str) -> AlgorithmEstimate:
        for algo in self.algorithms:
            if algo.name == name:
                return algo
        raise KeyError(f"no {name} estimate (have {', '.join(a.name for a in self.algorithms)})")

    @property
    def selected_estimate(self) -> AlgorithmEstimate | None:
        return self.algorithm(self.selected) if self.selected else None

    def as_dict(self) -> dict:
        return {"inputs": self.inputs, "selected": self.selected, "fastest": self.fastest,
                "algorithms": [a.as_dict() for a in self.algorithms], "assumptions": list(self.assumptions)}


class EstimateError(ValueError):
    pass
