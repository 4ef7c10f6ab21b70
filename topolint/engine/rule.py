"""Rule definitions: data files in rules/ (one TOML file per rule) that instantiate a check.

At run time the files are read without validation (start-up stays fast); the project's tests
validate every definition against ``RuleDefinition``. Sites write the same format for their
own rules and point ``--rule-dir`` at it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Literal

from topolint.model.schema import ConfigDict, Field
from topolint.model.schema import Model as BaseModel
from topolint.model.toml_text import toml_error

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


class RuleDocs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    what: str = Field(min_length=1)
    why: str = Field(min_length=1)
    bad: str = Field(min_length=1)
    good: str = Field(min_length=1)
    example_format: str = "xml"
    fix: str = Field(min_length=1)


class RuleDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    code: str = Field(pattern=r"^[A-Z]+[0-9]{3}$")
    slug: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    category: str = Field(pattern=r"^[a-z]+$")
    severity: Severity
    status: Literal["stable", "preview"] = "stable"
    summary: str = Field(min_length=1, max_length=200)
    check: str = Field(min_length=1)
    parameters: dict[str, Any] = {}
    messages: dict[str, str]
    fixes: dict[str, str]
    tags: list[str] = Field(default_factory=list, max_length=20)
    docs: RuleDocs
    source: str = ""

    @property
    def is_preview(self) -> bool:
        return self.status == "preview"


class RuleError(ValueError):
    """A rule definition that cannot be used (unknown check, bad parameters, bad template)."""


def builtin_rules_dir() -> Path:
    """rules/ at the repository root, or its copy inside the installed wheel."""
    packaged = Path(__file__).resolve().parent.parent / "_rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "rules"


def read_rule_file(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        raw = tomllib.load(handle)
    raw["source"] = str(path)
    return raw


_DOCS_TABLE = re.compile(r"^\[docs\][ \t]*\r?$", re.M)
_TABLE_LINE = re.compile(r"^[ \t]*\[", re.M)


class _LazyDocs:
    """The [docs] table, parsed on first use: a check run reads no docs (only SARIF and `rule`
    do), and its multi-line strings are most of the parsing time of the rule files."""

    def __init__(self, text: str):
        self._text = text
        self._docs: RuleDocs | None = None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._docs is None:
            self._docs = RuleDocs.model_construct(**tomllib.loads(self._text).get("docs", {}))
        return getattr(self._docs, name)


def _read_for_run(path: Path) -> dict[str, Any]:
    """Like read_rule_file, with the [docs] table left for later when it is the file's last table."""
    text = path.read_text(encoding="utf-8")
    found = _DOCS_TABLE.search(text)
    if found is None or _TABLE_LINE.search(text, found.end()):
        raw = tomllib.loads(text)  # docs elsewhere, or a line in them looks like a table: read it all
    else:
        raw = tomllib.loads(text[:found.start()])
        raw["docs"] = _LazyDocs(text[found.start():])
    raw["source"] = str(path)
    return raw


def _construct(raw: dict[str, Any]) -> RuleDefinition:
    docs = raw.get("docs", {})
    if not isinstance(docs, _LazyDocs):
        docs = RuleDocs.model_construct(**docs)
    fields = {k: v for k, v in raw.items() if k != "docs"}
    fields.setdefault("status", "stable")
    fields.setdefault("parameters", {})
    fields.setdefault("tags", [])
    return RuleDefinition.model_construct(docs=docs, **fields)


def _error_key(error: dict) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(file)"


def validate_rule_file(path: Path) -> RuleDefinition:
    """A site rule, checked as it is loaded: the definition (missing tables, unknown keys), its
    check (it exists) and its parameters (they fit the check's typed Parameters). RuleError
    names the file and the key."""
    from pydantic import ValidationError

    from topolint.checks import load_check

    try:
        raw = read_rule_file(path)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise RuleError(f"{path}: not valid TOML: {toml_error(exc, path)}") from None
    except UnicodeDecodeError:
        raise RuleError(f"{path}: not UTF-8 text") from None
    try:
        rule = RuleDefinition.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{_error_key(e)}: {e['msg']}" for e in exc.errors()[:5])
        raise RuleError(f"{path}: {problems}") from None
    for table in ("messages", "fixes"):
        if "default" not in getattr(rule, table):
            raise RuleError(f"{path}: {table}.default: missing (the text used when a check gives no variant)")
    try:
        module = load_check(rule.check)
    except ValueError as exc:
        raise RuleError(f"{path}: check: {exc}") from None
    try:
        module.Parameters(**rule.parameters)
    except ValidationError as exc:
        problems = "; ".join(f"parameters.{_error_key(e)}: {e['msg']}" for e in exc.errors()[:5])
        raise RuleError(f"{path}: {problems}") from None
    except TypeError as exc:
        raise RuleError(f"{path}: parameters: {exc}") from None
    return rule


def load_rules(extra_dirs: list[Path] | None = None, validate: bool = False) -> list[RuleDefinition]:
    """Every rule, sorted by code. A later directory may not redefine a code.

    Built-in rules are read without validation (the project's tests validate them); site rules
    in ``extra_dirs`` are always validated as they load (``validate_rule_file``).
    """
    rules: dict[str, RuleDefinition] = {}

    def add(path: Path, rule: RuleDefinition) -> None:
        if rule.code in rules:
            raise ValueError(f"{path}: rule {rule.code} is already defined in {rules[rule.code].source}")
        rules[rule.code] = rule

    for path in sorted(builtin_rules_dir().glob("*.toml")):
        add(path, RuleDefinition.model_validate(read_rule_file(path)) if validate else _construct(_read_for_run(path)))
    for directory in extra_dirs or []:
        for path in sorted(directory.glob("*.toml")):
            add(path, validate_rule_file(path))
    return [rules[code] for code in sorted(rules)]
