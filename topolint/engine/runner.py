"""Run every rule over every node, then turn hits into findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from topolint.checks import load_check
from topolint.engine.finding import Finding, Hit, entity_fingerprint
from topolint.engine.rule import RuleDefinition, RuleError
from topolint.inputs.collect import Collection
from topolint.model.facts import Location
from topolint.model.nccl_version import NcclVersion
from topolint.model.node import NodeModel, file_entity


@dataclass
class RunOptions:
    nccl_version: NcclVersion
    gdr_level: str | None = None  # a configured NCCL_NET_GDR_LEVEL, when one is known


class CheckContext:
    """What a check sees: one node, the NCCL version assumed, and NCCL's graph on demand."""

    def __init__(self, node: NodeModel, options: RunOptions):
        self.node = node
        self.options = options
        self._systems: dict[int, Any] = {}

    @property
    def version(self) -> NcclVersion:
        return self.options.nccl_version

    def system(self, topology):
        from topolint.model.system import System  # networkx loads only when a rule needs a graph

        key = id(topology)
        if key not in self._systems:
            self._systems[key] = System(topology, self.version)
        return self._systems[key]


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _format(template: str, fields: dict[str, Any], rule: RuleDefinition) -> str:
    try:
        return template.format(**fields)
    except (KeyError, IndexError) as exc:
        raise RuleError(f"{rule.source}: template field {exc} not provided by check {rule.check}") from None


def to_finding(rule: RuleDefinition, node: str, hit: Hit) -> Finding:
    messages, fixes = rule.messages, rule.fixes
    fields = {**rule.parameters, **hit.fields}
    return Finding(
        code=rule.code,
        slug=rule.slug,
        category=rule.category,
        severity=hit.severity or rule.severity,
        message=_format(messages.get(hit.variant, messages["default"]), fields, rule),
        path=hit.location.path,
        line=hit.location.line,
        column=hit.location.column,
        node=node,
        entity=hit.entity,
        fix=_format(fixes.get(hit.variant, fixes["default"]), fields, rule),
        related=list(hit.related),
        evidence=list(hit.evidence),
        fingerprint=entity_fingerprint(rule.code, hit.entity, hit.variant),
    )


def input_findings(rules: dict[str, RuleDefinition], collection: Collection) -> list[Finding]:
    findings = []
    for problem in collection.problems:
        hit = Hit(
            entity=file_entity(problem.node, problem.path),
            location=Location.model_construct(path=problem.path, line=problem.line, column=problem.column),
            fields={"path": problem.path, "line": problem.line, "problem": problem.message},
        )
        findings.append(to_finding(rules[problem.code], problem.node, hit))
    return findings


def prepare(rules: list[RuleDefinition]) -> list[tuple]:
    """Each rule with its check module and typed parameters; RuleError names a bad definition."""
    from pydantic import ValidationError

    prepared = []
    for rule in rules:
        if rule.check == "inputs":
            continue
        try:
            module = load_check(rule.check)
            prepared.append((rule, module, module.Parameters(**rule.parameters)))
        except (ValueError, ValidationError, TypeError) as exc:
            raise RuleError(f"{rule.source}: {exc}") from None
    return prepared


def run(rules: list[RuleDefinition], collection: Collection, options: RunOptions) -> RunResult:
    result = RunResult(findings=input_findings({r.code: r for r in rules}, collection))
    prepared = prepare(rules)
    for node in collection.nodes:
        context = CheckContext(node, options)
        available = node.available()
        for rule, module, params in prepared:
            missing = [need for need in module.NEEDS if need not in available]
            if missing:
                result.notes.append(f"{rule.code} not run on node {node.name}: no {', '.join(missing)} input")
                continue
            for hit in module.check(context, params):
                result.findings.append(to_finding(rule, node.name, hit))
    result.findings.sort(key=Finding.sort_key)
    return result
