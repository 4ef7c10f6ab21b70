"""Kubernetes YAML: ``env`` of every container and init container of every document.

Pod specs are found wherever a mapping has ``containers``: Pods, Deployments, Jobs, and CRDs
such as MPIJob, PyTorchJob and JobSet (replica types and replicated jobs name the scope).
ConfigMap ``data`` is read too; containers that take it through ``envFrom`` see it. Launch
facts: ``nvidia.com/gpu``, RDMA device-plugin resources, ``/dev/infiniband`` mounts,
capabilities, privileged, the ``/dev/shm`` emptyDir size, hostIPC, replicas, the job kind and
``--nproc-per-node`` in the command; each container's ``image`` (the NCCL its settings are judged
with). A YAML file that is a Helm template is skipped; one with ``services:`` is docker-compose.
"""

from __future__ import annotations

import re
import shlex

from topolint.inputs.source import SourceFile
from topolint.model import config as cfg
from topolint.model.config import ConfigFile, EnvSetting, LaunchFact, SkippedLine
from topolint.model.numbers import decimal
from topolint.parsers._lines import TextLines
from topolint.parsers._yaml import (
    compose_documents,
    dig,
    each,
    get,
    is_helm_template,
    is_map,
    is_seq,
    items,
    scalar,
    where,
    written_value,
)


def is_rdma_resource(name: str) -> bool:
    lowered = name.lower()
    return (lowered.startswith("rdma/") or "rdma" in lowered or lowered == "vpc.amazonaws.com/efa"
            or lowered.startswith("mellanox.com/") or "infiniband" in lowered or "/hca" in lowered
            or "sriov" in lowered)


def parse_yaml(source: SourceFile) -> ConfigFile:
    if is_helm_template(source.text):
        config = ConfigFile(path=source.path, format="helm-template")
        config.skipped.append(SkippedLine(1, "Helm template ({{ }}): lint the output of `helm template` instead"))
        return config
    documents = compose_documents(source)
    if "jobs" in source.text or "runs" in source.text:
        from topolint.parsers.github_actions import from_documents, is_workflow

        if any(is_workflow(doc) for doc in documents):  # a GitHub Actions workflow or composite action
            return from_documents(source, documents)
    config = ConfigFile(path=source.path, format="kubernetes")
    for doc in documents:
        if not is_map(doc):
            continue
        kind = scalar(get(doc, "kind"))
        if kind is None and is_map(get(doc, "services")):
            from topolint.parsers.compose import read_compose

            config.format = "compose"
            read_compose(config, doc, source)
            continue
        if kind is None:
            continue
        name = scalar(dig(doc, "metadata", "name")) or "-"
        _annotation_suppressions(source, doc)
        if kind in ("ConfigMap", "Secret"):
            _config_map(config, doc, kind, name, source)
            continue
        _walk(config, doc, f"{kind}/{name}", kind, 1, [], source=source)
    return config


def _annotation_suppressions(source: SourceFile, doc) -> None:
    """``topolint.dev/ignore-CODE: "reason"`` on an object suppresses CODE within the object."""
    from topolint.engine.suppression import ANNOTATION_PREFIX, annotation_spans

    annotations, lines = {}, {}
    for key_node, value in items(dig(doc, "metadata", "annotations")):
        if str(key_node.value).startswith(ANNOTATION_PREFIX):
            annotations[key_node.value] = scalar(value) or ""
            lines[key_node.value] = where(key_node)[0]
    if annotations:
        first = doc.start_mark.line + 1
        last = doc.end_mark.line + (1 if doc.end_mark.column else 0)
        source.suppressions.extend(annotation_spans(source.path, first, last, annotations, lines=lines))


def _config_map(config: ConfigFile, doc, kind: str, name: str, source: SourceFile) -> None:
    scope = f"{kind}/{name}"
    config.names[scope] = name
    for key_node, value in items(get(doc, "data")) if kind == "ConfigMap" else items(get(doc, "stringData")):
        key = key_node.value
        if _is_script(key, scalar(value)):  # a script the pods run (mounted from the ConfigMap)
            script_scope = f"{scope}/{key}"
            config.scopes[script_scope] = "script"
            command_line(config, source, [_Script(value)], script_scope)
        elif key.startswith("NCCL_"):
            line, column = where(key_node)
            config.settings.append(EnvSetting(key, scalar(value), config.loc(line, column), scope, "configmap",
                                              config.path, raw=f"{key}: {scalar(value)}", **written_value(config, value)))


