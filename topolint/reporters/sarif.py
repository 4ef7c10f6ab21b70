"""SARIF 2.1.0 for GitHub code scanning (see the supported subset in docs and linters.md §2).

Design: repo-relative URIs under %SRCROOT% so alerts keep their identity across checkouts;
every enabled rule in rules[] so ruleIndex is stable; no timestamps so output is reproducible.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from topolint import __version__
from topolint.docs import rule_markdown, rule_url
from topolint.engine.finding import Finding, Related
from topolint.engine.rule import SEVERITY_ORDER, RuleDefinition
from topolint.model.entities import parse_entity
from topolint.reporters import Report
from topolint.reporters._group import group_document
from topolint.reporters._json_text import dumps_indented

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/topolint/topolint"
MAX_RESULTS = 25_000  # GitHub rejects runs with more results
MAX_TEXT = 1024  # GitHub's limit for short/full descriptions
MAX_TAGS = 20
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}
FINGERPRINT_KEY = "topolint/entity/v1"


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _dir_uri(path: Path) -> str:
    # SARIF base URIs must end with "/" or relative references resolve against the parent.
    uri = path.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _rule(rule: RuleDefinition) -> dict:
    docs = rule.docs
    # Plain text: one paragraph per section, the TOML's hard line breaks dropped.
    help_text = "\n\n".join(" ".join(part.split()) for part in (docs.what, docs.why, "Fix: " + docs.fix))
    tags = list(dict.fromkeys([*rule.tags, rule.category]))[:MAX_TAGS]
    return {
        "id": rule.code,
        "name": rule.slug[:255],
        "shortDescription": {"text": _clip(rule.summary)},
        "fullDescription": {"text": _clip(docs.what)},
        "help": {"text": help_text, "markdown": rule_markdown(rule)},
        "helpUri": rule_url(rule),
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {
            "tags": tags,
            "precision": "medium" if rule.is_preview else "high",
            "problem.severity": PROBLEM_SEVERITY[rule.severity],
        },
    }


class _Locator:
    """Turns finding paths into artifact locations, once per path (25,000 results add up)."""

    def __init__(self, project_root: Path, sources: dict | None = None) -> None:
        self.root = project_root.resolve()
        self.sources = sources or {}
        self.cwd = Path.cwd().resolve()
        self.cache: dict[str, tuple[dict, bool]] = {}

    def artifact(self, path: str) -> tuple[dict, bool]:
        """(artifactLocation, inside project root)."""
        if path not in self.cache:
            self.cache[path] = self._artifact(path)
        return self.cache[path]

    def _artifact(self, path: str) -> tuple[dict, bool]:
        if path == "-":  # stdin without --stdin-filename: a real relative reference, never a placeholder
            return {"uri": "-", "uriBaseId": "%SRCROOT%"}, True
        # Findings carry paths relative to the working directory; SARIF wants them relative to the root.
        absolute = (self.cwd / path).resolve()
        try:
            relative = absolute.relative_to(self.root).as_posix()
        except ValueError:
            # Outside the repository: GitHub accepts only file:// absolute URIs there.
            return {"uri": absolute.as_uri()}, False
        return {"uri": quote(relative), "uriBaseId": "%SRCROOT%"}, True

    def physical(self, path: str, line: int, column: int) -> tuple[dict, bool]:
        artifact, inside = self.artifact(path)
        region = {"startLine": max(line, 1)}  # GitHub drops results without startLine >= 1
        if column > 0:
            region["startColumn"] = self.utf16_column(path, line, column)
        return {"artifactLocation": dict(artifact), "region": region}, inside

    def utf16_column(self, path: str, line: int, column: int) -> int:
        """Findings count columns in code points; the run declares UTF-16 code units (GitHub's unit)."""
        source = self.sources.get(path)
        if source is None or column <= 1:
            return column
        before = source.line_text(line)[:column - 1]
        return column + sum(1 for char in before if ord(char) > 0xFFFF)

    def replacement(self, edit) -> dict:
        if edit.bom:  # the mark is outside every line and column: a binary region (byteOffset, byteLength)
            return {"deletedRegion": {"byteOffset": 0, "byteLength": 3}}
        return {
            "deletedRegion": {
                "startLine": edit.start_line, "startColumn": self.utf16_column(edit.path, edit.start_line, edit.start_column),
                "endLine": edit.end_line, "endColumn": self.utf16_column(edit.path, edit.end_line, edit.end_column),
            },
            "insertedContent": {"text": edit.content},
        }

    def fix(self, fix) -> dict:
        """A SARIF fix: one artifactChange per file, each edit a replacement of a region."""
        changes: dict[str, list] = {}
        for edit in fix.edits:
            changes.setdefault(edit.path, []).append(self.replacement(edit))
        return {
            "description": {"text": fix.message + (" (unsafe: --unsafe-fixes applies it)" if fix.applicability == "unsafe" else "")},
            "artifactChanges": [{"artifactLocation": dict(self.artifact(path)[0]), "replacements": replacements}
                                for path, replacements in changes.items()],
            "properties": {"applicability": fix.applicability},
        }


# SARIF 3.33.7 kinds where one describes the entity: a setting is a variable, a launcher option a
# parameter, a container spec an object. No SARIF kind names hardware or a whole file, and the
# spec lets a producer use its own value then: the entity's kind (gpu, nic, pci, cpu, file, ...).
SARIF_KINDS = {"env": "variable", "launch": "parameter", "container": "object"}
_LINK_LIKE = re.compile(r"\[[^\]]*\]\(\d+\)")


def _logical(entity: str) -> dict:
    ref = parse_entity(entity)
    return {"name": ref.name, "fullyQualifiedName": entity, "kind": SARIF_KINDS.get(ref.kind, ref.kind)}


def _link_label(related: Related) -> str:
    label = parse_entity(related.entity).label
    # SARIF embedded links (3.11.6): literal brackets and backslashes in the link text are escaped.
    return label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _message(finding: Finding) -> str:
    if not finding.related:
        return finding.message
    # Text that reads like an embedded link ("[x](1)") would become one: escape its brackets.
    message = _LINK_LIKE.sub(lambda m: m.group(0).replace("[", "\\[").replace("]", "\\]"), finding.message)
    links = ", ".join(f"[{_link_label(r)}]({i})" for i, r in enumerate(finding.related, start=1))
    sentence_end = "" if message.rstrip().endswith(".") else "."
    return f"{message.rstrip()}{sentence_end} See {links}."


def _result(finding: Finding, rule_index: dict[str, int], locator: _Locator) -> dict:
    result: dict = {"ruleId": finding.code}
    if finding.code in rule_index:  # a finding of a rule outside rules[] simply has no index
        result["ruleIndex"] = rule_index[finding.code]
    result["level"] = LEVELS.get(finding.severity, "warning")
    result["message"] = {"text": _message(finding)}
    physical, inside = locator.physical(finding.path, finding.line, finding.column)
    result["locations"] = [{
        "physicalLocation": physical,
        "logicalLocations": [_logical(finding.entity)],
    }]
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": i,
                "physicalLocation": locator.physical(r.location.path, r.location.line, r.location.column)[0],
                "logicalLocations": [_logical(r.entity)],
                "message": {"text": r.message},
            }
            for i, r in enumerate(finding.related, start=1)
        ]
    fingerprints = {FINGERPRINT_KEY: finding.fingerprint}
    if not inside:
        # upload-sarif cannot hash files outside the checkout; without this key GitHub
        # would open a duplicate alert on every run. Inside the repo we let the action hash.
        fingerprints["primaryLocationLineHash"] = f"{finding.fingerprint}:1"
    result["partialFingerprints"] = fingerprints
    if finding.autofix is not None:
        result["fixes"] = [locator.fix(finding.autofix)]
    if finding.group is not None:  # a property bag (3.8): one result stands for the group's members
        result["properties"] = {"group": group_document(finding.group)}
    if finding.suppressed:
        # inSource: a comment or annotation in the file; external: the baseline, which GitHub
        # closes as accepted. A baselined finding is also "unchanged" relative to the baseline.
        kind = finding.suppression or "inSource"
        suppression: dict = {"kind": kind}
        if kind == "external":
            suppression["status"] = "accepted"
            suppression["justification"] = "accepted in the topolint baseline"
            result["baselineState"] = "unchanged"
        elif finding.justification:
            suppression["justification"] = finding.justification
        result["suppressions"] = [suppression]
    return result


