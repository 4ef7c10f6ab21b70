"""``ibv_devinfo`` (and ``-v``) into a PortsFile (output-formats.md section 4).

A block per device (``hca_id: mlx5_0``), device fields, an optional ``Device ports:`` heading
(MLNX_OFED), then ``port: N`` blocks with ``state: PORT_ACTIVE (4)``, ``max_mtu: 4096 (5)``,
``active_mtu: 1024 (3)``, ``link_layer: Ethernet``; ``-v`` adds capability fields, flag lists
continued on indented lines without a colon, ``active_speed``/``active_width`` and GID lines.
rdma-core (spaces) and MLNX_OFED (tabs) alignments and a flattened retyped variant
(``port_id``, no nesting) read alike: fields after ``port:`` belong to the port.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import IbPort, PortsFile
from topolint.model.facts import build
from topolint.model.numbers import decimal, unsigned_decimal
from topolint.parsers._lines import KEY_VALUE, PROMPT, at, lowered, malformed, numbered
from topolint.parsers.ibstat import normal_phys_state, normal_state

HCA = re.compile(r"hca_id:\s*(\S+)")
PORT = re.compile(r"port:\s*(\d+)")
GID_LINE = re.compile(r"GID\[\s*\d+\]:.*")  # -v lists the GID table; show_gids is where GIDs are read
FLAG = re.compile(r"[A-Z0-9_][A-Z0-9_ ]*|Unknown flags: 0x[0-9a-fA-F]+")
EXPECTED = "'hca_id: NAME', 'port: N' or 'key: value'"
NO_DEVICES = re.compile(r"(?:No IB devices found|Failed to get IB devices list.*)", re.I)
# active_speed "25.0 Gbps (32)" times the lanes of active_width "4X (2)" is the port's rate.
SPEED = re.compile(r"([0-9.]+)\s*Gbps\b.*")
WIDTH = re.compile(r"(\d+)X\b.*")


def parse_ibv_devinfo(source: SourceFile) -> PortsFile:
    path = source.path
    result = build(PortsFile, path=path, tool="ibv_devinfo", ports=[], failures=[])
    device: dict | None = None
    port: IbPort | None = None
    lanes: dict[int, tuple[float | None, int | None]] = {}
    seen: dict[tuple[str, int], int] = {}
    for line in numbered(source.text):
        header = HCA.fullmatch(line.text)
        if header:
            device, port = {"name": header.group(1)}, None
            continue
        if NO_DEVICES.fullmatch(line.text):
            result.failures.append(at(path, line))
            continue
        if device is None:
            if PROMPT.match(line.text) and "ibv_devinfo" in line.text:
                continue
            raise malformed("ibv_devinfo", path, line, EXPECTED)
        port_header = PORT.fullmatch(line.text)
        if port_header:
            number = decimal(port_header.group(1))
            if (device["name"], number) in seen:
                raise InputError(path, line.number, f"malformed ibv_devinfo output: {device['name']} lists port "
                                 f"{number} twice (first on line {seen[device['name'], number]})", line.column)
            seen[device["name"], number] = line.number
            port = build(IbPort, hca=device["name"], port=number, tool="ibv_devinfo", model=device.get("model"),
                         firmware=device.get("firmware"), system_guid=device.get("system_guid"),
                         loc=at(path, line), lines=dict(device.get("lines", {})))  # its model and firmware lines
            result.ports.append(port)
            continue
        pair = KEY_VALUE.fullmatch(line.text)
        if GID_LINE.fullmatch(line.text):
            continue
        if not pair:
            if FLAG.fullmatch(line.text):  # -v: a flag list continues on its own lines
                continue
            raise malformed("ibv_devinfo", path, line, EXPECTED)
        key, value = pair.group(1).strip().lower(), pair.group(2).strip()
        if key == "device ports":
            continue
        if port is None:
            if key == "vendor_part_id" and decimal(value) is not None:
                device["model"] = f"MT{decimal(value)}"
                device.setdefault("lines", {})["model"] = at(path, line)
            elif key == "fw_ver":
                device["firmware"] = value or None
                device.setdefault("lines", {})["firmware"] = at(path, line)
            elif key == "sys_image_guid":
                device["system_guid"] = "0x" + value.replace(":", "").lower() if value else None
            continue
        where = at(path, line)
        if key == "state":
            port.state, port.lines["state"] = normal_state(value), where
        elif key == "phys_state":
            port.phys_state, port.lines["phys_state"] = normal_phys_state(value), where
        elif key in ("active_mtu", "max_mtu"):
            setattr(port, key, decimal(value.split()[0]) if value else None)
            port.lines[key] = where
        elif key == "link_layer":
            port.link_layer, port.lines["link_layer"] = lowered(value), where
        elif key in ("port_lid", "port_id"):
            port.lid = decimal(value)
        elif key in ("active_speed", "active_width"):
            speed, width = lanes.get(id(port), (None, None))
            match = (SPEED if key == "active_speed" else WIDTH).fullmatch(value)
            if key == "active_speed":
                speed = unsigned_decimal(match.group(1)) if match else None
                port.lines["rate"] = where
            else:
                width = decimal(match.group(1)) if match else None
            lanes[id(port)] = (speed, width)
            if speed is not None and width is not None:
                port.rate_gbps = speed * width
    return result
