"""The parse stage's faster ways of doing things give what the plain ways give.

Each fast path (benchmarks/scale.py's cold goal, issue 9) is held against the straightforward
code it replaced, on edge cases and random texts: output must stay byte-identical.
"""

from __future__ import annotations

import random
import re

import pytest

from topolint.inputs.source import InputError
from topolint.parsers import kernel_iommu, xmlsafe
from topolint.parsers._lines import first_text_line
from topolint.parsers.nvidia_smi_topo import _TOKEN, tokens_at


def _texts(alphabet: list[str], count: int, seed: int, longest: int = 14) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(longest))) for _ in range(count)]


def test_first_text_line_is_the_first_non_blank_line_splitlines_gives():
    alphabet = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u00a0", "a", "b", "-"]
    for text in ["", "  \n\n", "x", "\n\n  x y \r\nz", "\u00a0\n x"] + _texts(alphabet, 5000, 1):
        assert first_text_line(text) == next((line for line in text.splitlines() if line.strip()), ""), repr(text)


def _start_tags_by_line_index(text: str) -> list[tuple[str, int, int]]:
    index = xmlsafe.LineIndex(text)
    return [(m.group(1), *index.position(m.start())) for m in xmlsafe._TOKEN.finditer(text) if m.group(1)]


def test_start_tags_match_the_line_index():
    alphabet = ["<a>", "<b/>", "</a>", "\n", "\r\n", " ", "<!-- <c>\n -->", "<![CDATA[<x>\n]]>", "<?pi\n?>", "x"]
    for text in ["", "<a>", "\n\n<a\n><b/>\n"] + _texts(alphabet, 3000, 2):
        assert xmlsafe.start_tags(text) == _start_tags_by_line_index(text), repr(text)


def test_matrix_tokens_match_a_token_scan():
    alphabet = [" ", "\t", "\u00a0", "\u2028", "\r", "X", "NV18", "SYS", "0-55,112-167", "a"]
    for line in ["", " ", "GPU0\t X \tNV18", "  a  "] + _texts(alphabet, 5000, 3):
        assert tokens_at(line) == [(m.group(0), m.start()) for m in _TOKEN.finditer(line)], repr(line)


_KEYWORD_ALTERNATION = re.compile(r"DMAR|AMD-Vi|iommu|IOMMU|Hypervisor detected|DMI: |Command line: ")


def _keyword_lines_by_regex(text: str):
    number, counted, line_end = 1, 0, -1
    for match in _KEYWORD_ALTERNATION.finditer(text):
        if match.start() <= line_end:
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.start())
        line_end = len(text) if line_end < 0 else line_end
        number += text.count("\n", counted, line_start)
        counted = line_start
        yield number, text[line_start:line_end].rstrip("\r")


def test_dmesg_keyword_lines_match_one_regex_scan():
    alphabet = ["DMAR", "AMD-Vi", "iommu", "IOMMU", "Hypervisor detected", "DMI: ", "Command line: ", "x", "\n",
                "\r\n", " ", "DM", "iom", "IOMM"]
    for text in ["", "iommu", "\niommu\n", "iommu DMAR\nx\nIOMMU"] + _texts(alphabet, 5000, 4, longest=16):
        assert list(kernel_iommu._wanted_lines(text)) == list(_keyword_lines_by_regex(text)), repr(text)


def test_a_reused_xml_parser_reports_each_document_on_its_own():
    bad = "<system>\n  <cpu>\n</system>\n"
    with pytest.raises(InputError) as first:
        xmlsafe.parse_xml("bad.xml", bad)
    assert xmlsafe.parse_xml("good.xml", "<system><cpu/></system>").tag == "system"
    with pytest.raises(InputError) as again:
        xmlsafe.parse_xml("bad.xml", bad)
    assert (again.value.line, again.value.column, again.value.message) == \
        (first.value.line, first.value.column, first.value.message)
    assert first.value.line == 3


_LSPCI_LINES_MULTILINE = re.compile(
    r"^(?:(\S[^\n]*)|([ \t]+)(NUMA node|Kernel driver in use|Bus|LnkCap2|LnkCap|LnkSta|ACSCtl|"
    r"Capabilities(?=:[ \t]*(?:<access denied>|\[[^\]\n]*\][ \t]+Express))):[ \t]*([^\n]*))$", re.M)


def _lspci_lines(pattern: re.Pattern, text: str, prefix: str) -> list:
    """(line start in ``text``, groups) of each match; a match of ``prefix + text`` that starts
    at the prefix's newline starts a line at that same offset of ``text``."""
    return [(m.start(), m.groups()) for m in pattern.finditer(prefix + text)]


def test_lspci_line_scan_matches_the_multiline_scan():
    from topolint.parsers.lspci import _LINES

    alphabet = ["\n", "\r\n", "\t", "  ", "00:01.0 Bridge: x", "NUMA node: 0", "LnkSta: Speed 8GT/s", "Bus: x",
                "Capabilities: [60] Express Endpoint", "Capabilities: <access denied>", "Control: x", "x"]
    for text in ["", "\n", "a", "\tLnkCap: x\n", "00:01.0 x\n\tACSCtl:\tSrcValid+"] + _texts(alphabet, 4000, 5):
        assert _lspci_lines(_LINES, text, "\n") == _lspci_lines(_LSPCI_LINES_MULTILINE, text, ""), repr(text)
