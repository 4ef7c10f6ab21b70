"""``mlnx_qos -i IF`` and iproute2's ``dcb pfc show`` / ``dcb app show`` into a QosFile
(output-formats.md section 8).

mlnx_qos sections, each optional by version: ``DCBX mode:``, ``Priority trust state: pcp|dscp``,
``dscp2prio mapping:`` with ``prio:N dscp:a,b,...,`` lines, ``default priority:``, ``Receive
buffer size``, ``Cable len:``, ``PFC configuration:`` with ``priority 0..7`` / ``enabled x8`` /
``buffer x8`` rows, then ``tc: N ratelimit: ..., tsa: ets|strict|vendor`` blocks with their
``priority: N`` (and, in older OFED, ``skprio: N (tos: X)``) lines. Page-rendered copies
collapse spaces and add blank lines; neither matters here. Wrappers (spiderpool's QoS script)
add a ``=== show configuration for device IF / HCA ===`` header and sysfs lines
(``ECN Enabled for priority 0: /sys/class/net/IF/ecn/roce_np/enable/0 = 1``), read as
sysfs_dump.py reads them.

dcb: ``pfc-cap 8 ... prio-pfc 0:off 1:off 2:off 3:on ...`` and ``dscp-prio 0:0 ... 26:3 ...``.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import QosFile, QosPort
from topolint.model.facts import build
from topolint.model.numbers import decimal
from topolint.parsers._lines import PROMPT, Line, at, malformed, numbered
from topolint.parsers.sysfs_dump import SysfsReader, sysfs_line

WRAPPER = re.compile(r"=+\s*show configuration for device\s+(\S+)(?:\s*/\s*(\S+?))?\s*=+")
COMMAND = re.compile(r".*\b(?:mlnx_qos\b.*?(?:-i\s*|--interface[= ])|dcb\s+(?:pfc|app)\s+show\s+dev\s+)(\S+).*")
TRUST = re.compile(r"Priority trust (?:state|mode):\s*(\w+)", re.I)
DSCP_ROW = re.compile(r"prio:\s*(\d)\s+dscp:\s*([\d,\s]*)")
PRIORITY_ROW = re.compile(r"priority((?:\s+\d){8})")
ENABLED_ROW = re.compile(r"enabled((?:\s+[01]){8})")
BUFFER_ROW = re.compile(r"buffer((?:\s+\d){8})")
TC_LINE = re.compile(r"tc:\s*\d+\s+ratelimit:.*")
TC_PRIORITY = re.compile(r"priority:\s*\d+")
SKPRIO = re.compile(r"skprio:\s*\d+(?:\s*\(tos:\s*\d+\))?")
ACCEPTED = re.compile(r"(?:DCBX mode|default priority|Receive buffer size \(bytes\)|Cable len|PFC configuration|"
                      r"dscp2prio mapping|tc|QOS for CNP|cma_roce_tos|ECN Enabled for priority \d|QOS for rdma)\s*:.*",
                      re.I)
DCB_PFC = re.compile(r".*\bprio-pfc\s+((?:\d:(?:on|off)\s*){1,8}).*")
DCB_APP = re.compile(r"dscp-prio\s+((?:\d+:\d\s*)+)")
MAX_HEADER = 512
EXPECTED = "an mlnx_qos line (trust state, PFC rows, tc/priority lines) or a dcb pfc/app line"


def parse_mlnx_qos(source: SourceFile) -> QosFile:
    path = source.path
    result = build(QosFile, path=path, ports=[], ecn=[], traffic_classes=[])
    sysfs = SysfsReader(path)
    pending: list = []
    port: QosPort | None = None

    def current(line: Line, interface: str | None = None, hca: str | None = None) -> QosPort:
        nonlocal port
        if port is None or (interface is not None and (interface, hca) != (port.interface, port.hca)):
            port = build(QosPort, interface=interface, hca=hca, trust=None, pfc=None, dscp2prio={},
                         loc=at(path, line), lines={})
            result.ports.append(port)
        return port

    for line in numbered(source.text):
        text = line.text
        short = len(text) <= MAX_HEADER  # headers are short; long lines never reach these regexes
        header = WRAPPER.fullmatch(text) if short else None
        command = COMMAND.fullmatch(text) if short and (PROMPT.match(text) or text.startswith("mlnx_qos")) else None
        if header or command:
            current(line, (header or command).group(1), header.group(2) if header else None)
            continue
        trust = TRUST.fullmatch(text)
        if trust:
            qos = current(line)
            qos.trust, qos.lines["trust"] = trust.group(1).lower(), at(path, line)
            continue
        row = DSCP_ROW.fullmatch(text)
        if row:
            qos = current(line)
            for dscp in (d for d in row.group(2).replace(" ", "").split(",") if d):
                value = decimal(dscp)
                if value is None or value > 63:
                    raise InputError(path, line.number, f"malformed mlnx_qos output: DSCP {dscp!r} is not 0-63",
                                     line.column)
                qos.dscp2prio[value] = decimal(row.group(1))
            qos.lines.setdefault("dscp2prio", at(path, line))
            continue
        enabled = ENABLED_ROW.fullmatch(text)
        dcb = DCB_PFC.fullmatch(text)
        if enabled or dcb:
            qos = current(line)
            if enabled:
                qos.pfc = [bit == "1" for bit in enabled.group(1).split()]
            else:
                states = dict(item.split(":") for item in dcb.group(1).split())
                qos.pfc = [states.get(str(p)) == "on" for p in range(8)]
            qos.lines["pfc"] = at(path, line)
            continue
        app = DCB_APP.fullmatch(text)
        if app:
            qos = current(line)
            for item in app.group(1).split():
                dscp, prio = (decimal(x) for x in item.split(":"))
                if dscp is not None and dscp <= 63:
                    qos.dscp2prio[dscp] = prio
            qos.lines.setdefault("dscp2prio", at(path, line))
            continue
        if "/sys/" in text and sysfs_line(sysfs, line, pending):
            continue
        if (PRIORITY_ROW.fullmatch(text) or BUFFER_ROW.fullmatch(text) or TC_LINE.fullmatch(text)
                or TC_PRIORITY.fullmatch(text) or SKPRIO.fullmatch(text) or ACCEPTED.fullmatch(text)
                or text.startswith("pfc-cap") or PROMPT.match(text)):
            continue
        raise malformed("mlnx_qos", path, line, EXPECTED)
    dump = sysfs.finish()
    result.ecn, result.traffic_classes = dump.ecn, dump.traffic_classes
    return result
