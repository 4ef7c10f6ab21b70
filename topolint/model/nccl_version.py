"""What depends on the NCCL version: path-type order, GDR level default, XML limits.

Path types are stored by name, never by NCCL's numbers, which changed across versions
(nccl-formats.md 1.5); only their order matters here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NEWEST = "2.30.7"

# Order at 2.28 and later; 2.27 had P2C after PXN; before 2.26 there was no C2C, before 2.27 no P2C.
_ORDER_HEAD = ["LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"]
_ORDER_227 = ["LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS"]
# nvidia-smi names mapped onto NCCL's (NODE is PHB to NCCL; SOC is the old SYS).
ALIASES = {"NODE": "PHB", "SOC": "SYS", "NV": "NVL"}
_RANK_HEAD = {name: i for i, name in enumerate(_ORDER_HEAD)}
_RANK_227 = {name: i for i, name in enumerate(_ORDER_227)}
for _alias, _name in ALIASES.items():
    _RANK_HEAD[_alias], _RANK_227[_alias] = _RANK_HEAD[_name], _RANK_227[_name]


class VersionError(ValueError):
    pass


@dataclass(frozen=True, order=True)
class NcclVersion:
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> "NcclVersion":
        match = re.fullmatch(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?\s*", text or "")
        if not match:
            raise VersionError(f"invalid NCCL version {text!r}: expected MAJOR.MINOR[.PATCH], e.g. 2.27.7")
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def at_least(self, minor: int, patch: int = 0) -> bool:
        return (self.major, self.minor, self.patch) >= (2, minor, patch)

    @property
    def path_order(self) -> list[str]:
        return _ORDER_227 if (self.major, self.minor) == (2, 27) else _ORDER_HEAD

    def rank(self, path_type: str) -> int:
        table = _RANK_227 if (self.major, self.minor) == (2, 27) else _RANK_HEAD
        try:
            return table[path_type]
        except KeyError:
            raise ValueError(f"{path_type!r} is not a path type") from None

    def at_most(self, path_type: str, level: str) -> bool:
        """True when ``path_type`` is ``level`` or closer."""
        return self.rank(path_type) <= self.rank(level)

    @property
    def has_pxn(self) -> bool:
        return self.at_least(12)

    @property
    def has_p2c(self) -> bool:
        return self.at_least(27)

    @property
    def default_gdr_level(self) -> str:
        """NCCL_NET_GDR_LEVEL when unset: P2C from 2.27 (NCCL_NET_GDR_C2C=1 by default), else PXB."""
        return "P2C" if self.has_p2c else "PXB"

    @property
    def max_xml_nodes(self) -> int:
        return 256 if self.at_least(21) else 1024

    @property
    def max_xml_children(self) -> int:
        if self.at_least(29, 7):
            return 640
        return 128 if self.at_least(21) else 32

    @property
    def knows_pcie_suffix(self) -> bool:
        """The "16.0 GT/s PCIe" spellings are in NCCL's speed dictionary since 2.11.4."""
        return self.at_least(11, 4)

    # ---- the IB/RoCE transport (src/transport/net_ib.cc; net_ib/connect.cc from 2.28) -------------
    @property
    def gid_index_auto(self) -> bool:
        """NCCL_IB_GID_INDEX unset selects a GID itself from 2.21 (default -1, ``ncclIbGetGidIndex``
        scans the table for the address family and RoCE version); up to 2.20 the default is 0."""
        return self.at_least(21)

    @property
    def ib_tc_follows_comm(self) -> bool:
        """From 2.26 NCCL_IB_TC and NCCL_IB_SL default to -1: the communicator's trafficClass
        applies when set (``meta.tc = ncclParamIbTc() != -1 ? ... : config->trafficClass``), else 0
        (NCCL_IB_TC_DEFAULT / NCCL_IB_SL_DEFAULT). Up to 2.25 both default to 0."""
        return self.at_least(26)

    @property
    def has_ib_fifo_tc(self) -> bool:
        """NCCL_IB_FIFO_TC (the class of the control messages, the CTS FIFO writes) exists from
        2.22; from 2.24 its default -1 means "the data traffic class"."""
        return self.at_least(22)
    @property
    def has_nvls(self) -> bool:
        """NVLink SHARP (NVLS) all-reduce: NCCL 2.17 and later."""
        return self.at_least(17)

    @property
    def has_nvls_tree(self) -> bool:
        """NVLSTree (NVLS in the node, trees between nodes): NCCL 2.18 and later."""
        return self.at_least(18)

    @property
    def has_pat(self) -> bool:
        """PAT (parallel aggregated trees) for allgather/reducescatter, one GPU per node: NCCL 2.23 and later."""
        return self.at_least(23)

    def gdr_read_needs_nvlink_peer(self, sm: int | None) -> bool:
        """With NCCL_NET_GDR_READ unset (-2), ncclTopoCheckGdr enables GDR reads (sends) only for a
        GPU that has an NVLink peer or is alone; from 2.19.1 that applies only before Ampere
        (``gdrReadParam < 0 && gpu->gpu.cudaCompCap < 80``; src/graph/paths.cc, absent at v2.18.6-1)."""
        return not self.at_least(19, 1) or (sm or 0) < 80
