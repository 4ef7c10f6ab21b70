"""``topolint collect`` rows that run once per network interface: ``{netdev}`` (each interface of
the bundle's ``ip -j addr`` output except loopback and virtual ones) or ``{rdma_netdev}`` (each
netdev ``ibdev2netdev`` maps an RDMA port to). The outputs go into the row's one file, each after a
``$ COMMAND`` line, which the fabric parsers read as the interface's header (mlnx_qos, dcb) or
skip (ethtool prints its own ``Settings for IF:``)."""

from __future__ import annotations

import re
from pathlib import Path

from topolint.inputs.source import InputError, SourceFile

PLACEHOLDERS = ("{netdev}", "{rdma_netdev}")
MAX_INTERFACES = 64  # a node with more is a container host; the fabric is among the first
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,31}")  # IFNAMSIZ, and never an option


def interfaces(folder: Path, placeholder: str) -> list[str]:
    """The interface names a placeholder stands for, from files earlier rows wrote."""
    from topolint.model.fabric import virtual_interface

    if placeholder == "{rdma_netdev}":
        from topolint.parsers.ibdev2netdev import parse_ibdev2netdev as parse
        file, pick = "ibdev2netdev.txt", lambda facts: [link.netdev for link in facts.links if link.netdev]
    else:
        from topolint.parsers.ip_addr import parse_ip_addr as parse
        file = "ip-addr.json"
        pick = lambda facts: [i.name for i in facts.interfaces if not virtual_interface(i.name)]  # noqa: E731
    try:
        text = (folder / file).read_text(encoding="utf-8", errors="replace")
        names = pick(parse(SourceFile(file, text)))
    except (OSError, InputError):
        return []
    unique = list(dict.fromkeys(n for n in names if _SAFE_NAME.fullmatch(n)))
    return unique[:MAX_INTERFACES]


def run_each(command, folder: Path, timeout_scale: float, grace: float | None = None):
    """(argv as written, Outcome) of one row run once per interface, all outputs in one file. The
    file is capped as a whole at collect's STDOUT_CAP (what check reads of one input; 64
    interfaces of a capped output each were 64 times that): an output that would pass it is left
    out whole, like a cut one, and the manifest marks the file truncated."""
    from topolint.commands import collect
    from topolint.commands.collect import GRACE, Outcome, run_command

    placeholder = next(p for p in PLACEHOLDERS if any(p in a for a in command.argv))
    names = interfaces(folder, placeholder)
    if not names:
        source = "ibdev2netdev" if placeholder == "{rdma_netdev}" else "ip -j addr"
        return list(command.argv), Outcome("skipped", message=f"no interfaces known ({source} gave none)")
    target = folder / command.file
    outcomes, seconds, cap, kept, read, left_out = [], 0.0, collect.STDOUT_CAP, 0, 0, []
    with target.open("w", encoding="utf-8") as out:
        for name in names:
            argv = [name if a == placeholder else a.replace(placeholder, name) for a in command.argv]
            part = folder / f".{command.file}.part"
            outcome = run_command(argv, part, command.timeout * timeout_scale, command.ok_exit,
                                  grace=GRACE if grace is None else grace)
            seconds += outcome.seconds
            outcomes.append((name, outcome))
            if part.is_file() and "stdout" not in (outcome.truncated or {}):  # a cut output is no evidence
                text = f"$ {' '.join(argv)}\n" + part.read_text(encoding="utf-8", errors="replace")
                size = len(text.encode("utf-8"))
                read += size
                if kept + size <= cap:
                    out.write(text)
                    kept += size
                else:
                    left_out.append(name)
            part.unlink(missing_ok=True)
    truncated = {f"{n} {stream}": size for n, o in outcomes for stream, size in (o.truncated or {}).items()}
    if left_out:
        truncated["file"] = {"kept": kept, "read": read}
    found = {"truncated": truncated or None,
             "left_running": [p for _, o in outcomes for p in o.left_running or ()] or None}
    good = [o for _, o in outcomes if o.status == "ok"]
    bad = [(n, o) for n, o in outcomes if o.status != "ok"]
    notes = [f"{n}: {o.status}" + (f" ({o.message})" if o.message else "") for n, o in bad]
    if left_out:
        notes.append(f"{', '.join(left_out)}: left out, the file would pass the {cap}-byte cap")
    message = "; ".join(notes) or None
    if good:
        return list(command.argv), Outcome("ok", 0, round(seconds, 3), message, **found)
    if not target.stat().st_size:
        target.unlink()
    first = bad[0][1]
    return list(command.argv), Outcome(first.status, first.exit_code, round(seconds, 3), message, **found)
