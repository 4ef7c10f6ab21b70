"""Configuration inputs (infra files), kept apart from nodes (hardware).

A config file yields ``EnvSetting`` facts (every NCCL_* and a few related variables, with the
line and column of the name and the scope they apply to) and ``LaunchFact`` facts (GPUs per pod
or process, replicas, RDMA access, CPU/GPU binding...). Scopes are strings that nest with "/":
``file`` (the whole file), ``job`` (``#SBATCH`` directives), ``file/if@12``, ``file/else@12``,
``file/step@30`` (one srun/mpirun/``env`` command), ``MPIJob/bert/Worker/worker`` (one
container), ``stage:build`` (a Dockerfile stage), ``service:trainer`` (compose).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.model.facts import Location, build

# Launch fact kinds.
GPUS_PER_POD = "gpus-per-pod"  # nvidia.com/gpu, compose device count, docker --gpus
NPROC_PER_NODE = "nproc-per-node"  # torchrun --nproc-per-node, deepspeed --num_gpus
GPUS_PER_NODE = "gpus-per-node"  # Slurm --gpus-per-node, --gres=gpu:N
REPLICAS = "replicas"
JOB_KIND = "job-kind"
# Job kinds (a JOB_KIND fact's value) whose pods run on several nodes whatever their replica count.
MULTI_NODE_KINDS = frozenset({"MPIJob", "PyTorchJob", "TFJob", "JobSet", "LeaderWorkerSet", "XGBoostJob", "PaddleJob",
                              "TrainJob", "RayJob", "RayCluster", "VolcanoJob"})
NODES = "nodes"  # Slurm --nodes / -N, torchrun --nnodes
RDMA_DEVICE = "rdma-device"  # /dev/infiniband mounted or passed as a device
RDMA_RESOURCE = "rdma-resource"  # a device-plugin resource (rdma/*, vpc.amazonaws.com/efa...)
CAPABILITY = "capability"
PRIVILEGED = "privileged"
SHM_SIZE = "shm-size"  # bytes, "" when unknown
IPC_HOST = "ipc-host"
ULIMIT_MEMLOCK = "ulimit-memlock"
CPU_BIND = "cpu-bind"
GPU_BIND = "gpu-bind"
MEM_BIND = "mem-bind"
NUMACTL = "numactl"  # value: "cpunodebind=0;membind=0"
TASKSET = "taskset"
CUDA_VISIBLE_DEVICES = "cuda-visible-devices"
DISTRIBUTION = "distribution"  # srun -m / --distribution (block, cyclic, plane=N, arbitrary)
MAP_BY = "map-by"  # mpirun --map-by
RANK_BY = "rank-by"  # mpirun --rank-by
ENV_FROM = "env-from"  # a ConfigMap or Secret a container takes its environment from
CONTAINER = "container"  # a container spec exists in this scope (value: its kind of spec)


class _Derived:
    """An EnvSetting's raw or value_written that it derives rather than holds (one object, pickled as itself)."""

    def __reduce__(self):
        return "_DERIVED"


_DERIVED = _Derived()


class EnvSetting:
    """One setting of a variable. A plain slotted class, not a dataclass with a __dict__: a config
    file is mostly these (issue 20, memory bounded by the input), so what one holds is what it
    cannot derive. ``raw`` and ``value_written`` are kept only where they differ from
    ``name=value_written`` and ``value``; ``loc`` as its path and one int for its line and column
    (a Location model is some 130 bytes), ``value_at`` as its column where it is on ``loc``'s line.
    Each read of ``loc`` or ``value_at`` makes an equal Location: change a setting's by assigning one
    (and ``name`` and ``value`` are not changed once made: the derived texts follow them)."""

    __slots__ = ("name", "value", "_loc", "_at", "scope", "source", "path", "default_only", "passthrough", "_raw",
                 "_written", "_value_at")

    def __init__(self, name: str, value: str | None, loc: Location, scope: str, source: str, path: str,
                 raw: str = "", default_only: bool = False, passthrough: bool = False,
                 value_at: Location | None = None, value_written: str = ""):
        self.name = name
        self.value: str | None = value  # None: not a literal (``$VAR``, valueFrom, a computed expression)
        self.loc = loc
        self.scope = scope
        self.source = source  # how it is set: export, assign, command, srun-export, sbatch-export, mpirun-x, ...
        self.path = path
        self.default_only = default_only  # ``X=${X:-v}``, setdefault: applies only when unset
        self.passthrough = passthrough  # ``mpirun -x VAR``, ``export VAR``: forwards, sets nothing
        self.value_written = value_written
        self.value_at = value_at
        self.raw = raw

    # The text as written.
    @property
    def raw(self) -> str:
        raw = self._raw
        return f"{self.name}={self.value_written}" if raw is _DERIVED else raw

    @raw.setter
    def raw(self, raw: str) -> None:
        self._raw = _DERIVED if raw and raw == f"{self.name}={self.value_written}" else raw

    # Where the value is written (its opening quote included) and its exact text there, for a
    # value edit; None and "" where it is not one run of text on one line (multi-line, not located).
    @property
    def value_written(self) -> str:
        written = self._written
        return self.value if written is _DERIVED else written

    @value_written.setter
    def value_written(self, written: str) -> None:
        self._written = _DERIVED if written and written == self.value else written

    @property
    def loc(self) -> Location:  # line and column of the name
        at = self._at
        if at is None:
            return self._loc
        return build(Location, path=self._loc, line=at >> 32, column=at & 0xFFFFFFFF)

    @loc.setter
    def loc(self, loc: Location) -> None:
        if type(loc) is Location and 0 <= loc.column <= 0xFFFFFFFF:
            self._loc, self._at = loc.path, loc.line << 32 | loc.column
        else:
            self._loc, self._at = loc, None

    @property
    def value_at(self) -> Location | None:
        at = self._value_at
        if type(at) is int:
            line = self._at >> 32 if self._at is not None else self._loc.line
            path = self._loc if self._at is not None else self._loc.path
            return build(Location, path=path, line=line, column=at)
        return at

    @value_at.setter
    def value_at(self, at: Location | None) -> None:
        loc = self.loc
        same_line = type(at) is Location and at.line == loc.line and at.path == loc.path
        self._value_at = at.column if same_line else at

    @property
    def literal(self) -> bool:
        return self.value is not None and not self.passthrough

    def entity(self) -> str:
        return f"env/{self.name}@{self.path}#{self.scope}"

    _FIELDS = ("name", "value", "loc", "scope", "source", "path", "raw", "default_only", "passthrough", "value_at",
               "value_written")

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        return f"EnvSetting({', '.join(f'{name}={getattr(self, name)!r}' for name in self._FIELDS)})"


