"""IOMMU evidence from the kernel: ``/proc/cmdline`` parameters and ``dmesg`` lines.

dmesg gives the decisive line (``iommu: Default domain type: Translated`` / ``Passthrough``,
printed by drivers/iommu/iommu.c since Linux 5.4), the IOMMU's vendor (``DMAR:`` is Intel VT-d,
``AMD-Vi:`` AMD), a hypervisor (``Hypervisor detected: KVM``), the DMI line and the command
line the kernel booted with. Only those lines are kept; one pass, each line looked at once.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.host import KernelCmdline, KernelLog, KernelValue
from topolint.parsers._lines import _LINE_END, _NON_BLANK, first_text_line

_PREFIX = re.compile(r"(?:<\d>)?\[ *\d+\.\d+\] |[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kernel: ")
_DEFAULT_DOMAIN = re.compile(r"iommu: Default domain type: (\w+)")
_HYPERVISOR = re.compile(r"Hypervisor detected: (\S.*)")
_DMI = re.compile(r"DMI: (\S.*)")
_COMMAND_LINE = re.compile(r"Command line: (.*)")
_IOMMU = re.compile(r"\b(?:DMAR|AMD-Vi|iommu|IOMMU)\b")
_VENDOR = (("DMAR", "Intel"), ("AMD-Vi", "AMD"))
MAX_IOMMU_LINES = 64  # evidence, not a copy of the log


def _value(source: SourceFile, number: int, column: int, text: str) -> KernelValue:
    return build(KernelValue, value=text.strip(), loc=build(Location, path=source.path, line=number, column=column))


def _first(log: dict, key: str, value: KernelValue) -> None:
    if log.get(key) is None:
        log[key] = value


# The lines any rule reads are found by a search for each keyword over the whole text (str.find
# skips the thousands of other lines at C speed: a regex alternation stopped at every "i");
# nothing else is looked at.
_KEYWORDS = ("DMAR", "AMD-Vi", "iommu", "IOMMU", "Hypervisor detected", "DMI: ", "Command line: ")


def _keyword_line_starts(text: str) -> list[int]:
    """Offsets of the lines holding a keyword, in order; each keyword's search goes on from the
    end of the line it was last found on, so a line is looked at once per keyword."""
    starts = set()
    for keyword in _KEYWORDS:
        at = text.find(keyword)
        while at >= 0:
            starts.add(text.rfind("\n", 0, at) + 1)
            line_end = text.find("\n", at)
            at = -1 if line_end < 0 else text.find(keyword, line_end)
    return sorted(starts)


def _wanted_lines(text: str):
    """(line number, line) of each line holding a keyword, once per line, in order."""
    number, counted = 1, 0
    for line_start in _keyword_line_starts(text):
        line_end = text.find("\n", line_start)
        line_end = len(text) if line_end < 0 else line_end
        number += text.count("\n", counted, line_start)
        counted = line_start
        yield number, text[line_start:line_end].rstrip("\r")


def parse_dmesg(source: SourceFile) -> KernelLog:
    text = source.text
    first = text.lstrip("\r\n")
    if first and not _PREFIX.match(first):
        number = text[: len(text) - len(first)].count("\n") + 1
        raise InputError(source.path, number, "malformed dmesg: expected a [seconds] or journal prefix", 1)
    found: dict = {"iommu_lines": []}
    for number, line in _wanted_lines(text):
        prefix = _PREFIX.match(line)
        if prefix is None:
            continue  # a wrapped continuation line
        body, offset = line[prefix.end():], prefix.end() + 1
        for key, pattern in (("default_domain", _DEFAULT_DOMAIN), ("hypervisor", _HYPERVISOR), ("dmi", _DMI),
                             ("cmdline", _COMMAND_LINE)):
            found_match = pattern.search(body)
            if found_match:
                _first(found, key, _value(source, number, offset + found_match.start(1), found_match.group(1)))
        if _IOMMU.search(body):
            if len(found["iommu_lines"]) < MAX_IOMMU_LINES:
                found["iommu_lines"].append(_value(source, number, offset, body))
            for marker, vendor in _VENDOR:
                if body.startswith(marker + ":") or f" {marker}: " in body:
                    _first(found, "cpu_vendor", _value(source, number, offset, vendor))
    return build(KernelLog, path=source.path, **found)


def parse_cmdline(source: SourceFile) -> KernelCmdline:
    text = source.text
    line = first_text_line(text)
    if not line.strip():
        raise InputError(source.path, 1, "malformed kernel command line: empty")
    found = _NON_BLANK.search(text)
    number = 1 + sum(1 for _ in _LINE_END.finditer(text, 0, found.start()))  # as splitlines numbers it
    return build(KernelCmdline, path=source.path, line=number, text=line)
