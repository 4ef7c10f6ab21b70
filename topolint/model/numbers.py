"""The one place numbers, ranges and masks from inputs are read.

Every parser and rule reads input numbers through these helpers, never with bare ``int()`` or
``float()``: inputs are untrusted (a pasted dump, a hand-edited manifest), so each helper is
linear in its input, bounded in what it returns, and answers None instead of raising.

Two families:
- ``decimal``/``hex_int``/``printed_float``: what a tool printed (lspci, ibstat, a matrix cell,
  an nccl-tests row). Only ASCII digits;
  superscripts, ``inf``, ``nan`` and digit strings longer than any real value are None.
- ``strtol``/``strtoull``/``strtof``: what NCCL itself reads from an XML attribute or an env
  variable, with C's semantics (NCCL calls ``strtol(s, NULL, 0)``, ``strtoull(s, NULL, 0)`` and
  ``strtof(s, NULL)``; src/graph/xml.h ``xmlGetAttrInt``/``xmlGetAttrLong``/``xmlGetAttrFloat``).
  They return what C returns plus whether the whole text was consumed, so a caller can say
  "NCCL reads 010 as 8" (TOPO002) rather than guess.

CPU sets are kept as sorted, merged intervals (``CpuSet``), never expanded element by element,
and bounded by ``MAX_CPUS``: a range such as ``0-100000000`` is rejected, not materialised.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from dataclasses import dataclass

# Linux's NR_CPUS tops out at 8192 on every distribution kernel; leave headroom, but stay small
# enough that a mask's word count (MAX_CPUS / 32) is a few thousand at most.
MAX_CPUS = 65536
MASK_WORDS = MAX_CPUS // 32
# Longest digit string any real value needs (a 64-bit value is 20 decimal digits, 16 hex, 22
# octal); longer ones are rejected before Python's int() sees them (its 4,300-digit limit).
MAX_DIGITS = 24
PCI_DOMAIN_MAX = 0xFFFFFFFF  # Intel VMD uses 32-bit domains (10000:00:00.0)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
ULLONG_MAX = 2**64 - 1

_DECIMAL = re.compile(r"[+-]?[0-9]{1,%d}" % MAX_DIGITS)
_HEX = re.compile(r"(?:0[xX])?([0-9a-fA-F]{1,%d})" % MAX_DIGITS)
_C_SPACE = " \t\n\v\f\r"
_C_INT = re.compile(r"([+-]?)(0[xX](?=[0-9a-fA-F]))?([0-9a-zA-Z]*)")
MEMO_TEXT = 256  # texts up to this length have their answers remembered (remembered())
MEMO_ENTRIES = 4096


def remembered(read):
    """``read`` with its answers to short texts remembered in a bounded table. The helpers are pure
    and their answers immutable (ints, tuples, CpuSet); a large run asks the same few texts over and
    over (every node's ``16.0 GT/s PCIe``, its CPU masks, its NUMA ids). Long texts are read
    afresh, and a full table starts over, so it never holds more than MEMO_ENTRIES texts of at most
    MEMO_TEXT characters."""
    table: dict = {}

    @functools.wraps(read)
    def answer(text, *args, **options):
        if options:  # keyword arguments: read afresh (no caller uses them today)
            return read(text, *args, **options)
        key = (text, *args) if args else text
        try:
            return table[key]
        except KeyError:
            value = read(text, *args)
            if text is None or (type(text) is str and len(text) <= MEMO_TEXT):
                if len(table) >= MEMO_ENTRIES:
                    table.clear()
                table[key] = value
            return value

    answer.cache = table  # for tests
    return answer


@remembered
def decimal(text: str | None) -> int | None:
    """A decimal integer as a tool prints it (surrounding blanks allowed); None otherwise."""
    if text is None:
        return None
    text = text.strip()
    return int(text) if _DECIMAL.fullmatch(text) else None


_DECIMAL_FRACTION = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9})?")


def decimal_fraction(text: str | None) -> float | None:
    """A plain decimal as a tool prints a rate (``2.5`` in lspci's ``2.5GT/s``, ``16``); no sign,
    exponent, ``inf`` or ``nan``; None otherwise."""
    if text is None:
        return None
    text = text.strip()
    return float(text) if _DECIMAL_FRACTION.fullmatch(text) else None


@remembered
def hex_int(text: str | None) -> int | None:
    """A hexadecimal integer with or without ``0x`` (PCI ids, GUIDs, cpumask words)."""
    if text is None:
        return None
    match = _HEX.fullmatch(text.strip())
    return int(match.group(1), 16) if match else None


def _plain_decimal(text: str, base: int) -> bool:
    """Whether ``text`` is digits only, with no leading zero (octal in base 0) and at most
    MAX_DIGITS long (the general scan reads those with ``int`` too): the common attribute ("0",
    "90", "400000"). tests/test_numbers_fast.py holds the two paths equal."""
    return (base in (0, 10) and len(text) <= MAX_DIGITS and text.isdigit() and text.isascii()
            and (text[0] != "0" or len(text) == 1))


def _c_integer(text: str, base: int) -> tuple[int | None, int]:
    """(value, end) of C's strtol-family scan; value None when no digit was read."""
    if _plain_decimal(text, base):
        return int(text), len(text)
    return _c_integer_scan(text, base)


@remembered
def _c_integer_scan(text: str, base: int) -> tuple[int | None, int]:
    """The general scan: blanks, sign, ``0x`` and octal prefixes, digits of ``base``."""
    start = len(text) - len(text.lstrip(_C_SPACE))
    match = _C_INT.match(text, start)
    sign, prefix, digits = match.groups()
    if prefix and base not in (0, 16):
        prefix, digits = None, "0"  # "0x" in base 10 or 8 is a 0 followed by junk
    radix = base or (16 if prefix else 8 if digits.startswith("0") else 10)
    valid = "0123456789abcdefghijklmnopqrstuvwxyz"[:radix]
    length = 0
    for char in digits:
        if char.lower() not in valid:
            break
        length += 1
    if length == 0:
        return None, 0
    end = match.start(3) + length
    digits = digits[:length].lstrip("0") or "0"
    # Beyond 64 bits C saturates; no need to build a huge int to know that.
    value = int(digits, radix) if len(digits) <= MAX_DIGITS else ULLONG_MAX + 1
    return (-value if sign == "-" else value), end


@remembered
def strtol(text: str | None, base: int = 0) -> tuple[int, bool]:
    """C ``strtol(text, &end, base)`` as NCCL calls it: (value, whole text consumed).

    Base 0 reads ``0x1f`` as hex and ``010`` as octal 8; out-of-range values saturate at
    LONG_MIN/LONG_MAX as C does (errno ERANGE); nothing readable gives (0, False).
    """
    if not text:
        return 0, False
    value, end = _c_integer(text, base)
    if value is None:
        return 0, False
    value = max(LONG_MIN, min(LONG_MAX, value))
    return value, end == len(text)


@remembered
def strtol_prefix(text: str | None, base: int = 0) -> int | None:
    """What C ``strtol`` reads from the start of ``text`` (``12abc`` is 12, saturating), or None
    when no digit can be read at all (where C would return 0 without a sign of failure)."""
    if not text:
        return None
    if _plain_decimal(text, base):  # at most 24 digits: within LONG_MAX's saturation below
        value = int(text)
        return value if value <= LONG_MAX else LONG_MAX
    value, _ = _c_integer_scan(text, base)
    return None if value is None else max(LONG_MIN, min(LONG_MAX, value))


def c_int(value: int) -> int:
    """``value`` stored in a C ``int``, as NCCL's ``xmlGetAttrInt`` stores ``strtol``'s long
    (src/graph/xml.h): gcc keeps the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


@remembered
def strtol_clean(text: str | None) -> tuple[int, bool]:
    """``strtol(text, NULL, 0)`` and whether only blanks follow the number: trailing blanks do not
    change what C reads, so they are not a misreading."""
    return strtol((text or "").rstrip(_C_SPACE))


@remembered
def strtoull(text: str | None, base: int = 0) -> tuple[int, bool]:
    """C ``strtoull``: like strtol, but a leading ``-`` negates modulo 2**64 and overflow is
    ULLONG_MAX."""
    if not text:
        return 0, False
    value, end = _c_integer(text, base)
    if value is None:
        return 0, False
    if abs(value) > ULLONG_MAX:
        value = ULLONG_MAX
    elif value < 0:
        value = (ULLONG_MAX + 1 + value) & ULLONG_MAX
    return value, end == len(text)


def hwloc_u64(text: str) -> int | None:
    """One word of an hwloc ``u64values`` list as its importer reads it (hwloc/topology-xml.c:
    ``strtoull(tmp, &next, 0)``, so ``0x10`` and octal ``010`` too); None for a word strtoull does
    not consume whole or a negative one. hwloc writes ``%llu``: plain digits take the short path."""
    if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1) and len(text) <= MAX_DIGITS:
        return min(int(text), ULLONG_MAX)
    value, clean = strtoull(text)
    return value if clean and not text.lstrip(_C_SPACE).startswith("-") else None


_C_FLOAT = re.compile(
    r"[+-]?(?:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
    re.I,
)


def float32(value: float) -> float:
    """``value`` rounded to IEEE single precision, as NCCL's ``float`` fields hold it."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def strtof(text: str | None) -> tuple[float, bool]:
    """C ``strtof(text, &end)``: (float32 value, whole text consumed); accepts ``inf``, ``nan``
    and hex floats as C does. Nothing readable gives (0.0, False)."""
    if not text:
        return 0.0, False
    start = len(text) - len(text.lstrip(_C_SPACE))
    match = _C_FLOAT.match(text, start)
    if not match or len(match.group(0)) > 4096:
        return 0.0, False
    token = match.group(0)
    body = token.lstrip("+-").lower()
    negative = token.startswith("-")
    if body.startswith("inf"):
        value = math.inf
    elif body.startswith("nan"):
        value = math.nan
    elif body.startswith("0x"):
        mantissa, _, exponent = body[2:].partition("p")
        exponent_value = decimal(exponent or "0")
        if exponent_value is None:  # absurd exponent: saturates like C
            value = math.inf if not exponent.startswith("-") else 0.0
        else:
            whole, _, frac = mantissa.partition(".")
            digits = (whole + frac).lstrip("0")[:64] or "0"
            shift = exponent_value - 4 * len(frac) + 4 * (len((whole + frac).lstrip("0")) - len(digits))
            value = math.ldexp(int(digits, 16), max(-2000, min(2000, shift))) if digits != "0" else 0.0
    else:
        try:
            value = float(body)
        except (ValueError, OverflowError):
            value = math.inf
    return float32(-value if negative else value), match.end() == len(text)


_PRINTED_FLOAT = re.compile(r"[+-]?(?:[0-9]{1,%d}(?:\.[0-9]{0,%d})?|\.[0-9]{1,%d})(?:[eE][+-]?[0-9]{1,3})?" % (MAX_DIGITS, MAX_DIGITS, MAX_DIGITS))


def printed_float(text: str | None) -> float | None:
    """A decimal number as a tool printed it with printf (``458.65``, ``0e+00``, ``1.2e+03``);
    None for ``N/A``, ``nan``, ``inf`` and anything else (nccl-tests prints those for unknowns)."""
    if text is None:
        return None
    text = text.strip()
    if not _PRINTED_FLOAT.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


MEMO_INTERVALS = 64  # intersections of sets of at most this many intervals are remembered
_INTERSECTIONS: dict[tuple, CpuSet] = {}


@dataclass(frozen=True)
class CpuSet:
    """A set of CPU ids as sorted, disjoint, non-adjacent closed intervals."""

    intervals: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, pairs) -> CpuSet:
        merged: list[list[int]] = []
        for low, high in sorted(pairs):
            if merged and low <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        return cls(tuple((a, b) for a, b in merged))

    @classmethod
    def of_ids(cls, ids: list[int]) -> CpuSet:
        """``of((i, i) for i in ids)``: runs of consecutive ids found in one sorted pass."""
        unique = sorted(set(ids))
        if not unique:
            return cls()
        ends = [a for a, b in zip(unique, unique[1:]) if b != a + 1]
        starts = [b for a, b in zip(unique, unique[1:]) if b != a + 1]
        return cls(tuple(zip([unique[0], *starts], [*ends, unique[-1]])))

    def __len__(self) -> int:
        return sum(high - low + 1 for low, high in self.intervals)

    def __bool__(self) -> bool:
        return bool(self.intervals)

    def __contains__(self, cpu: int) -> bool:
        return any(low <= cpu <= high for low, high in self.intervals)

    def __and__(self, other: CpuSet) -> CpuSet:
        if self.intervals == other.intervals:  # GPUs of one NUMA node report one set
            return self
        if len(self.intervals) > MEMO_INTERVALS or len(other.intervals) > MEMO_INTERVALS:
            return self._intersection(other)
        key = (self.intervals, other.intervals)  # every node of a cluster compares the same few sets
        found = _INTERSECTIONS.get(key)
        if found is None:
            if len(_INTERSECTIONS) >= MEMO_ENTRIES:
                _INTERSECTIONS.clear()
            found = _INTERSECTIONS[key] = self._intersection(other)
        return found

    def _intersection(self, other: CpuSet) -> CpuSet:
        out, i, j = [], 0, 0
        a, b = self.intervals, other.intervals
        while i < len(a) and j < len(b):
            low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if low <= high:
                out.append((low, high))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return CpuSet(tuple(out))

    def __or__(self, other: CpuSet) -> CpuSet:
        return CpuSet.of(self.intervals + other.intervals)

    def issubset(self, other: CpuSet) -> bool:
        return (self & other) == self

    def text(self) -> str:
        """The cpulist form Linux prints: ``0-47,96-143``."""
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in self.intervals)


