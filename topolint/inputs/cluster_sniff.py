"""Detectors for the files of a cluster rather than of one node: the fabric as cabled
(``ibnetdiscover``, ``ibnetdiscover -p``, ``iblinkinfo``) and what each port hears over LLDP
(``lldpctl``, in its text, ``-f json``, ``-f json0`` and ``-f keyvalue`` forms), by content only.

The collector (inputs/collect.py) hands files of CLUSTER_FORMATS to the cluster stage
(Collection.cluster_files) instead of to a node, wherever they are found: at the top of a
cluster folder, in a node's folder (its ``lldpctl``: the node is the local end), or named.
"""

from __future__ import annotations

import re

from topolint.inputs.scheduler_sniff import MALFORMED as SCHEDULER_MALFORMED
from topolint.model.scheduler import SCHEDULER_FORMATS

IBNETDISCOVER, IBLINKINFO, LLDPCTL = "ibnetdiscover", "iblinkinfo", "lldpctl"
FABRIC_FILE_FORMATS = {IBNETDISCOVER, IBLINKINFO, LLDPCTL}
# Every format the cluster stage reads instead of a node (the scheduler's files join these).
CLUSTER_FORMATS = set(FABRIC_FILE_FORMATS) | SCHEDULER_FORMATS  # the scheduler's: inputs/scheduler_sniff.py

# How their parsers begin an InputError's message: a folder walk reports these as TL001.
MALFORMED = ("malformed ibnetdiscover", "malformed iblinkinfo", "malformed lldpctl") + SCHEDULER_MALFORMED

_HEAD = 16384
# Blanks are [ \t], never \s: under re.M a \s* at each line start would run over the blank lines below.
_TOPOLOGY_FILE = re.compile(r"^#[ \t]*Topology file: generated on ", re.M)
_NODE_LINE = re.compile(r'^(?:Switch|Ca|Rt)[ \t]+\d{1,4}[ \t]+"[SHR]-[0-9a-fA-F]{1,16}"', re.M)
_PORTS_LINE = re.compile(r"^(?:SW|CA|RT)[ \t]+\d{1,5}[ \t]+\d{1,4}[ \t]+0x[0-9a-fA-F]{1,16}[ \t]+\d{1,2}x[ \t]+\S", re.M)
_LINK_HEADER = re.compile(r"^[ \t]*(?:CA: [^\n]{1,200}|Switch: 0x[0-9a-fA-F]{1,16} [^\n]{0,200}):[ \t]*\r?\n"
                          r"[^\n]{0,80}?\d+[ \t]+\d+\[[^\]\n]{0,8}\][ \t]*==\(", re.M)
_LLDP_TEXT = re.compile(r"^[ \t]*Interface:[ \t]+[^\s,]+,[ \t]*via:[ \t]*[A-Za-z0-9]+", re.M)
_LLDP_KEYVALUE = re.compile(r"^[ \t]*lldp\.[^\s=.]{1,64}\.(?:via|rid|age|chassis\.|port\.)[^\s=]{0,200}=", re.M)
_LLDP_JSON = re.compile(r'\A\s*\{\s*"lldp"\s*:\s*[\[{]')


def cluster_format(text: str) -> str | None:
    head = text[:_HEAD]
    if _TOPOLOGY_FILE.search(head) or _NODE_LINE.search(head):
        return IBNETDISCOVER
    if _PORTS_LINE.search(head):
        return IBNETDISCOVER
    if "==(" in head and _LINK_HEADER.search(head):
        return IBLINKINFO
    if "lldp" in head[:4096].lower() and (_LLDP_JSON.match(head) or _LLDP_KEYVALUE.search(head)):
        return LLDPCTL
    if "via:" in head and _LLDP_TEXT.search(head):
        return LLDPCTL
    return None
