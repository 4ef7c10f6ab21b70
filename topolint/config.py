"""Configuration files: found per file as ruff finds them, validated, merged under the command line.

Discovery (``ConfigTree``): ``--config FILE`` or ``--isolated`` (none) gives one configuration
for every file. Otherwise each file is governed by the nearest folder at or above it that holds
``.topolint.toml`` (top-level keys) or a ``pyproject.toml`` with a ``[tool.topolint]`` table (a
pyproject without it is skipped); a file with none above it takes the one found from the working
directory upwards (``find_config``). Settings are not merged across folders: the nearest file
wins whole, unless it says ``extend = "../.topolint.toml"``, whose keys it then inherits and may
override key by key. Keys are kebab-case, as in the rule catalog; an unknown key or a bad value
is a usage error (exit 2) naming the key and the file. Paths in a file (``topology``,
``rule-dirs``) and its globs (``exclude``, ``per-file-ignores``) are relative to the folder of
the file that holds them.

``docs/config.schema.json`` is generated from ``Config``: ``python -m topolint.config`` prints it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Optional

from topolint.model.schema import ConfigDict, Field
from topolint.model.schema import Model as BaseModel
from topolint.model.toml_text import toml_error

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = ".topolint.toml"
PYPROJECT = "pyproject.toml"
SCHEMA_ID = "https://github.com/topolint/topolint/blob/main/docs/config.schema.json"
# Folders no one means to lint; `exclude` replaces this list, `extend-exclude` adds to it.
DEFAULT_EXCLUDE = [".git", ".hg", ".svn", ".tox", ".venv", "venv", "__pycache__", "node_modules"]

Level = Literal["error", "warning", "info"]


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and the key."""


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class Config(BaseModel):
    """topolint configuration (`.topolint.toml`, or `[tool.topolint]` in pyproject.toml)."""

    model_config = ConfigDict(extra="forbid", strict=True, alias_generator=_kebab, populate_by_name=True,
                              title="topolint configuration", defer_build=True)

    select: Optional[list[str]] = Field(
        default=None, description="Rules to enable (codes, prefixes, categories, slugs or ALL). "
                                  "Default: every stable rule. --select on the command line replaces it.")
    extend_select: list[str] = Field(default_factory=list, description="Rules to enable on top of `select`.")
    ignore: list[str] = Field(default_factory=list, description="Rules to disable.")
    preview: bool = Field(default=False, description="Enable preview (heuristic) rules.")
    per_file_ignores: dict[str, list[str]] = Field(
        default_factory=dict, description="Glob (relative to the config file's folder) to the rules ignored "
                                          "in matching files, e.g. {\"legacy/*.xml\" = [\"TOPO002\"]}.")
    exclude: Optional[list[str]] = Field(
        default=None, description="Globs of files and folders to skip; replaces the default list "
                                  f"({', '.join(DEFAULT_EXCLUDE)}).")
    extend_exclude: list[str] = Field(default_factory=list, description="Globs to skip on top of `exclude`.")
    force_exclude: bool = Field(
        default=False, description="Apply the excludes to files named on the command line too "
                                   "(what pre-commit passes), like --force-exclude.")
    severity: dict[str, Level] = Field(default_factory=dict,
                                       description="Rule code to the severity its findings get.")
    rules: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Rule code to parameters, e.g. [rules.NET005] or a site rule's "
                                          "min-gbps; checked against the rule's typed parameters.")
    fail_level: Optional[Level] = Field(default=None, description="Lowest severity that makes the exit code 1 "
                                                                  "(default: warning).")
    nccl_version: Optional[str] = Field(default=None, pattern=r"^\s*v?\d+\.\d+(\.\d+)?(-\d+)?\s*$",
                                        description="NCCL version to assume, e.g. \"2.27.7\" "
                                                    "(default: the newest known).")
    extra_variables: list[str] = Field(
        default_factory=list, description="NCCL_* variable names to accept as known (plugins, newer NCCL).")
    topology: Optional[str] = Field(
        default=None, description="Topology dump that configuration files are checked against "
                                  "(relative to the config file), like --topology.")
    rule_dirs: list[str] = Field(default_factory=list,
                                 description="Folders of site rule definitions (*.toml), relative to the "
                                             "config file, like --rule-dir.")
    profiles: dict[str, str] = Field(
        default_factory=dict, description="Glob of node names to the profile their nodes are judged against "
                                          "(docs/profiles.md), e.g. {\"gpu-h100-*\" = \"dgx-h100\"}; the first "
                                          "glob that matches wins. --profile replaces it.")
    profile_dirs: list[str] = Field(default_factory=list,
                                    description="Folders of site profiles (*.toml, docs/profiles.md), relative to "
                                                "the config file.")
    require_suppression_reason: bool = Field(
        default=False, description="Honour only suppression comments that give a reason, like "
                                   "--require-suppression-reason.")
    extend: Optional[str] = Field(
        default=None, description="Another configuration file (relative to this one) whose settings this one "
                                  "inherits; the keys set here replace the inherited ones. Without it the "
                                  "nearest configuration wins whole: folders above are not read.")


