"""Configuration files: one per run, validated, merged under the command line.

Discovery (``find_config``): ``--config FILE`` if given; else, from the working directory
upwards, the first directory holding ``.topolint.toml`` (top-level keys) or a
``pyproject.toml`` with a ``[tool.topolint]`` table (a pyproject without it is skipped);
``--isolated`` reads none. Keys are kebab-case, as in the rule catalog; an unknown key or a
bad value is a usage error (exit 2) naming the key and the file. Paths in the file
(``topology``, ``rule-dirs``) and the globs (``exclude``, ``per-file-ignores``) are relative
to the directory of the config file.

``docs/config.schema.json`` is generated from ``Config``: ``python -m topolint.config``.
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
    require_suppression_reason: bool = Field(
        default=False, description="Honour only suppression comments that give a reason, like "
                                   "--require-suppression-reason.")


@dataclass
class LoadedConfig:
    """A validated configuration and where it came from (``path`` None: defaults, no file)."""

    # Defaults need no validation (or its schema build, a tenth of a config-free start-up).
    config: Config = field(default_factory=Config.model_construct)
    path: Optional[Path] = None
    prefix: str = ""  # "tool.topolint." for pyproject.toml

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
    except (OSError, tomllib.TOMLDecodeError):
        return False


def find_config(start: Path) -> Optional[Path]:
    """The nearest config file from ``start`` upwards, or None."""
    start = start.resolve()
    for folder in [start, *start.parents]:
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
    return None


def _key(loc: tuple, prefix: str) -> str:
    return prefix + ".".join(str(part) for part in loc)


def load_config(path: Path) -> LoadedConfig:
    """Read and validate one config file; ConfigError names the file and the key."""
    path = path.resolve()
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
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
    return LoadedConfig(config=config, path=path, prefix=prefix)


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


def key_name(loaded: LoadedConfig, key: str) -> str:
    return f"{loaded.label}: `{loaded.prefix}{key}`"


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
    relative = _relative(path, base)
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
    target = Path(__file__).resolve().parent.parent / "docs" / "config.schema.json"
    target.write_text(schema_text(), encoding="utf-8")
    print(target)
