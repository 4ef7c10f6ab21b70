"""NVL004: a GPU whose NVLink fabric is not ready, as ``nvidia-smi -q``'s Fabric section (or the
fabric.* fields of ``--query-gpu``) says: a State other than Completed, a Status other than
Success, or a Health Summary other than Healthy. A field printed N/A (or Not Supported) says
nothing: a GPU outside a multi-node NVLink system (a standalone GH200, an HGX board without
NVLink Switch trays) prints them so and is not at fault. One finding per GPU, at its first field
that is wrong, naming every wrong one."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity
from topolint.model.node_join import node_join

NEEDS = ("nvidia-smi-q",)
# (attribute, what the field is called, the value that means ready, variant of the first wrong one)
FIELDS = (("state", "State", "Completed", "state"), ("status", "Status", "Success", "status"),
          ("health_summary", "Health Summary", "Healthy", "health"))


class Parameters(CheckParameters):
    pass


def _problems(fabric) -> list[tuple[str, str, object]]:
    """(variant, 'State In Progress (not Completed)', stated field) for each field that is wrong."""
    found = []
    for attribute, label, ready, variant in FIELDS:
        stated = getattr(fabric, attribute)
        if stated is None or stated.value is None:
            continue
        if stated.value.strip().lower() != ready.lower():
            found.append((variant, f"{label} {stated.value} (not {ready})", stated))
    return found


def _label(joined) -> str:
    gpu = joined.gpu
    name = gpu.name.value if gpu.name is not None else None
    if gpu.index_stated:
        parts = [p for p in (joined.bus_id, name) if p]
        return f"GPU {gpu.index}" + (f" ({', '.join(parts)})" if parts else "")
    if joined.bus_id:
        return f"GPU {joined.bus_id}" + (f" ({name})" if name else "")
    return f"the GPU of the Fabric section on line {gpu.fabric.loc.line}"


def check(context, params: Parameters) -> Iterator[Hit]:
    node = context.node.name
    for joined in node_join(context.node).queried:
        gpu, fabric = joined.gpu, joined.gpu.fabric
        if fabric is None:
            continue
        problems = _problems(fabric)
        if not problems:
            continue
        label = _label(joined)
        first = problems[0][2]
        evidence = [f"{s.loc.path}:{s.loc.line}: Fabric {text}" for _, text, s in problems]
        for attribute, shown in (("clique_id", "CliqueId"), ("cluster_uuid", "ClusterUUID")):
            stated = getattr(fabric, attribute)
            if stated is not None:
                evidence.append(f"{stated.loc.path}:{stated.loc.line}: Fabric {shown} {stated.text}")
        if joined.bus_id is None:
            evidence.append(f"the output names no bus id for this GPU ({joined.how})")
        yield Hit(entity=gpu_entity(node, joined.bus_id or str(gpu.index)), location=first.loc,
                  fields={"gpu": label, "problems": "; ".join(text for _, text, _ in problems)},
                  variant=problems[0][0], evidence=evidence)
