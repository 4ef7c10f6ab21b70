"""Virtualisation probes: ``systemd-detect-virt`` (one word) and the DMI product name. Neither can
be recognised by content (one word is anything), so only a bundle manifest names these formats."""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, build
from topolint.model.host import KernelValue, VirtEvidence

_WORD = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def _line(source: SourceFile) -> tuple[int, str]:
    for number, line in enumerate(source.text.splitlines(), 1):
        if line.strip():
            return number, line
    raise InputError(source.path, 1, "malformed virtualisation probe output: empty")


def _evidence(source: SourceFile, probe: str, number: int, line: str) -> VirtEvidence:
    column = len(line) - len(line.lstrip()) + 1
    value = build(KernelValue, value=line.strip(), loc=build(Location, path=source.path, line=number, column=column))
    return build(VirtEvidence, path=source.path, probe=probe, value=value)


def parse_detect_virt(source: SourceFile) -> VirtEvidence:
    number, line = _line(source)
    if not _WORD.fullmatch(line.strip()):
        raise InputError(source.path, number, "malformed systemd-detect-virt output: expected one word "
                                              "(none, kvm, microsoft, ...)", 1)
    return _evidence(source, "systemd-detect-virt", number, line)


def parse_dmi_product(source: SourceFile) -> VirtEvidence:
    number, line = _line(source)
    if len(line) > 256:
        raise InputError(source.path, number, "malformed DMI product name: longer than 256 characters", 1)
    return _evidence(source, "dmi-product-name", number, line)
