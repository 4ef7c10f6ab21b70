"""``nvidia-smi nvlink -s`` / ``--status`` into an NvlinkStatus (output-formats.md section 2).

Layout: a block per GPU, ``GPU N: NAME (UUID: GPU-...)``, then one ``Link K: 25.781 GB/s`` or
``Link K: <inactive>`` line per link, indented by a tab and a space (native) or by spaces
(pastes). A GPU whose links are all down may instead get NVML's one line "Unable to retrieve
NVLink information as all links are inActive". Pastes may redact the UUID (``(UUID: ...)``) and
elide GPUs with a line of dots; a leading echo of the command is skipped. Anything else, and a
GPU header with no link lines, is unreadable (TL001) with its line and column.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location, NvlinkGpuStatus, NvlinkLink, NvlinkStatus, build, location
from topolint.model.numbers import decimal, decimal_fraction
from topolint.parsers._lines import lines_of

GPU_HEADER = re.compile(r"GPU ([0-9]+): (.*?)\s*\(UUID: ?([^)]*)\)\s*$")
LINK = re.compile(r"Link ([0-9]+): *(\S.*?)\s*$")
RATE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?GB/s")
STATE = re.compile(r"<([A-Za-z][A-Za-z ]*)>")
ALL_INACTIVE = re.compile(r"(?:NVML: ?)?Unable to retrieve NVLink information as all links are inactive", re.IGNORECASE)
ELISION = re.compile(r"\.{3,}|…+")
COMMAND = re.compile(r".*nvidia-smi nvlink\b.*")
MALFORMED = "malformed nvidia-smi nvlink output"  # collect.py reports these from folder walks too
EXPECTED = "expected 'GPU N: NAME (UUID: ...)', 'Link K: RATE GB/s' or 'Link K: <inactive>'"


def _uuid(text: str) -> str | None:
    text = text.strip()
    return text if re.search(r"[0-9A-Za-z]", text) else None


def _speed(speeds: dict[str, float | None], text: str) -> float | None:
    speed = speeds.get(text)
    if speed is None:
        speed = speeds[text] = decimal_fraction(text)
    return speed


def parse_nvlink_status(source: SourceFile) -> NvlinkStatus:
    path = source.path
    gpus: list[NvlinkGpuStatus] = []
    first_line: dict[int, int] = {}
    current: NvlinkGpuStatus | None = None
    speeds: dict[str, float | None] = {}  # one float per rate printed: every link of a GPU has the same

    def close() -> None:
        if current is not None and not current.links and not current.all_inactive:
            raise InputError(path, current.loc.line, f"{MALFORMED}: GPU {current.index} has no Link lines "
                             "(expected 'Link K: RATE GB/s' or 'Link K: <inactive>' below it)", current.loc.column)

    for number, raw in enumerate(lines_of(source.text), start=1):
        text = raw.strip()
        if not text or ELISION.fullmatch(text):
            continue
        column = len(raw) - len(raw.lstrip()) + 1
        if not gpus and current is None and COMMAND.fullmatch(text):
            continue
        header = GPU_HEADER.match(text)
        if header:
            close()
            index = decimal(header.group(1))
            if index is None:
                raise InputError(path, number, f"{MALFORMED}: GPU index {header.group(1)[:20]!r} is not a GPU number",
                                 column)
            if index in first_line:
                raise InputError(path, number, f"{MALFORMED}: GPU {index} appears twice "
                                 f"(first on line {first_line[index]})", column)
            first_line[index] = number
            current = build(NvlinkGpuStatus, index=index, name=header.group(2), uuid=_uuid(header.group(3)),
                            links=[], all_inactive=False, loc=build(Location, path=path, line=number, column=column))
            gpus.append(current)
            continue
        if current is None:
            raise InputError(path, number, f"{MALFORMED}: {EXPECTED}; found {text[:40]!r} before the first GPU line",
                             column)
        if ALL_INACTIVE.fullmatch(text) and not current.links:
            current.all_inactive = True
            continue
        link = LINK.fullmatch(text)
        if not link or current.all_inactive:
            raise InputError(path, number, f"{MALFORMED}: {EXPECTED}; found {text[:40]!r} "
                             f"in the block of GPU {current.index}", column)
        index, value = decimal(link.group(1)), link.group(2)
        if index is None:
            raise InputError(path, number, f"{MALFORMED}: Link {link.group(1)[:20]!r} is not a link number", column)
        value_column = column + text.index(value, len(f"Link {index}:"))
        if any(existing.index == index for existing in current.links):
            raise InputError(path, number, f"{MALFORMED}: GPU {current.index} lists Link {index} twice", column)
        rate, state = RATE.fullmatch(value), STATE.fullmatch(value)
        if rate is None and state is None:
            raise InputError(path, number, f"{MALFORMED}: Link {index} of GPU {current.index}: {value!r} is neither "
                             "a rate ('25 GB/s') nor a state ('<inactive>')", value_column)
        current.links.append(build(NvlinkLink,
            index=index,
            state="active" if rate else state.group(1).strip().lower(),
            speed_gbps=_speed(speeds, rate.group(1)) if rate else None,
            loc=location(path, number, value_column),
        ))
    close()
    if not gpus:
        raise InputError(path, 1, f"{MALFORMED}: no 'GPU N: NAME (UUID: ...)' line")
    return build(NvlinkStatus, path=path, gpus=gpus)
