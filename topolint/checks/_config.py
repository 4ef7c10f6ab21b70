"""Helpers the config checks share: settings on one control-flow path, launch evidence, and a
small view of the --topology nodes (GPU NUMA nodes, NVLink, RDMA NICs) that needs no graph."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from topolint.engine.finding import Hit, Related
from topolint.model import config as cfg
from topolint.model.config import ConfigFile, EnvSetting, LaunchFact, on_one_path
from topolint.model.numbers import CpuSet, cpulist, cpumask, decimal


def where(loc) -> str:
    return f"{loc.path}:{loc.line}"


def related_scopes(a: str, b: str) -> bool:
    """Two scopes of one file that one run can pass through (``job`` covers the whole script)."""
    return a == "job" or b == "job" or on_one_path(a, b)


def literal_settings(context) -> list[tuple[ConfigFile, EnvSetting]]:
    return [(c, s) for c in context.configs for s in c.settings if s.literal]


class ScopeIndex:
    """Items of one file (settings, launch facts), or those of them ``keep`` keeps, by scope:
    which of them one run can pass through together with a given scope (``related_scopes``) is
    read from the scope's own list, its ancestors' and its descendants' (one contiguous run of
    the sorted scopes) and ``job``'s. Questions are answered from those lists, never from a copy
    of what they hold per scope: n prefixed commands (a scope each) under a script's n exports
    were n copies of the n exports."""

    def __init__(self, items: list, keep=None):
        self.items = items
        self.by_scope: dict[str, list[int]] = {}  # scope -> places in ``items``, in file order
        for i, item in enumerate(items):
            if keep is None or keep(item):
                self.by_scope.setdefault(item.scope, []).append(i)
        self.scopes = sorted(self.by_scope)
        self._first: dict[str, int] = {}

    def chain(self, scope: str) -> list[str]:
        """The indexed scopes around ``scope``, itself and ``job`` included."""
        if scope == "job":
            return ["job"] if "job" in self.by_scope else []
        found = ["job"] if "job" in self.by_scope else []
        outer = scope
        while True:
            if outer != "job" and outer in self.by_scope:
                found.append(outer)
            cut = outer.rfind("/")
            if cut < 0:
                return found
            outer = outer[:cut]

    def inner(self, scope: str) -> list[str]:
        """The indexed scopes inside ``scope`` (every other one inside ``job``)."""
        if scope == "job":
            return [s for s in self.scopes if s != "job"]
        # Scopes inside it sort together: from scope + "/" up to scope + "0" ("0" follows "/").
        low = bisect.bisect_left(self.scopes, scope + "/")
        return self.scopes[low:bisect.bisect_left(self.scopes, scope + "0", low)]

    def places(self, scope: str) -> list[int]:
        """The places of the items related to ``scope``, in the file's order."""
        lists = [self.by_scope[s] for s in (*self.chain(scope), *self.inner(scope))]
        return lists[0][:] if len(lists) == 1 else sorted(i for found in lists for i in found)

    def related(self, scope: str) -> tuple:
        """The items whose scope is related to ``scope``, in the file's order (a copy: for a
        question that needs them all)."""
        return tuple(self.items[i] for i in self.places(scope))

    def first(self, scope: str):
        """The first related item, or None: the least of each related scope's first place."""
        place = self._first.get(scope)
        if place is None:
            place = self._first[scope] = min((self.by_scope[s][0] for s in (*self.chain(scope), *self.inner(scope))),
                                             default=-1)
        return self.items[place] if place >= 0 else None

    def count(self, scope: str) -> int:
        return sum(len(self.by_scope[s]) for s in (*self.chain(scope), *self.inner(scope)))

    def leading(self, scope: str, limit: int) -> list:
        """The first ``limit`` related items in the file's order, from each related scope's first ``limit``."""
        places = sorted(i for s in (*self.chain(scope), *self.inner(scope)) for i in self.by_scope[s][:limit])
        return [self.items[i] for i in places[:limit]]


def scope_index(context, config: ConfigFile, kind: str, keep=None) -> ScopeIndex:
    """The ScopeIndex of a config's ``settings`` or ``launch`` facts (those ``keep``, a
    module-level function, keeps), built once per run."""
    key = ("scope_index", kind, keep, id(config))
    found = context.shared.get(key)
    if found is None or found.items is not getattr(config, kind):
        found = context.shared[key] = ScopeIndex(getattr(config, kind), keep)
    return found


