"""Dockerfiles: ``ENV`` in both forms (``ENV A=1 B="x y"`` and legacy ``ENV A 1``), per stage.

Instructions are joined at the escape character (``\\`` or the ``# escape=`` directive) and
split with ``shlex``. Each ``FROM`` starts a stage; settings are scoped ``stage:NAME`` (or
``stage:N`` for an unnamed stage). ``ARG`` is build-time only and not read.
"""

from __future__ import annotations

import re
import shlex

from topolint.inputs.source import SourceFile
from topolint.model.config import ConfigFile, EnvSetting, SkippedLine
from topolint.parsers._common import ASSIGNMENT, Cursor, shell_value, wanted

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)(\s+|$)")


def parse_dockerfile(source: SourceFile) -> ConfigFile:
    config = ConfigFile(path=source.path, format="dockerfile")
    lines = source.text.splitlines()
    escape = "\\"
    for text in lines[:5]:
        match = re.match(r"^#\s*escape\s*=\s*(\S)", text)
        if match:
            escape = match.group(1)
    stage, stages = "stage:0", 0
    number = 0
    while number < len(lines):
        first = number + 1
        text = lines[number]
        if not text.strip() or text.lstrip().startswith("#"):
            number += 1
            continue
        while text.rstrip().endswith(escape) and number + 1 < len(lines):
            number += 1
            following = lines[number]
            if following.lstrip().startswith("#"):
                continue
            text = text.rstrip()[:-1] + " " + following
        number += 1
        match = _INSTRUCTION.match(text)
        if not match:
            continue
        keyword = match.group(1).upper()
        body = text[match.end():]
        if keyword == "FROM":
            words = body.split()
            stages += 1
            name = words[words.index("AS") + 1] if "AS" in [w.upper() for w in words] and len(words) > 2 else None
            if name is None:
                lowered = [w.lower() for w in words]
                name = words[lowered.index("as") + 1] if "as" in lowered and lowered.index("as") + 1 < len(words) else None
            stage = f"stage:{name or stages - 1}"
            config.scopes[stage] = "image"
        elif keyword == "ENV":
            _env(config, body, Cursor(lines, first, number), stage, source.path, first)
    return config


def _env(config: ConfigFile, body: str, cursor: Cursor, stage: str, path: str, first: int) -> None:
    try:
        words = shlex.split(body, posix=True)
    except ValueError as exc:
        config.skipped.append(SkippedLine(first, f"cannot split the ENV instruction ({exc})"))
        return
    if not words:
        return
    if ASSIGNMENT.match(words[0]):
        pairs = [ASSIGNMENT.match(w).groups() for w in words if ASSIGNMENT.match(w)]
    else:  # legacy form: ENV NAME value with spaces
        pairs = [(words[0], body.strip()[len(words[0]):].strip())]
        value = pairs[0][1]
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            pairs = [(words[0], value[1:-1])]
    for name, raw in pairs:
        if not wanted(name):
            continue
        line, column = cursor.find(name)
        value, default = shell_value(name, raw)
        config.settings.append(EnvSetting(name, value, config.loc(line, column), stage, "dockerfile-env", path,
                                          raw=f"{name}={raw}", default_only=default))