@dataclass(slots=True)
class LaunchFact:
    kind: str
    value: str
    loc: Location
    scope: str
    detail: str = ""  # the option as written, for evidence


# Why a setting a script makes never reaches NCCL (ENV009).
NOT_EXPORTED = "not-exported"  # a shell variable: no export, set -a, declare -x or VAR=x cmd
DROPPED = "dropped"  # exported, but every launch after it drops the environment (srun --export=NONE...)


@dataclass
class Unreached:
    """A setting of a script that no process launched after it sees, and the launch that shows it."""

    setting: EnvSetting
    why: str  # NOT_EXPORTED or DROPPED
    launch: Location  # the first launch after the setting
    command: str  # that launch as written (its program and the option that drops the environment)
    standalone: bool = False  # a lone ``NAME=v`` statement: ``export `` can go in front of it


@dataclass
class SkippedLine:
    line: int
    reason: str
    path: str | None = None  # a file the config's file sources; None: the config's own file


@dataclass
class ConfigFile:
    path: str
    format: str  # shell, dockerfile, kubernetes, compose, envfile, nccl-conf, python, helm-template
    settings: list[EnvSetting] = field(default_factory=list)
    launch: list[LaunchFact] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    scopes: dict[str, str] = field(default_factory=dict)  # container scope -> spec kind (pod, compose...)
    names: dict[str, str] = field(default_factory=dict)  # ConfigMap/Secret scope -> object name
    included: list = field(default_factory=list)  # SourceFile of each file it sources (shell), for reports
    env_files: list[str] = field(default_factory=list)  # real paths it passes to docker run --env-file
    # Files (this one, or one it sources) that start with a UTF-8 byte-order mark their reader
    # keeps as part of the first word: path -> (that reader, the last column of line 1 whose
    # settings are therefore never made).
    bom_kept: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Settings a script makes that never reach a process it launches (shell variables that are not
    # exported, exports every later launch drops): not in ``settings``, which NCCL could read.
    unreached: list[Unreached] = field(default_factory=list)
    # Where the job's NCCL comes from (model/nccl_sources.py NcclSource: pins, wheels, images), and
    # the files a Dockerfile copies into a stage by name: (stage scope, path as displayed, Location).
    nccl_sources: list = field(default_factory=list)
    image_files: list[tuple[str, str, Location]] = field(default_factory=list)

    def has_content(self) -> bool:
        """Something to check, or a consumer to record (``docker run --env-file`` decides how that file is read),
        or a Dockerfile that says which NCCL the files it copies run with."""
        return bool(self.settings or self.launch or self.env_files or (self.nccl_sources and self.image_files))

    def loc(self, line: int, column: int = 0) -> Location:
        return build(Location, path=self.path, line=max(line, 1), column=max(column, 0))


def scope_contains(outer: str, inner: str) -> bool:
    """True when ``inner`` is ``outer`` or nested in it (one control-flow path through both)."""
    return inner == outer or inner.startswith(outer + "/")


def on_one_path(a: str, b: str) -> bool:
    return scope_contains(a, b) or scope_contains(b, a)
