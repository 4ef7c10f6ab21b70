"""What depends on the NCCL version: one table of behaviours (BEHAVIOURS), each row citing the
NCCL file and function it comes from, plus XML limits.

Path types are stored by name, never by NCCL's numbers, which changed across versions
(nccl-formats.md 1.5); only their order matters here. Every row is held to NCCL's own code by
tests/test_oracle.py (answers of NCCL's src/graph code built per release tag).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from topolint.model.numbers import decimal

NEWEST = "2.30.7"

_ORDER_HEAD = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")
# nvidia-smi names mapped onto NCCL's (NODE is PHB to NCCL; SOC is the old SYS).
ALIASES = {"NODE": "PHB", "SOC": "SYS", "NV": "NVL"}
_MISSING = object()
_BEHAVIOUR_CACHE: dict = {}


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
        parts = [decimal(part) for part in match.groups("0")] if match else [None]
        if None in parts:  # no match, or a part of more digits than any version has
            raise VersionError(f"invalid NCCL version {text!r}: expected MAJOR.MINOR[.PATCH], e.g. 2.27.7")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def at_least(self, minor: int, patch: int = 0) -> bool:
        return (self.major, self.minor, self.patch) >= (2, minor, patch)

    def behaviour(self, name: str):
        """The value of one row of BEHAVIOURS for this version (the newest row not after it)."""
        key = (self.major, self.minor, self.patch, name)
        value = _BEHAVIOUR_CACHE.get(key, _MISSING)
        if value is _MISSING:
            value = _BEHAVIOUR_CACHE[key] = self._behaviour(name)
        return value

    def _behaviour(self, name: str):
        value = _MISSING
        for row in _ROWS_BY_NAME[name]:
            if self >= row.since:
                value = row.value
        if value is _MISSING:
            raise KeyError(f"no {name} row for NCCL {self}")
        return value

    @property
    def path_order(self) -> list[str]:
        return list(self.behaviour("path_order"))

    def rank(self, path_type: str) -> int:
        """A path type's place in this version's order (lower is closer). Remembered per version:
        the placement rules ask it for every GPU-NIC pair of every node."""
        try:
            return self.__dict__["_ranks"][path_type]
        except KeyError:  # kept beside the frozen fields, so never compared nor hashed
            rank = self.__dict__.setdefault("_ranks", {})[path_type] = self._rank(path_type)
            return rank

    def _rank(self, path_type: str) -> int:
        name = ALIASES.get(path_type, path_type)
        order = self.behaviour("path_order")
        if name in order:
            return order.index(name)
        if name in _ORDER_HEAD:  # a type this version lacks (C2C, P2C) sorts where HEAD puts it
            return order.index(_ORDER_HEAD[_ORDER_HEAD.index(name) + 1]) - 0.5
        raise ValueError(f"{path_type!r} is not a path type")

    def nvlink_bw(self, sm: int) -> float:
        """ncclTopoNVLinkBw (src/graph/topo.h): per-link GB/s by compute capability."""
        table = self.behaviour("nvlink_bw")
        if sm >= 100 and 100 in table:
            return table[100]
        if sm >= 90:
            return table[90]
        if sm == 86:
            return table[86]
        if sm >= 80:
            return table[80]
        if sm >= 70:
            return table[70]
        if sm >= 60:
            return table[60]
        return table[80]

    def intel_cpu_model(self, family: int, model: int) -> str:
        """ncclTopoAddCpu: the Intel generation that sets the inter-socket bandwidth."""
        for min_model, name in self.behaviour("intel_models"):
            if family == 6 and model >= min_model:
                return name
        return "BDW"

    def nic_id(self, numa: int, bus: int):
        """The id NCCL gives a NIC node: PCI functions of one device merge before 2.26."""
        return (numa, bus) if self.behaviour("nic_id_by_numa") else bus & ~0xF

    def p2p_level(self, arch, vendor, gpu_count: int, rank_of) -> int:
        """ncclTopoCheckP2p's default level (before NCCL_P2P_LEVEL)."""
        if self.behaviour("p2p_default") == "sys_unless_intel_arm":
            return rank_of("PXB") if arch == "ARM" or (arch == "X86" and vendor in ("INTEL", "ZHAOXIN")) \
                else rank_of("SYS")
        if arch == "X86" and vendor == "AMD" and gpu_count <= 2:
            return rank_of("SYS")
        return rank_of("PXB")

    @property
    def levels_old_to_new(self) -> list[str]:
        """ncclGetLevel's old numeric levels (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS)."""
        return ["LOC", "PIX", "PXB", "PHB", "SYS", "SYS"]

    @property
    def max_channels(self) -> int:
        return self.behaviour("max_channels")

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
        """NCCL_NET_GDR_LEVEL when unset: P2C where ncclTopoCheckGdr uses it (2.29.2+); before that
        PXB, with P2C paths read as C2C on 2.27-2.28 (so P2C passes too)."""
        return "P2C" if self.behaviour("gdr_level") == "p2c_if_gdr_c2c" else "PXB"

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
        return any(s.endswith("PCIe") for s, _ in self.behaviour("pci_speeds"))

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
        GPU that has an NVLink peer or is alone; from 2.19 that applies only before Ampere
        (``gdrReadParam < 0 && gpu->gpu.cudaCompCap < 80``, src/graph/paths.cc: first in v2.19.1-1,
        absent at v2.18.6-1; BEHAVIOURS row gdr_read_sm80)."""
        return not self.behaviour("gdr_read_sm80") or (sm or 0) < 80

    @property
    def nvls_efficiency_tuning(self) -> bool:
        """NCCL's tuning model prices NVLS with per-architecture efficiency factors and caps
        NVLSTree per channel from 2.28 (src/graph/tuning.cc nvlsEfficiency, perChMaxNVLSTreeBws);
        before, NVLS took min(bwIntra, bwInter) per channel and a 5/6 bus-to-algorithm ratio."""
        return self.at_least(28)

@dataclass(frozen=True)
class Behaviour:
    name: str
    since: NcclVersion  # the first release with this value (release tags, "-1" dropped)
    value: object
    nccl: str  # NCCL file and function
    what: str


def _row(name: str, since: str, value, nccl: str, what: str) -> Behaviour:
    return Behaviour(name, NcclVersion.parse(since), value, nccl, what)


_PCI_SPEEDS_OLD = (("2.5 GT/s", 15), ("5 GT/s", 30), ("8 GT/s", 60), ("16 GT/s", 120))
_PCI_SPEEDS_SUFFIX = (("2.5 GT/s PCIe", 15), ("5.0 GT/s PCIe", 30), ("8.0 GT/s PCIe", 60), ("16.0 GT/s PCIe", 120),
                      ("32.0 GT/s PCIe", 240), ("64.0 GT/s PCIe", 480))
_NVL_BW = {60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.0}

BEHAVIOURS: tuple[Behaviour, ...] = (
    _row("path_order", "2.0", ("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS"),
         "src/include/graph.h PATH_* (topoPathTypeStr)", "no C2C, no P2C"),
    _row("path_order", "2.26.0", ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS"),
         "src/include/graph.h PATH_C2C", "C2C after NVB"),
    _row("path_order", "2.27.0", ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS"),
         "src/include/graph.h PATH_P2C", "2.27.3: P2C after PXN"),
    _row("path_order", "2.27.5", _ORDER_HEAD, "src/include/graph.h PATH_P2C", "P2C before PXN from 2.27.5"),
    _row("set_paths_type_first", "2.0", False, "src/graph/paths.cc ncclTopoSetPaths",
         "a path is replaced when it is no longer in hops and has more bandwidth"),
    _row("set_paths_type_first", "2.30.7", True, "src/graph/paths.cc ncclTopoSetPaths",
         "better type first, then bandwidth, then fewer hops"),
    _row("reverse_link_same_type", "2.0", False, "src/graph/paths.cc ncclTopoSetPaths",
         "the reverse link is any link back to the node"),
    _row("reverse_link_same_type", "2.19.0", True, "src/graph/paths.cc ncclTopoSetPaths",
         "the reverse link must have the same type (a one-sided <pcilink> fails the load)"),
    _row("nvlink_bw", "2.0", {60: 18.0, 70: 22.0, 80: 22.0, 86: 12.0, 90: 22.0}, "src/graph/topo.h ncclTopoNVLinkWidth",
         "SM70 and SM80 (and later) 22.0 GB/s per link"),
    _row("nvlink_bw", "2.18.0", _NVL_BW, "src/graph/topo.h ncclTopoNVLinkBw", "SM70, SM80, SM90 20.0 GB/s per link"),
    _row("nvlink_bw", "2.20.0", {**_NVL_BW, 90: 20.6}, "src/graph/topo.h SM90_NVLINK_BW", "SM90 20.6"),
    _row("nvlink_bw", "2.25.0", {**_NVL_BW, 90: 20.6, 100: 40.0}, "src/graph/topo.h SM100_NVLINK_BW",
         "SM100 40.0 (first in v2.25.1-1)"),
    _row("nvlink_bw", "2.27.5", {**_NVL_BW, 90: 20.6, 100: 40.1}, "src/graph/topo.h SM100_NVLINK_BW", "SM100 40.1"),
    _row("intel_models", "2.0", ((0x55, "SKL"),), "src/graph/topo.cc ncclTopoAddCpu",
         "Skylake and later 10 GB/s, older 6"),
    _row("intel_models", "2.26.0", ((0xCF, "ERP"), (0x8F, "SRP"), (0x55, "SKL")), "src/graph/topo.cc ncclTopoAddCpu",
         "Emerald Rapids 40 GB/s, Sapphire Rapids 22"),
    _row("skl_inter_cpu_bw", "2.0", 9.0, "src/graph/topo.h SKL_QPI_WIDTH", "Skylake and later 9 GB/s"),
    _row("skl_inter_cpu_bw", "2.18.0", 10.0, "src/graph/topo.h SKL_QPI_BW", "Skylake and later 10 GB/s"),
    _row("amd_inter_cpu_bw", "2.0", 5000.0, "src/graph/topo.cc ncclTopoGetInterCpuBw", "AMD: LOC_BW"),
    _row("amd_inter_cpu_bw", "2.19.0", 16.0, "src/graph/topo.cc ncclTopoGetInterCpuBw AMD_BW", "AMD 16 GB/s"),
    _row("pci_speeds", "2.0", _PCI_SPEEDS_OLD, "src/graph/topo.cc kvDictPciGen",
         "first prefix match wins; unknown strings are Gen3 (60)"),
    _row("pci_speeds", "2.11.4", _PCI_SPEEDS_OLD + _PCI_SPEEDS_SUFFIX, "src/graph/topo.cc kvDictPciGen",
         "the kernel 5.7+ spellings (\"16.0 GT/s PCIe\")"),
    _row("pci_speeds", "2.12.12", _PCI_SPEEDS_OLD + (("32 GT/s", 240),) + _PCI_SPEEDS_SUFFIX,
         "src/graph/topo.cc kvDictPciGen", "\"32 GT/s\" (kernel 5.6 and earlier) from 2.12.12"),
    _row("pci_link_read_first", "2.0", False, "src/graph/topo.cc ncclTopoAddPci",
         "link_width/link_speed read only for a device NCCL keeps"),
    _row("pci_link_read_first", "2.30.3", True, "src/graph/topo.cc ncclTopoAddPci",
         "link_width/link_speed read for every <pci>"),
    _row("gpu_dev_node", "2.0", False, "src/graph/topo.cc ncclTopoAddPci", "one GPU per <pci> (the first <gpu>)"),
    _row("gpu_dev_node", "2.30.3", True, "src/graph/topo.cc ncclTopoAddGpuSub", "DEV nodes: every <gpu> child"),
    _row("gpu_id_per_dev", "2.0", False, "src/graph/topo.cc ncclTopoAddPci",
         "a GPU's id is its bus id: two GPUs on one bus id share a path slot (paths.cc getPath)"),
    _row("gpu_id_per_dev", "2.30.7", True, "src/graph/topo.cc ncclTopoAddGpuSub NCCL_TOPO_GPU_LOCAL_ID",
         "a GPU on an existing DEV node gets id (busId, nGpus) and a LOC link to that DEV"),
    _row("dev_node_type", "2.0", None, "src/graph/topo.h", "no DEV nodes: a GPU is linked as itself (type 0)"),
    _row("dev_node_type", "2.30.3", 7, "src/graph/topo.h DEV",
         "a GPU is linked through its DEV node, type 7 in WARN texts (GIN is 6)"),
    _row("dev_node_type", "2.30.7", 8, "src/graph/topo.h DEV", "DEV is type 8 (RMA took 7)"),
    _row("gpu_link_missing_warn", "2.0",
         ("Add NVLink error : could not find GPU {id:x}", "Add NVLink error : could not find GPU {id:x}"),
         "src/graph/topo.cc ncclTopoAddNvLinks ncclTopoAddC2c",
         "the WARN when no GPU has the bus id of a <gpu>'s parent (<nvlink>, <c2c>: one text, the bus id in hex)"),
    _row("gpu_link_missing_warn", "2.30.3",
         ("Add NVLink error : could not find DEV for GPU {id:x}", "Add NVLink error : could not find GPU {id:x}"),
         "src/graph/topo.cc ncclTopoAddNvLinks ncclTopoAddC2c", "<nvlink>: \"DEV for GPU\", <c2c> unchanged"),
    _row("gpu_link_missing_warn", "2.30.7",
         ("Add NVLink error : could not find DEV for GPU {bus}", "Add C2c error : could not find DEV for GPU {bus}"),
         "src/graph/topo.cc ncclTopoAddNvLinks ncclTopoAddC2c", "the parent's busid as written"),
    _row("system_node_checked", "2.0", False, "src/graph/topo.cc ncclTopoGetSystemFromXml",
         "a file without <system>: topNode is NULL and dereferenced (a crash)"),
    _row("system_node_checked", "2.30.7", True, "src/graph/topo.cc ncclTopoGetSystemFromXml",
         "WARN \"system node not found in XML\""),
    _row("nic_id_by_numa", "2.0", False, "src/graph/topo.cc ncclTopoAddPci", "NIC id: bus id without the function"),
    _row("nic_id_by_numa", "2.24.0", True, "src/graph/topo.cc ncclTopoAddPci NCCL_TOPO_LOCAL_NIC_ID",
         "NIC id: NUMA node and full bus id"),
    _row("c2c_links", "2.0", False, "src/graph/topo.cc", "no <c2c>"),
    _row("c2c_links", "2.19.0", True, "src/graph/topo.cc ncclTopoAddC2c",
         "<c2c> links the GPU to its CPU (as NVLink until 2.26, as C2C after)"),
    _row("pcilinks", "2.0", False, "src/graph/topo.cc ncclTopoAddPci", "<pcilink> is read as a <pci> (and fails)"),
    _row("pcilinks", "2.22.0", True, "src/graph/topo.cc ncclTopoAddPciLinks", "<pcilink> joins two switches (LOC)"),
    _row("bcm_gen5", "2.0", False, "src/graph/topo.cc ncclTopoFlattenBcmSwitches", "Gen4 PEX switches only"),
    _row("bcm_gen5", "2.20.0", True, "src/graph/topo.cc getBcmGen", "Gen4 and Gen5 PEX switches"),
    _row("bcm_flatten_restart", "2.0", 1, "src/graph/topo.cc ncclTopoFlattenBcmSwitches",
         "after a merge the scan restarts at the second switch (s = 0, then s++)"),
    _row("bcm_flatten_restart", "2.27.0", 0, "src/graph/topo.cc ncclTopoFlattenBcmSwitches",
         "after a merge the scan restarts at the first switch (s = -1)"),
    _row("topo_max_links", "2.0", 32, "src/graph/topo.h NCCL_TOPO_MAX_LINKS", "32 links per node"),
    _row("topo_max_links", "2.21.0", 128, "src/graph/topo.h NCCL_TOPO_MAX_LINKS", "128 links per node"),
    _row("topo_max_links", "2.25.0", 576, "src/graph/topo.h NCCL_TOPO_MAX_LINKS", "576 links per node"),
    _row("topo_links_checked", "2.0", False, "src/graph/topo.cc ncclTopoConnectNodes",
         "no bound check: more links overrun the node (undefined behaviour)"),
    _row("topo_links_checked", "2.21.0", True, "src/graph/topo.cc ncclTopoConnectNodes, ncclTopoFlattenBcmSwitches",
         "WARN \"too many Topo links\" and fail"),
    _row("p2p_default", "2.0", "sys_unless_intel_arm", "src/graph/paths.cc ncclTopoCheckP2p",
         "P2P up to SYS, PXB on Intel, Arm, Zhaoxin"),
    _row("p2p_default", "2.23.0", "pxb_amd_pair_sys", "src/graph/paths.cc ncclTopoCheckP2p",
         "P2P up to PXB; SYS on AMD with at most 2 GPUs"),
    _row("find_local_cpu_switches_only", "2.0", False, "src/graph/topo.cc findLocalCpu",
         "follows every PCI link, down to GPUs and NICs too"),
    _row("find_local_cpu_switches_only", "2.22.0", True, "src/graph/topo.cc findLocalCpu",
         "follows PCI links to switches and CPUs only"),
    _row("find_local_cpu_skips_from", "2.0", False, "src/graph/topo.cc findLocalCpu",
         "no 'from' argument: a switch below a switch can send the search back and forth (crash)"),
    _row("find_local_cpu_skips_from", "2.26.0", True, "src/graph/topo.cc findLocalCpu", "skips the node it came from"),
    _row("paths_start_dis", "2.0", "none", "src/graph/paths.cc ncclTopoSetPaths", "unreached paths read LOC, 0 GB/s"),
    _row("paths_start_dis", "2.21.0", "rem", "src/graph/paths.cc ncclTopoSetPaths",
         "unreached paths are DIS (the base's own table still LOC)"),
    _row("paths_start_dis", "2.23.0", "all", "src/graph/paths.cc ncclTopoSetPaths", "unreached paths are DIS"),
    _row("local_cpu", "2.0", "fewest_hops_any", "src/graph/paths.cc getLocalCpu", "the CPU fewest hops away"),
    _row("local_cpu", "2.23.0", "fewest_hops", "src/graph/paths.cc ncclGetLocalCpu",
         "the CPU fewest hops away (unreached CPUs skipped)"),
    _row("local_cpu", "2.30.7", "best_then_hops", "src/graph/paths.cc ncclGetLocalCpu",
         "among the best-bandwidth CPUs (ncclTopoGetLocal), the fewest hops away"),
    _row("p2c_merge", "2.0", None, "src/graph/paths.cc ncclTopoComputePaths", "no P2C"),
    _row("p2c_merge", "2.27.0", "phb_c2c", "src/graph/paths.cc ncclTopoComputePaths",
         "2.27.3: a PHB path of a GPU whose CPU path is C2C becomes P2C"),
    _row("p2c_merge", "2.27.5", "merge", "src/graph/paths.cc ncclTopoComputePaths mergePathType",
         "GPU-CPU C2C merged with NIC-CPU PHB is P2C, for every NIC"),
    _row("p2c_merge", "2.29.2", "merge_local", "src/graph/paths.cc ncclTopoComputePaths",
         "P2C only for the GPU's best-bandwidth NICs (ncclTopoGetLocal)"),
    _row("pxn_rule", "2.0", None, "src/graph/paths.cc ncclTopoComputePaths", "no PXN before 2.12"),
    _row("pxn_rule", "2.12.0", "first_preferring_peer", "src/graph/paths.cc ncclTopoComputePaths",
         "own path worse than PXB; the first GPU whose ncclTopoGetLocalNet is the NET, at PXB, over NVLink"),
    _row("pxn_rule", "2.12.12", "last_peer_prefer_local", "src/graph/paths.cc ncclTopoComputePaths",
         "own path worse than PXB; a GPU at PXB over NVLink, preferably one whose ncclTopoGetLocalNet is the NET"),
    _row("pxn_rule", "2.14.0", "best_peer_prefer_local", "src/graph/paths.cc ncclTopoComputePaths",
         "a GPU at PXB over NVLink with more bandwidth or sparing a CPU hop; preferably one whose own NET it is"),
    _row("pxn_rule", "2.18.0", "pxb", "src/graph/paths.cc ncclTopoComputePaths ncclTopoGetLocalGpu",
         "relay: the NET's local GPU, at PXB or closer; own path worse than PXB or less bandwidth"),
    _row("pxn_rule", "2.27.0", "pxb_or_p2c", "src/graph/paths.cc ncclTopoComputePaths",
         "2.27.3: relay at PXB, or P2C with NCCL_PXN_C2C"),
    _row("pxn_rule", "2.27.5", "pxn_type", "src/graph/paths.cc ncclTopoComputePaths",
         "relay and own path compared with P2C (NCCL_PXN_C2C) or PXB"),
    _row("pxn_rule", "2.27.6", "worse_than_pxn", "src/graph/paths.cc ncclTopoComputePaths",
         "own path must be worse than PXN (or have less bandwidth)"),
    _row("pxn_c2c_default", "2.0", 0, "src/graph/paths.cc NCCL_PARAM(PxnC2c)", "NCCL_PXN_C2C=0"),
    _row("pxn_c2c_default", "2.28.0", 1, "src/graph/paths.cc NCCL_PARAM(PxnC2c)", "NCCL_PXN_C2C=1"),
    _row("pxn_relay_needs_gdr", "2.0", False, "src/graph/paths.cc ncclTopoComputePaths", "relay GDR not checked"),
    _row("pxn_relay_needs_gdr", "2.30.3", True, "src/graph/paths.cc ncclTopoComputePaths",
         "the relay GPU must pass ncclTopoCheckGdr (read)"),
    _row("gdr_divert_below_phb_only", "2.0", False, "src/graph/paths.cc ncclTopoComputePaths",
         "every GPU-NIC path without GDR goes through the CPU"),
    _row("gdr_divert_below_phb_only", "2.21.0", True, "src/graph/paths.cc ncclTopoComputePaths",
         "only paths better than PHB are rerouted through the CPU when GDR fails"),
    _row("gdr_level", "2.0", "pxb", "src/graph/paths.cc ncclTopoCheckGdr", "PXB"),
    _row("gdr_level", "2.26.0", "phb_c2c_as_c2c", "src/graph/paths.cc ncclTopoCheckGdr",
         "PXB; PHB through a C2C CPU counts as C2C with NCCL_NET_GDR_C2C"),
    _row("gdr_level", "2.27.0", "p2c_as_c2c", "src/graph/paths.cc ncclTopoCheckGdr",
         "PXB; P2C counts as C2C with NCCL_NET_GDR_C2C"),
    _row("gdr_level", "2.29.2", "p2c_if_gdr_c2c", "src/graph/paths.cc ncclTopoCheckGdr",
         "P2C with NCCL_NET_GDR_C2C, else PXB"),
    _row("net_gdr_c2c_default", "2.0", 0, "src/graph/paths.cc NCCL_PARAM(NetGdrC2c)", "NCCL_NET_GDR_C2C=0"),
    _row("net_gdr_c2c_default", "2.27.0", 1, "src/graph/paths.cc NCCL_PARAM(NetGdrC2c)", "NCCL_NET_GDR_C2C=1"),
    _row("gdr_read_sm80", "2.0", False, "src/graph/paths.cc ncclTopoCheckGdr",
         "GDR read needs an NVLink peer on every GPU (NCCL_NET_GDR_READ unset)"),
    _row("gdr_read_sm80", "2.19.0", True, "src/graph/paths.cc ncclTopoCheckGdr",
         "GDR read needs an NVLink peer only before Ampere (sm < 80)"),
    _row("gdr_off_mlopart", "2.0", False, "src/graph/paths.cc ncclTopoCheckGdr", "no MLOPart"),
    _row("gdr_off_mlopart", "2.30.7", True, "src/graph/paths.cc ncclTopoCheckGdr",
         "GDR off for MLOPart GPUs unless NCCL_NET_GDR_MLOPART"),
    _row("local_gpu_among_best", "2.0", False, "src/graph/topo.cc ncclTopoGetLocalGpu", "any GPU"),
    _row("local_gpu_among_best", "2.19.0", True, "src/graph/topo.cc ncclTopoGetLocalGpu",
         "only the NIC's best-bandwidth GPUs (ncclTopoGetLocal)"),
    _row("local_net_rule", "2.0", "one_per_rank", "src/graph/search.cc ncclTopoGetLocalNet",
         "one NET per rank (best NET-to-GPU bandwidth, then type; dev modulo their count), every channel"),
    _row("local_net_rule", "2.18.0", "net_mask", "src/graph/topo.cc ncclTopoGetLocalNet getLocalNetMask",
         "GPUs with the same mask of best NETs share them round robin per channel; ncclTopoGetLocalGpu: "
         "the NET's position in the mask of its best-type GPUs"),
    _row("local_net_rule", "2.18.5", "per_channel", "src/graph/topo.cc ncclTopoGetLocalNet ncclTopoGetLocal",
         "the GPU's best NETs (ncclTopoGetLocal), one step per channel; ncclTopoGetLocalGpu: the first GPU "
         "whose channel uses the NET"),
    _row("local_net_dev_modulo", "2.0", False, "src/graph/topo.cc ncclTopoGetLocalNet", "start at the GPU's dev"),
    _row("local_net_dev_modulo", "2.30.7", True, "src/graph/topo.cc ncclTopoGetLocalNetType",
         "start at dev modulo the NIC's local GPU count"),
    _row("xml_value_checks", "2.0", False, "src/graph/xml.cc xmlGetValue",
         "a value is read up to the next double quote, unbounded: a single-quoted value runs on to "
         "the next double quote, a value of 256 characters or more overruns the buffer (undefined)"),
    _row("xml_value_checks", "2.27.0", True, "src/graph/xml.cc xmlGetValue",
         "matching single or double quotes; values over 254 characters fail"),
    _row("max_channels", "2.0", 32, "src/include/device.h MAXCHANNELS", "32 channels"),
    _row("max_channels", "2.25.0", 64, "src/include/device.h MAXCHANNELS", "64 channels"),
)
_ROWS_BY_NAME: dict[str, list[Behaviour]] = {}
for _b in BEHAVIOURS:
    _ROWS_BY_NAME.setdefault(_b.name, []).append(_b)
