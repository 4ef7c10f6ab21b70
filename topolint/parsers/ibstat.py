"""``ibstat`` and ``ibstatus`` into a PortsFile (output-formats.md section 3).

ibstat: a block per CA (``CA 'mlx5_0'``) with ``CA type:``, ``Firmware version:``..., then a
``Port N:`` block per port with ``State:``, ``Physical state:``, ``Rate:``, ``Link layer:``...
Indentation (tabs, 8/16 spaces, none) is not relied on: CA keys and port keys differ. Noise
lines are skipped: ``ibwarn:`` debug lines, and ``ibpanic:`` lines, which say the tool failed
for some device (kept as ``failures``). A shell prompt echoing the command is skipped.

ibstatus: ``Infiniband device 'mlx5_0' port 1 status:`` then ``state: 4: ACTIVE``,
``phys state: 5: LinkUp``, ``rate: 200 Gb/sec (4X HDR)``, ``link_layer: InfiniBand`` and
``default gid:`` (its first 64 bits are the IB subnet prefix).

A partial paste (cut after a complete line) is read as far as it goes.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import IbPort, PortsFile
from topolint.model.facts import build
from topolint.model.numbers import decimal, hex_int, unsigned_decimal
from topolint.parsers._lines import KEY_VALUE, PROMPT, Line, at, lowered, malformed, numbered

CA_HEADER = re.compile(r"CA '([^'\s]+)'")
PORT_HEADER = re.compile(r"Port (\d+):")
STATUS_HEADER = re.compile(r"Infiniband device '([^'\s]+)' port (\d+) status:")
NOISE = re.compile(r"(ibwarn|ibpanic|ibdebug|iberror):\s")
EXPECTED = "\"CA 'NAME'\", 'Port N:' or 'Key: value'"
STATUS_EXPECTED = "\"Infiniband device 'NAME' port N status:\" or 'key: value'"
CA_KEYS = {"ca type", "number of ports", "firmware version", "hardware version", "node guid", "system image guid"}
PORT_KEYS = {"state", "physical state", "rate", "base lid", "lmc", "sm lid", "capability mask", "port guid",
             "link layer"}
STATUS_KEYS = {"default gid", "base lid", "sm lid", "state", "phys state", "rate", "link_layer"}


def normal_state(text: str | None) -> str | None:
    """``Active``, ``4: ACTIVE``, ``PORT_ACTIVE (4)`` -> active; Initializing -> init."""
    if not text:
        return None
    word = re.sub(r"^\d+:\s*|\s*\(\d+\)$", "", text.strip()).lower()
    word = word.removeprefix("port_")
    return {"initializing": "init", "initialize": "init"}.get(word, word)


def normal_phys_state(text: str | None) -> str | None:
    if not text:
        return None
    return re.sub(r"^\d+:\s*|\s*\(\d+\)$", "", text.strip()).lower() or None


def _port(ca: dict, number: int, path: str, line: Line, tool: str) -> IbPort:
    return build(IbPort, hca=ca["name"], port=number, tool=tool, model=ca.get("model"), firmware=ca.get("firmware"),
                 system_guid=ca.get("system_guid"),
                 loc=at(path, line), lines=dict(ca.get("lines", {})))  # the CA's model and firmware lines


def parse_ibstat(source: SourceFile) -> PortsFile:
    text = source.text
    if STATUS_HEADER.search(text[:4096]) and not CA_HEADER.search(text[:4096]):
        return parse_ibstatus(source)
    path = source.path
    result = build(PortsFile, path=path, tool="ibstat", ports=[], failures=[])
    ca: dict | None = None
    port: IbPort | None = None
    seen: dict[tuple[str, int], int] = {}
    for line in numbered(text):
        if NOISE.match(line.text):
            if line.text.startswith("ibpanic"):
                result.failures.append(at(path, line))
            continue
        header = CA_HEADER.fullmatch(line.text)
        if header:
            ca, port = {"name": header.group(1)}, None
            continue
        if ca is None and PROMPT.match(line.text) and "ibstat" in line.text:
            continue
        if ca is None:
            raise malformed("ibstat", path, line, EXPECTED)
        port_header = PORT_HEADER.fullmatch(line.text)
        if port_header:
            number = decimal(port_header.group(1))
            key = (ca["name"], number)
            if key in seen:
                raise InputError(path, line.number, f"malformed ibstat output: CA {ca['name']} lists Port {number} "
                                 f"twice (first on line {seen[key]})", line.column)
            seen[key] = line.number
            port = _port(ca, number, path, line, "ibstat")
            result.ports.append(port)
            continue
        pair = KEY_VALUE.fullmatch(line.text)
        if not pair:
            raise malformed("ibstat", path, line, EXPECTED)
        key, value = pair.group(1).lower(), pair.group(2).strip()
        if port is not None and key in PORT_KEYS:
            _port_field(port, key, value, path, line)
        elif key in CA_KEYS:
            if port is not None:  # a CA key after a port: the paste lost the next CA's header
                raise malformed("ibstat", path, line, f"'Port N:' or a port field in CA {ca['name']}")
            if key == "ca type":
                ca["model"] = value or None
                ca.setdefault("lines", {})["model"] = at(path, line)
            elif key == "firmware version":
                ca["firmware"] = value or None
                ca.setdefault("lines", {})["firmware"] = at(path, line)
            elif key == "system image guid":
                ca["system_guid"] = value.lower() or None
        # Other keys (newer ibstat versions add some) are kept out of the facts but accepted.
    return result


def _port_field(port: IbPort, key: str, value: str, path: str, line: Line) -> None:
    where = at(path, line)
    if key == "state":
        port.state, port.lines["state"] = normal_state(value), where
    elif key == "physical state":
        port.phys_state, port.lines["phys_state"] = normal_phys_state(value), where
    elif key == "rate":
        port.rate_gbps, port.lines["rate"] = unsigned_decimal(value), where
    elif key == "base lid":
        port.lid = decimal(value)
    elif key == "link layer":
        port.link_layer, port.lines["link_layer"] = lowered(value), where
    elif key == "port guid":
        guid = value.lower().removeprefix("0x")
        if re.fullmatch(r"[0-9a-f]{1,16}", guid) and guid.strip("0"):  # an all-zero GUID names no port
            port.port_guid, port.lines["port_guid"] = guid.rjust(16, "0"), where


_RATE = re.compile(r"([0-9.]+)\s*Gb/sec\b.*")


def parse_ibstatus(source: SourceFile) -> PortsFile:
    path = source.path
    result = build(PortsFile, path=path, tool="ibstatus", ports=[], failures=[])
    port: IbPort | None = None
    for line in numbered(source.text):
        header = STATUS_HEADER.fullmatch(line.text)
        if header:
            port = _port({"name": header.group(1)}, decimal(header.group(2)), path, line, "ibstatus")
            result.ports.append(port)
            continue
        if port is None and PROMPT.match(line.text) and "ibstatus" in line.text:
            continue
        pair = KEY_VALUE.fullmatch(line.text)
        if port is None or not pair:
            raise malformed("ibstatus", path, line, STATUS_EXPECTED)
        key, value = pair.group(1).lower(), pair.group(2).strip()
        if key in ("state", "phys state", "link_layer"):  # ibstat's fields under other names
            _port_field(port, {"phys state": "physical state", "link_layer": "link layer"}.get(key, key), value,
                        path, line)
        elif key == "rate":
            rate = _RATE.fullmatch(value)
            port.rate_gbps, port.lines["rate"] = (unsigned_decimal(rate.group(1)) if rate else None), at(path, line)
        elif key == "base lid":
            port.lid = hex_int(value)
        elif key == "default gid":
            groups = value.split(":")
            if len(groups) == 8 and all(hex_int(g) is not None for g in groups):
                port.subnet_prefix = ":".join(g.lower().zfill(4) for g in groups[:4])
    return result
