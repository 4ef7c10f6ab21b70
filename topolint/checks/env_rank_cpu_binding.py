"""NUMA004: a literal launcher binding puts a rank's CPUs or memory on a NUMA node other than its
GPU's (Slurm map_ldom + map_gpu, numactl or taskset with a literal CUDA_VISIBLE_DEVICES)."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._binding import int_list, slurm_map, visible_devices
from topolint.checks._config import numa_view, related_scopes, topology_label, where
from topolint.engine.finding import Hit
from topolint.model import config as cfg
from topolint.model.numbers import CpuSet, cpulist, decimal

NEEDS = ("config", "topology")


class Parameters(CheckParameters):
    pass


def _hit(config, fact, view, mismatches: list[str], what: str, evidence: list[str]) -> Hit:
    binding = f"{fact.detail}={fact.value}"
    if fact.kind == cfg.NUMACTL:
        binding = "numactl " + " ".join(f"--{part}" for part in fact.value.split(";"))
    elif fact.kind == cfg.TASKSET:
        binding = f"taskset -c {fact.value}"
    return Hit(entity=f"launch/{fact.kind}@{config.path}#{fact.scope}", location=fact.loc,
               fields={"binding": binding, "mismatches": "; ".join(mismatches),
                       "what": what, "topology": topology_label(view), "path": config.path, "scope": fact.scope},
               evidence=[f"{where(fact.loc)}: {fact.detail} {fact.value}", *evidence,
                         f"{topology_label(view)}: GPU NUMA nodes "
                         + ", ".join(f"GPU {g}: {n}" for g, n in sorted(view.gpu_numa.items()))])


def check(context, params: Parameters) -> Iterator[Hit]:
    view = numa_view(context)
    if view is None:
        return
    for config in context.configs:
        for fact in config.launch:
            if fact.kind in (cfg.CPU_BIND, cfg.MEM_BIND):
                ldoms = slurm_map(fact.value, "map_ldom") or slurm_map(fact.value, "map_mem")
                gpu_bind = next((g for g in config.launch if g.kind == cfg.GPU_BIND
                                 and related_scopes(g.scope, fact.scope) and slurm_map(g.value, "map_gpu")), None)
                if not ldoms or gpu_bind is None:
                    continue
                gpus = slurm_map(gpu_bind.value, "map_gpu")
                bad = []
                for rank in range(max(len(ldoms), len(gpus))):
                    gpu, ldom = gpus[rank % len(gpus)], ldoms[rank % len(ldoms)]
                    numa = view.gpu_numa.get(gpu)
                    if numa is not None and numa != str(ldom):
                        bad.append(f"local rank {rank}: GPU {gpu} is on NUMA {numa}, bound to NUMA {ldom}")
                if bad:
                    yield _hit(config, fact, view, bad, "CPUs" if fact.kind == cfg.CPU_BIND else "memory",
                               [f"{where(gpu_bind.loc)}: {gpu_bind.detail} {gpu_bind.value}"])
            elif fact.kind in (cfg.NUMACTL, cfg.TASKSET):
                devices, source = visible_devices(config, fact)
                if not devices:
                    continue
                gpu = devices[0]
                numa = view.gpu_numa.get(gpu)
                if numa is None:
                    continue
                bad = []
                if fact.kind == cfg.NUMACTL:
                    binds = dict(part.split("=", 1) for part in fact.value.split(";"))
                    for key, label in (("cpunodebind", "CPUs"), ("membind", "memory")):
                        nodes = int_list(binds.get(key, "").replace("-", ","))
                        if nodes and decimal(numa) not in nodes:
                            bad.append(f"GPU {gpu} is on NUMA {numa}, {label} bound to NUMA {binds[key]}")
                else:
                    cpus = cpulist(fact.value) if "$" not in fact.value and not fact.value.startswith("0x") else None
                    home = view.numa_cpus.get(numa, CpuSet())
                    if cpus and home and not cpus & home:
                        bad.append(f"GPU {gpu} is on NUMA {numa}, CPUs {fact.value} are all on other NUMA nodes")
                if bad:
                    yield _hit(config, fact, view, bad, "CPUs or memory",
                               [f"{where(source.loc)}: CUDA_VISIBLE_DEVICES={source.value} (the rank's GPU is the first listed)"])
