"""Configuration inputs (infra files), kept apart from nodes (hardware).

A config file yields ``EnvSetting`` facts (every NCCL_* and a few related variables, with the
line and column of the name and the scope they apply to) and ``LaunchFact`` facts (GPUs per pod
or process, replicas, RDMA access, CPU/GPU binding...). Scopes are strings that nest with "/":
``file`` (the whole file), ``job`` (``#SBATCH`` directives), ``file/if@12``, ``file/else@12``,
``file/step@30`` (one srun/mpirun/``env`` command), ``MPIJob/bert/Worker/worker`` (one
container), ``stage:build`` (a Dockerfile stage), ``service:trainer`` (compose).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from topolint.model.facts import Location, build, location

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
    """In an EnvSetting's extra fields: this one is derived, not held (one object, pickled as itself)."""

    def __reduce__(self):
        return "_DERIVED"


_DERIVED = _Derived()

# What an EnvSetting's shared context (path, scope, source, the path of its Locations, flags) says.
_DEFAULT_ONLY, _PASSTHROUGH, _VALUE_AT = 1, 2, 128
_WRITTEN, _RAW = 4, 16  # the modes below, in two and three bits
# value_written as a function of the value, and raw of the name, value and value_written; the mode past
# the last (_WRITTEN_EXTRA, _RAW_EXTRA) when it is none of these: then it is one of the context's
# extra fields, as are odd Locations.
_WRITTEN_AS = (lambda v: "", lambda v: v, lambda v: f'"{v}"')
_RAW_AS = (lambda n, v, w: "", lambda n, v, w: f"{n}={w}", lambda n, v, w: n, lambda n, v, w: w,
           lambda n, v, w: f"{n}={v}")
_WRITTEN_EXTRA, _RAW_EXTRA = len(_WRITTEN_AS), len(_RAW_AS)
_COLUMN = 1 << 26  # columns packed in 26 bits (an input is at most 32 MiB)
_CONTEXTS: dict[tuple, tuple] = {}


def _context(key: tuple) -> tuple:
    """One tuple for every setting of a file, scope, source and flags (there are few of those), and
    extra fields (a raw text the parser shares between settings); a Location is not hashable."""
    try:
        found = _CONTEXTS.get(key)
    except TypeError:
        return key
    if found is None:
        if len(_CONTEXTS) >= 4096:
            _CONTEXTS.clear()
        found = _CONTEXTS[key] = key
    return found


def _written_mode(written, value) -> int:
    """The _WRITTEN_AS form ``written`` has, tested without making one (a value can be megabytes)."""
    if type(written) is not str:
        return _WRITTEN_EXTRA
    if not written:
        return 0
    if type(value) is str and written == value:
        return 1
    if type(value) is str and _around(written, '"', value, '"'):
        return 2
    return _WRITTEN_EXTRA


def _raw_mode(raw, name, value, written) -> int:
    """The _RAW_AS form ``raw`` has, tested the same way."""
    if type(raw) is not str or type(name) is not str:
        return _RAW_EXTRA
    if not raw:
        return 0
    if type(written) is str and _around(raw, name + "=", written, ""):
        return 1
    if raw == name:
        return 2
    if raw == written:
        return 3
    if type(value) is str and _around(raw, name + "=", value, ""):
        return 4
    return _RAW_EXTRA


def _around(text: str, before: str, middle: str, after: str) -> bool:
    """``text == before + middle + after``."""
    return len(text) == len(before) + len(middle) + len(after) and text.startswith(before) \
        and text.endswith(after) and text.startswith(middle, len(before))


