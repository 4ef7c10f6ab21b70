"""Recognise machine outputs by their content, never by their file name."""

from __future__ import annotations

import re

NCCL_TOPO_XML = "nccl-topo-xml"
NCCL_GRAPH_XML = "nccl-graph-xml"

# After optional declaration, doctype (with or without an internal subset) and comments, the
# root element decides.
_XML_PROLOGUE = re.compile(r"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*|<!DOCTYPE(?:[^\[>]*\[.*?\])?[^>]*>\s*)*", re.S | re.I)
_ROOT = re.compile(r"<(system|graphs)[\s>/]")


def _nccl_xml(text: str) -> str | None:
    prologue = _XML_PROLOGUE.match(text)
    root = _ROOT.match(text[prologue.end():] if prologue else text)
    if root:
        return NCCL_TOPO_XML if root.group(1) == "system" else NCCL_GRAPH_XML
    return None


NVIDIA_SMI_TOPO = "nvidia-smi-topo"
_SMI_HEADER = re.compile(r"^[^\n<]*GPU0(?!\d)[^\n]*\n[ ]?GPU0[ \t]", re.M)


def _nvidia_smi_topo(text: str) -> str | None:
    """``nvidia-smi topo -m`` / ``-p2p``: a header naming GPU0, then GPU0's row (tabs or spaces)."""
    return NVIDIA_SMI_TOPO if "GPU0" in text and _SMI_HEADER.search(text) else None


NVIDIA_SMI_NVLINK = "nvidia-smi-nvlink"
_NVLINK_HEAD = re.compile(
    r"\s*(?:[^\n]*nvidia-smi nvlink[^\n]*\n\s*)?GPU \d+: [^\n]*\(UUID: ?[^)\n]*\)[ \t]*\r?\n"
    r"\s*(?:Link \d+: *(?:\d+(?:\.\d+)? ?GB/s|<[A-Za-z][A-Za-z ]*>)|(?:NVML: ?)?(?i:unable to retrieve nvlink))"
)


def _nvidia_smi_nvlink(text: str) -> str | None:
    """``nvidia-smi nvlink -s`` / ``--status``: the first line names a GPU and its UUID, the next is a
    link's rate or state (``-e``, ``-c`` and ``-L`` print other things there)."""
    return NVIDIA_SMI_NVLINK if _NVLINK_HEAD.match(text) else None


NVIDIA_SMI_Q = "nvidia-smi-q"
NVIDIA_SMI_QUERY_CSV = "nvidia-smi-query-csv"
_SMI_Q_FIRST = re.compile(r"=+ ?NVSMI LOG ?=+|GPU [0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7]|Fabric")
_SMI_Q_FIELD = re.compile(r"[ \t]+[A-Za-z][^:\n]{0,80}:")
_SMI_Q_STATE = re.compile(r"[ \t]+State[ \t]*:")
_QUERY_COLUMN = re.compile(r"[A-Za-z][\w.]{0,63}(?: \[[^\]]{0,32}\])?")


def _nvidia_smi_q(text: str) -> str | None:
    """``nvidia-smi -q`` / ``-a`` (its banner, a GPU header, or a grep of its Fabric section) and
    ``nvidia-smi --query-gpu=... --format=csv`` naming a fabric.* field or the bus id, after an
    optional echo of the command: the first lines decide (parsers/nvidia_smi_q.py)."""
    if "NVSMI" not in text and "Fabric" not in text and "GPU " not in text and "," not in text:
        return None
    lines = [line for line in text[:4096].splitlines()[:8] if line.strip()]
    while lines and "nvidia-smi" in lines[0]:
        lines.pop(0)
    if not lines:
        return None
    first = lines[0].strip()
    if _SMI_Q_FIRST.fullmatch(first):
        second = lines[1] if len(lines) > 1 else ""
        if first.startswith("=") or (_SMI_Q_STATE if first == "Fabric" else _SMI_Q_FIELD).match(second):
            return NVIDIA_SMI_Q
        return None
    if "," in first:
        cells = [cell.strip() for cell in first.split(",")]
        if all(_QUERY_COLUMN.fullmatch(cell) for cell in cells) and any(
                cell.lower().startswith(("fabric.", "pci.bus_id")) for cell in cells):
            return NVIDIA_SMI_QUERY_CSV
    return None


