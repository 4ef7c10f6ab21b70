"""`.env`, `.deepspeed_env` and `nccl.conf`-style files: ``VAR=value`` lines, ``#`` comments.

docker/compose `.env` files take an optional ``export`` prefix and quotes; NCCL's own
``nccl.conf`` (``NCCL_CONF_FILE``, ``~/.nccl.conf``, ``/etc/nccl.conf``) and DeepSpeed's
``.deepspeed_env`` take the value as written.
"""

from __future__ import annotations

import re

from topolint.inputs.source import SourceFile
from topolint.model.config import ConfigFile, EnvSetting

_LINE = re.compile(r"^(\s*)(export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if " #" in value:  # an inline comment after an unquoted value
        value = value.split(" #", 1)[0].rstrip()
    return value


def parse_envfile(source: SourceFile, fmt: str = "envfile") -> ConfigFile:
    config = ConfigFile(path=source.path, format=fmt)
    quoted = fmt == "envfile"
    for number, text in enumerate(source.text.splitlines(), 1):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(text)
        if not match:
            config.skipped.append(_skip(number, "not a VAR=value line"))
            continue
        indent, export, name, raw = match.groups()
        if not name.startswith("NCCL_"):
            continue
        value = _unquote(raw) if quoted else raw.strip()
        column = len(indent) + len(export or "") + 1
        dynamic = quoted and "$" in value and not raw.strip().startswith("'")
        default = None
        if dynamic:
            default = _default_of(value, name)
        config.settings.append(EnvSetting(
            name=name, value=default if dynamic else value, loc=config.loc(number, column), scope="file",
            source=fmt, path=source.path, raw=text.strip(), default_only=default is not None))
    return config


def _default_of(value: str, name: str) -> str | None:
    match = re.fullmatch(r"\$\{" + re.escape(name) + r":?-([^}$]*)\}", value)
    return match.group(1) if match else None


def _skip(line: int, reason: str):
    from topolint.model.config import SkippedLine

    return SkippedLine(line, reason)


def parse_nccl_conf(source: SourceFile) -> ConfigFile:
    return parse_envfile(source, "nccl-conf")


def parse_deepspeed_env(source: SourceFile) -> ConfigFile:
    return parse_envfile(source, "deepspeed-env")
