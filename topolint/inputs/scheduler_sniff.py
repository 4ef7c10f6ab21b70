"""Detectors for the scheduler's inputs (model/scheduler.py): Slurm topology.conf and
topology.yaml, MPI hostfiles and node lists, SLURM environment dumps, Kubernetes node labels.

By content, except a hostfile that names hosts alone (one a line, no ``slots=`` or ``:N``): any
list of words looks like one, so only a file named like a hostfile (``hostfile``, ``machinefile``,
``nodelist``, ``hosts.txt``) is read as one. Each detector reads the head of the file.
"""

from __future__ import annotations

import re

from topolint.model.scheduler import K8S_NODES, MPI_HOSTFILE, SLURM_ENV, TOPOLOGY_CONF, TOPOLOGY_YAML

_HEAD = 8192
_CONF_LINE = re.compile(r"(?i)(?:SwitchName|BlockName|BlockSizes)=\S")
_YAML_ENTRY = re.compile(r"^-[ \t]+topology:[ \t]*\S", re.M)
_YAML_KIND = re.compile(r"^[ \t]+(?:tree|block|flat):", re.M)
_NODELIST = re.compile(r"^[ \t]*(?:export[ \t]+|declare[ \t]+-x[ \t]+)?(?:SLURM_JOB_NODELIST|SLURM_NODELIST|[A-Z_]*NODELIST)=\S",
                       re.M)
_HOSTFILE_NAME = re.compile(r"(?i)(?:host|machine|node)[-_.]?(?:file|list|s)\b|^hosts?(?:[-_.].*)?$")


def _content_lines(head: str, count: int) -> list[str]:
    lines = []
    for raw in head.splitlines():
        text = raw.split("#", 1)[0].strip()
        if text:
            lines.append(text)
            if len(lines) == count:
                break
    return lines


def _topology_conf(head: str) -> bool:
    lines = _content_lines(head, 1)
    return bool(lines) and bool(_CONF_LINE.match(lines[0]))


def _topology_yaml(head: str) -> bool:
    return bool(_YAML_ENTRY.search(head)) and bool(_YAML_KIND.search(head))


def _slurm_env(head: str) -> bool:
    """Assignments first, one of them a node list; a file that sets NCCL variables is a config
    file a script sources (config_names.export_file), never a dump."""
    if head.startswith("#!") or "#SBATCH" in head or "NCCL_" in head or not _NODELIST.search(head):
        return False
    from topolint.parsers.slurm_env import ASSIGNMENT

    first = [line for line in head.splitlines() if line.strip() and not line.lstrip().startswith("#")][:3]
    return bool(first) and all(ASSIGNMENT.match(line) for line in first)


def _hostfile(head: str, named: bool) -> bool:
    from topolint.parsers.mpi_hostfile import hostfile_line

    lines = _content_lines(head, 50 if named else 10)
    if not lines or not all(hostfile_line(line) for line in lines):
        return False
    counted = any("slots=" in line.lower() or re.search(r":\d+(?::\S+)?$", line) for line in lines)
    return counted or named


def scheduler_format(text: str, name: str | None = None) -> str | None:
    """The scheduler format of ``text`` (a file named ``name`` when known), or None."""
    head = text[:_HEAD]
    if _topology_conf(head):
        return TOPOLOGY_CONF
    if _topology_yaml(head):
        return TOPOLOGY_YAML
    from topolint.parsers.k8s_nodes import kind_of

    if kind_of(head):
        return K8S_NODES
    if _slurm_env(head):
        return SLURM_ENV
    base = name.replace("\\", "/").rsplit("/", 1)[-1] if name else ""
    if _hostfile(head, bool(base) and bool(_HOSTFILE_NAME.search(base))):
        return MPI_HOSTFILE
    return None


MALFORMED = ("malformed topology.conf", "malformed topology.yaml", "malformed hostfile",
             "malformed SLURM environment", "malformed Kubernetes node labels")
