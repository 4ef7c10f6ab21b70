"""NUMA003 (preview): a rank-to-GPU order (CUDA_VISIBLE_DEVICES, --gpu-bind=map_gpu) puts groups of
``group_size`` consecutive ranks across NUMA nodes more often than the layout requires."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._binding import int_list, slurm_map
from topolint.checks._config import numa_view, topology_label, where
from topolint.engine.finding import Hit
from topolint.model import config as cfg

NEEDS = ("config", "topology")


class Parameters(CheckParameters):
    group_size: int = Field(default=2, ge=2)


def _crossing(numas: list[str], size: int) -> int:
    groups = [numas[i:i + size] for i in range(0, len(numas), size)]
    return sum(1 for g in groups if len(set(g)) > 1)


def check(context, params: Parameters) -> Iterator[Hit]:
    view = numa_view(context)
    if view is None:
        return
    for config in context.configs:
        for fact in config.launch:
            order = int_list(fact.value) if fact.kind == cfg.CUDA_VISIBLE_DEVICES else \
                slurm_map(fact.value, "map_gpu") if fact.kind == cfg.GPU_BIND else None
            if not order or len(order) < 2 * params.group_size or any(g not in view.gpu_numa for g in order):
                continue
            numas = [view.gpu_numa[g] for g in order]
            actual = _crossing(numas, params.group_size)
            best = _crossing(sorted(numas, key=lambda n: (numas.index(n))), params.group_size)
            if actual > best:
                suggestion = ",".join(str(g) for g in sorted(order, key=lambda g: (numas.index(view.gpu_numa[g]), order.index(g))))
                yield Hit(entity=f"launch/{fact.kind}@{config.path}#{fact.scope}", location=fact.loc,
                          fields={"order": fact.value, "group_size": params.group_size, "actual": actual,
                                  "best": best, "suggestion": suggestion, "topology": topology_label(view)},
                          evidence=[f"{where(fact.loc)}: {fact.detail}",
                                    f"{topology_label(view)}: NUMA per listed GPU: {', '.join(numas)}"])
