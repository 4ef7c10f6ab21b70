"""What a measured nccl-tests run should have reached, size by size, on the hardware of a node.

Each measured size is judged against the estimate (``estimate_sizes``, the same completed node
``topolint estimate`` reads) for the algorithm and protocol NCCL used, when the log says so:
its TUNING lines (``AllReduce: 8589934592 Bytes -> Algo NVLS_TREE proto SIMPLE``, rank 0,
src/enqueue.cc, 2.21+) or a forced ``NCCL_ALGO``/``NCCL_PROTO`` it echoed. Otherwise against the
best algorithm the inputs do not rule out, stated as assumed: NVLink SHARP only where the log
shows NVLS channels above 0 (its availability needs the fabric manager, which no input shows),
CollNet only on a declared SHARP fabric. Always on the run's own node count and ranks per node.
PERF001/PERF002 (checks/_measured.py, at the plateau size) and ``topolint live`` (every size)
read this one function.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from topolint.estimate.results import EstimateError, Options

# NCCL's NCCL_ALGO_* and NCCL_PROTO_* as TUNING lines print them: names from 2.24
# (ncclAlgoToString / ncclProtoToString, src/collectives.cc), indices before
# (src/include/nccl_common.h: TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4,
# NVLS_TREE 5, PAT 6; LL 0, LL128 1, SIMPLE 2).
ALGORITHMS = {"TREE": "tree", "RING": "ring", "COLLNET_DIRECT": "collnet_direct", "COLLNET_CHAIN": "collnet_chain",
              "NVLS": "nvls", "NVLS_TREE": "nvls_tree", "PAT": "pat", "0": "tree", "1": "ring",
              "2": "collnet_direct", "3": "collnet_chain", "4": "nvls", "5": "nvls_tree", "6": "pat"}
PROTOCOLS = {"LL": "LL", "LL128": "LL128", "SIMPLE": "Simple", "0": "LL", "1": "LL128", "2": "Simple"}
# NCCL_ALGO / NCCL_PROTO values (case-insensitive; src/graph/tuning.cc ncclAlgoStr, ncclProtoStr).
SETTING_ALGORITHMS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls_tree",
                      "collnetdirect": "collnet_direct", "collnetchain": "collnet_chain", "pat": "pat"}
FUNCTIONS = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
             "Broadcast": "broadcast", "AlltoAll": "alltoall"}
PER_RANK_BYTES = ("allgather", "reducescatter")  # NCCL's bytes are one rank's share of nccl-tests' size


@dataclass(frozen=True)
class Measurement:
    """One measured size against its expectation (the items of live's JSON "measurements")."""

    collective: str
    size: int
    busbw_GBps: float
    expected_busbw_GBps: float | None
    ratio: float | None
    algorithm: str | None
    protocol: str | None
    assumed: bool  # the algorithm is the best one the inputs allow, not one the log names
    basis: str = ""  # where the algorithm and protocol come from, in words

    def as_dict(self) -> dict:
        return {"collective": self.collective, "size": self.size, "busbw_GBps": round(self.busbw_GBps, 2),
                "expected_busbw_GBps": None if self.expected_busbw_GBps is None else round(self.expected_busbw_GBps, 2),
                "ratio": None if self.ratio is None else round(self.ratio, 3), "algorithm": self.algorithm,
                "protocol": self.protocol, "assumed": self.assumed}


@dataclass
class Expected:
    measurements: list[Measurement] = field(default_factory=list)
    topology: str | None = None  # the topology estimated
    nodes: int | None = None
    notes: list[str] = field(default_factory=list)  # the estimate's assumptions and what was ruled out
    estimates: dict = field(default_factory=dict)  # size -> Estimate of the algorithm judged against


def _log_choices(log, collective: str, ranks: int) -> dict[int, tuple[str, str, object]]:
    """nccl-tests size -> (algorithm, protocol, the line) from TUNING lines of this collective."""
    found: dict[int, tuple[str, str, object]] = {}
    for choice in getattr(log, "tuning", []):
        if choice.function is not None and FUNCTIONS.get(choice.function) != collective:
            continue
        algo, proto = ALGORITHMS.get(choice.algorithm.upper()), PROTOCOLS.get(choice.protocol.upper())
        if algo is None or proto is None:
            continue
        size = choice.bytes * ranks if collective in PER_RANK_BYTES else choice.bytes
        found.setdefault(size, (algo, proto, choice.loc))
    return found


def _forced(log) -> tuple[str | None, str | None, list[str]]:
    """NCCL_ALGO / NCCL_PROTO echoed by the log, when each names one positive choice."""
    algo = proto = None
    said = []
    for setting in getattr(log, "settings", []):
        value = setting.value.strip().lower()
        if setting.name == "NCCL_ALGO" and value in SETTING_ALGORITHMS:
            algo = SETTING_ALGORITHMS[value]
            said.append(f"{setting.loc.path}:{setting.loc.line}: NCCL_ALGO={setting.value}")
        elif setting.name == "NCCL_PROTO" and value in ("ll", "ll128", "simple"):
            proto = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}[value]
            said.append(f"{setting.loc.path}:{setting.loc.line}: NCCL_PROTO={setting.value}")
    return algo, proto, said