LSPCI = "lspci"
_LSPCI_HEADER = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] [^\n:]*[^\s:]:? ?[^\n]*")
_LSPCI_TREE = re.compile(r"\s*-(?:\+-)?\[[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}\]-")
_LSPCI_EXCERPT = re.compile(r"^[ \t]+(?:LnkCap|LnkSta|ACSCtl|ACSCap|Capabilities):[ \t]", re.M)


def _lspci(text: str) -> str | None:
    """lspci: a first line that is a device header (``-vvv``, lists) or a tree root, or an indented
    excerpt whose lines include link or ACS fields (a grep, a pasted fragment)."""
    first = text.lstrip("\r\n").split("\n", 1)[0].rstrip()
    if _LSPCI_TREE.match(first) or (": " in first and _LSPCI_HEADER.fullmatch(first)):
        return LSPCI
    if first[:1] in (" ", "\t") and _LSPCI_EXCERPT.search(text):
        return LSPCI
    return None


DMESG = "dmesg"
_DMESG_LINE = re.compile(r"(?:<\d>)?\[ *\d+\.\d+\] |[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kernel: ")


def _dmesg(text: str) -> str | None:
    """``dmesg`` (``[    0.000000] ...``) or ``journalctl -k`` (``Dec 01 09:00:00 host kernel: ...``)."""
    return DMESG if _DMESG_LINE.match(text.lstrip("\r\n")) else None


CMDLINE = "cmdline"
_CMDLINE = re.compile(r"(?:^|\s)(?:BOOT_IMAGE|root|initrd)=\S")


def _cmdline(text: str) -> str | None:
    """``/proc/cmdline``: one line of kernel parameters."""
    body = text.strip()
    return CMDLINE if body and "\n" not in body and _CMDLINE.search(body) else None


NUMACTL = "numactl"
_NUMACTL = re.compile(r"\s*available: \d+ nodes? \(")


def _numactl(text: str) -> str | None:
    """``numactl -H`` / ``--hardware``: starts ``available: N nodes (a-b)``."""
    return NUMACTL if _NUMACTL.match(text) else None


HWLOC = "hwloc"
_HWLOC_ROOT = re.compile(r"<topology[\s>]")


def _hwloc(text: str) -> str | None:
    """hwloc / lstopo XML: a ``<topology>`` root after the declaration and DOCTYPE."""
    prologue = _XML_PROLOGUE.match(text)
    return HWLOC if _HWLOC_ROOT.match(text[prologue.end():] if prologue else text) else None


NCCL_TESTS = "nccl-tests"
NCCL_LOG = "nccl-log"
_LAUNCHER_TAG = r"(?:\[\d+,\d+\]<std(?:out|err)>:|\[(?:rank|default)\d+\]:\s?|\d+: )?"
# A table's column header, the nThread header, the footer or the version line, with or without
# the leading "#" that pastes lose. Blanks are [ \t], never \s: under re.M a \s* at each line
# start would run over every following newline (quadratic on a file of blank lines).
_TESTS_MARK = re.compile(
    r"^" + _LAUNCHER_TAG + r"[ \t]*#?[ \t]*(?:size[ \t]+count[ \t]+type[ \t]+redop\b|nThread \d+ nGpus \d+ minBytes \d+"
    r"|Avg bus bandwidth\s*:|nccl-tests version \S)", re.M)
_TESTS_JSON = re.compile(r'\s*\{\s*"version"\s*:\s*\d+\s*,')
# host:pid:tid [dev] ... NCCL INFO|WARN (src/debug.cc), after an optional tag or timestamp.
_LOG_LINE = re.compile(r"^[^\n]{0,80}?[^\s:\[\]]+:\d+:\d+ +\[\d+\] +(?:[^\n]{0,400}?\s)?NCCL (?:INFO|WARN|TRACE) ", re.M)


def _nccl_tests(text: str) -> str | None:
    """nccl-tests output (tables, possibly with INFO lines between), or its -J JSON report."""
    if _TESTS_JSON.match(text):
        return NCCL_TESTS if '"nccl_version"' in text and '"results"' in text else None
    return NCCL_TESTS if _TESTS_MARK.search(text) else None