@remembered
def cpulist(text: str | None) -> CpuSet | None:
    """A Linux cpulist (``0-47,96-143``, ``0,2,4``; numactl, nvidia-smi, sysfs); None when a
    part does not parse, a range runs backwards or a CPU id is beyond MAX_CPUS."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return CpuSet()
    pairs = []
    for part in text.split(","):
        low_text, dash, high_text = part.strip().partition("-")
        low = decimal(low_text) if low_text.strip().isascii() else None
        high = decimal(high_text) if dash else low
        if low is None or high is None or low < 0 or high < low or high >= MAX_CPUS:
            return None
        pairs.append((low, high))
    return CpuSet.of(pairs)


_CPU_IDS = re.compile(r"[0-9]{1,5}(?:[ \t]+[0-9]{1,5})*")


def cpu_ids(text: str | None) -> CpuSet | None:
    """CPU ids separated by blanks, as ``numactl -H`` prints them (``0 1 2 3 96 97``); empty is the
    empty set (a CPU-less node); None when a part is not an id or beyond MAX_CPUS."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return CpuSet()
    if not _CPU_IDS.fullmatch(text):
        return None
    ids = list(map(int, text.split()))  # ASCII digits only: the fullmatch above
    if max(ids) >= MAX_CPUS:
        return None
    return CpuSet.of_ids(ids)


