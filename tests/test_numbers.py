"""The shared number helpers: C semantics where NCCL reads the value, strict elsewhere, bounded."""

import math

from topolint.model.numbers import (
    MAX_CPUS, CpuSet, cpulist, cpumask, decimal, hex_int, pci_address, strtof, strtol, strtoull,
)


def test_strtol_base_zero_as_nccl_reads_attributes():
    # NCCL src/graph/xml.h xmlGetAttrInt: strtol(str, NULL, 0)
    assert strtol("010") == (8, True)
    assert strtol("0x1f") == (31, True)
    assert strtol("08") == (0, False)  # octal prefix, then a junk digit
    assert strtol("  -12abc") == (-12, False)
    assert strtol("abc") == (0, False)
    assert strtol("") == (0, False)


def test_strtol_saturates_instead_of_building_huge_ints():
    assert strtol("9" * 5000) == (2**63 - 1, True)
    assert strtol("-" + "9" * 5000) == (-(2**63), True)
    assert strtoull("9" * 5000) == (2**64 - 1, True)
    assert strtoull("-1") == (2**64 - 1, True)


def test_strtof_accepts_what_c_accepts_in_float32():
    assert strtof("inf") == (math.inf, True)
    assert math.isnan(strtof("nan")[0])
    assert strtof("1e999") == (math.inf, True)
    assert strtof("0x1p3") == (8.0, True)
    assert strtof("1.5x") == (1.5, False)
    assert strtof("0.1")[0] != 0.1  # float32 rounding, as NCCL's float fields hold it
    assert strtof("3.4e39") == (math.inf, True)


def test_decimal_and_hex_reject_what_tools_never_print():
    assert decimal("²") is None
    assert decimal("1" * 400) is None
    assert decimal(" 42 ") == 42
    assert hex_int("0x10de") == 0x10DE
    assert hex_int("10DE") == 0x10DE
    assert hex_int("zz") is None


def test_cpulist_is_bounded_and_compact():
    assert cpulist("0-47,96-143") == CpuSet(((0, 47), (96, 143)))
    assert len(cpulist("0-47,96-143")) == 96
    assert cpulist("0-100000000") is None
    assert cpulist(f"0-{MAX_CPUS - 1}") is not None
    assert cpulist("5-3") is None
    assert cpulist("0,1,2,3") == CpuSet(((0, 3),))
    assert cpulist("") == CpuSet()


def test_cpumask_words_most_significant_first():
    assert cpumask("ffffffff,00000000").text() == "32-63"
    assert cpumask("0000ffff,ffffffff").text() == "0-47"
    assert cpumask("00000000,0000ffff") & cpumask("0000ffff,ffffffff") == CpuSet(((0, 15),))
    assert cpumask("ff,zz") is None
    assert cpumask(",".join(["ffffffff"] * (MAX_CPUS // 32 + 1))) is None


def test_cpumask_is_linear_in_text():
    words = ",".join(["ffffffff"] * (MAX_CPUS // 32))
    assert len(cpumask(words)) == MAX_CPUS


def test_pci_addresses_normalise_and_allow_vmd_domains():
    assert pci_address("17:00.0") == "0000:17:00.0"
    assert pci_address("0000:9A:00.1") == "0000:9a:00.1"
    assert pci_address("10000:00:00.0") == "10000:00:00.0"
    assert pci_address("0000:17:20.0") is None  # device numbers stop at 0x1f
    assert pci_address("garbage") is None


def test_host_fact_helpers():
    from topolint.model.numbers import cpu_ids, decimal_fraction, hwloc_bitmap

    assert cpu_ids("0 1 2 3 96 97").text() == "0-3,96-97"  # numactl -H
    assert cpu_ids("") == CpuSet() and cpu_ids("0 x") is None and cpu_ids(str(MAX_CPUS)) is None
    assert decimal_fraction("2.5") == 2.5 and decimal_fraction("16") == 16.0
    assert decimal_fraction("inf") is None and decimal_fraction("1e9") is None and decimal_fraction("-2") is None
    assert hwloc_bitmap("0xffffffff,0x00000001").text() == "0,32-63"
    assert hwloc_bitmap("00000001") is None  # hwloc always writes 0x