def expected(models, nodes: int, gpus_per_node: int | None, collective: str, rows: list[tuple[int, float]],
             log, version, options: Options | None = None) -> Expected:
    """Each (size, busbw) of ``rows`` against the estimate on ``models`` for ``nodes`` x
    ``gpus_per_node`` ranks (EstimateError when the hardware cannot be estimated)."""
    from topolint.estimate.model import estimate_sizes

    options = options or Options()
    counts = getattr(log, "counts", [])
    nvls_seen = any((c.nvls or 0) > 0 for c in counts)
    nvls_off = any(c.nvls == 0 for c in counts)
    base = replace(options, nvls=False) if nvls_off else options
    sizes = sorted({size for size, _ in rows if size > 0})
    if not sizes:
        return Expected()
    free = estimate_sizes(models, nodes, gpus_per_node, collective, sizes, version, base)
    by_size = dict(zip(sizes, free))
    ranks = free[0].inputs["ranks"]
    chosen = _log_choices(log, collective, ranks)
    forced_algo, forced_proto, said = _forced(log)
    notes = list(free[0].assumptions)
    if nvls_off:
        notes.append("the log shows 0 NVLS channels: estimated without NVLink SHARP")
    elif not nvls_seen:
        notes.append("NVLink SHARP is not confirmed by the output (no 'nvls channels' line above 0): NVLS and "
                     "NVLSTree are left out unless a TUNING line names them")
    forced_cache: dict[tuple, dict] = {}

    def forced_estimate(algo: str, proto: str | None, size: int):
        key = (algo, proto)
        if key not in forced_cache:
            try:
                forced = estimate_sizes(models, nodes, gpus_per_node, collective, sizes, version,
                                        replace(options, algorithm=algo, protocol=proto,
                                                nvls=None if algo.startswith("nvls") else base.nvls))
                forced_cache[key] = dict(zip(sizes, forced))
            except EstimateError:
                forced_cache[key] = {}
        return forced_cache[key].get(size)

    out = Expected(topology=free[0].inputs["topologies"][0] if free[0].inputs.get("topologies") else None,
                   nodes=free[0].inputs["nodes"], notes=notes)
    for size, busbw in rows:
        est = by_size.get(size)
        if est is None:
            continue
        if size in chosen:
            algo, proto, loc = chosen[size]
            basis, assumed = f"{loc.path}:{loc.line}: NCCL chose {algo}/{proto} (TUNING line)", False
        elif forced_algo or forced_proto:
            algo, proto, loc = forced_algo, forced_proto, None
            basis, assumed = "; ".join(said), forced_algo is None
        else:
            algo, proto, basis, assumed = None, None, "", True
        pick = None
        if algo is not None:
            forced = forced_estimate(algo, proto, size)
            pick = forced.algorithm(algo) if forced is not None and any(a.name == algo for a in forced.algorithms) \
                else None
            if pick is not None:
                out.estimates[size] = forced
        if pick is None:
            allowed = [a for a in est.algorithms if a.model == "nccl-tuning"
                       and (nvls_seen or not a.name.startswith("nvls"))
                       and (proto is None or a.protocol == proto)]
            if algo is not None and not allowed:
                basis += f"; the estimate has no {algo} for this hardware"
            pick = max(allowed, key=lambda a: a.busbw_GBps) if allowed else None
            if pick is not None:
                out.estimates[size] = est
                if algo is not None:
                    basis += f"; the estimate has no {algo}/{proto} here: judged against {pick.name}"
                    assumed = True
                else:
                    basis = "the best algorithm the inputs do not rule out (assumed)"
        exp = pick.busbw_GBps if pick is not None else None
        out.measurements.append(Measurement(collective, size, busbw, exp,
                                            busbw / exp if exp else None, pick.name if pick else algo,
                                            pick.protocol if pick else proto, assumed, basis))
    return out
