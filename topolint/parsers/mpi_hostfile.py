"""MPI hostfiles and node lists into a HostOrder: the hosts of a job in the order given.

- Open MPI / DeepSpeed: ``host [slots=N] [max_slots=M]``, one host a line;
- MPICH / Intel MPI (Hydra): ``host:N`` (N ranks on the host), or one line per rank;
- a node list: hostlist expressions (``gpu[001-004],gpu010``), one or several a line.

``#`` starts a comment. Under block mapping (Open MPI's default ``--map-by slot``, Hydra's
default) ranks fill a host's slots before the next host, so the nodes' order by lowest rank is
the order the hosts first appear (fleet/rank_order.py says which mapping it assumed).
"""

from __future__ import annotations

from topolint.model.numbers import decimal

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build
from topolint.model.hostlist import Budget
from topolint.model.scheduler import HostEntries, HostOrder
from topolint.parsers._hostlists import hosts_at
from topolint.parsers._lines import lines_of

HOST = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,252}"
_OPTION = re.compile(r"(slots|max[_-]slots|max-slots|cpu|port|ifhn|user)=(\S+)$", re.I)
_COLON = re.compile(rf"({HOST}):(\d{{1,6}})(?::\S+)?$")
_HOST = re.compile(HOST + r"$")
_EXPRESSION = re.compile(r"[A-Za-z0-9_.\[\],-]+$")
WHAT = "hostfile"


def hostfile_line(text: str) -> bool:
    """Whether one comment-free, stripped line is hostfile syntax (the sniffer asks)."""
    words = text.split()
    if len(words) > 1:
        return bool(_HOST.match(words[0])) and all(_OPTION.match(word) for word in words[1:])
    return bool(_COLON.match(text) or _HOST.match(text) or ("[" in text and _EXPRESSION.match(text)))


def parse_hostfile(source: SourceFile) -> HostOrder:
    path = source.path
    budget = Budget()
    hosts = HostEntries([], path=path)
    listed = False
    for number, raw in enumerate(lines_of(source.text), start=1):
        body = raw.split("#", 1)[0]
        text = body.strip()
        if not text:
            continue
        column = len(body) - len(body.lstrip()) + 1
        words = text.split()
        colon = _COLON.match(text)
        if len(words) > 1:
            hosts.add(_host(path, number, column, words[0]), _slots(path, number, body, words[1:]), number, column)
        elif colon:
            hosts.add(colon.group(1), decimal(colon.group(2)), number, column)
        elif _HOST.match(text):
            hosts.add(text, None, number, column)
        elif _EXPRESSION.match(text):
            listed = True
            for name in hosts_at(text, path, number, column, budget, WHAT):
                if not _HOST.match(name):
                    raise InputError(path, number, f"malformed {WHAT}: {name[:60]!r} is not a host name", column)
                hosts.add(name, None, number, column)
        else:
            raise InputError(path, number, f"malformed {WHAT}: expected 'host [slots=N]', 'host:N' or a hostlist; "
                                           f"found {text[:60]!r}", column)
    if not hosts:
        raise InputError(path, 1, f"malformed {WHAT}: no host")
    return build(HostOrder, path=path, kind="node list" if listed else "hostfile", hosts=hosts)


def _host(path: str, number: int, column: int, word: str) -> str:
    if not _HOST.match(word):
        raise InputError(path, number, f"malformed {WHAT}: {word[:60]!r} is not a host name", column)
    return word


def _slots(path: str, number: int, body: str, words: list[str]) -> int | None:
    slots = None
    for word in words:
        match = _OPTION.match(word)
        if match is None:
            raise InputError(path, number, f"malformed {WHAT}: expected key=value after the host; found "
                                           f"{word[:60]!r}", body.find(word) + 1)
        if match.group(1).lower() == "slots":
            if not match.group(2).isdigit() or not match.group(2).isascii() or len(match.group(2)) > 6:
                raise InputError(path, number, f"malformed {WHAT}: slots={match.group(2)[:20]!r} is not a count",
                                 body.find(word) + 7)
            slots = decimal(match.group(2))
    return slots