def config_maps(context, keep=None) -> dict[str, list[EnvSetting]]:
    """ConfigMap/Secret scope ("ConfigMap/name") -> its settings (those ``keep`` keeps), across every config file."""
    key = ("config_maps", keep)
    found = context.shared.get(key)
    if found is not None:
        return found
    found = {}
    for config in context.configs:
        if config.names:
            index = scope_index(context, config, "settings", keep)
            for scope in config.names:
                found.setdefault(scope, []).extend(index.items[i] for i in index.by_scope.get(scope, ()))
    context.shared[key] = found
    return found


def _env_from_users(context) -> dict[str, list[tuple[ConfigFile, str]]]:
    """ConfigMap scope -> (config, scope) of each container taking its environment from it."""
    found = context.shared.get("env_from_users")
    if found is None:
        found = context.shared["env_from_users"] = {}
        for other in context.configs:
            for fact in other.launch:
                if fact.kind == cfg.ENV_FROM:
                    found.setdefault(fact.value, []).append((other, fact.scope))
    return found


def _takes_env_from(fact: LaunchFact) -> bool:
    return fact.kind == cfg.ENV_FROM


def _extra_settings(context, config: ConfigFile, scope: str, keep=None):
    """What applies in ``scope`` beyond its file's related scopes, as a few sequences: the
    ConfigMaps a container takes through envFrom, or for a ConfigMap what the containers using
    it set (those ``keep`` keeps)."""
    refs = {f.value for f in visible_launch(context, config, scope, _takes_env_from)}
    if refs:
        maps = config_maps(context, keep)
        for ref in refs:
            yield maps.get(ref, ())
    if scope in config.names:  # a ConfigMap: what the containers that use it also set
        for other, user in _env_from_users(context).get(scope, ()):
            yield scope_index(context, other, "settings", keep).related(user)


def visible_settings(context, config: ConfigFile, scope: str) -> tuple[EnvSetting, ...]:
    """Settings that apply on a path through ``scope``: its file's related scopes, plus the
    ConfigMaps a container takes through envFrom (or, for a ConfigMap, the containers using it).
    Kept per file and scope for the run. A copy of all of them: the rules ask ``visible_first``."""
    key = ("visible_settings", id(config), scope)
    found = context.shared.get(key)
    if found is not None and found[0] is config.settings:
        return found[1]
    seen = scope_index(context, config, "settings").related(scope)
    extra = [s for part in _extra_settings(context, config, scope) for s in part]
    if extra:
        seen = (*seen, *extra)
    context.shared[key] = (config.settings, seen)
    return seen


def visible_first(context, config: ConfigFile, scope: str, keep, limit: int) -> tuple[list[EnvSetting], int]:
    """The first ``limit`` of the settings ``keep`` (a module-level function) keeps among
    ``visible_settings``, in its order, and how many it keeps in all: read from an index of the
    kept settings, never a copy of what each scope sees (a scope per prefixed command under a
    script's n exports was n settings copied per command)."""
    index = scope_index(context, config, "settings", keep)
    first, total = index.leading(scope, limit), index.count(scope)
    for part in _extra_settings(context, config, scope, keep):
        total += len(part)
        first.extend(part[:limit - len(first)])
    return first, total


def _users_launch(context, scope: str, keep=None) -> list[LaunchFact]:
    """A ConfigMap's users' launch facts (those ``keep`` keeps): each using file's facts related
    to any of its users, in the order of the files and of each file."""
    users_of: dict[int, set[str]] = {}
    for other, user in _env_from_users(context).get(scope, ()):
        users_of.setdefault(id(other), set()).add(user)
    facts = []
    for other in context.configs:
        users = users_of.get(id(other))
        if users:
            index = scope_index(context, other, "launch", keep)
            facts.extend(other.launch[i] for i in sorted({i for user in users for i in index.places(user)}))
    return facts


def visible_launch(context, config: ConfigFile, scope: str, keep=None) -> list[LaunchFact]:
    """Launch facts on a path through ``scope`` (those ``keep``, a module-level function, keeps):
    its file's related scopes, plus for a ConfigMap those of the containers that use it."""
    facts = list(scope_index(context, config, "launch", keep).related(scope))
    if scope in config.names:
        facts.extend(_users_launch(context, scope, keep))
    return facts


