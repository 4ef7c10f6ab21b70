"""Compare topolint's NCCL graph port with an answer of NCCL's own code (tests/oracle/answers.json.gz).

An answer holds what NCCL's src/graph code computed for one topology file, tag and environment:
accepted or rejected (with NCCL's WARN text), the path type and float32 bandwidth of every
GPU-GPU, GPU-NET and NET-GPU pair, the GDR decision (read, write), the PXN relay and the NET of
channels 0..15. ``differences`` lists every place where topolint's model says otherwise.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from types import SimpleNamespace

from topolint.model.nccl_graph import CPU, GPU, NET, NcclSystem, TopologyRejected
from topolint.model.nccl_version import NcclVersion

ANSWERS = Path(__file__).with_name("answers.json.gz")


def load_answers(path: Path = ANSWERS) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def env_of(key: str) -> dict[str, str]:
    return {} if key == "default" else dict(item.split("=", 1) for item in key.split(","))


def version_of(tag: str) -> NcclVersion:
    return NcclVersion.parse(tag)


def model_answer(text: str, path: str, version: NcclVersion, env: dict[str, str], bom: bool = False,
                 then=None) -> dict:
    """What topolint's port computes, in the oracle's answer layout; ``then(system)`` is called
    with the system the port built, when it built one."""
    # NCCL's graph port reads the file with NCCL's own reader (model/nccl_xml.py), not lxml.
    topology = SimpleNamespace(path=path, text=text, bom=bom)
    try:
        system = NcclSystem(topology, version, env)
        if then is not None:
            then(system)
    except TopologyRejected as error:
        # The answers mark a crash of NCCL's code as stage "crash"; the port says it by a flag.
        return {"accepted": False, "stage": "crash" if error.crash else error.stage, "message": error.message,
                "undefined": error.undefined, "detail": error.detail}
    gpus, nets = system.nodes[GPU], system.nodes[NET]
    has_pxn = version.behaviour("pxn_rule") is not None
    name = system.type_name

    def pair(p):
        return [name(p.type), p.bw]

    return {
        "_duplicate_gpu": len({g.id for g in gpus}) != len(gpus),
        "accepted": True,
        "gpus": [{"bus": g.attrs["bus"], "dev": g.attrs["dev"], "rank": g.attrs["rank"]} for g in gpus],
        "nets": [n.attrs["dev"] for n in nets],
        "gpu_gpu": [[pair(g.paths[GPU][p]) for p in range(len(gpus))] for g in gpus],
        "gpu_net": [[pair(g.paths[NET][n]) for n in range(len(nets))] for g in gpus],
        "net_gpu": [[pair(n.paths[GPU][g]) for g in range(len(gpus))] for n in nets],
        "gdr": [[[system.check_gdr(g, n, True), system.check_gdr(g, n, False)] for n in range(len(nets))]
                for g in range(len(gpus))],
        # -2: the tag has no PXN and no ncclTopoGetIntermediateRank (before 2.12)
        "relay": [[gpus[system.intermediate(g, n)].attrs["rank"] if has_pxn else -2 for n in range(len(nets))]
                  for g in range(len(gpus))],
        "channels": [[_dev(system, system.local_net(g, c)) for c in range(16)] for g in range(len(gpus))]
        if nets else [[-9] * 16 for _ in gpus],
    }


def _dev(system: NcclSystem, n: int | None) -> int:
    if n is None or n == -1:  # no local NET: ncclTopoGetLocalNet fails (2.18+) or gives id -1 (before)
        return -3 if n is None else -1
    return system.nodes[NET][n].attrs["dev"]


# What in a WARN text depends on the run rather than on the file and the tag: the local host's
# hash (src/graph/topo.cc "localHostHash = 0x%lx not found") and the path the file was read from
# ("Could not open XML topology file %s : %s"). Every other number and id is compared as printed.
_RUN_SPECIFIC = (
    (re.compile(r"localHostHash = 0x[0-9a-f]+"), "localHostHash = 0x<hash>"),
    (re.compile(r"(Could not open XML (?:topology|graph) file ).*?( : )"), r"\1<path>\2"),
)


def normalise(message: str) -> str:
    """A WARN text with its run-specific parts replaced (``_RUN_SPECIFIC``), nothing else."""
    for pattern, replacement in _RUN_SPECIFIC:
        message = pattern.sub(replacement, message)
    return message


def differences(expected: dict, got: dict) -> list[str]:
    """Where the model disagrees with NCCL; empty when they agree on everything compared. A
    refusal is compared by its stage (a crash of NCCL's code is its own stage, never a refusal)
    and its WARN text; an answer without a WARN text compares as the empty text."""
    if expected["accepted"] != got["accepted"]:
        return [f"accepted: NCCL {expected['accepted']} ({expected.get('message', '')!r}), "
                f"topolint {got['accepted']} ({got.get('message', '')!r})"]
    if not expected["accepted"]:
        if (expected["stage"] == "crash") != (got["stage"] == "crash"):
            return [f"crash: NCCL {expected['stage']} ({expected['message']!r}), "
                    f"topolint {got['stage']} ({got['detail']!r})"]
        if expected["stage"] == "crash":
            return []
        if expected["stage"] != got["stage"] or normalise(expected["message"]) != normalise(got["message"]):
            return [f"refusal: NCCL {expected['stage']} {expected['message']!r}, "
                    f"topolint {got['stage']} {got['message']!r}"]
        return []
    out = []
    for key in ("gpus", "nets"):
        if expected[key] != got[key]:
            return [f"{key}: NCCL {expected[key]} topolint {got[key]}"]
    for key in ("gpu_gpu", "gpu_net", "net_gpu"):
        for i, (row_e, row_g) in enumerate(zip(expected[key], got[key])):
            for j, (e, g) in enumerate(zip(row_e, row_g)):
                if e[0] != g[0] or _f32_text(e[1]) != _f32_text(g[1]):
                    out.append(f"{key}[{i}][{j}]: NCCL {e} topolint {g}")
    for key in ("gdr", "relay", "channels"):
        if expected[key] != got[key]:
            out.append(f"{key}: NCCL {expected[key]} topolint {got[key]}")
    return out


def _f32_text(value: float) -> str:
    """The oracle prints float32 with %.9g; compare in that form."""
    return f"{value:.9g}"


def matrix_of(system) -> str | None:
    """The ``nvidia-smi topo -m`` of the paths ncclTopoSetPaths gave (the port's, held to NCCL
    above): NV# from NVLink bandwidth, GPU-NIC cells by path type, NUMA Affinity from the local
    CPU. None when the file's GPUs, NETs or bandwidths are not what a matrix can state."""
    gpus, nets, paths, name = system.nodes[GPU], system.nodes[NET], system.set_paths, system.type_name
    if not gpus or not nets or any(g.attrs["dev"] != i or g.attrs["rank"] != i for i, g in enumerate(gpus)) \
            or any(n.attrs["dev"] != i for i, n in enumerate(nets)):
        return None  # NCCL's order is not the matrix's
    pcie = {bw for row in paths for t, bw, _ in row[NET] if name(t) != "SYS"}
    cross = {bw for row in paths for t, bw, _ in row[NET] if name(t) == "SYS"}
    if len(pcie) > 1 or len(cross) > 1 or (pcie and cross and max(cross) > min(pcie)):
        return None
    if any(name(t) not in ("PIX", "PXB", "PHB", "SYS") for row in paths for t, _, _ in row[NET]):
        return None
    per_link = system.version.nvlink_bw(gpus[0].attrs["sm"])
    cpus = [system.local_cpu(g) for g in range(len(gpus))]
    nics = [f"mlx5_{n}" for n in range(len(nets))]
    lines = ["\t" + "\t".join([f"GPU{g}" for g in range(len(gpus))] + nics + ["CPU Affinity", "NUMA Affinity"])]
    for g in range(len(gpus)):
        cells = ["X" if p == g else f"NV{round(bw / per_link)}" if name(t) == "NVL"
                 else "SYS" if cpus[g] != cpus[p] else "PHB" for p, (t, bw, _) in enumerate(paths[g][GPU])]
        cells += [name(t) for t, _, _ in paths[g][NET]]
        numa = system.nodes[CPU][cpus[g]].id if cpus[g] is not None else 0
        lines.append(f"GPU{g}\t" + "\t".join(cells) + f"\t0-1\t{numa}")
    for n, nic in enumerate(nics):
        cells = [name(paths[g][NET][n][0]) for g in range(len(gpus))]
        cells += ["X" if m == n else "PIX" for m in range(len(nets))]
        lines.append(f"{nic}\t" + "\t".join(cells))
    return "\n".join(lines) + "\n"