# The version line alone, as NCCL_DEBUG=VERSION prints it: src/init.cc showVersion, VERSION_STRING
# "NCCL version %d.%d.%d<suffix>+cuda%d.%d", printf'ed up to 2.22 (at every level from VERSION) and
# logged at NCCL_LOG_VERSION level from 2.23 (src/debug.cc ncclDebugLogV: no host:pid:tid prefix; from
# 2.26 a "[%F %T] " timestamp when NCCL_DEBUG_TIMESTAMP_LEVELS names VERSION). The whole line, at
# the start of the line (after a launcher's tag): a sentence or an indented code sample naming a
# version is not NCCL's output.
VERSION_LINE = re.compile(r"^" + _LAUNCHER_TAG + r"(?:\[[^\]\n]{1,64}\] )?NCCL version \d+\.\d+\.\d+[0-9A-Za-z.]{0,16}"
                          r"\+cuda\d+\.\d+[ \t]*\r?$", re.M)
# Documents that quote the line: a Markdown fence or heading, an reStructuredText directive, HTML.
_DOCUMENT = re.compile(r"^(?:```|~~~|\.\. [a-z-]+::|#{1,6} \S|<(?:!|html|\?xml|[a-z]+[ >]))", re.M | re.I)


def _nccl_log(text: str) -> str | None:
    """NCCL_DEBUG=INFO output (at least one line with NCCL's host:pid:tid [dev] prefix), or
    NCCL_DEBUG=VERSION output: the version line alone, in a file that is not a document."""
    if "NCCL " not in text:
        return None
    if _LOG_LINE.search(text):
        return NCCL_LOG
    return NCCL_LOG if VERSION_LINE.search(text) and not _DOCUMENT.search(text) else None


INVENTORY = "topolint-inventory"


def _inventory(text: str) -> str | None:
    """A node inventory (docs/fleet.md): a JSON object with the "topolint_inventory" key near its start."""
    from topolint.fleet.inventory import looks_like_inventory

    return INVENTORY if text[:1] in ("{", " ", "\n", "\r", "\t") and looks_like_inventory(text) else None


# Each detector looks at the head of a file and names its format or returns None. One line per
# family of formats; the first that answers wins, so put stricter detectors first.
DETECTORS = [
    _nccl_xml,
    _inventory,
    _nvidia_smi_topo,
    _nvidia_smi_nvlink,
    _nvidia_smi_q,
    _hwloc,
    _numactl,
    _lspci,
    _dmesg,
    _cmdline,
    _nccl_tests,  # before the log: nccl-tests output often carries its ranks' INFO lines
    _nccl_log,
]



def _cluster(text: str) -> str | None:
    """Files of the cluster (ibnetdiscover, iblinkinfo, lldpctl): topolint/inputs/cluster_sniff.py."""
    from topolint.inputs.cluster_sniff import cluster_format

    return cluster_format(text)


DETECTORS.append(_cluster)


def _fabric(text: str) -> str | None:
    """Fabric outputs (ibstat family, GIDs, RoCE QoS, ethtool, ip, mounts): topolint/inputs/fabric_sniff.py,
    imported on the first file sniffed (a config-only run never needs its patterns)."""
    from topolint.inputs.fabric_sniff import fabric_format

    return fabric_format(text)


DETECTORS.append(_fabric)


_MODULE_LINE = re.compile(r"[A-Za-z0-9_]+ \d+ ")
_SOFTWARE_MARKS = ("NVRM version", "NVIDIA-SMI", "Linux", "OFED", "Module", "/sys/module/")


def _software(text: str) -> str | None:
    """Version outputs (driver, CUDA, OFED, kernel, modules): topolint/parsers/versions.py, imported
    only for a head that starts like one of them."""
    head = text[:4096]  # a paste may echo the command first
    if not any(mark in head for mark in _SOFTWARE_MARKS) and not _MODULE_LINE.match(text.lstrip()[:64]):
        return None
    from topolint.parsers.versions import software_format

    return software_format(text)


DETECTORS.append(_software)


def _scheduler(text: str) -> str | None:
    """The scheduler's inputs (Slurm topology files, hostfiles, SLURM environment dumps, Kubernetes
    node labels): topolint/inputs/scheduler_sniff.py, before the config formats (a node object is
    Kubernetes YAML too)."""
    from topolint.inputs.scheduler_sniff import scheduler_format

    return scheduler_format(text)


DETECTORS.append(_scheduler)

# Config formats (infra files) by content, after the machine outputs; names and shebangs come
# first in collect.py. Imported here so a detector list stays the one place to look.
from topolint.inputs.config_names import CONFIG_DETECTORS  # noqa: E402

DETECTORS.extend(CONFIG_DETECTORS)


def sniff(text: str) -> str | None:
    """The format of ``text``, or None when it matches no known format."""
    head = text[:65536]
    for detector in DETECTORS:
        fmt = detector(head)
        if fmt:
            return fmt
    return None


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]