def _walk(config: ConfigFile, node, scope: str, kind: str, replicas: int, labels: list[str], key: str = "",
          source: SourceFile | None = None) -> None:
    if is_seq(node):
        for item in each(node):
            label = scalar(get(item, "name")) if key in ("replicatedJobs", "workerGroupSpecs") else None
            _walk(config, item, scope, kind, replicas, labels + ([label] if label else []), "", source)
        return
    if not is_map(node):
        return
    for field in ("replicas", "parallelism"):
        count = scalar(get(node, field))
        number = decimal(count) if count and count.isascii() and count.isdigit() else None
        if number is not None and not is_seq(get(node, "containers")):
            replicas *= max(number, 1) if field == "replicas" or kind == "JobSet" else 1
    if is_seq(get(node, "containers")):
        _pod(config, node, scope + "".join(f"/{label}" for label in labels), kind, replicas, node, source)
        return
    for key_node, value in items(node):
        child = key_node.value
        new_labels = labels + [child] if key.endswith("ReplicaSpecs") or key == "replicaSpecs" else labels
        _walk(config, value, scope, kind, replicas, new_labels, child, source)


def _pod(config: ConfigFile, pod, scope: str, kind: str, replicas: int, spec, source: SourceFile | None) -> None:
    volumes = {scalar(get(v, "name")): v for v in (get(spec, "volumes").value if is_seq(get(spec, "volumes")) else [])}
    host_ipc = scalar(get(spec, "hostIPC")) == "true"
    for group in ("initContainers", "containers"):
        containers = get(spec, group)
        if not is_seq(containers):
            continue
        for container in containers.value:
            name = scalar(get(container, "name")) or "-"
            cscope = f"{scope}/{name}"
            config.scopes[cscope] = "pod" if group == "containers" else "init"
            line, column = where(container)
            here = config.loc(line, column)
            config.launch.append(LaunchFact(cfg.JOB_KIND, kind, here, cscope, f"kind: {kind}"))
            config.launch.append(LaunchFact(cfg.REPLICAS, str(replicas), here, cscope, "replicas"))
            if host_ipc:
                config.launch.append(LaunchFact(cfg.IPC_HOST, "true", here, cscope, "hostIPC: true"))
            _container(config, container, cscope, volumes, source)


def _fact(config: ConfigFile, kind: str, value: str, node, scope: str, detail: str) -> None:
    line, column = where(node)
    config.launch.append(LaunchFact(kind, value, config.loc(line, column), scope, detail))


def container_image(config: ConfigFile, node, scope: str) -> None:
    """The image a container (or a compose service) runs: the NCCL its settings are judged with
    (model/nccl_sources.py image_source)."""
    from topolint.model.nccl_sources import image_source

    reference = scalar(node)
    if reference and reference.strip():
        reference = reference.strip()
        config.nccl_sources.append(image_source(reference, config.loc(*where(node)), scope, word=f"image {reference}"))


