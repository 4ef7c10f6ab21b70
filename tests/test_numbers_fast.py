"""The parse stage's fast paths in model/numbers.py answer exactly what the general paths answer."""

from __future__ import annotations

import random

import pytest

from topolint.model import numbers

EDGE_INTEGERS = [
    "0", "00", "007", "010", "08", "1", "9", "90", "400000", "18", "-1", "+1", " 1", "1 ", "\t7",
    "1.5", "12abc", "0x1f", "0X", "0x", "x1", "", " ", "-", "+", "٣", "²", "1²", "12٣", "1_000",
    "9" * 18, "9" * 19, "9" * 24, "9" * 25, "1" + "0" * 23, "0" * 30 + "5", "9223372036854775807",
    "9223372036854775808", "18446744073709551616", "-9223372036854775809", "inf", "nan", "1e3",
    "ff", "0b101", "0o17", "7\n", "5\x00",
]


@pytest.mark.parametrize("base", [0, 8, 10, 16])
@pytest.mark.parametrize("text", EDGE_INTEGERS)
def test_c_integer_fast_path_matches_the_general_scan(text, base):
    assert numbers._c_integer(text, base) == numbers._c_integer_scan(text, base)


@pytest.mark.parametrize("text", ["0", "90", "400000", "9" * 24])
def test_plain_decimals_take_the_fast_path(text):
    assert numbers._plain_decimal(text, 0)


@pytest.mark.parametrize("text", ["010", "00", "٣", "²", "9" * 25, "-1", " 1", "1.5", ""])
def test_other_texts_take_the_general_scan(text):
    assert not numbers._plain_decimal(text, 0)


def _strtol_prefix_by_the_scan(text, base):
    value, _ = numbers._c_integer_scan(text, base) if text else (None, 0)
    return None if value is None else max(numbers.LONG_MIN, min(numbers.LONG_MAX, value))


@pytest.mark.parametrize("base", [0, 8, 10, 16])
@pytest.mark.parametrize("text", EDGE_INTEGERS)
def test_strtol_prefix_fast_path_matches_the_general_scan(text, base):
    assert numbers.strtol_prefix(text, base) == _strtol_prefix_by_the_scan(text, base)


def test_cpu_set_of_ids_matches_of_single_id_pairs():
    rng = random.Random(7)
    cases = [[], [0], [5, 5], [3, 1, 2], [0, 2, 4], list(range(56)) + list(range(112, 168))]
    cases += [[rng.randrange(40) for _ in range(rng.randrange(30))] for _ in range(2000)]
    for ids in cases:
        assert numbers.CpuSet.of_ids(ids) == numbers.CpuSet.of((i, i) for i in ids), ids
