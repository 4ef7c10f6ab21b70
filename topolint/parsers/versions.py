"""Version outputs that ``topolint collect`` records (topolint/data/collect.toml), one small
format each, every value with its line:

- ``nvidia-driver-version``: ``/proc/driver/nvidia/version`` (``NVRM version: NVIDIA UNIX x86_64
  Kernel Module  550.54.15  ...``, the open module's ``... Open Kernel Module for x86_64 ...`` too);
- ``nvidia-smi-version``: ``nvidia-smi --version`` (``DRIVER version : 570.86.15``, ``CUDA Version :
  12.8``), or the banner of plain ``nvidia-smi`` (``NVIDIA-SMI 535.104.05  Driver Version: ...  CUDA
  Version: 12.2``);
- ``ofed-info``: ``ofed_info -s`` (``MLNX_OFED_LINUX-23.10-1.1.9.0:``, DOCA's ``OFED-internal-24.10-...:``),
  or the first line of ``ofed_info``;
- ``kernel-version``: ``/proc/version`` or ``uname -a``; ``uname -r`` alone by a bundle's format only;
- ``kernel-modules``: ``/proc/modules`` or ``lsmod``;
- ``module-versions``: ``grep -H . /sys/module/M/version ...`` (``/sys/module/nvidia/version:550.54.15``).
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build
from topolint.model.software import PEERMEM_MODULES, KernelModule, SoftwareFile, SoftwareVersion
from topolint.parsers._lines import PROMPT, Line, at, numbered, value_column

_VERSION = r"(\d+(?:\.\d+){1,3}(?:[-+~.][\w.+~-]*)?)"
NVRM = re.compile(r"NVRM version: .*?\s" + r"(\d+\.\d+(?:\.\d+)?)" + r"(?:\s|$).*")
SMI_FIELD = re.compile(r"(NVIDIA-SMI|NVML|DRIVER|CUDA) [Vv]ersion\s*:\s*(\S+)")
SMI_BANNER = re.compile(r"\|?\s*NVIDIA-SMI (\S+)\s+Driver Version: (\S+)(?:\s+CUDA Version: (\S+))?.*")
OFED = re.compile(r"((?:MLNX_OFED_LINUX|OFED-internal|OFED|DOCA[\w-]*)-[\w.-]*\d[\w.-]*?)(?::|\s+\(.*\):?)?")
PROC_VERSION = re.compile(r"Linux version (\S+) .*")
UNAME_A = re.compile(r"Linux \S+ (\d+\.\d+\S*) #.*")
UNAME_R = re.compile(_VERSION)
PROC_MODULE = re.compile(r"([A-Za-z0-9_]+) \d+ (?:\d+|-) (?:[-\w,]+|\[permanent\],?) (?:Live|Loading|Unloading)(?: .*)?")
LSMOD_HEADER = re.compile(r"Module\s+Size\s+Used by")
LSMOD_ROW = re.compile(r"([A-Za-z0-9_]+)\s+\d+\s+\d+(?:\s+\S+)?")
MODULE_VERSION = re.compile(r"/sys/module/([A-Za-z0-9_]+)/version:(\S+)")


def _empty(source: SourceFile, tool: str) -> SoftwareFile:
    return build(SoftwareFile, path=source.path, tool=tool, versions=[], modules=[])


def _content(source: SourceFile):
    """Non-blank lines, without a shell prompt that echoes the command (a paste keeps it), one at a
    time: a list of them is the input twice over (raw and stripped) for the length of a parse."""
    return (line for line in numbered(source.text) if not PROMPT.match(line.text))


def _first(source: SourceFile):
    return next(_content(source), None)


def _version(result: SoftwareFile, component: str, value: str, line: Line) -> None:
    if result.version(component) is None:
        result.versions.append(build(SoftwareVersion, component=component, version=value,
                                     loc=at(result.path, line, value_column(line, value))))


def _refuse(source: SourceFile, line: Line | None, what: str, expected: str) -> InputError:
    number, column = (line.number, line.column) if line else (1, 0)
    return InputError(source.path, number, f"malformed {what}: expected {expected}", column)


def parse_nvidia_driver_version(source: SourceFile) -> SoftwareFile:
    result = _empty(source, "nvidia-driver-version")
    for line in _content(source):
        found = NVRM.fullmatch(line.text)
        if found:
            _version(result, "driver", found.group(1), line)
            return result
    raise _refuse(source, _first(source), "/proc/driver/nvidia/version", "'NVRM version: ... X.Y.Z ...'")


def parse_nvidia_smi_version(source: SourceFile) -> SoftwareFile:
    result = _empty(source, "nvidia-smi-version")
    names = {"DRIVER": "driver", "CUDA": "cuda", "NVML": "nvml"}
    for line in _content(source):
        banner = SMI_BANNER.fullmatch(line.text)
        if banner:
            _version(result, "driver", banner.group(2), line)
            if banner.group(3):
                _version(result, "cuda", banner.group(3), line)
            continue
        found = SMI_FIELD.match(line.text)
        if found and found.group(1) in names:
            _version(result, names[found.group(1)], found.group(2), line)
    if not result.versions:
        raise _refuse(source, _first(source), "nvidia-smi --version output",
                      "'DRIVER version : X.Y.Z' or nvidia-smi's 'Driver Version:' banner")
    return result


def parse_ofed_info(source: SourceFile) -> SoftwareFile:
    result = _empty(source, "ofed-info")
    first = _first(source)
    if first is None or not OFED.fullmatch(first.text):
        raise _refuse(source, first, "ofed_info -s output", "'MLNX_OFED_LINUX-X.Y-...:'")
    _version(result, "ofed", OFED.fullmatch(first.text).group(1), first)
    return result


def parse_kernel_version(source: SourceFile) -> SoftwareFile:
    result = _empty(source, "kernel-version")
    first = _first(source)
    found = first and (PROC_VERSION.fullmatch(first.text) or UNAME_A.fullmatch(first.text)
                       or UNAME_R.fullmatch(first.text))
    if not found:
        raise _refuse(source, first, "kernel version", "'/proc/version', 'uname -a' or 'uname -r' output")
    _version(result, "kernel", found.group(1), first)
    return result


def parse_kernel_modules(source: SourceFile) -> SoftwareFile:
    result = _empty(source, "kernel-modules")
    lines, first = _content(source), _first(source)
    lsmod = first is not None and LSMOD_HEADER.fullmatch(first.text) is not None
    if lsmod:
        next(lines)
    for line in lines:
        found = (LSMOD_ROW if lsmod else PROC_MODULE).fullmatch(line.text)
        if not found:
            raise _refuse(source, line, "lsmod output" if lsmod else "/proc/modules",
                          "'NAME SIZE USED ...' rows" if lsmod else "'NAME SIZE REFS DEPS STATE ADDRESS' lines")
        result.module_count += 1
        if result.module_count == 1 or found.group(1) in PEERMEM_MODULES:
            result.modules.append(build(KernelModule, name=found.group(1), loc=at(source.path, line)))
    if not result.modules:
        raise _refuse(source, first, "/proc/modules", "at least one module")
    return result


def parse_module_versions(source: SourceFile) -> SoftwareFile:
    result = _empty(source, "module-versions")
    for line in _content(source):
        found = MODULE_VERSION.fullmatch(line.text)
        if found:
            result.modules.append(build(KernelModule, name=found.group(1), version=found.group(2),
                                        loc=at(source.path, line, value_column(line, found.group(2)))))
        elif not line.text.startswith("grep: "):  # grep names the files it could not read: modules not loaded
            raise _refuse(source, line, "module versions", "'/sys/module/NAME/version:VERSION' lines")
    return result


def software_format(head: str) -> str | None:
    """Which of these formats ``head`` is (inputs/sniff.py), or None."""
    lines = [line.text for line in numbered(head[:8192]) if not PROMPT.match(line.text)][:3]
    if not lines:
        return None
    first = lines[0]
    if first.startswith("NVRM version: "):
        return "nvidia-driver-version"
    if first.startswith("NVIDIA-SMI version") or any(SMI_BANNER.fullmatch(line) for line in lines):
        return "nvidia-smi-version"
    if PROC_VERSION.fullmatch(first) or UNAME_A.fullmatch(first):
        return "kernel-version"
    if first.startswith(("MLNX_OFED_LINUX-", "OFED-internal-")) and OFED.fullmatch(first):
        return "ofed-info"
    if LSMOD_HEADER.fullmatch(first) or PROC_MODULE.fullmatch(first):
        return "kernel-modules"
    if MODULE_VERSION.fullmatch(first):
        return "module-versions"
    return None
