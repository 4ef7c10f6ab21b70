"""Reading entity ids back: kind, name and a label for people (rule-catalog.md's one grammar).

Hardware: ``NODE/gpu/BUSID``, ``NODE/nic/HCA:PORT``, ``NODE/netdev/NAME``, ``NODE/pci/BUSID``,
``NODE/cpu/NUMAID``, ``NODE/file/PATH``, ``NODE/system``. Settings in config files:
``env/VAR@FILE#SCOPE``, ``launch/KIND@FILE#SCOPE``, ``container/SCOPE@FILE``. The builders are
in model/node.py and model/config.py; reporters use this to name entities (SARIF kinds, links).
"""

from __future__ import annotations

from dataclasses import dataclass

NODE_KINDS = ("gpu", "nic", "netdev", "pci", "cpu", "file")
SETTING_KINDS = ("env", "launch", "container")
_LABELS = {"gpu": "GPU {}", "nic": "NIC {}", "netdev": "netdev {}", "pci": "PCI {}", "file": "{}",
           "env": "{}", "launch": "{}", "container": "container {}"}


@dataclass(frozen=True)
class EntityRef:
    kind: str  # one of NODE_KINDS, SETTING_KINDS, "system", or "entity" for an id of no known shape
    name: str  # the id within its kind: a bus id, HCA:port, variable name, path
    scope: str  # the node, or FILE#SCOPE / FILE for settings

    @property
    def label(self) -> str:
        """Short and readable: ``GPU 0000:9a:00.0``, ``NIC mlx5_0:1``, ``NUMA 1``, ``NCCL_IB_HCA``."""
        if self.kind == "cpu":
            return f"NUMA {self.name}" if self.name.isdigit() else f"CPU {self.name}"
        if self.kind == "system":
            return f"system {self.scope}"
        return _LABELS.get(self.kind, "{}").format(self.name)


def parse_entity(entity: str) -> EntityRef:
    head, _, rest = entity.partition("/")
    if head in SETTING_KINDS and "@" in rest and rest.split("/", 1)[0] not in (*NODE_KINDS, "system"):
        # (a node may be named "env": env/gpu/BUSID is hardware). Scopes may hold "/", names no "@".
        name, _, where = rest.partition("@")
        return EntityRef(head, name, where)
    kind, _, name = rest.partition("/")
    if kind in NODE_KINDS and name:
        return EntityRef(kind, name, head)
    if kind == "system" and not name:
        return EntityRef("system", head, head)
    return EntityRef("entity", entity, "")