@dataclass
class LoadedConfig:
    """A validated configuration and where it came from (``path`` None: defaults, no file)."""

    # Defaults need no validation (or its schema build, a tenth of a config-free start-up).
    config: Config = field(default_factory=Config.model_construct)
    path: Optional[Path] = None
    prefix: str = ""  # "tool.topolint." for pyproject.toml
    inherited: dict[str, Path] = field(default_factory=dict)  # key -> the file it came from (``extend``)
    keys: frozenset = frozenset()  # the fields the file sets (inherited ones too)

    @property
    def base(self) -> Path:
        """Folder that relative paths and globs in the file are relative to."""
        return self.path.parent if self.path else Path.cwd().resolve()

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "configuration"

    def resolve(self, value: str) -> Path:
        return (self.base / value).resolve()


def _has_tool_table(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return "topolint" in tomllib.load(handle).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError, RecursionError, UnicodeDecodeError):
        return False


def find_config(start: Path) -> Optional[Path]:
    """The nearest config file from ``start`` upwards, or None."""
    start = start.resolve()
    for folder in [start, *start.parents]:
        found = _config_in(folder)
        if found is not None:
            return found
    return None


def _key(loc: tuple, prefix: str) -> str:
    return prefix + ".".join(str(part) for part in loc)


MAX_EXTEND_DEPTH = 16
# Keys whose values are paths or globs relative to the file that sets them: rebased when inherited.
_PATH_KEYS = ("topology", "rule_dirs", "profile_dirs", "exclude", "extend_exclude", "per_file_ignores")


def load_config(path: Path, _extending: tuple[Path, ...] = ()) -> LoadedConfig:
    """Read and validate one config file (and the files it extends); ConfigError names the file and the key."""
    path = path.resolve()
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {toml_error(exc, path)}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    prefix = ""
    if path.name == PYPROJECT:
        raw = raw.get("tool", {}).get("topolint", {})
        prefix = "tool.topolint."
    from pydantic import ValidationError  # validation, and so pydantic, only where a file is read

    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = _key(error["loc"], prefix)
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown key `{key}`")
            else:
                problems.append(f"`{key}`: {error['msg']} (got {error.get('input')!r})")
        raise ConfigError(f"{path}: " + "; ".join(problems)) from None
    loaded = LoadedConfig(config=config, path=path, prefix=prefix, keys=frozenset(k.replace("-", "_") for k in raw))
    return _extended(loaded, _extending) if config.extend else loaded


def _extended(loaded: LoadedConfig, extending: tuple[Path, ...]) -> LoadedConfig:
    """``loaded`` over the file its ``extend`` names: the keys it sets win, the others are inherited
    with their paths and globs made absolute (they stay relative to the file that set them)."""
    target = loaded.resolve(loaded.config.extend)
    where = key_name(loaded, "extend")
    if target in extending or target == loaded.path:
        raise ConfigError(f"{where}: {loaded.config.extend} extends {loaded.path} again (a cycle)")
    if len(extending) >= MAX_EXTEND_DEPTH:
        raise ConfigError(f"{where}: more than {MAX_EXTEND_DEPTH} files extend one another")
    if not target.is_file():
        raise ConfigError(f"{where}: {loaded.config.extend}: no such file")
    parent = load_config(target, (*extending, loaded.path))
    own = loaded.keys - {"extend"}
    values = {name: getattr(loaded.config, name) for name in own}
    inherited = {}
    for name in parent.keys - own - {"extend"}:
        values[name] = _rebased(name, getattr(parent.config, name), parent)
        inherited[name] = parent.inherited.get(name, parent.path)
    config = Config.model_construct(**values, extend=loaded.config.extend)
    return LoadedConfig(config=config, path=loaded.path, prefix=loaded.prefix, inherited=inherited,
                        keys=frozenset(values) | {"extend"})


def _absolute_glob(pattern: str, base: Path) -> str:
    bare = pattern.strip().rstrip("/").removeprefix("./")
    if "/" not in bare or bare.startswith("/"):
        return pattern  # a name glob matches anywhere; an absolute one stays
    return (base / bare).as_posix()