@remembered
def cpumask(text: str | None) -> CpuSet | None:
    """A Linux cpumask as NCCL writes ``affinity`` (comma-separated hex words, most significant
    first: ``ffffffff,00000000``); None when it does not parse or is wider than MAX_CPUS.

    The kernel writes 32-bit words; when every word has at most 8 hex digits each is read as 32
    bits (short words are zero-padded), otherwise each word counts at its own width (4 bits a
    digit), as hand-written 64-bit words mean. Work is linear in the text; the set comes back
    as intervals."""
    if text is None:
        return None
    words = [w.strip() for w in text.strip().split(",")]
    if len(words) > MAX_CPUS // 4 or any(w.lower().startswith("0x") for w in words):
        return None
    fixed = all(len(w) <= 8 for w in words)
    widths = [32 if fixed else 4 * len(w) for w in words]
    if sum(widths) > MAX_CPUS:
        return None
    pairs: list[tuple[int, int]] = []
    base = 0
    for word, width in zip(reversed(words), reversed(widths)):
        value = hex_int(word) if len(word) <= MAX_DIGITS else None
        if value is None:
            return None
        for low, high in _bit_runs(value):  # lowest first, word after word: a run across words is one pair
            if pairs and base + low == pairs[-1][1] + 1:
                pairs[-1] = (pairs[-1][0], base + high)
            else:
                pairs.append((base + low, base + high))
        base += width
    return CpuSet.of(pairs)


