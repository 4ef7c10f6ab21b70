"""TL005: an input is cut short or restricted: a matrix cut after a complete row, or a cgroup /
Slurm view that shows only some GPUs (row-local rules ran on it; node-wide rules were skipped),
or a command a node bundle's manifest says did not complete (its evidence is missing), or lspci
run without root (capabilities unknown), or a numactl -H paste cut before its last node."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.engine.finding import Hit
from topolint.model.facts import Location, build
from topolint.model.matrix import topo_matrices
from topolint.model.node import file_entity

NEEDS = ("input that can be partial",)
NODE_WIDE = "NUMA005, NUMA006, NVL001, NVL002 and TL003's GPU count"


class Parameters(CheckParameters):
    pass


# What each bundle command's output settles, for the message (topolint collect's table).
_SETTLES = {"lspci": "PCIe links and ACS (PCIE001, PCIE002, PCIE004)", "dmesg": "IOMMU mode (PCIE003)",
            "cmdline": "IOMMU mode (PCIE003)", "virt": "bare metal or VM (PCIE002, PCIE003)",
            "numactl": "NUMA CPU lists (TL003)", "hwloc": "the PCI tree without an NCCL dump (NUMA001, NUMA002)",
            "nvidia-smi-topo": "GPU placement (NUMA, NVL rules)", "nvidia-smi-nvlink": "NVLink states (NVL002)",
            "nccl-topo-xml": "the topology NCCL sees (TOPO, NUMA, PCIE rules)"}


def _bundle_hits(node) -> Iterator[Hit]:
    manifest = node.bundle
    for command in manifest.failed:
        settles = _SETTLES.get(command.format or "", "the rules that read it")
        fields = {"path": manifest.path, "command": " ".join(command.argv) or command.file,
                  "status": command.status, "file": command.file, "settles": settles,
                  "why": command.message or (f"exit status {command.exit_code}" if command.exit_code is not None
                                             else command.status)}
        evidence = [f"{manifest.path}:{command.loc.line}: {command.file}: status {command.status}"
                    + (f", exit status {command.exit_code}" if command.exit_code is not None else "")
                    + (f", {command.message}" if command.message else "")]
        yield Hit(entity=file_entity(node.name, f"{manifest.folder}/{command.file}"), location=command.loc,
                  fields=fields, evidence=evidence, variant="bundle_" + command.status)


def _host_hits(node) -> Iterator[Hit]:
    for lspci in node.lspci:
        denied = [d for d in lspci.devices if d.capabilities_denied is not None]
        if denied:
            fields = {"path": lspci.path, "count": len(denied), "total": len(lspci.devices)}
            evidence = [f"{lspci.path}:{d.capabilities_denied.line}: {d.address or 'a device'}: Capabilities: "
                        "<access denied>" for d in denied[:4]]
            yield Hit(entity=file_entity(node.name, lspci.path), location=denied[0].capabilities_denied,
                      fields=fields, evidence=evidence, variant="lspci_not_root")
    for table in node.numa_tables:
        if table.partial:
            fields = {"path": table.path, "count": len(table.nodes), "total": table.available}
            yield Hit(entity=file_entity(node.name, table.path), location=table.loc, fields=fields,
                      evidence=[f"{table.path}:{table.loc.line}: available: {table.available} nodes, "
                                f"{len(table.nodes)} listed"], variant="numactl_cut")


def check(context, params: Parameters) -> Iterator[Hit]:
    if context.node.bundle is not None:
        yield from _bundle_hits(context.node)
    yield from _host_hits(context.node)
    for matrix in topo_matrices(context.node):
        if not matrix.partial and matrix.restricted is None:
            continue
        rows = [r for r in matrix.rows]
        last = rows[-1]
        gpus = sum(1 for k in matrix.column_kinds if k == "gpu")
        gpu_rows = sum(1 for r in rows if r.kind == "gpu")
        fields = {
            "path": matrix.path,
            "last_row": last.label,
            "line": last.loc.line,
            "rows": len(rows),
            "columns": len(matrix.columns),
            "gpu_rows": gpu_rows,
            "gpus": gpus,
            "missing": ", ".join(matrix.missing_rows[:6]) + (", ..." if len(matrix.missing_rows) > 6 else ""),
            "skipped": NODE_WIDE,
            "reason": matrix.restricted or "",
        }
        evidence = [f"{matrix.path}:{matrix.header_loc.line}: header has {len(matrix.columns)} columns "
                    f"({gpus} GPUs, {len(matrix.columns) - gpus} NICs)",
                    f"{matrix.path}:{last.loc.line}: last complete row {last.label}"]
        if matrix.cut_line:
            fields["missing"] += f" (line {matrix.cut_line} was cut inside its row and dropped)"
            evidence.append(f"{matrix.path}:{matrix.cut_line}: row cut inside its cells (dropped)")
        location = build(Location, path=matrix.path, line=last.loc.line, column=1)
        if matrix.restricted is not None:
            variant = "cgroup"
            location = matrix.header_loc
            evidence.append(f"cgroup/Slurm view: {matrix.restricted}")
        elif gpu_rows < gpus:
            variant = "gpu_rows"
        else:
            variant = "nic_rows"
            fields["skipped"] = "none (every GPU row is present)"
        yield Hit(entity=file_entity(context.node.name, matrix.path), location=location, fields=fields,
                  evidence=evidence, variant=variant)