def _rebased(name: str, value, parent: LoadedConfig):
    if name not in _PATH_KEYS or value is None:
        return value
    if name == "topology":
        return str(parent.resolve(value))
    if name in ("rule_dirs", "profile_dirs"):
        return [str(parent.resolve(v)) for v in value]
    if name == "per_file_ignores":
        return {_absolute_glob(k, parent.base): v for k, v in value.items()}
    return [_absolute_glob(v, parent.base) for v in value]


def discover(config_file: Optional[Path], isolated: bool, cwd: Optional[Path] = None) -> LoadedConfig:
    if config_file is not None and isolated:
        raise ConfigError("--config and --isolated cannot be used together")
    if isolated:
        return LoadedConfig()
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"--config {config_file}: no such file")
        return load_config(config_file)
    found = find_config(cwd or Path.cwd())
    return load_config(found) if found else LoadedConfig()


class ConfigTree:
    """The configuration that governs each folder, as ruff finds it per file.

    ``for_folder``: the nearest folder at or above it with a configuration file wins whole; with
    none above it, ``root`` (the one found from the working directory). ``fixed`` (``--config``,
    ``--isolated``): ``root`` everywhere. Each folder is looked up once (two stats), its answer
    shared by every file in it and by the folders below that have none of their own.
    """

    def __init__(self, root: LoadedConfig, fixed: bool, searched_from: Optional[Path] = None):
        self.root, self.fixed = root, fixed
        self._folders: dict[str, Optional[LoadedConfig]] = {}
        self._files: dict[Path, LoadedConfig] = {root.path: root} if root.path else {}
        if searched_from is not None and not fixed:  # what find_config saw on its way up is known
            for folder in [searched_from.resolve(), *searched_from.resolve().parents]:
                found = root.path is not None and folder == root.path.parent
                self._folders[str(folder)] = root if found else None
                if found:
                    break

    def for_folder(self, folder: str) -> LoadedConfig:
        if self.fixed:
            return self.root
        folder = os.path.abspath(folder)
        found = self._folders.get(folder, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._nearest(folder)
        return found or self.root

    def for_path(self, path: str) -> LoadedConfig:
        """The configuration of a file (its folder's) or of a folder named on the command line."""
        return self.for_folder(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))

    def found(self) -> list[LoadedConfig]:
        """Every configuration read so far, the root first."""
        return [self.root] + [c for c in self._files.values() if c is not self.root]

    def _nearest(self, folder: str) -> Optional[LoadedConfig]:
        chain = []
        while True:
            known = self._folders.get(folder, _UNKNOWN)
            if known is not _UNKNOWN:
                found = known
                break
            chain.append(folder)
            path = _config_in(folder)
            if path is not None:
                found = self._load(path)
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                found = None
                break
            folder = parent
        for passed in chain:
            self._folders[passed] = found
        return found

    def _load(self, path: Path) -> LoadedConfig:
        resolved = path.resolve()
        loaded = self._files.get(resolved)
        if loaded is None:
            loaded = self._files[resolved] = load_config(resolved)
        return loaded


_UNKNOWN = object()


def _config_in(folder) -> Optional[Path]:
    """The configuration file in ``folder`` (a path or a string: one stat per name, no Path built)."""
    candidate = os.path.join(folder, CONFIG_NAME)
    if os.path.isfile(candidate):
        return Path(candidate)
    pyproject = os.path.join(folder, PYPROJECT)
    if os.path.isfile(pyproject) and _has_tool_table(Path(pyproject)):
        return Path(pyproject)
    return None


def config_tree(config_file: Optional[Path], isolated: bool, cwd: Optional[Path] = None) -> ConfigTree:
    """The run's configuration (``discover``) and, unless one was fixed, the per-folder discovery."""
    return ConfigTree(discover(config_file, isolated, cwd), fixed=config_file is not None or isolated,
                      searched_from=cwd or Path.cwd())


def key_name(loaded: LoadedConfig, key: str) -> str:
    origin = loaded.inherited.get(key.split(".", 1)[0].replace("-", "_"))
    where = f" (from {origin}, which it extends)" if origin is not None else ""
    return f"{loaded.label}{where}: `{loaded.prefix}{key}`"


