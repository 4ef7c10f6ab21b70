"""Every parser is linear in its input (issue 7, item 8): work (Python function calls, counted
with a profiler hook, so the count is deterministic) and peak memory (tracemalloc) at 1x, 4x and
16x the input size grow no faster than the size, with some slack. Time ratios live in
benchmarks/parsers.py, not here.

Inputs grow in the way that made the landed version super-linear (affinity mask words, YAML
list items, launcher settings, sibling XML elements); every other registered format grows by
repeating its sample, so a parser added later is measured as soon as a sample exists.
"""

from __future__ import annotations

import sys
import tracemalloc

import pytest
from fuzzing import samples

from topolint.inputs.source import InputError, SourceFile
from topolint.parsers.registry import parse

SCALES = (1, 4, 16)
SLACK = 1.6  # allowed growth beyond linear between 1x and 16x (allocator and list growth)


def _topology(n: int) -> str:
    cpus = "".join(
        f'  <cpu numaid="{i}" affinity="{",".join(["ffffffff"] * 8)}" arch="x86_64">\n'
        f'    <pci busid="{i % 256:04x}:{i // 256 % 256:02x}:00.0" class="0x030200" '
        f'link_speed="32.0 GT/s PCIe" link_width="16">\n'
        f'      <gpu dev="{i}" sm="90" rank="{i}" gdr="1"/>\n    </pci>\n  </cpu>\n'
        for i in range(n))
    return f'<system version="1">\n{cpus}</system>\n'


def _mask(n: int) -> str:
    words = ",".join(["0000ffff"] * n)
    return f'<system version="1">\n  <cpu numaid="0" affinity="{words}" arch="x86_64"/>\n</system>\n'


def _siblings(n: int) -> str:
    return '<system version="1">\n' + '  <cpu numaid="0" arch="x86_64"/>\n' * n + "</system>\n"


def _pod(n: int) -> str:
    head = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n"
            "    image: x\n    env:\n")
    return head + "".join(f"    - name: NCCL_X{i}\n      value: v{i}\n" for i in range(n))


def _launcher(n: int) -> str:
    return "import os\n" + "".join(f'os.environ["NCCL_X{i}"] = "v{i}"\n' for i in range(n))


def _matrix(n: int) -> str:
    labels = [f"GPU{i}" for i in range(n)]
    head = "\t" + "\t".join(labels) + "\tCPU Affinity\tNUMA Affinity\n"
    rows = "".join(label + "\t" + "\t".join("X" if i == j else "NV12" for j in range(n)) + "\t0-47\t0\n"
                   for i, label in enumerate(labels))
    return head + rows


def _graph(n: int) -> str:
    channels = "".join(f'    <channel>\n      <net dev="{i % 8}"/>\n      <gpu dev="{i % 8}"/>\n'
                       f'      <gpu dev="{(i + 1) % 8}"/>\n      <net dev="{i % 8}"/>\n    </channel>\n'
                       for i in range(n))
    return (f'<graphs version="1">\n  <graph id="0" pattern="4" crossnic="0" nchannels="{n}" speedintra="20" '
            f'speedinter="20" latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="0">\n{channels}'
            "  </graph>\n</graphs>\n")


def _nvlink(n: int) -> str:
    return "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08x}-0000-0000-0000-000000000000)\n"
                   + "".join(f"\t Link {link}: 26.562 GB/s\n" for link in range(18)) for i in range(n))


# (format, generator, base count): the generator's input at 1x has about this many units.
GROWN = [
    ("nccl-topo-xml", _topology, 40),
    ("nccl-topo-xml", _mask, 500),
    ("nccl-topo-xml", _siblings, 400),
    ("config-yaml", _pod, 150),
    ("python", _launcher, 150),
    ("nvidia-smi-topo", _matrix, 8),  # cells grow with the square of n, and so does the text
    ("nccl-graph-xml", _graph, 100),
    ("nvidia-smi-nvlink", _nvlink, 8),
]


def _repeated(fmt: str):
    sample = samples()[fmt][0].read_text(encoding="utf-8")
    copies = max(1, 4096 // max(len(sample), 1))
    return lambda n: sample * (copies * n)


def _cost(fmt: str, text: str) -> tuple[int, int]:
    """(function calls, peak bytes allocated) of parsing ``text``."""
    source = SourceFile(path="input", text=text)
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    tracemalloc.start()
    sys.setprofile(count)
    try:
        parse(fmt, source)
    finally:
        sys.setprofile(None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return calls, peak


def _assert_linear(fmt: str, make, base: int) -> None:
    try:
        _cost(fmt, make(base))  # warm: imports and lazy tables are not the parser's cost
        costs = {scale: _cost(fmt, make(base * scale)) for scale in SCALES}
    except InputError as exc:
        pytest.skip(f"{fmt}: the grown sample is refused ({exc.message}); measure it in benchmarks/parsers.py")
    sizes = {scale: len(make(base * scale)) for scale in SCALES}
    for scale in SCALES[1:]:
        growth = sizes[scale] / sizes[1]
        calls, peak = costs[scale]
        assert calls <= costs[1][0] * growth * SLACK, (fmt, scale, costs)
        assert peak <= costs[1][1] * growth * SLACK + 256 * 1024, (fmt, scale, costs)


@pytest.mark.parametrize(("fmt", "make", "base"), GROWN, ids=[f"{f}-{g.__name__}" for f, g, _ in GROWN])
def test_grown_inputs_cost_linear_work_and_memory(fmt, make, base):
    _assert_linear(fmt, make, base)


OWN = {fmt for fmt, _, _ in GROWN}
# Parsers issue 12 rewrites (daily2's): their linearity is measured there.
ELSEWHERE = {"shell", "envfile", "nccl-conf", "deepspeed-env", "dockerfile"}


@pytest.mark.parametrize("fmt", sorted(set(samples()) - OWN - ELSEWHERE))
def test_repeated_samples_cost_linear_work_and_memory(fmt):
    _assert_linear(fmt, _repeated(fmt), 1)
