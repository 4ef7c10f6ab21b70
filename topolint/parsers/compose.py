"""docker-compose files: ``environment`` (map and list) and the container options ENV008 reads.

Where a service's NCCL comes from (model/nccl_in_force.py): its ``image``, or the Dockerfile its
``build`` names (``context``, ``dockerfile``, ``target``: the built stage). With both, Compose
pulls the image when a registry has it and builds otherwise (compose-spec build.md "Using build
and image"; ``pull_policy: build`` always builds): both are then candidates.
"""

from __future__ import annotations

import os
import posixpath

from topolint.inputs.source import SourceFile
from topolint.model import config as cfg
from topolint.model.config import ConfigFile, EnvSetting, LaunchFact
from topolint.parsers._common import shell_value
from topolint.parsers._yaml import dig, get, is_map, is_seq, items, scalar, where, written_value


def parse_compose(source: SourceFile) -> ConfigFile:
    from topolint.parsers.kubernetes import parse_yaml

    return parse_yaml(source)


def _fact(config: ConfigFile, kind: str, value: str, node, scope: str, detail: str) -> None:
    line, column = where(node)
    config.launch.append(LaunchFact(kind, value, config.loc(line, column), scope, detail))


def _setting(config: ConfigFile, name: str, raw: str | None, node, scope: str, column_shift: int = 0,
             written: dict | None = None) -> None:
    line, column = where(node)
    value, default = shell_value(name, raw) if raw is not None else (None, False)
    config.settings.append(EnvSetting(name, value, config.loc(line, column + column_shift), scope, "compose-env",
                                      config.path, raw=f"{name}={raw}", default_only=default,
                                      passthrough=raw is None, **(written or {})))


def _build(config: ConfigFile, service, scope: str) -> None:
    """A service's ``build``: a source naming the Dockerfile and stage it builds (the JobIndex
    finds that Dockerfile among the checked files, or says the service's NCCL is unknown)."""
    from topolint.model.nccl_sources import UNKNOWN_IMAGE, NcclSource

    build = get(service, "build")
    if build is None:
        return
    context = scalar(build) if scalar(build) is not None else scalar(get(build, "context")) or "."
    dockerfile = scalar(get(build, "dockerfile")) or "Dockerfile"
    target = scalar(get(build, "target")) or ""
    written = context if scalar(build) is not None else f"context {context}, dockerfile {dockerfile}" + (
        f", target {target}" if target else "")
    loc = config.loc(*where(build if scalar(build) is not None else get(build, "context") or build))
    unknown = ""
    if get(build, "dockerfile_inline") is not None:
        unknown, written = "an inline Dockerfile (dockerfile_inline) is not read", "dockerfile_inline"
    elif "$" in context + dockerfile + target:
        unknown = "the build names its Dockerfile or stage by a variable"
    elif "://" in context or context.startswith("git@") or context.endswith(".git"):
        unknown = f"the build context {context} is not a folder here"
    if unknown:
        config.nccl_sources.append(NcclSource("build", written, loc, scope, unknown=unknown, framework=UNKNOWN_IMAGE))
        return
    folder = posixpath.dirname(config.path.replace(os.sep, "/"))
    path = dockerfile if posixpath.isabs(dockerfile) else posixpath.join(folder, context, dockerfile)
    path = posixpath.normpath(path)
    config.nccl_sources.append(NcclSource("build", written, loc, scope, ref=f"{path}#{target}"))


def read_compose(config: ConfigFile, doc) -> None:
    from topolint.parsers.kubernetes import command_pins, container_image

    for key_node, service in items(get(doc, "services")):
        scope = f"service:{key_node.value}"
        config.scopes[scope] = "compose"
        here = where(key_node)
        config.launch.append(LaunchFact(cfg.JOB_KIND, "compose", config.loc(*here), scope, "services"))
        _build(config, service, scope)
        if get(service, "build") is None or scalar(get(service, "pull_policy")) != "build":
            container_image(config, get(service, "image"), scope)  # with build, the tag it gets unless pulled
        command_pins(config, [get(service, "entrypoint"), get(service, "command")], scope)
        environment = get(service, "environment")
        if is_map(environment):
            for name_node, value in items(environment):
                name = name_node.value
                if name.startswith("NCCL_"):
                    _setting(config, name, None if value.tag.endswith(":null") else scalar(value), name_node, scope,
                             written=written_value(config, value))
                elif name == "CUDA_VISIBLE_DEVICES":
                    _fact(config, cfg.CUDA_VISIBLE_DEVICES, scalar(value) or "", name_node, scope, name)
        elif is_seq(environment):
            for item in environment.value:
                text = scalar(item) or ""
                name, eq, raw = text.partition("=")
                if name.startswith("NCCL_"):
                    _setting(config, name, raw if eq else None, item, scope,
                             written=written_value(config, item, skip=len(name) + 1) if eq else None)
                elif name == "CUDA_VISIBLE_DEVICES" and eq:
                    _fact(config, cfg.CUDA_VISIBLE_DEVICES, raw, item, scope, name)
        devices = get(service, "devices")
        for device in devices.value if is_seq(devices) else []:
            if "infiniband" in (scalar(device) or ""):
                _fact(config, cfg.RDMA_DEVICE, scalar(device), device, scope, "devices")
        caps = get(service, "cap_add")
        for cap in caps.value if is_seq(caps) else []:
            _fact(config, cfg.CAPABILITY, (scalar(cap) or "").upper().removeprefix("CAP_"), cap, scope, "cap_add")
        for field, kind in (("privileged", cfg.PRIVILEGED), ):
            if scalar(get(service, field)) == "true":
                _fact(config, kind, "true", get(service, field), scope, field)
        if scalar(get(service, "ipc")) == "host":
            _fact(config, cfg.IPC_HOST, "true", get(service, "ipc"), scope, "ipc: host")
        shm = get(service, "shm_size")
        if scalar(shm):
            _fact(config, cfg.SHM_SIZE, scalar(shm), shm, scope, "shm_size")
        memlock = dig(service, "ulimits", "memlock")
        if memlock is not None:
            value = scalar(memlock) or ",".join(scalar(get(memlock, k)) or "" for k in ("soft", "hard"))
            _fact(config, cfg.ULIMIT_MEMLOCK, value, memlock, scope, "ulimits.memlock")
        replicas = scalar(dig(service, "deploy", "replicas"))
        if replicas:
            _fact(config, cfg.REPLICAS, replicas, dig(service, "deploy", "replicas"), scope, "deploy.replicas")
        reservations = dig(service, "deploy", "resources", "reservations", "devices")
        for device in reservations.value if is_seq(reservations) else []:
            count = get(device, "count") or get(device, "device_ids")
            if count is not None:
                value = scalar(count) if scalar(count) else str(len(count.value)) if is_seq(count) else ""
                _fact(config, cfg.GPUS_PER_POD, value, count, scope, "deploy.resources.reservations.devices")