def _container(config: ConfigFile, container, scope: str, volumes: dict, source: SourceFile | None) -> None:
    container_image(config, get(container, "image"), scope)  # what its command installs: command_line below
    env = get(container, "env")
    for item in each(env):
        name_node = get(item, "name")
        name = scalar(name_node)
        if not name:
            continue
        value = scalar(get(item, "value"))
        if get(item, "valueFrom") is not None or (value is not None and "$(" in value):
            value = None
        elif value is None:
            value = ""
        if name == "CUDA_VISIBLE_DEVICES":
            _fact(config, cfg.CUDA_VISIBLE_DEVICES, value if value is not None else "$", name_node, scope, name)
        elif name.startswith("NCCL_"):
            line, column = where(name_node)
            config.settings.append(EnvSetting(name, value, config.loc(line, column), scope, "k8s-env",
                                              config.path, raw=f"{name}={value}", **written_value(config, get(item, "value"))))
    env_from = get(container, "envFrom")
    for item in env_from.value if is_seq(env_from) else []:
        for ref, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            target = scalar(dig(item, ref, "name"))
            if target:
                _fact(config, cfg.ENV_FROM, f"{kind}/{target}", get(item, ref), scope, f"envFrom {ref}")
    for section in ("limits", "requests"):
        for key_node, value in items(dig(container, "resources", section)):
            resource = key_node.value
            if resource == "nvidia.com/gpu":
                _fact(config, cfg.GPUS_PER_POD, scalar(value) or "", key_node, scope, f"{section}: {resource}")
            elif is_rdma_resource(resource):
                _fact(config, cfg.RDMA_RESOURCE, resource, key_node, scope, f"{section}: {resource}")
    security = get(container, "securityContext")
    if scalar(get(security, "privileged")) == "true":
        _fact(config, cfg.PRIVILEGED, "true", get(security, "privileged"), scope, "privileged: true")
    added = dig(security, "capabilities", "add")
    for cap in added.value if is_seq(added) else []:
        _fact(config, cfg.CAPABILITY, (scalar(cap) or "").upper().removeprefix("CAP_"), cap, scope, "capabilities.add")
    mounts = get(container, "volumeMounts")
    for mount in mounts.value if is_seq(mounts) else []:
        path = scalar(get(mount, "mountPath")) or ""
        volume = volumes.get(scalar(get(mount, "name")))
        if path.rstrip("/") == "/dev/shm":
            size = "host" if get(volume, "hostPath") is not None else ""
            empty = get(volume, "emptyDir")
            if empty is not None:
                size = scalar(get(empty, "sizeLimit")) or ("memory" if scalar(get(empty, "medium")) == "Memory" else "disk")
            _fact(config, cfg.SHM_SIZE, size, get(mount, "mountPath"), scope, "volumeMounts /dev/shm")
        elif path.startswith("/dev/infiniband"):
            _fact(config, cfg.RDMA_DEVICE, path, get(mount, "mountPath"), scope, "volumeMounts /dev/infiniband")
    argv = [item for key in ("command", "args") for item in (get(container, key).value if is_seq(get(container, key)) else [])]
    launched = len(config.launch)
    if source is not None and argv:
        command_line(config, source, argv, scope)
    if not any(f.kind == cfg.NPROC_PER_NODE for f in config.launch[launched:]):
        _nproc_anywhere(config, argv, scope)


_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash"}


def _is_script(key: str, text: str | None) -> bool:
    """A ConfigMap value that is a shell script: named ``*.sh`` or starting with a shell ``#!``."""
    if not text:
        return False
    first = text.split("\n", 1)[0]
    return key.endswith((".sh", ".bash")) or (first.startswith("#!") and first.rstrip().rsplit("/", 1)[-1].split()[-1]
                                              in _SHELLS)


class _Script:
    """A script node seen as the argument of ``sh -c`` (command_line reads it the same way)."""

    def __init__(self, node):
        self.node = node


def command_line(config: ConfigFile, source: SourceFile, argv: list, scope: str) -> None:
    """What a container's ``command`` + ``args`` set and launch, read as the shell would: a
    ``sh -c SCRIPT`` runs SCRIPT (a literal block keeps its lines; a folded or quoted one is looked
    for in the lines it spans), anything else is one command, word by word."""
    from topolint.parsers._bash import Token
    from topolint.parsers.shell import parse_argv_into, parse_shell_into

    lines = TextLines(source.text)
    if len(argv) == 1 and isinstance(argv[0], _Script):
        argv = [None, None, argv[0].node]
        values = ["sh", "-c", scalar(argv[2]) or ""]
    else:
        values = [scalar(item) or "" for item in argv]
    first = values[0].rsplit("/", 1)[-1] if values else ""
    if first in _SHELLS and "-c" in values[1:3]:
        at = values.index("-c", 1) + 1
        if at < len(argv) and scalar(argv[at]) is not None:
            node = argv[at]
            text = scalar(node)
            if node.style == "|":  # the script's lines are the file's, from the one after the indicator
                parse_shell_into(config, source, lines, text.split("\n"), node.start_mark.line + 2, scope)
            else:
                start, end = node.start_mark.line + 1, node.end_mark.line + 1
                parse_shell_into(config, source, lines, [text], start, scope, span=(start, end))
        return
    tokens = [Token(value, *where(item)) for value, item in zip(values, argv)]
    parse_argv_into(config, source, lines, tokens, scope)


def _nproc_anywhere(config: ConfigFile, argv: list, scope: str) -> None:
    """``--nproc-per-node`` anywhere in the words (an entrypoint that wraps torchrun)."""
    for item in argv:
        text = scalar(item) or ""
        try:
            tokens = shlex.split(text) if " " in text else [text]
        except ValueError:
            continue
        for i, token in enumerate(tokens):
            match = re.match(r"--nproc[-_]per[-_]node(?:=(\S+))?$", token)
            if match:
                value = match.group(1) or (tokens[i + 1] if i + 1 < len(tokens) else "")
                _fact(config, cfg.NPROC_PER_NODE, value, item, scope, token)
