"""The NCCL version in force: for a setting in a config file (its job), for a node, for a log.

One answer, ``VersionInForce``, that every version-dependent rule reads: the version to judge
with, where it came from (``--nccl-version``, the configuration, evidence in the inputs, or the
default: the newest known), the sources read with their file and line, and why the winner won.
``--nccl-version`` and the configuration's ``nccl-version`` always win; evidence that disagrees
with them is still listed.

A job is the files that launch one workload together, as far as the files themselves say so:
- a Dockerfile stage is one: its base image (``FROM`` an earlier stage inherits that stage's
  answer), then its RUN installs in order (only the final stage is the image that runs; earlier
  stages matter through ``FROM <stage>`` and ``COPY --from=<stage>`` of NCCL's own files);
- a script or config file the Dockerfile copies into a stage by name runs with that stage's NCCL,
  then with what the file itself installs or loads (``pip install``, ``module load``);
- a ``docker run IMAGE`` / ``srun --container-image IMAGE`` step runs with that image, and only
  what the step itself installs;
- a Kubernetes container runs its ``image``; a ConfigMap's settings run in the containers that
  take it through ``envFrom``; a compose service runs its ``image`` or the Dockerfile stage its
  ``build`` names (both candidates when it has both: Compose pulls the image when it can);
- anything else is judged by what its own file installs, else by the configured or default
  version (``--verbose`` says so).

Which NCCL a job loads when it has several: the Python environment's (a pip ``nvidia-nccl-cu*``
or ``torch`` wheel, conda's ``nccl``) over the system's (an image's packages, apt/dnf pins): the
frameworks installed from pip load the NCCL wheel they pin. An environment module's (or spack's)
NCCL, first on ``LD_LIBRARY_PATH``, wins over the system's. Where the files cannot settle it (a
wheel and a module; an NCCL wheel alone under an NGC framework that loads the system NCCL; an image
nothing is known about) every version the job may load is a candidate, and a finding must hold for
each; an unknown candidate leaves the configured or default version in force.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field, replace

from topolint.model import config as cfg
from topolint.model.config import ConfigFile, EnvSetting, on_one_path, scope_contains
from topolint.model.nccl_sources import (ENVIRONMENT, LIBRARY_PATH, NO_FRAMEWORK, SYSTEM, SYSTEM_LINKED,
                                         UNKNOWN_IMAGE, NcclSource)
from topolint.model.nccl_version import NcclVersion, VersionError
from topolint.model.numbers import decimal

OPTION, CONFIG, EVIDENCE, DEFAULT = "option", "config", "evidence", "default"


@dataclass(frozen=True)
class Configured:
    """The version the run was given: ``origin`` OPTION, CONFIG or DEFAULT and how it is named."""

    version: NcclVersion
    origin: str = DEFAULT
    named: str = ""  # "--nccl-version", "nccl-version in .topolint.toml"

    def label(self) -> str:
        if self.origin == DEFAULT:
            return f"assumed NCCL {self.version}"
        return f"NCCL {self.version} from {self.named or self.origin}"


@dataclass(frozen=True)
class VersionInForce:
    version: NcclVersion  # what a rule judges with when it needs one version
    origin: str  # OPTION, CONFIG, EVIDENCE or DEFAULT
    candidates: tuple[NcclVersion, ...]  # every version the job may load (one when settled); () unless EVIDENCE
    sources: tuple[NcclSource, ...] = ()  # the winning sources first, then the others read
    reason: str = ""  # why the winner won ("the pip wheel is installed over the image's NCCL 2.19.3")
    unsettled: str = ""  # why the evidence names no version (then the configured or default one is in force)
    configured: Configured | None = None
    won: int = 0  # how many of ``sources`` (the first ones) name the candidates

    @property
    def judged(self) -> tuple[NcclVersion, ...]:
        """The versions a finding must hold for."""
        return self.candidates if self.origin == EVIDENCE else (self.version,)

    def label(self) -> str:
        """``NCCL 2.12.12 from Dockerfile:2 apt pin`` (what findings cite)."""
        if self.origin != EVIDENCE:
            return self.configured.label() if self.configured else f"NCCL {self.version}"
        said = " or ".join(str(v) for v in self.candidates)
        winners = [s for s in self.sources[:self.won or len(self.candidates) or 1] if s.versions]
        origin = ", ".join(dict.fromkeys(s.label() for s in winners)) or "the inputs"
        return f"NCCL {said} from {origin}"

    def evidence(self) -> list[str]:
        """Evidence lines: the version assumed and why, then every source read."""
        lines = [f"NCCL version: {self.label()}" + (f" ({self.reason})" if self.reason else "")]
        if self.unsettled:
            lines.append(f"NCCL version: the inputs do not settle it: {self.unsettled}")
        for source in self.sources:
            what = source.detail or source.unknown or "no NCCL"
            label = source.label()
            named = label if label.endswith(" " + source.written) else f"{label}: {source.written}"
            lines.append(f"NCCL source: {named}: {what}" + (f" (via {source.via})" if source.via else ""))
        return lines


# ---- the layers of one job ----------------------------------------------------------------------
@dataclass
class _Layer:
    versions: tuple[str, ...] | None  # None: unknown
    sources: tuple[NcclSource, ...]


@dataclass
class _Job:
    layers: dict[str, _Layer] = field(default_factory=dict)
    framework: str = NO_FRAMEWORK
    framework_from_env: bool = False  # torch wheel or conda: the framework comes with its NCCL
    replaced: list[str] = field(default_factory=list)  # what a later source replaced, for the reason
    read: list[NcclSource] = field(default_factory=list)

    def copy(self) -> "_Job":
        return _Job(dict(self.layers), self.framework, self.framework_from_env, list(self.replaced), list(self.read))

    def set(self, layer: str, source: NcclSource, versions: tuple[str, ...] | None = None) -> None:
        versions = versions if versions is not None else (source.versions or None)
        old = self.layers.get(layer)
        if old is not None and old.versions == versions and old.sources[-1].loc.line == source.loc.line \
                and old.sources[-1].loc.path == source.loc.path:
            self.layers[layer] = _Layer(versions, old.sources + (source,))  # libnccl2 and libnccl-dev of one command
            return
        if old is not None:
            self.replaced.append(f"{source.label()} replaces {_said(old)}")
        self.layers[layer] = _Layer(versions, (source,))

    def apply(self, source: NcclSource, stages: dict[str, "_Job"]) -> None:
        self.read.append(source)
        if source.kind == "image" or source.kind == "build":  # a build: only one whose Dockerfile is unknown
            self.layers, self.replaced = {}, []
            self.framework, self.framework_from_env = source.framework, False
            if source.versions or source.unknown:
                self.layers[SYSTEM] = _Layer(source.versions or None, (source,))
            if source.framework == UNKNOWN_IMAGE:
                self.layers[ENVIRONMENT] = _Layer(None, (source,))
        elif source.kind == "stage":
            base = stages.get(source.ref)
            if base is not None:
                read = self.read
                copied = base.copy()
                self.layers, self.framework, self.framework_from_env = copied.layers, copied.framework, \
                    copied.framework_from_env
                self.replaced, self.read = copied.replaced, copied.read + read
        elif source.kind == "copy-stage":
            base = stages.get(source.ref)
            loaded = base.loaded() if base is not None else None
            self.set(SYSTEM, source, loaded[0] if loaded else None)
        elif source.layer == SYSTEM:
            self.set(SYSTEM, source)
        elif source.layer == LIBRARY_PATH:
            self.set(LIBRARY_PATH, source)
        elif source.layer == ENVIRONMENT:
            self.set(ENVIRONMENT, source)
            if source.kind in ("pip-torch", "pip-dependent", "conda"):
                self.framework_from_env = True

    def loaded(self) -> tuple[tuple[str, ...] | None, tuple[NcclSource, ...], str] | None:
        """(candidate versions or None when one is unknown, the sources they come from, why), or
        None when nothing says which NCCL the job loads."""
        env, path, system = (self.layers.get(k) for k in (ENVIRONMENT, LIBRARY_PATH, SYSTEM))
        if env is not None:
            if path is not None:
                return _union(env, path, "a Python environment's NCCL and a module's on LD_LIBRARY_PATH both "
                                         "reach the job: which loads depends on how the framework finds libnccl")
            if not self.framework_from_env and self.framework in (SYSTEM_LINKED, UNKNOWN_IMAGE) \
                    and env.sources[0].kind == "pip-nccl":
                other = system or _Layer(None, env.sources)
                return _union(env, other, "an NCCL wheel alone does not change what the image's framework "
                                          "loads (NGC frameworks load the system NCCL)")
            over = f"installed over {_said(system)}: the framework installed from pip or conda loads it" \
                if system is not None else ""
            if env.sources[0].kind in ("image", "build"):  # nothing installed over an unknown image
                over = "the image may bring a framework with an NCCL of its own"
            return env.versions, env.sources, over
        if path is not None:
            over = f"first on LD_LIBRARY_PATH, before {_said(system)}" if system is not None else \
                "first on LD_LIBRARY_PATH"
            return path.versions, path.sources, over
        if self.framework == UNKNOWN_IMAGE:
            image = next((s for s in self.read if s.kind in ("image", "build")), None)
            return None, (image,) if image else (), "the base image may bring a framework with an NCCL of its own"
        if system is not None:
            return system.versions, system.sources, "; ".join(self.replaced)
        return None


def _said(layer: _Layer) -> str:
    versions = " or ".join(layer.versions) if layer.versions else "an unknown version"
    return f"NCCL {versions} ({layer.sources[0].label()})"


def _union(a: _Layer, b: _Layer, why: str):
    if a.versions is None or b.versions is None:
        return None, a.sources + b.sources, why
    versions = tuple(sorted(set(a.versions) | set(b.versions), key=lambda v: NcclVersion.parse(v)))
    return versions, a.sources + b.sources, why


# ---- jobs across config files -------------------------------------------------------------------
def _stage(scope: str) -> str:
    return scope.split("#", 1)[0]


class JobIndex:
    """The jobs of a run's config files: each Dockerfile stage's NCCL and the files copied into it."""

    def __init__(self, configs: list[ConfigFile]):
        self.stages: dict[tuple[str, str], _Job] = {}  # (Dockerfile path, stage scope) -> its job
        self.copied: dict[str, list[tuple[ConfigFile, str, object]]] = {}  # file path -> (Dockerfile, stage, loc)
        self.dockerfiles: dict[str, ConfigFile] = {}  # absolute path -> the Dockerfile (compose builds)
        self.env_from: dict[str, list[tuple[ConfigFile, str, object]]] = {}  # "ConfigMap/x" -> (file, container, loc)
        self.containers: dict[tuple[str, str], list[NcclSource]] = {}  # (file, container scope) -> its image, build
        self.container_jobs: dict[tuple[str, str], tuple[list[_Job], list[str]]] = {}  # computed once per container
        for config in configs:
            if config.format in ("kubernetes", "compose"):
                for source in config.nccl_sources:  # a container's image, then what its command installs
                    owner = _container_of(config, source.scope)
                    if owner is not None:
                        self.containers.setdefault((config.path, owner), []).append(source)
            if config.format == "kubernetes":
                for fact in config.launch:
                    if fact.kind == cfg.ENV_FROM:
                        self.env_from.setdefault(fact.value, []).append((config, fact.scope, fact.loc))
            if config.format != "dockerfile":
                continue
            self.dockerfiles[os.path.abspath(config.path)] = config
            jobs: dict[str, _Job] = {}
            for scope in [s for s in config.scopes if s.startswith("stage:")]:
                job = _Job()
                for source in config.nccl_sources:
                    if _stage(source.scope) == scope:
                        job.apply(source, jobs)
                jobs[scope] = job
                self.stages[(config.path, scope)] = job
            for stage, path, loc in config.image_files:
                self.copied.setdefault(posixpath.normpath(path), []).append((config, stage, loc))

    def job_for(self, config: ConfigFile, setting: EnvSetting) -> tuple[list[_Job], list[str]]:
        """The jobs a setting runs in (several when more than one image runs the file) and notes on
        how they were found."""
        scope = setting.scope
        if config.format == "dockerfile":
            stage = _stage(scope)
            job, line = _Job(), _run_line(scope)
            stages = {s: j for (p, s), j in self.stages.items() if p == config.path}
            for source in config.nccl_sources:
                if _stage(source.scope) == stage and (line is None or source.loc.line <= line):
                    job.apply(source, stages)  # a RUN's installs persist in the image
            return [job], []
        owner = _container_of(config, scope) if config.format in ("kubernetes", "compose") else None
        if owner is not None or scope in config.names:
            key = (config.path, owner or scope)
            if key not in self.container_jobs:
                self.container_jobs[key] = self._container_jobs(config, owner or scope, 0)
            return self.container_jobs[key]
        own = [s for s in config.nccl_sources if _applies(s, scope)]
        images = [s for s in own if s.kind == "image" and scope_contains(s.scope, scope)]
        if images:  # docker run IMAGE / srun --container-image: the step runs in that image only
            innermost = max(images, key=lambda s: len(s.scope))
            job = _Job()
            for source in own:
                if scope_contains(innermost.scope, source.scope) and source.loc.line >= innermost.loc.line \
                        or source is innermost:
                    job.apply(source, {})
            return [job], [f"the step runs in {innermost.written} ({innermost.where()})"]
        bases = self.copied.get(posixpath.normpath(config.path), [])
        jobs, notes = [], []
        for dockerfile, stage, loc in bases:
            job = self.stages.get((dockerfile.path, stage), _Job()).copy()
            notes.append(f"the file is copied into {dockerfile.path} {stage} at {loc.path}:{loc.line}")  # by name
            for source in own:
                job.apply(source, {})
            jobs.append(job)
        if not jobs:
            job = _Job()
            for source in own:
                job.apply(source, {})
            jobs.append(job)
            if not own:
                notes.append("no file installs its NCCL and no Dockerfile copies it by name")
        return jobs, notes

    def _container_jobs(self, config: ConfigFile, scope: str, depth: int) -> tuple[list[_Job], list[str]]:
        """A container's (or compose service's) jobs: its image, the Dockerfile stage it builds;
        for a ConfigMap or Secret, the jobs of the containers that take it through envFrom."""
        if scope in config.names:
            takers = self.env_from.get(scope, []) if depth == 0 else []
            if not takers:
                return [_Job()], [f"no container in the checked files takes {scope} through envFrom"]
            jobs, notes = [], []
            for taker, container, loc in takers:
                found, said = self._container_jobs(taker, _container_of(taker, container) or container, depth + 1)
                jobs.extend(found)
                notes.append(f"{scope} is read by {container} through envFrom ({loc.path}:{loc.line})")
                notes.extend(said)
            return jobs, list(dict.fromkeys(notes))
        jobs, notes = [], []
        sources = self.containers.get((config.path, scope), [])
        bases = [s for s in sources if s.kind in ("image", "build")]
        for source in bases:
            if source.kind == "build":
                job, note = self._built(source)
            else:
                job, note = _Job(), f"the container runs {source.written} ({source.where()})"
                job.apply(source, {})
            jobs.append(job)
            notes.extend([note] if note else [])
        if len(bases) > 1:
            notes.append("compose pulls the image when a registry has it and builds otherwise "
                         "(pull_policy: build always builds)")
        jobs = jobs or [_Job()]
        for job in jobs:  # what the command installs runs over the image
            for source in sources:
                if source.kind not in ("image", "build"):
                    job.apply(source, {})
        return jobs, notes

    def _built(self, source: NcclSource) -> tuple[_Job, str]:
        """The job of the Dockerfile stage a compose build names (its final stage unless ``target``)."""
        path, _, target = source.ref.rpartition("#")
        dockerfile = self.dockerfiles.get(os.path.abspath(path)) if path else None
        stages = [s for s in dockerfile.scopes if s.startswith("stage:")] if dockerfile is not None else []
        stage = next((s for s in stages if s[len("stage:"):].lower() == target.lower()), None) if target else \
            (stages[-1] if stages else None)
        base = self.stages.get((dockerfile.path, stage)) if dockerfile is not None and stage else None
        if base is None:
            why = source.unknown or (f"the Dockerfile it builds, {path}, is not among the checked files"
                                     if dockerfile is None else f"{path} has no stage {target!r}")
            job = _Job()
            job.apply(replace(source, unknown=why, framework=UNKNOWN_IMAGE), {})
            return job, ""  # the source's own ``unknown`` says why
        job = base.copy()
        job.read = [replace(source, detail=f"builds {dockerfile.path} {stage}")] + job.read
        return job, f"the service is built from {dockerfile.path} {stage} ({source.where()} build)"


_CONTAINERS = ("pod", "init", "compose")  # ConfigFile.scopes kinds of a container or compose service


def _container_of(config: ConfigFile, scope: str) -> str | None:
    """The container (or compose service) scope ``scope`` is in: a step of its command, or itself."""
    while scope:
        if config.scopes.get(scope) in _CONTAINERS:
            return scope
        scope = scope.rpartition("/")[0]
    return None


def _applies(source: NcclSource, scope: str) -> bool:
    if source.kind == "image":
        return scope_contains(source.scope, scope)
    return source.scope in ("file", "job") or scope in ("job",) or on_one_path(source.scope, scope)


def _run_line(scope: str) -> int | None:
    if "#run@" not in scope:
        return None
    tail = scope.split("#run@", 1)[1]
    digits = tail.split("#", 1)[0].split("/", 1)[0]
    return decimal(digits) if digits.isascii() and digits.isdigit() else None


def _settle(jobs: list[_Job], configured: Configured, notes: list[str]) -> VersionInForce:
    answers = [job.loaded() for job in jobs]
    read = tuple(dict.fromkeys(s for job in jobs for s in job.read))
    if not any(answers):
        why = "; ".join(notes) or "no source of the job's NCCL was read"
        return _configured(configured, read, why if read or notes else "")
    if any(a is None for a in answers) or any(a[0] is None for a in answers):
        why = "; ".join(a[2] for a in answers if a and a[2]) or "a source's version is unknown"
        unknown = [s.unknown for s in read if s.unknown]
        return _configured(configured, read, "; ".join(dict.fromkeys(notes + [why] + unknown[:2])))
    versions = sorted({v for a in answers for v in a[0]}, key=NcclVersion.parse)
    winners = tuple(dict.fromkeys(s for a in answers for s in a[1]))
    reason = "; ".join(dict.fromkeys(a[2] for a in answers if a[2]))
    if notes:  # how the file's job was found: copied into an image, a docker run step
        reason = "; ".join(filter(None, [" and ".join(notes), reason]))
    try:
        candidates = tuple(NcclVersion.parse(v) for v in versions)
    except VersionError:
        return _configured(configured, read, "a source names a version that is not an NCCL version")
    sources = winners + tuple(s for s in read if s not in winners)
    if configured.origin != DEFAULT:
        disagree = "" if candidates == (configured.version,) else \
            f"the inputs say NCCL {' or '.join(map(str, candidates))}; {configured.named} wins"
        return VersionInForce(configured.version, configured.origin, (), sources, disagree, configured=configured)
    return VersionInForce(candidates[-1], EVIDENCE, candidates, sources, reason, configured=configured,
                          won=len(winners))


def _configured(configured: Configured, read: tuple, unsettled: str) -> VersionInForce:
    return VersionInForce(configured.version, configured.origin, (), read, "",
                          unsettled if read else "", configured=configured)


def for_setting(index: JobIndex, config: ConfigFile, setting: EnvSetting, configured: Configured) -> VersionInForce:
    jobs, notes = index.job_for(config, setting)
    return _settle(jobs, configured, notes)


def for_config(index: JobIndex, config: ConfigFile, scope: str, configured: Configured) -> VersionInForce:
    """The version in force for a scope of a config file (its final stage for a Dockerfile)."""
    if config.format == "dockerfile" and scope == "file":
        stages = [s for s in config.scopes if s.startswith("stage:")]
        scope = stages[-1] if stages else "stage:0"
    probe = EnvSetting("", None, config.loc(1), scope, "", config.path)
    return for_setting(index, config, probe, configured)


def for_node(node, configured: Configured) -> VersionInForce:
    """A node's NCCL from its logs: the ``NCCL version 2.x.y+cuda..`` line NCCL prints at
    NCCL_DEBUG=VERSION or INFO (model/measured.py NcclLog.versions)."""
    from topolint.model.facts import Location

    sources = []
    for measured in getattr(node, "measured", []) or []:
        log = getattr(measured, "log", None)
        for line in getattr(log, "versions", []) or []:
            loc = line.loc if isinstance(line.loc, Location) else None
            if loc is not None:
                sources.append(NcclSource("log", f"NCCL version {line.message}", loc, "node", (line.message,),
                                          detail=f"the NCCL that ran printed version {line.message}"))
    return for_log_lines(sources, configured)


def for_log_lines(sources: list[NcclSource], configured: Configured) -> VersionInForce:
    if not sources:
        return _configured(configured, (), "")
    versions = []
    for source in sources:
        try:
            versions.append(NcclVersion.parse(source.versions[0]))
        except VersionError:
            continue
    if not versions:
        return _configured(configured, tuple(sources), "no version line names an NCCL 2.x version")
    candidates = tuple(sorted(set(versions)))
    if configured.origin != DEFAULT:
        disagree = "" if candidates == (configured.version,) else \
            f"the logs say NCCL {' or '.join(map(str, candidates))}; {configured.named} wins"
        return VersionInForce(configured.version, configured.origin, (), tuple(sources), disagree,
                              configured=configured)
    reason = "the node ran several NCCL versions" if len(candidates) > 1 else ""
    return VersionInForce(candidates[-1], EVIDENCE, candidates, tuple(sources), reason, configured=configured,
                          won=len(sources))