def check_rule_settings(loaded: LoadedConfig, rules: list) -> list:
    """Codes in severity, per-file-ignores and rules must name loaded rules; rule parameters must
    fit the check's Parameters model. Returns the rules with severities and parameters applied."""
    from topolint.checks import load_check

    config = loaded.config
    by_code = {r.code: r for r in rules}
    for table in ("severity", "rules"):
        for code in getattr(config, table):
            if code not in by_code:
                raise ConfigError(f"{key_name(loaded, table + '.' + code)}: no rule with code {code!r}")
    result = []
    for rule in rules:
        update: dict[str, Any] = {}
        if rule.code in config.severity:
            update["severity"] = config.severity[rule.code]
        if rule.code in config.rules:
            given = {k.replace("-", "_"): v for k, v in config.rules[rule.code].items()}
            module = None
            try:
                module = load_check(rule.check)
            except ValueError:
                pass
            known = set(getattr(getattr(module, "Parameters", None), "model_fields", {}) or {})
            for name in given:
                if name not in known:
                    choices = ", ".join(sorted(k.replace("_", "-") for k in known)) or "none"
                    where = key_name(loaded, "rules." + rule.code + "." + name.replace("_", "-"))
                    raise ConfigError(f"{where}: unknown parameter (parameters of {rule.code}: {choices})")
            merged = {**rule.parameters, **given}
            from pydantic import ValidationError as PydanticError  # validation only where values are given

            try:
                module.Parameters(**merged)
            except PydanticError as exc:
                first = exc.errors()[0]
                name = ".".join(str(p) for p in first["loc"]).replace("_", "-")
                where = key_name(loaded, f"rules.{rule.code}.{name}")
                raise ConfigError(f"{where}: {first['msg']}") from None
            update["parameters"] = merged
        result.append(rule.model_copy(update=update) if update else rule)
    return result


# --- path matching ----------------------------------------------------------------------------

def _relative(path: Path, base: Path) -> Optional[PurePosixPath]:
    try:
        return PurePosixPath(path.resolve().relative_to(base).as_posix())
    except ValueError:
        return None


def glob_matches(pattern: str, path: Path, base: Path) -> bool:
    """ruff-like: a pattern with a slash matches the path relative to ``base``; one without
    matches the file or folder name. ``*`` also crosses folders (``legacy/*`` is all below)."""
    pattern = pattern.strip().rstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.name, pattern)
    relative = None if pattern.startswith("/") else _relative(path, base)  # absolute: inherited (extend)
    target = relative.as_posix() if relative is not None else path.resolve().as_posix()
    return fnmatch.fnmatchcase(target, pattern) or fnmatch.fnmatchcase(target, pattern.replace("**/", ""))


def _self_or_ancestor_matches(patterns: list[str], path: Path, base: Path) -> bool:
    path = path.resolve()
    chain = [path, *path.parents]
    try:
        # Folders above the config file's folder are not the project's business.
        chain = chain[: len(path.relative_to(base).parts)]
    except ValueError:
        chain = chain[:1]
    return any(glob_matches(p, entry, base) for entry in chain for p in patterns)


@dataclass
class Excluder:
    """Decides whether a file or folder is excluded by the configuration.

    Called on each entry of a folder walk (``__call__``: the entry itself), and with
    ``--force-exclude`` on the paths named on the command line (``named``: the path or any
    folder above it, up to the config file's folder).
    """

    patterns: list[str]
    base: Path
    force: bool = False  # --force-exclude: also filter the named paths

    def __post_init__(self) -> None:
        # Name-only globs (the usual case) become one regex: a walk asks about every file.
        names = [p.strip().rstrip("/") for p in self.patterns if "/" not in p.strip().rstrip("/").removeprefix("./")]
        self._by_name = re.compile("|".join(f"(?:{fnmatch.translate(n)})" for n in names)) if names else None
        self._by_path = [p for p in self.patterns if "/" in p.strip().rstrip("/").removeprefix("./")]

    def __call__(self, path: Path | str) -> bool:
        if self._by_name is not None and self._by_name.match(os.path.basename(path)):
            return True
        return any(glob_matches(p, Path(path), self.base) for p in self._by_path)

    def named(self, path: Path) -> bool:
        return _self_or_ancestor_matches(self.patterns, path, self.base)


def excluder(loaded: LoadedConfig, extra: list[str] | None = None, force: bool = False) -> Excluder:
    config = loaded.config
    patterns = list(DEFAULT_EXCLUDE if config.exclude is None else config.exclude)
    patterns += config.extend_exclude + list(extra or [])
    return Excluder(patterns, loaded.base, force or config.force_exclude)


def per_file_ignored(loaded: LoadedConfig, path: str, code: str, resolved: dict[str, set[str]]) -> bool:
    """Whether per-file-ignores drops ``code`` in the file shown as ``path`` (the file, or a
    folder above it, matches a glob). ``resolved`` maps each glob to the codes it names."""
    if path == "-":
        return False
    patterns = [pattern for pattern, codes in resolved.items() if code in codes]
    return bool(patterns) and _self_or_ancestor_matches(patterns, Path(path), loaded.base)


# --- schema -------------------------------------------------------------------------------------

def json_schema() -> dict:
    schema = Config.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


if __name__ == "__main__":
    # The schema on stdout: an installed package has no docs/ beside it to write into.
    # In a checkout: python -m topolint.config > docs/config.schema.json
    sys.stdout.write(schema_text())
