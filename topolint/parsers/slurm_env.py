"""Environment dumps of a Slurm job (``env | grep SLURM``, ``printenv``, ``declare -x``, a
script's ``export NODELIST=...``) into a HostOrder: the hosts of ``SLURM_JOB_NODELIST`` (else
``SLURM_NODELIST``, else a variable named ``*NODELIST``), expanded in order (model/hostlist.py),
with the ``SLURM_*`` values beside them. ``SLURM_TASKS_PER_NODE`` (``8(x2),4``) gives each
host's tasks. Lines that are not assignments (a function's body, a tool's own output) are
skipped: a dump is what the shell had, not a file written for topolint.
"""

from __future__ import annotations

from topolint.model.numbers import decimal

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build, location
from topolint.model.hostlist import Budget
from topolint.model.scheduler import HostEntries, HostOrder
from topolint.parsers._hostlists import hosts_kept
from topolint.parsers._lines import lines_of

ASSIGNMENT = re.compile(r"[ \t]*(?:export[ \t]+|declare[ \t]+-x[ \t]+)?([A-Za-z_][A-Za-z0-9_]{0,100})=(.*)$")
_LISTS = ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
_TASKS = re.compile(r"(\d{1,6})(?:\(x(\d{1,6})\))?$")
WHAT = "SLURM environment"
MAX_SETTINGS = 10_000


def nodelist_name(names) -> str | None:
    """The variable that holds the job's hosts, of the ``names`` a dump sets."""
    names = list(names)
    for wanted in _LISTS:
        if wanted in names:
            return wanted
    return next((name for name in names if name.endswith("NODELIST")), None)


def _unquoted(value: str) -> tuple[str, int]:
    value = value.rstrip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1], 1
    return value, 0


def parse_slurm_env(source: SourceFile) -> HostOrder:
    path = source.path
    settings: dict[str, tuple[str, int, int]] = {}
    for number, raw in enumerate(lines_of(source.text), start=1):
        match = ASSIGNMENT.match(raw)
        if match is None or not (match.group(1).startswith("SLURM_") or match.group(1).endswith("NODELIST")):
            continue
        value, quoted = _unquoted(match.group(2))
        if match.group(1) not in settings and len(settings) < MAX_SETTINGS:
            settings[match.group(1)] = (value, number, match.start(2) + 1 + quoted)
    name = nodelist_name(settings)
    if name is None:
        raise InputError(path, 1, f"malformed {WHAT}: no SLURM_JOB_NODELIST (or *NODELIST) assignment")
    value, number, column = settings[name]
    names, count = hosts_kept(value, path, number, column, Budget(), WHAT)
    if not count:
        raise InputError(path, number, f"malformed {WHAT}: {name} names no host", column)
    slots = _tasks(path, settings.get("SLURM_TASKS_PER_NODE"), count)
    loc = location(path, number, column)
    hosts = HostEntries(names, slots or None, loc, count=count)
    return build(HostOrder, path=path, kind=name, hosts=hosts,
                 settings={key: found[0] for key, found in settings.items()},
                 setting_locs={key: location(path, found[1], found[2]) for key, found in settings.items()})


def _tasks(path: str, found, hosts: int) -> list[int] | None:
    """``SLURM_TASKS_PER_NODE`` as one count per host, or None when absent or not for these hosts."""
    if found is None:
        return None
    value, number, column = found
    counts: list[int] = []
    for part in value.split(","):
        match = _TASKS.match(part.strip())
        if match is None:
            raise InputError(path, number, f"malformed {WHAT}: SLURM_TASKS_PER_NODE {value[:60]!r}: expected "
                                           "N or N(xM), comma-separated", column)
        repeat = decimal(match.group(2) or "1")
        if len(counts) + repeat > hosts:
            return None
        counts.extend([decimal(match.group(1))] * repeat)
    return counts if len(counts) == hosts else None