def container_launch(context, config: ConfigFile, scope: str) -> list[LaunchFact]:
    """The launch facts of ``scope`` itself with the envFrom facts on its path, in
    ``visible_launch``'s order: from the scope's own list and an index of envFrom facts, not a
    copy of every related fact per container."""
    own = scope_index(context, config, "launch").by_scope.get(scope, ())
    env_from = scope_index(context, config, "launch", _takes_env_from).places(scope)
    facts = [config.launch[i] for i in sorted({*own, *env_from})]
    if scope in config.names:
        facts.extend(f for f in _users_launch(context, scope) if f.scope == scope or f.kind == cfg.ENV_FROM)
    return facts


def as_int(value: str) -> int | None:
    """A plain non-negative count (``--nproc-per-node 8``); None for anything else."""
    number = decimal(value)
    return number if number is not None and number >= 0 and (value or "").strip().isdigit() else None


def _runs_several_gpus(fact: LaunchFact) -> bool:
    if fact.kind in (cfg.GPUS_PER_POD, cfg.NPROC_PER_NODE, cfg.GPUS_PER_NODE):
        count = as_int(fact.value)
        return (count is not None and count >= 2) or fact.value == "all"
    return False


def multi_gpu_evidence(context, config: ConfigFile, scope: str) -> list[str]:
    """Launch options on the setting's path that run several GPUs per process, pod or node."""
    return [f"{where(fact.loc)}: {fact.detail} {fact.value}"
            for fact in visible_launch(context, config, scope, _runs_several_gpus)]


RDMA_SETTING = re.compile(r"NCCL_IB_(?!DISABLE$)\w+$")


# Evidence lines naming a scope's RDMA settings, the rest counted: NET007 cites them for each
# setting that turns RDMA off, so listing all was one line per pair (issue 20: grouped evidence).
RDMA_SETTINGS_LISTED = 8


def _configures_rdma(s: EnvSetting) -> bool:
    return not s.passthrough and bool(RDMA_SETTING.match(s.name)
                                      or (s.name == "NCCL_NET" and (s.value or "").upper() == "IB"))


def rdma_settings_listed(context, config: ConfigFile, scope: str) -> tuple[list[str], int]:
    """The first RDMA_SETTINGS_LISTED RDMA settings that apply in ``scope`` as evidence lines,
    and how many more there are, once per file and scope. (The settings NET007 asks about, an
    NCCL_IB_DISABLE or NCCL_NET=Socket, are never RDMA settings themselves.)"""
    key = ("rdma_settings", id(config), scope)
    found = context.shared.get(key)
    if found is None or found[0] is not config.settings:
        first, total = visible_first(context, config, scope, _configures_rdma, RDMA_SETTINGS_LISTED)
        listed = [f"{where(s.loc)}: {s.name}={s.value if s.value is not None else '(computed)'}" for s in first]
        found = context.shared[key] = (config.settings, listed, total - len(listed))
    return found[1][:], found[2]


def setting_fields(setting: EnvSetting) -> dict:
    return {"name": setting.name, "value": setting.value if setting.value is not None else "",
            "scope": setting.scope, "path": setting.path, "source_kind": setting.source}


def setting_evidence(setting: EnvSetting) -> str:
    default = " (a default: applies only when unset)" if setting.default_only else ""
    return f"{where(setting.loc)}: {setting.raw or setting.name} ({setting.source}, scope {setting.scope}){default}"


def setting_hit(setting: EnvSetting, **fields) -> Hit:
    return Hit(entity=setting.entity(), location=setting.loc, fields={**setting_fields(setting), **fields},
               evidence=[setting_evidence(setting)])


# Settings that are entries of one YAML mapping or list per scope (a compose service's
# environment, a container's env list, a ConfigMap's data, a workflow's env): a second entry of
# one name there is a duplicate key (compose refuses the file) or an entry that hides another.
KEYED_SOURCES = frozenset({"compose-env", "k8s-env", "configmap", "github-env"})


def rename_fix(setting: EnvSetting, new_name: str, config: ConfigFile | None = None, notes: list | None = None):
    """An unsafe fix renaming the setting's variable where it is written, or None when the name
    is written more than once in the setting (``NCCL_X=${NCCL_X:-1}``) or has no column, or when
    ``config`` already sets ``new_name`` where the rename would make a duplicate key or a second
    assignment that changes what NCCL reads (``rename_refusal``; ``notes`` get why: --verbose)."""
    from topolint.engine.fixes import UNSAFE, replace_on_line

    if setting.loc.column < 1 or setting.raw.count(setting.name) > 1:
        return None
    refusal = rename_refusal(config, setting, new_name) if config is not None else None
    if refusal is not None:
        if notes is not None:
            notes.append(f"{where(setting.loc)}: no rename of {setting.name} to {new_name} offered: {refusal}")
        return None
    return replace_on_line(setting.loc.path, setting.loc.line, setting.loc.column, setting.name, new_name,
                           f"Rename {setting.name} to {new_name}", UNSAFE)


