"""Linearity of the shell, .env and Dockerfile parsers: each parser on a generated input of N
and of 5N lines (or bytes), in-process, best of ``--repeat`` runs. A linear parser prints a
ratio near 5; a quadratic one near 25. The last line is the worst ratio.

    python benchmarks/config_parsers.py [--lines 20000] [--repeat 3]

Inputs: a shell script of exports, if-blocks and per-command settings; a shell script that is
one double-quoted value over many lines (``--lines`` * 10 bytes); a compose ``.env`` of quoted
values with trailing comments; a Dockerfile whose one ENV instruction is continued over every
line; a shell script of nested heredocs and sourced-looking lines.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import growers  # noqa: E402  (the inputs tests/test_linear_cost.py grows)

from topolint.inputs.source import SourceFile  # noqa: E402
from topolint.parsers.dockerfile import parse_dockerfile  # noqa: E402
from topolint.parsers.envfile import parse_envfile  # noqa: E402
from topolint.parsers.shell import parse_shell  # noqa: E402


def shell_script(lines: int) -> str:
    return "".join(growers.shell_block(i) for i in range(lines // 4))


def env_file(lines: int) -> str:
    return "".join(growers.env_line(i) for i in range(lines))


def heredocs(lines: int) -> str:
    return "".join(growers.heredoc_block(i) for i in range(lines // 4))


quoted_value, dockerfile = growers.quoted_value, growers.dockerfile_env


CASES = [("shell script", parse_shell, shell_script), ("shell quoted value", parse_shell, quoted_value),
         (".env (compose)", parse_envfile, env_file), ("Dockerfile ENV", parse_dockerfile, dockerfile),
         ("shell heredocs", parse_shell, heredocs)]


def seconds(parser, text: str, repeat: int) -> float:
    """Best wall time; the cycle collector is off, as ``topolint`` runs (cli.main)."""
    gc.collect()
    gc.disable()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        parser(SourceFile(path="bench", text=text))
        best = min(best, time.perf_counter() - start)
    gc.enable()
    return best


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--lines", type=int, default=20_000)
    arguments.add_argument("--repeat", type=int, default=3)
    options = arguments.parse_args()
    worst = 0.0
    for name, parser, make in CASES:
        small = seconds(parser, make(options.lines), options.repeat)
        large = seconds(parser, make(options.lines * 5), options.repeat)
        ratio = large / small if small else 0.0
        worst = max(worst, ratio)
        print(f"{name}: {options.lines} lines {small * 1000:.0f} ms, {options.lines * 5} lines "
              f"{large * 1000:.0f} ms, ratio {ratio:.1f}")
    print(f"{worst:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
