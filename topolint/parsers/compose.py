"""docker-compose files: ``environment`` (map and list), ``env_file`` and the container options ENV008 reads.

As compose-go builds a service's environment (compose-spec/compose-go@e70e961): ``env_file`` is a
path, a list of paths, or a list of ``{path, required, format}`` mappings (transform/envfile.go;
``required`` defaults to true); each path is relative to the compose file's folder
(paths/resolve.go); the files are read in order, a later one overriding an earlier, and
``environment:`` overrides them all (types/project.go ``WithServicesEnvironmentResolved``). An
env file is read as compose reads a ``.env`` (parsers/envfile.py) and only read: it is reported
where it sits, never written unless it was given. YAML merge keys (``<<: *template``) are applied
first, as compose's YAML loader does.

Where a service's NCCL comes from (model/nccl_in_force.py): its ``image``, or the Dockerfile its
``build`` names (``context``, ``dockerfile``, ``target``: the built stage), then what its
``entrypoint``/``command`` install. With both, Compose pulls the image when a registry has it and
builds otherwise (compose-spec build.md "Using build and image"; ``pull_policy: build`` always
builds): both are then candidates.
"""

from __future__ import annotations

import os
import posixpath

from topolint.inputs.source import SourceFile
from topolint.model import config as cfg
from topolint.model.config import ConfigFile, EnvSetting, LaunchFact, SkippedLine
from topolint.parsers._common import shell_value
from topolint.parsers._yaml import dig, get, is_map, is_seq, items, merged, scalar, where, written_value


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


def _command_pins(config: ConfigFile, nodes: list, scope: str) -> None:
    """NCCL installs in a service's entrypoint and command: the argv (``["pip", "install",
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
    from topolint.parsers.kubernetes import _SHELLS

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


def read_compose(config: ConfigFile, doc, source: SourceFile | None = None) -> None:
    from topolint.parsers.kubernetes import container_image

    for key_node, service in items(get(doc, "services")):
        service = merged(service)
        scope = f"service:{key_node.value}"
        config.scopes[scope] = "compose"
        here = where(key_node)
        config.launch.append(LaunchFact(cfg.JOB_KIND, "compose", config.loc(*here), scope, "services"))
        _build(config, service, scope)
        if get(service, "build") is None or scalar(get(service, "pull_policy")) != "build":
            container_image(config, get(service, "image"), scope)  # with build, the tag it gets unless pulled
        _command_pins(config, [get(service, "entrypoint"), get(service, "command")], scope)
        if source is not None:
            for path_node, required in _env_files(get(service, "env_file")):
                _read_env_file(config, source, path_node, required, scope)
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


def _env_files(node) -> list[tuple[object, bool]]:
    """(path node, required) of each ``env_file`` entry, in order (transform/envfile.go)."""
    entries = node.value if is_seq(node) else [node] if node is not None else []
    out = []
    for entry in entries:
        if scalar(entry) is not None:
            out.append((entry, True))
        elif is_map(entry) and scalar(get(entry, "path")) is not None:
            out.append((get(entry, "path"), (scalar(get(entry, "required")) or "true").lower() != "false"))
    return out


def _read_env_file(config: ConfigFile, source: SourceFile, path_node, required: bool, scope: str) -> None:
    """The settings of one env file, in the service's scope, each at its own file and line."""
    import os

    from topolint.inputs.source import InputError, read_source
    from topolint.parsers._sourced import inside_tree
    from topolint.parsers.envfile import read_compose_env

    written = scalar(path_node)
    line = where(path_node)[0]
    if source.real_path is None:
        config.skipped.append(SkippedLine(line, f"env_file {written}: the compose file is not on disk (stdin): not read"))
        return
    if "$" in written:
        config.skipped.append(SkippedLine(line, f"env_file {written}: the path is interpolated at run time: not read"))
        return
    folder = os.path.dirname(os.path.realpath(source.real_path))
    real = os.path.realpath(os.path.join(folder, written))
    shown = written if os.path.isabs(written) else \
        os.path.normpath(os.path.join(os.path.dirname(source.path), written)).replace(os.sep, "/")
    if not os.path.isfile(real):
        state = "compose stops: the file is required" if required else "required: false, so compose skips it"
        config.skipped.append(SkippedLine(line, f"env_file {written}: no such file ({state}): not read"))
        return
    if not inside_tree(real, folder):
        config.skipped.append(SkippedLine(line, f"env_file {written}: {real} is outside the checked tree: not followed"))
        return
    try:
        env = read_source(shown, real)
    except InputError as exc:
        config.skipped.append(SkippedLine(line, f"env_file {written}: {exc.message}"))
        return
    env.format = "envfile"
    config.included.append(env)
    read = read_compose_env(env, scope, "compose-env-file")
    config.settings.extend(read.settings)
    config.skipped.extend(SkippedLine(s.line, s.reason, env.path) for s in read.skipped)