def rename_refusal(config: ConfigFile, setting: EnvSetting, new_name: str) -> str | None:
    """Why renaming ``setting`` to ``new_name`` would change more than its name: the file (or a
    file it reads) already sets ``new_name`` in the same scope, as a key of the same mapping or
    list (a duplicate key), or to another value (then the order of two assignments decides what
    NCCL reads). The same value set twice in a script changes nothing: offered. A setting of a
    narrower or wider scope (a job's ``#SBATCH --export`` and one step's ``srun --export``) is
    not a second assignment: the step's own setting is meant to win in that step."""
    for other in _settings_named(config, new_name):
        if other is setting or other.passthrough or other.scope != setting.scope:
            continue
        if setting.source in KEYED_SOURCES and other.source in KEYED_SOURCES and other.path == setting.path:
            return (f"{new_name} is already an entry of the same environment at {where(other.loc)}: "
                    "the rename would make a duplicate key")
        if other.value is None or setting.value is None or other.value != setting.value \
                or other.default_only != setting.default_only:
            shown = repr(other.value) if other.value is not None else "a value known at run time"
            return (f"{new_name} is already set at {where(other.loc)} (to {shown}): the rename would add a "
                    "second assignment that changes what NCCL reads")
    return None


def _settings_named(config: ConfigFile, name: str) -> list[EnvSetting]:
    """The config's settings of one name, from an index built once per config (a rename is
    looked up per finding: scanning every setting each time would be quadratic)."""
    index = config.__dict__.get("_settings_by_name")
    if index is None or index[0] != len(config.settings):
        by_name: dict[str, list[EnvSetting]] = {}
        for found in config.settings:
            by_name.setdefault(found.name, []).append(found)
        index = config.__dict__["_settings_by_name"] = (len(config.settings), by_name)
    return index[1].get(name, [])


_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.:-]+")  # needs no quoting in any config format


def value_fix(setting: EnvSetting, new_value: str):
    """An unsafe fix rewriting the value where it is written (``NAME=v``, ``value: 'v'``, ``ENV
    NAME v``, ``os.environ["NAME"] = "v"`` ...), its quotes kept; None where ``value_fix_refusal``
    says why not."""
    from topolint.engine.fixes import UNSAFE, replace_on_line

    if value_fix_refusal(setting, new_value):
        return None
    written, at = setting.value_written, setting.value_at
    quote = "" if written == setting.value else written[0]
    return replace_on_line(at.path, at.line, at.column, written, f"{quote}{new_value}{quote}",
                           f"Set {setting.name} to {new_value}", UNSAFE)


def value_fix_refusal(setting: EnvSetting, new_value: str) -> str | None:
    """Why no exact edit can rewrite the setting's value, or None when one can."""
    written, at = setting.value_written, setting.value_at
    if at is None or at.column < 1 or not written:
        return "its value is not written as one run of text on one line (a multi-line value, an escape, or not located)"
    quoted = len(written) >= 2 and written[0] == written[-1] and written[0] in "'\"" and written[1:-1] == setting.value
    if written != setting.value and not quoted:
        return (f"its value is written as {written!r}, not as {setting.value!r} bare or in one pair of quotes "
                "(escapes, interpolation or a string prefix)")
    if not _PLAIN_VALUE.fullmatch(new_value):
        return f"{new_value!r} would need quoting"
    return None


def related_setting(setting: EnvSetting, message: str) -> Related:
    return Related(location=setting.loc, entity=setting.entity(), message=message)


def configured_gdr_level(configs: list[ConfigFile]) -> tuple[str | None, str | None]:
    """The NCCL_NET_GDR_LEVEL the configs set (one literal value), for NUMA002."""
    from topolint.model.nccl_env import level_name

    values = {}
    for config in configs:
        for s in config.settings:
            if s.name == "NCCL_NET_GDR_LEVEL" and s.literal and s.value:
                level = level_name(s.value)
                if level:
                    values.setdefault(level, where(s.loc))
    if len(values) == 1:
        level, at = next(iter(values.items()))
        return level, f"NUMA002 uses NCCL_NET_GDR_LEVEL={level} from {at}"
    if len(values) > 1:
        return None, f"NUMA002 uses NCCL's default GDR level: the configs set NCCL_NET_GDR_LEVEL to {sorted(values)}"
    return None, None


