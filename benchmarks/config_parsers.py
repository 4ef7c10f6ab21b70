#!/usr/bin/env python3
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topolint.inputs.source import SourceFile  # noqa: E402
from topolint.parsers.dockerfile import parse_dockerfile  # noqa: E402
from topolint.parsers.envfile import parse_envfile  # noqa: E402
from topolint.parsers.shell import parse_shell  # noqa: E402


def shell_script(lines: int) -> str:
    return "".join(f"export NCCL_DEBUG=INFO\nif [ -n \"$X\" ]; then\n  NCCL_IB_HCA=mlx5_{i} srun train.py\nfi\n"
                   for i in range(lines // 4))


def quoted_value(lines: int) -> str:
    return 'export NCCL_DEBUG="' + "aaaaaaaaa\n" * lines + '"\n'


def env_file(lines: int) -> str:
    return "".join(f'NCCL_DEBUG="WARN" # comment {i}\n' for i in range(lines))


def dockerfile(lines: int) -> str:
    return "FROM base\nENV " + "".join(f"NCCL_P{i}=1 \\\n" for i in range(lines)) + "    NCCL_DEBUG=WARN\n"


def heredocs(lines: int) -> str:
    return "".join(f"cat > notes{i}.txt <<'EOF'\nline $x\nEOF\n: \"${{NCCL_DEBUG:=WARN}}\"\n" for i in range(lines // 4))


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