def _bit_runs(value: int):
    """(first, last) bit of each run of set bits in ``value``, lowest first."""
    bit = 0
    while value:
        if value & 1:
            run = 0
            while value & 1:
                value >>= 1
                run += 1
            yield bit, bit + run - 1
            bit += run
        else:
            value >>= 1
            bit += 1


def hwloc_bitmap(text: str | None) -> CpuSet | None:
    """An hwloc bitmap as lstopo's XML writes ``cpuset``/``nodeset`` (``0x00ff00ff``, words of 32
    bits with ``0x``, most significant first: ``0xffffffff,0x00000003``); None otherwise."""
    if text is None:
        return None
    words = text.strip().split(",")
    if not all(w.startswith(("0x", "0X")) for w in words):
        return None
    bare = ",".join(w[2:] for w in words)
    del words  # cpumask splits its own: a 65,536-node nodeset is 2,048 words (issue 20)
    return cpumask(bare)


_PCI = re.compile(r"(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])")


def pci_address(text: str | None) -> str | None:
    """A PCI address (``0000:17:00.0``, ``17:00.0``, VMD's ``10000:00:00.0``) normalised to
    lower case with a 4-digit domain (more where the domain needs it); None otherwise."""
    if text is None:
        return None
    match = _PCI.fullmatch(text.strip())
    if not match:
        return None
    domain, bus, device, function = match.groups()
    domain_value = int(domain, 16) if domain else 0
    if int(device, 16) > 0x1F:
        return None
    return f"{domain_value:04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{function}"