# ---- the --topology view ------------------------------------------------------------------------
_RDMA_NAME = re.compile(r"(mlx\d_|ib[a-z]|bnxt_re|efa|irdma|rdma|hfi|qedr|erdma|rxe|siw)", re.I)
_SOCKET_NAME = re.compile(r"(eth|ens|enp|eno|enx|em\d|bond|ib\d|lo$|docker|veth|virbr|br-)")


@dataclass
class Hca:
    name: str
    port: int | None
    loc: object


@dataclass
class TopologyView:
    node: str
    source: str
    gpu_numa: dict[int, str] = field(default_factory=dict)  # GPU index -> NUMA node
    numa_cpus: dict[str, CpuSet] = field(default_factory=dict)
    gpu_count: int = 0
    nvlink: bool = False
    pcie_p2p: bool = False
    hcas: list[Hca] = field(default_factory=list)  # RDMA NIC ports the topology names
    gpu_locs: dict[int, object] = field(default_factory=dict)

    @property
    def rdma(self) -> bool:
        return bool(self.hcas)


def topology_views(context) -> list[TopologyView]:
    views = []
    for node in context.topology_nodes:
        for topology in getattr(node, "topologies", []):
            view = TopologyView(node.name, topology.path)
            by_bus = {p.bus_id: p for p in topology.pci}
            parents: list[set[str]] = []
            for cpu in topology.cpus:
                if cpu.numa_id is not None:
                    numa = str(cpu.numa_id)
                    view.numa_cpus[numa] = view.numa_cpus.get(numa, CpuSet()) | (cpumask(cpu.affinity) or CpuSet())
            for i, gpu in enumerate(topology.gpus):
                index = gpu.dev if gpu.dev is not None else i
                numa = topology.cpus[gpu.cpu_index].numa_id if gpu.cpu_index < len(topology.cpus) else None
                if numa is not None:
                    view.gpu_numa[index] = str(numa)
                view.gpu_locs[index] = gpu.loc
                if any(link.target != gpu.bus_id for link in gpu.nvlinks):
                    view.nvlink = True
                chain, parent = set(), by_bus.get(gpu.bus_id)
                while parent is not None and parent.parent_bus_id and len(chain) < 64:
                    chain.add(parent.parent_bus_id)
                    parent = by_bus.get(parent.parent_bus_id)
                parents.append(chain)
            view.gpu_count = len(topology.gpus)
            view.pcie_p2p = any(parents[i] & parents[j] for i in range(len(parents)) for j in range(i))
            for nic in topology.nics:
                pci = by_bus.get(nic.bus_id or "")
                for net in nic.nets:
                    name = net.name or ""
                    rdma = net.gdr or (pci is not None and (pci.pci_class or "").lower().startswith("0x0207")) \
                        or (bool(_RDMA_NAME.match(name)) and not _SOCKET_NAME.match(name))
                    if rdma and name:
                        view.hcas.append(Hca(name, net.port, net.loc))
            views.append(view)
        for matrix in getattr(node, "matrices", []):
            if getattr(matrix, "kind", None) != "topo":
                continue
            view = TopologyView(node.name, matrix.path)
            for row in matrix.rows:
                if row.kind == "gpu":
                    view.gpu_count += 1
                    view.gpu_locs[row.index] = row.loc
                    numa = (row.numa_affinity or "").strip()
                    if decimal(numa) is not None and numa.isdigit():
                        view.gpu_numa[row.index] = numa
                        view.numa_cpus[numa] = view.numa_cpus.get(numa, CpuSet()) | (cpulist(row.cpu_affinity) or CpuSet())
                    for cell, kind in zip(row.cells, matrix.column_kinds):
                        if kind == "gpu" and cell.startswith("NV"):
                            view.nvlink = True
                        if kind == "gpu" and cell in ("PIX", "PXB"):
                            view.pcie_p2p = True
                elif row.kind == "nic":
                    name = matrix.nic_names.get(row.label, row.label)
                    if _RDMA_NAME.match(name) and not _SOCKET_NAME.match(name):
                        view.hcas.append(Hca(name, None, row.loc))
            views.append(view)
    return views



def numa_view(context) -> TopologyView | None:
    """The first --topology view that knows each GPU's NUMA node (clusters are not compared yet)."""
    return next((v for v in topology_views(context) if v.gpu_numa), None)

def topology_label(view: TopologyView) -> str:
    return f"{view.source} (node {view.node})"