def _keep_most_severe(findings: list[Finding]) -> list[Finding]:
    """At most MAX_RESULTS findings: active before suppressed, then by severity; original order kept."""
    if len(findings) <= MAX_RESULTS:
        return findings
    ranked = sorted(range(len(findings)),
                    key=lambda i: (findings[i].suppressed, SEVERITY_ORDER.get(findings[i].severity, 3)))
    return [findings[i] for i in sorted(ranked[:MAX_RESULTS])]


def _notification(error) -> dict:
    """An internal error (engine/internal.py) as SARIF reports a tool's own failure."""
    return {
        "level": "error",
        "message": {"text": f"internal error in {error.rule} on {error.input}: {error.error}"},
        "descriptor": {"id": error.rule},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": error.input}}}]
        if "," not in error.input else [],
    }


def render_sarif(report: Report) -> str:
    rule_index = {rule.code: i for i, rule in enumerate(report.rules)}
    locator = _Locator(report.project_root, report.sources)
    kept = _keep_most_severe(report.findings)
    run: dict = {
        "tool": {"driver": {
            "name": "topolint",
            "semanticVersion": __version__,
            "informationUri": INFORMATION_URI,
            "rules": [_rule(rule) for rule in report.rules],
        }},
        "automationDetails": {"id": "topolint/"},
        "columnKind": "utf16CodeUnits",
        "originalUriBaseIds": {"%SRCROOT%": {"uri": _dir_uri(locator.root)}},
        "invocations": [{
            # An unreadable input or an internal error means the check was incomplete, even
            # though it reported.
            "executionSuccessful": not (report.unreadable or report.internal_errors),
            "workingDirectory": {"uri": _dir_uri(locator.cwd)},
            **({"toolExecutionNotifications": [_notification(e) for e in report.internal_errors]}
               if report.internal_errors else {}),
        }],
        "results": [_result(f, rule_index, locator) for f in kept],
    }
    dropped = len(report.findings) - len(kept)
    if dropped:
        run["properties"] = {
            "droppedResults": dropped,
            "note": f"{dropped} findings left out: GitHub accepts at most {MAX_RESULTS} results per run; "
                    "the most severe were kept. Use --format json for all of them.",
        }
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return dumps_indented(document) + "\n"
