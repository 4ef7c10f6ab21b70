"""GitHub Actions workflows (``.github/workflows/*.yml``) and composite actions (``action.yml``).

Self-hosted GPU runners run NCCL jobs from workflows, so their environment is read as the runner
builds it (docs.github.com, "Variables" and "Workflow syntax"):

- ``env:`` at workflow, job and step level, each a scope nested in the one above
  (``file``, ``file/job:ID``, ``file/job:ID/step@LINE``): the step's value wins over the job's,
  the job's over the workflow's, and none of them conflicts with the others;
- a job's ``container.env`` (its steps run in that container: the job's scope) and each
  ``services.NAME.env`` (a container of its own, ``file/job:ID/service:NAME``);
- ``run:`` scripts whose shell is bash or sh (the default on Linux runners; ``shell:``,
  ``defaults.run.shell``), read as scripts in their step's scope;
- ``echo NAME=V >> $GITHUB_ENV`` (and ``"$GITHUB_ENV"``, ``${GITHUB_ENV}``, ``tee -a``) in a run
  script: an environment variable for the job's later steps, kept in the job's scope;
- a value with ``${{ }}`` is computed when the workflow runs: not a literal.

Composite actions have ``runs.steps`` with the same step keys (``shell`` is required there).
"""

from __future__ import annotations

import re

from topolint.inputs.source import SourceFile
from topolint.model.config import ConfigFile, EnvSetting
from topolint.parsers._common import wanted
from topolint.parsers._lines import TextLines
from topolint.parsers._yaml import (compose_documents, each, get, is_map, is_seq, items, scalar, where,
                                    written_value)

_SHELLS = {"bash", "sh"}
_GITHUB_ENV = re.compile(
    r"""^(?P<indent>\s*)echo\s+(?P<quote>['"]?)(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*?)(?P=quote)"""
    r"""\s*(?:>>\s*|\|\s*tee\s+-a\s+)"?\$\{?GITHUB_ENV\}?"?\s*$""")


def is_workflow(doc) -> bool:
    """A workflow (``jobs:`` with ``on:``) or a composite action (``runs.steps``)."""
    if not is_map(doc):
        return False
    if is_map(get(doc, "jobs")) and get(doc, "on") is not None:  # YAML 1.1 reads the key `on` as true: the node keeps "on"
        return True
    return is_seq(get(get(doc, "runs"), "steps"))


def parse_workflow(source: SourceFile) -> ConfigFile:
    return from_documents(source, compose_documents(source))


def from_documents(source: SourceFile, documents: list) -> ConfigFile:
    config = ConfigFile(path=source.path, format="github-actions")
    lines = TextLines(source.text)
    for doc in documents:
        if is_workflow(doc):
            _workflow(config, source, lines, doc)
    return config


def _workflow(config: ConfigFile, source: SourceFile, lines: list[str], doc) -> None:
    _env(config, get(doc, "env"), "file", "gha-env")
    shell = scalar(get(get(get(doc, "defaults"), "run"), "shell"))
    for key_node, job in items(get(doc, "jobs")):
        scope = f"file/job:{key_node.value}"
        _env(config, get(job, "env"), scope, "gha-env")
        _env(config, get(get(job, "container"), "env"), scope, "gha-container-env")
        for name_node, service in items(get(job, "services")):
            _env(config, get(service, "env"), f"{scope}/service:{name_node.value}", "gha-service-env")
        job_shell = scalar(get(get(get(job, "defaults"), "run"), "shell")) or shell
        _steps(config, source, lines, get(job, "steps"), scope, job_shell)
    _steps(config, source, lines, get(get(doc, "runs"), "steps"), "file", None)


def _steps(config: ConfigFile, source: SourceFile, lines: list[str], steps, scope: str, shell: str | None) -> None:
    for step in each(steps):
        if not is_map(step):
            continue
        step_scope = f"{scope}/step@{where(step)[0]}"
        _env(config, get(step, "env"), step_scope, "gha-env")
        run = get(step, "run")
        if scalar(run) is None:
            continue
        step_shell = scalar(get(step, "shell")) or shell or "bash"
        if step_shell.split()[0].rsplit("/", 1)[-1] not in _SHELLS:
            config.skipped.append(_skipped(config, run, f"run script in shell {step_shell!r}: not analysed"))
            continue
        _run_script(config, source, lines, run, step_scope, scope)


def _run_script(config: ConfigFile, source: SourceFile, lines: list[str], run, step_scope: str,
                job_scope: str) -> None:
    from topolint.parsers.shell import parse_shell_into

    text = scalar(run)
    literal_block = run.style == "|"  # the script's lines are the file's, from the line after `|`
    first = run.start_mark.line + (2 if literal_block else 1)
    if literal_block or run.start_mark.line == run.end_mark.line:
        parse_shell_into(config, source, lines, text.split("\n"), first, step_scope)
    else:
        start, end = run.start_mark.line + 1, run.end_mark.line + 1
        parse_shell_into(config, source, lines, [text], start, step_scope, span=(start, end))
        return
    if "GITHUB_ENV" not in text:
        return
    for offset, line in enumerate(text.split("\n")):
        match = _GITHUB_ENV.match(line)
        if not match or not wanted(match.group("name")):
            continue
        number = first + offset
        name, value = match.group("name"), match.group("value")
        column = _column(lines, number, name, match)
        literal = None if "${{" in value or "$" in value or "`" in value else value
        config.settings.append(EnvSetting(name, literal, config.loc(number, column), job_scope, "github-env",
                                          config.path, raw=f"{name}={value}"))


def _column(lines: list[str], number: int, name: str, match) -> int:
    """The column of ``name`` on file line ``number`` (the run script's lines keep their text)."""
    if 1 <= number <= len(lines):
        at = lines[number - 1].find(f"{name}=")
        if at >= 0:
            return at + 1
    return len(match.group("indent")) + 1


def _env(config: ConfigFile, env, scope: str, how: str) -> None:
    for name_node, value in items(env):
        name = name_node.value
        if not isinstance(name, str) or not wanted(name):
            continue
        text = scalar(value)
        literal = None if text is None or "${{" in text else text
        line, column = where(name_node)
        config.settings.append(EnvSetting(name, literal, config.loc(line, column), scope, how, config.path,
                                          raw=f"{name}: {text if text is not None else ''}",
                                          **(written_value(config, value) if literal is not None else {})))


def _skipped(config: ConfigFile, node, reason: str):
    from topolint.model.config import SkippedLine

    return SkippedLine(where(node)[0], reason)