class EnvSetting:
    """One setting of a variable. A config file is mostly these (issue 20, memory bounded by the
    input), so a setting holds four slots: its name and value, its Location(s) packed in one int
    (line, column, and value_at's line offset and column), and a context tuple shared by every
    setting of one file, scope, source and flags (the flags say how ``value_written`` follows from
    the value and ``raw`` from the name, value and value_written, the usual shapes; anything else, and odd
    Locations, are extra fields of a context of its own). Made with ``text`` (parsers/_lines.py
    TextLines, the file's text) where its name is at ``loc`` there, a setting is a ``_Sliced`` one
    instead: its strings are cut from that text on each read, its position is one offset.
    Each read of ``loc`` or ``value_at`` makes an equal Location: change a setting's by assigning one
    (``name`` and ``value`` are not changed once made: the derived texts follow them)."""

    __slots__ = ("_name", "_value", "_at", "_ctx")

    def __init__(self, name: str, value: str | None, loc: Location, scope: str, source: str, path: str,
                 raw: str = "", default_only: bool = False, passthrough: bool = False,
                 value_at: Location | None = None, value_written: str = "", text=None):
        # value: None where it is not a literal (``$VAR``, valueFrom, a computed expression).
        # source: how it is set: export, assign, command, srun-export, sbatch-export, mpirun-x, ...
        # default_only: ``X=${X:-v}``, setdefault: applies only when unset.
        # passthrough: ``mpirun -x VAR``, ``export VAR``: forwards, sets nothing.
        # value_at, value_written: where the value is written (its opening quote included) and its
        # exact text there, for a value edit; None and "" where it is not one run of text on one line.
        fields = (name, value, loc, scope, source, path, raw, default_only, passthrough, value_at, value_written)
        if text is None or not _Sliced._slice(self, text, *fields):
            self._make(*fields)

    def _make(self, name, value, loc, scope, source, path, raw, default_only, passthrough, value_at, written):
        self._name, self._value = name, value
        flags = (_DEFAULT_ONLY if default_only else 0) | (_PASSTHROUGH if passthrough else 0)
        at, loc_path = 0, None
        if type(loc) is Location and type(loc.line) is int and loc.line >= 0 and type(loc.column) is int \
                and 0 <= loc.column < _COLUMN:
            at, loc_path = (loc.line << 26 | loc.column) << 30, loc.path
            if value_at is not None and type(value_at) is Location and value_at.path == loc_path \
                    and type(value_at.line) is int and 0 <= value_at.line - loc.line < 16 \
                    and type(value_at.column) is int and 0 <= value_at.column < _COLUMN:
                at |= value_at.column << 4 | (value_at.line - loc.line)
                flags |= _VALUE_AT
        written_mode = _written_mode(written, value)
        raw_mode = _raw_mode(raw, name, value, written)
        self._at = at
        flags |= written_mode * _WRITTEN | raw_mode * _RAW
        key = (path, scope, source, loc_path, flags)
        if loc_path is None or (value_at is not None and not flags & _VALUE_AT) or written_mode == _WRITTEN_EXTRA \
                or raw_mode == _RAW_EXTRA:
            key += (raw if raw_mode == _RAW_EXTRA else _DERIVED, written if written_mode == _WRITTEN_EXTRA else _DERIVED,
                    _DERIVED if loc_path is not None else loc, value_at if not flags & _VALUE_AT else None)
        self._ctx = _context(key)

    def _fields(self) -> tuple:
        return (self.name, self.value, self.loc, self.scope, self.source, self.path, self.raw, self.default_only,
                self.passthrough, self.value_at, self.value_written)

    def _change(self, field: str, new) -> None:
        fields = dict(zip(self._FIELDS, self._fields()))
        fields[field] = new
        self.__class__ = EnvSetting
        self._make(*fields.values())

    def _recontext(self, index: int, new) -> None:
        ctx = self._ctx
        self._ctx = _context(ctx[:index] + (new,) + ctx[index + 1:])

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, name: str) -> None:
        self._change("name", name)

    @property
    def value(self) -> str | None:
        return self._value

    @value.setter
    def value(self, value: str | None) -> None:
        self._change("value", value)

    path = property(lambda self: self._ctx[0], lambda self, new: self._recontext(0, new))
    scope = property(lambda self: self._ctx[1], lambda self, new: self._recontext(1, new))
    source = property(lambda self: self._ctx[2], lambda self, new: self._recontext(2, new))
    default_only = property(lambda self: bool(self._ctx[4] & _DEFAULT_ONLY),
                            lambda self, new: self._change("default_only", new))
    passthrough = property(lambda self: bool(self._ctx[4] & _PASSTHROUGH),
                           lambda self, new: self._change("passthrough", new))

    @property
    def raw(self) -> str:  # the text as written
        ctx = self._ctx
        mode = ctx[4] // _RAW & 7
        return ctx[5] if mode == _RAW_EXTRA else _RAW_AS[mode](self._name, self._value, self.value_written)

    @raw.setter
    def raw(self, raw: str) -> None:
        self._change("raw", raw)

    @property
    def value_written(self) -> str:
        ctx = self._ctx
        mode = ctx[4] // _WRITTEN & 3
        return ctx[6] if mode == _WRITTEN_EXTRA else _WRITTEN_AS[mode](self._value)

    @value_written.setter
    def value_written(self, written: str) -> None:
        self._change("value_written", written)

    @property
    def loc(self) -> Location:  # line and column of the name
        ctx = self._ctx
        if ctx[3] is None:
            return ctx[7]
        at = self._at >> 30
        return location(ctx[3], at >> 26, at & (_COLUMN - 1))

    @loc.setter
    def loc(self, loc: Location) -> None:
        self._change("loc", loc)

    @property
    def value_at(self) -> Location | None:
        ctx = self._ctx
        if not ctx[4] & _VALUE_AT:
            return ctx[8] if len(ctx) > 5 else None
        at = self._at
        return location(ctx[3], (at >> 56) + (at & 15), at >> 4 & (_COLUMN - 1))

    @value_at.setter
    def value_at(self, at: Location | None) -> None:
        self._change("value_at", at)

    @property
    def literal(self) -> bool:
        return self.value is not None and not self.passthrough

    def entity(self) -> str:
        return f"env/{self.name}@{self.path}#{self.scope}"

    _FIELDS = ("name", "value", "loc", "scope", "source", "path", "raw", "default_only", "passthrough", "value_at",
               "value_written")

    def __eq__(self, other):
        if not isinstance(other, EnvSetting):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # mutable, as the dataclass it was

    def __reduce__(self):  # every setting pickles as a plain one: a sliced one's text stays behind
        return EnvSetting, self._fields()

    def __repr__(self) -> str:
        return f"EnvSetting({', '.join(f'{name}={value!r}' for name, value in zip(self._FIELDS, self._fields()))})"


