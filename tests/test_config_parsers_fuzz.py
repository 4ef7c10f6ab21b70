"""Shell, .env and Dockerfile parsers on mangled input: no exception but InputError, every fact
on a line the file has, control characters kept exact. Deterministic (a fixed seed)."""

from __future__ import annotations

import random

import pytest
from conftest import FIXTURES

from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.dockerfile import parse_dockerfile
from topolint.parsers.envfile import parse_docker_env_file, parse_envfile, parse_nccl_conf
from topolint.parsers.shell import parse_shell

PARSERS = {"shell": parse_shell, "envfile": parse_envfile, "docker-env-file": parse_docker_env_file,
           "nccl-conf": parse_nccl_conf, "dockerfile": parse_dockerfile}
SEEDS = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file() and p.suffix in (".sh", ".sbatch", ".env", ".conf", "")
         and p.stat().st_size < 20_000 and "snapshots" not in p.parts]
PIECES = ["'", '"', "$(", "${", "`", "\\", "\n", "\r\n", "<<EOF", "<<-'X'", "#", "=", ";", "&&", "|", "(", ")",
          "}", "$'", "\x00", "\x01", "\x0c", "\u2028", "NCCL_DEBUG=", "export ", "ENV ", "RUN <<E\n", "source ./",
          "${NCCL_X:=", ": \"${", "\t", " ", "EOF\n"]


def _mangle(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 12)):
        at = rng.randint(0, len(chars))
        if chars and rng.random() < 0.3:
            del chars[min(at, len(chars) - 1)]
        else:
            chars.insert(at, rng.choice(PIECES))
    return "".join(chars)


@pytest.mark.parametrize("fmt", sorted(PARSERS))
def test_mangled_inputs_never_raise_and_stay_in_the_file(fmt):
    rng = random.Random(f"daily2-{fmt}")
    seeds = [p.read_text(encoding="utf-8", errors="replace") for p in SEEDS] or ["export NCCL_DEBUG=INFO\n"]
    for case in range(300):
        text = _mangle(rng.choice(seeds), rng)
        try:
            config = PARSERS[fmt](SourceFile("fuzz", text))
        except InputError:
            continue
        lines = text.count("\n") + 1
        for setting in config.settings:
            assert 1 <= setting.loc.line <= lines, (case, text)
        for skipped in config.skipped:
            assert 1 <= skipped.line <= lines, (case, text)


def test_control_characters_are_kept_in_values():
    for fmt in ("shell", "envfile", "nccl-conf", "docker-env-file"):
        prefix = "export " if fmt == "shell" else ""  # a plain shell assignment is no setting (not exported)
        config = PARSERS[fmt](SourceFile("x", prefix + "NCCL_DEBUG=WA\x01RN\x1b\n"))
        assert [s.value for s in config.settings] == ["WA\x01RN\x1b"], fmt
