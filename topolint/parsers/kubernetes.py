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
from topolint.parsers._yaml import (
    compose_documents,
    dig,
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
    config = ConfigFile(path=source.path, format="kubernetes")
    for doc in documents:
        if not is_map(doc):
            continue
        kind = scalar(get(doc, "kind"))
        if kind is None and is_map(get(doc, "services")):
            from topolint.parsers.compose import read_compose

            config.format = "compose"
            read_compose(config, doc)
            continue
        if kind is None:
            continue
        name = scalar(dig(doc, "metadata", "name")) or "-"
        _annotation_suppressions(source, doc)
        if kind in ("ConfigMap", "Secret"):
            _config_map(config, doc, kind, name)
            continue
        _walk(config, doc, f"{kind}/{name}", kind, 1, [])
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


def _config_map(config: ConfigFile, doc, kind: str, name: str) -> None:
    scope = f"{kind}/{name}"
    config.names[scope] = name
    for key_node, value in items(get(doc, "data")) if kind == "ConfigMap" else items(get(doc, "stringData")):
        key = key_node.value
        if key.startswith("NCCL_"):
            line, column = where(key_node)
            config.settings.append(EnvSetting(key, scalar(value), config.loc(line, column), scope, "configmap",
                                              config.path, raw=f"{key}: {scalar(value)}", **written_value(config, value)))


def _walk(config: ConfigFile, node, scope: str, kind: str, replicas: int, labels: list[str], key: str = "") -> None:
    if is_seq(node):
        for item in node.value:
            label = scalar(get(item, "name")) if key in ("replicatedJobs", "workerGroupSpecs") else None
            _walk(config, item, scope, kind, replicas, labels + ([label] if label else []), "")
        return
    if not is_map(node):
        return
    for field in ("replicas", "parallelism"):
        count = scalar(get(node, field))
        number = decimal(count) if count and count.isascii() and count.isdigit() else None
        if number is not None and not is_seq(get(node, "containers")):
            replicas *= max(number, 1) if field == "replicas" or kind == "JobSet" else 1
    if is_seq(get(node, "containers")):
        _pod(config, node, scope + "".join(f"/{label}" for label in labels), kind, replicas, node)
        return
    for key_node, value in items(node):
        child = key_node.value
        new_labels = labels + [child] if key.endswith("ReplicaSpecs") or key == "replicaSpecs" else labels
        _walk(config, value, scope, kind, replicas, new_labels, child)


def _pod(config: ConfigFile, pod, scope: str, kind: str, replicas: int, spec) -> None:
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
            _container(config, container, cscope, volumes)


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


_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}


def command_pins(config: ConfigFile, nodes: list, scope: str) -> None:
    """NCCL installs in a container's command (and args): the argv (``["pip", "install",
    "torch==2.1.0"]``) or the script of ``sh -c SCRIPT``, which run in the container over its
    image's NCCL. A compose command written as one string is split into words as Compose splits it.
    ``pip install -r FILE`` there reads a file of the image: its pins are unknown."""
    from topolint.parsers._bash import Token, statements

    argv: list = []
    within: dict[int, object] = {}  # id(word) -> Location of the words of a script inside it
    for node in nodes:
        if scalar(node) is not None and not is_seq(node):  # compose: command: pip install torch==2.1.0
            line, column = where(node)
            shift = 1 if node.style in ("'", '"') else 0
            for statement in statements(scalar(node), 1)[0] if "\n" not in scalar(node) else []:
                argv.extend(Token(str(t), line, column + shift + t.column - 1) for t in statement.tokens)
            continue
        for item in node.value if is_seq(node) else []:
            text = scalar(item)
            if text is None:
                continue
            line, column = where(item)
            word = Token(text, line, column)
            block = item.style in ("|", ">")
            shift = 0 if block or not item.style else 1  # a quoted scalar's text starts after its quote
            within[id(word)] = (lambda w, line=line, column=column, block=block, shift=shift:
                                config.loc(line + w.line, 0) if block else config.loc(line, column + shift + w.column - 1))
            argv.append(word)
    _argv_pins(config, argv, lambda w: within.get(id(w)) or _fixed(config, w), scope, 0)


def _argv_pins(config: ConfigFile, words: list, inside, scope: str, depth: int) -> None:
    """One command's words: a pin command, or ``sh -c SCRIPT`` (its script read in turn).
    ``inside(word)`` locates the words of a script that ``word`` holds."""
    from topolint.parsers._bash import statements
    from topolint.parsers._nccl_pins import PinReader, pin_command

    if not words:
        return
    if pin_command(words):
        PinReader(config.nccl_sources, lambda w: config.loc(w.line, w.column), lambda path, how: None).command(words, scope)
        return
    if words[0].rsplit("/", 1)[-1] not in _SHELLS or depth >= 2:
        return
    script = next((words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("-") and w.endswith("c")), None)
    if script is None or not ("install" in script or "load" in script):
        return
    locate = inside(script)
    for statement in statements(str(script), 1)[0]:
        found: list = []
        for token in statement.tokens + [None]:
            if token is None or token.op:
                placed = [_placed(t, locate(t)) for t in found]
                _argv_pins(config, placed, lambda w: _fixed(config, w), scope, depth + 1)
                found = []
            else:
                found.append(token)


def _fixed(config: ConfigFile, word):
    """Locates every word of a script held in ``word`` at ``word`` (a script quoted in a script)."""
    at = config.loc(word.line, word.column)
    return lambda inner: at


def _placed(token, loc):
    """``token`` with the line and column it has in the file."""
    from topolint.parsers._bash import Token

    return Token(str(token), loc.line, loc.column)


def _container(config: ConfigFile, container, scope: str, volumes: dict) -> None:
    container_image(config, get(container, "image"), scope)
    command_pins(config, [get(container, "command"), get(container, "args")], scope)
    env = get(container, "env")
    for item in env.value if is_seq(env) else []:
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
    for key in ("command", "args"):
        words = get(container, key)
        for item in words.value if is_seq(words) else []:
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
