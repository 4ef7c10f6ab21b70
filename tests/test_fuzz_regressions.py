"""Crashes the fuzz suite found (tests/test_fuzz.py), each with the sample, the hypothesis seed
(reproduce_failure blob, hypothesis 6.155) and the mutation, replayed through the same
mutation code, never a copy of the sample."""

from __future__ import annotations

import pytest
from conftest import FIXTURES
from fuzzing import mutate

from topolint.inputs.source import InputError, SourceFile, decode_input
from topolint.parsers.registry import parse

CRASHES = [
    # nvidia_smi_nvlink: int() of a 5,000-digit GPU index (ValueError, Python's digit limit).
    ("nvidia-smi-nvlink", "rules/NVL002/bad_nvlink_inactive.txt", [("number", 0, 0)], "AEEAAUECQQBBAAA="),
    # nvidia_smi_nvlink: the same in a Link number.
    ("nvidia-smi-nvlink", "rules/NVL002/bad_nvlink_inactive.txt", [("number", 9, 0)], "AEEAAUECQQlBAAA="),
]


@pytest.mark.parametrize(("fmt", "sample", "mutations", "seed"), CRASHES, ids=[f"{c[0]}-{c[3]}" for c in CRASHES])
def test_fuzz_crash_stays_fixed(fmt, sample, mutations, seed):
    data = (FIXTURES / sample).read_bytes()
    for name, position, choice in mutations:
        data = mutate(data, name, position, choice)
    try:
        parse(fmt, SourceFile(path=sample, text=decode_input(sample, data)))
    except InputError:
        pass


def test_a_matrix_row_with_a_huge_gpu_number_is_tl001():
    text = (FIXTURES / "rules" / "NUMA005" / "bad_matrix_numa_column.txt").read_text(encoding="utf-8")
    with pytest.raises(InputError, match="not a GPU number"):
        parse("nvidia-smi-topo", SourceFile(path="m.txt", text=text.replace("\nGPU7 ", "\nGPU" + "7" * 5000 + " ")))