class _Sliced(EnvSetting):
    """A setting whose name, value_written and raw are runs of its file's text: ``_name`` holds
    that TextLines, ``_at`` the name's offset in it and the lengths and offsets of the rest (see
    _slice), ``_value`` the value where it is not value_written (or it without its quotes), and the
    context's flags only default_only and passthrough. Some 100 bytes a setting, whatever its text."""

    __slots__ = ()

    # _at, from bit 0: value_at is where value_written starts (1 bit); the value: None,
    # value_written, value_written less its first and last character, or _value (2); where raw
    # starts: that many characters before the name (0-13), as value_written (14) or "" (15) (4);
    # raw ends that many characters after value_written (3); value_written starts that many
    # characters after the name (4) and is that long (12); the name's length (8); its offset.
    @staticmethod
    def _slice(self, text, name, value, loc, scope, source, path, raw, default_only, passthrough, value_at,
              written) -> bool:
        """Make ``self`` a _Sliced setting of ``text``; False when these fields are not runs of it."""
        source_text, starts = text.text, text.starts
        if type(loc) is not Location or type(name) is not str or type(written) is not str \
                or not 0 < len(name) < 256 or not 0 < loc.line <= len(starts):
            return False
        offset = starts[loc.line - 1] + loc.column - 1
        if _line_column(starts, offset) != (loc.line, loc.column) or not source_text.startswith(name, offset):
            return False
        length = len(written)
        if value_at is None:
            start = offset + len(name)
            if length:
                return False
        else:
            if type(value_at) is not Location or value_at.path != loc.path or not 0 < value_at.line <= len(starts):
                return False
            start = starts[value_at.line - 1] + value_at.column - 1
            if _line_column(starts, start) != (value_at.line, value_at.column):
                return False
        gap = start - offset - len(name)
        if not 0 <= gap < 16 or length >= 4096 or not source_text.startswith(written, start):
            return False
        if value is None:
            value_mode = 0
        elif value == written:
            value_mode = 1
        elif length >= 2 and len(value) == length - 2 and source_text.startswith(value, start + 1):
            value_mode = 2
        else:
            value_mode = 3
        if raw == "":
            before, after = 15, 0
        elif raw == written:
            before, after = 14, 0
        else:
            before = raw.find(name) if type(raw) is str else -1
            after = offset - before + len(raw) - start - length
            if not 0 <= before < 14 or not 0 <= after < 8 or offset < before \
                    or not source_text.startswith(raw, offset - before):
                return False
        self._name, self._value = text, value if value_mode == 3 else None
        self._at = (((((offset << 8 | len(name)) << 12 | length) << 4 | gap) << 3 | after) << 4 | before) << 3 \
            | value_mode << 1 | (value_at is not None)
        flags = (_DEFAULT_ONLY if default_only else 0) | (_PASSTHROUGH if passthrough else 0)
        self._ctx = _context((path, scope, source, loc.path, flags))
        self.__class__ = _Sliced
        return True

    @property
    def name(self) -> str:
        at = self._at
        offset = at >> 34
        return self._name.text[offset:offset + (at >> 26 & 255)]

    @property
    def value(self) -> str | None:
        at = self._at
        mode = at >> 1 & 3
        if mode == 3:
            return self._value
        if not mode:
            return None
        start = (at >> 34) + (at >> 26 & 255) + (at >> 10 & 15)
        length = at >> 14 & 4095
        return self._name.text[start:start + length] if mode == 1 else self._name.text[start + 1:start + length - 1]

    @property
    def value_written(self) -> str:
        at = self._at
        start = (at >> 34) + (at >> 26 & 255) + (at >> 10 & 15)
        return self._name.text[start:start + (at >> 14 & 4095)]

    @property
    def raw(self) -> str:
        at = self._at
        before = at >> 3 & 15
        if before == 15:
            return ""
        if before == 14:
            return self.value_written
        offset = at >> 34
        end = offset + (at >> 26 & 255) + (at >> 10 & 15) + (at >> 14 & 4095) + (at >> 7 & 7)
        return self._name.text[offset - before:end]

    @property
    def loc(self) -> Location:
        line, column = _line_column(self._name.starts, self._at >> 34)
        return location(self._ctx[3], line, column)

    @property
    def value_at(self) -> Location | None:
        at = self._at
        if not at & 1:
            return None
        line, column = _line_column(self._name.starts, (at >> 34) + (at >> 26 & 255) + (at >> 10 & 15))
        return location(self._ctx[3], line, column)

    # The setters of EnvSetting's properties: a _Sliced setting takes them as a plain one.
    name = name.setter(EnvSetting.name.fset)
    value = value.setter(EnvSetting.value.fset)
    value_written = value_written.setter(EnvSetting.value_written.fset)
    raw = raw.setter(EnvSetting.raw.fset)
    loc = loc.setter(EnvSetting.loc.fset)
    value_at = value_at.setter(EnvSetting.value_at.fset)


def _line_column(starts, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in a text whose lines start at ``starts``."""
    line = bisect_right(starts, offset)
    return line, offset - starts[line - 1] + 1


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