_UNSIGNED_DECIMAL = re.compile(r"[0-9]{1,%d}(?:\.[0-9]{1,%d})?" % (MAX_DIGITS, MAX_DIGITS))


def unsigned_decimal(text: str | None) -> float | None:
    """A non-negative decimal number as a tool prints it (``200``, ``2.5``, ``25.0``); None otherwise.
    No sign, exponent, ``inf`` or ``nan``: a port rate or a link speed is never written so."""
    if text is None:
        return None
    text = text.strip()
    return float(text) if _UNSIGNED_DECIMAL.fullmatch(text) else None


_IPV4 = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})")


def ipv4_address(text: str | None) -> int | None:
    """A dotted-quad IPv4 address as a 32-bit integer; None otherwise (no leading zeros dropped,
    no octet above 255)."""
    if text is None:
        return None
    match = _IPV4.fullmatch(text.strip())
    if not match:
        return None
    value = 0
    for octet in match.groups():
        number = int(octet)
        if number > 255:
            return None
        value = value << 8 | number
    return value


def ipv4_network(text: str | None) -> tuple[int, int] | None:
    """``10.0.0.0/16`` (or a bare address: a /32) as (network, prefix length); None otherwise."""
    if text is None:
        return None
    address, slash, length = text.strip().partition("/")
    value = ipv4_address(address)
    prefix = decimal(length) if slash else 32
    if value is None or prefix is None or not 0 <= prefix <= 32:
        return None
    mask = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF
    return value & mask, prefix


def ipv4_in(address: int, network: tuple[int, int]) -> bool:
    base, prefix = network
    mask = (0xFFFFFFFF << (32 - prefix)) & 0xFFFFFFFF
    return address & mask == base
_BYTE_SIZE = re.compile(r"([0-9]{1,%d})([KMGT]?)(i?B)?" % 15, re.IGNORECASE)
_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def byte_size(text: str | None) -> int | None:
    """A message size as nccl-tests' -b/-e take it: digits with an optional K, M, G or T suffix,
    binary multiples (nccl-tests src/common.cu parsesize: 1K = 1024); None otherwise."""
    if text is None:
        return None
    match = _BYTE_SIZE.fullmatch(text.strip())
    if not match:
        return None
    return int(match.group(1)) * _BYTE_UNITS[match.group(2).upper()]


def positive_real(text: str | None) -> float | None:
    """A finite positive decimal number given on the command line (10B parameters, 2.5 ratios)."""
    if text is None or not re.fullmatch(r"\s*[0-9]{1,15}(\.[0-9]{1,15})?\s*", text):
        return None
    value = float(text)
    return value if value > 0 else None


_COUNT = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,15})?)([KMBGT]?)", re.IGNORECASE)
_COUNT_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def count(text: str | None) -> float | None:
    """A count with a decimal suffix as model sizes are written: 350M, 10B (= 10 x 10^9), 1.5T."""
    if text is None:
        return None
    match = _COUNT.fullmatch(text.strip())
    if not match:
        return None
    value = float(match.group(1)) * _COUNT_UNITS[match.group(2).upper()]
    return value if value > 0 else None
