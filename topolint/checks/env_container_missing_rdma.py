"""ENV008: a container spec for multi-node NCCL with RDMA settings but no RDMA device, no
IPC_LOCK, a small /dev/shm or (docker/compose) a limited memlock ulimit."""

from __future__ import annotations

import re
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._config import as_int, container_launch, rdma_settings_listed, where
from topolint.engine.finding import Hit
from topolint.model import config as cfg
from topolint.model.numbers import decimal_fraction

NEEDS = ("config",)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "ki": 1024, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mi": 1024**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gi": 1024**3, "gib": 1024**3, "t": 1000**4, "ti": 1024**4}


class Parameters(CheckParameters):
    min_shm_bytes: int = 1 << 30


def size_bytes(text: str) -> int | None:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text or "")
    if not match or match.group(2).lower() not in _UNITS:
        return None
    # docker reads k/m/g as binary units; Kubernetes reads them as decimal: either is within 7%.
    return int(decimal_fraction(match.group(1)) * _UNITS[match.group(2).lower()])


def check(context, params: Parameters) -> Iterator[Hit]:
    for config in context.configs:
        for scope, kind in config.scopes.items():
            if kind not in ("pod", "compose", "docker-run"):
                continue
            rdma, more = rdma_settings_listed(context, config, scope)
            if not rdma:
                continue
            facts = container_launch(context, config, scope)
            by_kind: dict[str, list] = {}
            for fact in facts:
                by_kind.setdefault(fact.kind, []).append(fact)
            job_kind = by_kind.get(cfg.JOB_KIND, [None])[0]
            replicas = max((as_int(f.value) or 1 for f in by_kind.get(cfg.REPLICAS, [])), default=1)
            if kind == "pod" and replicas < 2 and (job_kind is None or job_kind.value not in cfg.MULTI_NODE_KINDS):
                continue
            if job_kind is not None and job_kind.value == "MPIJob" and _role(scope, config) == "launcher":
                continue  # mpi-operator's launcher runs mpirun; the ranks (and NCCL) run in the Worker pods
            privileged = bool(by_kind.get(cfg.PRIVILEGED))
            problems = []
            if not (privileged or by_kind.get(cfg.RDMA_DEVICE) or by_kind.get(cfg.RDMA_RESOURCE)):
                problems.append("no RDMA device (/dev/infiniband or an RDMA device-plugin resource)")
            ipc_lock = privileged or "IPC_LOCK" in {f.value for f in by_kind.get(cfg.CAPABILITY, [])}
            memlock = {f.value.replace(" ", "") for f in by_kind.get(cfg.ULIMIT_MEMLOCK, [])}
            unlimited = bool(memlock & {"-1", "-1,-1", "unlimited", "-1:-1", "unlimited:unlimited"})
            # Pinning memory for RDMA needs CAP_IPC_LOCK or a memlock limit large enough (the kernel's
            # ib_umem_get, drivers/infiniband/core/umem.c): either one is enough. A pod cannot set its
            # ulimits, so there IPC_LOCK is the way.
            if kind in ("compose", "docker-run"):
                if not ipc_lock and not unlimited:
                    problems.append("no IPC_LOCK capability and a memlock ulimit that is not unlimited")
            elif not ipc_lock:
                problems.append("no IPC_LOCK capability")
            if not by_kind.get(cfg.IPC_HOST):
                shm = by_kind.get(cfg.SHM_SIZE)
                value = shm[0].value if shm else ""
                size = size_bytes(value) if value not in ("memory", "host", "disk") else None
                if not shm:
                    problems.append("/dev/shm is the runtime default (64 MiB)")
                elif size is not None and size < params.min_shm_bytes:
                    problems.append(f"/dev/shm is {value}")
            if not problems:
                continue
            anchor = job_kind.loc if job_kind is not None else config.loc(1)
            what = (f"{job_kind.value} with {replicas} replicas" if kind == "pod" and job_kind is not None
                    else "compose service" if kind == "compose" else "docker run")
            evidence = [f"{where(anchor)}: container {scope} ({what})"] + [f"{e} (RDMA-related)" for e in rdma] + \
                ([f"... and {more} more RDMA-related settings"] if more else [])
            evidence += [f"{where(f.loc)}: {f.detail} {f.value}" for f in facts
                         if f.kind in (cfg.RDMA_DEVICE, cfg.RDMA_RESOURCE, cfg.CAPABILITY, cfg.SHM_SIZE,
                                       cfg.ULIMIT_MEMLOCK, cfg.PRIVILEGED, cfg.IPC_HOST)]
            yield Hit(entity=f"container/{scope}@{config.path}", location=anchor,
                      fields={"container": scope, "path": config.path, "problems": "; ".join(problems),
                              "spec": what}, evidence=evidence,
                      variant="compose" if kind in ("compose", "docker-run") else "default")


def _role(scope: str, config) -> str:
    """The replica type of an MPIJob container scope ("MPIJob/name/Launcher/container"), lower case."""
    parts = scope.split("/")
    return parts[2].lower() if len(parts) >= 4 else ""
