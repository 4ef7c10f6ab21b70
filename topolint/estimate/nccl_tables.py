"""NCCL's tuning constants, as numbers derived from its sources (no code copied).

Every table cites the NCCL file and symbol it was read from, at tag v2.30.7-1 (commit 5067397c,
the newest release topolint knows, ``nccl_version.NEWEST``) unless a line says otherwise. Index
order follows NCCL's: algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT;
protocols LL, LL128, Simple; architectures Volta, Ampere, Hopper, Blackwell; node-count columns
1 node, 2 nodes, 3 or more.
"""

from __future__ import annotations

ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOCOLS = ("LL", "LL128", "Simple")
# NCCL's names (ncclAlgoStr in src/enqueue.cc / src/init.cc) for NCCL_ALGO and log output.
NCCL_NAMES = {"tree": "Tree", "ring": "Ring", "collnet_direct": "CollNetDirect", "collnet_chain": "CollNetChain",
              "nvls": "NVLS", "nvls_tree": "NVLSTree", "pat": "PAT"}


def arch_index(sm: int) -> int:
    """compCapIndex in ncclTopoTuneModel (src/graph/tuning.cc): Volta, Ampere, Hopper, Blackwell."""
    return 3 if sm >= 100 else 2 if sm >= 90 else 1 if sm >= 80 else 0


def nodes_index(nodes: int) -> int:
    """index2 in ncclTopoTuneModel: 1 node, 2 nodes, more."""
    return nodes - 1 if nodes <= 2 else 2


# src/graph/tuning.cc, nvlsEfficiency[].
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)

# src/graph/tuning.cc, ncclTunerConstantsDefaults.baseLatencies[algorithm][protocol], microseconds.
BASE_LATENCY = {
    "tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "collnet_direct": (0, 0, 0), "collnet_chain": (0, 0, 0),
    "nvls": (0, 0, 0), "nvls_tree": (0, 0, 0), "pat": (8.0, 8.0, 8.0),
}
# ... .hwLatencies[hardware][algorithm][protocol], microseconds per hop.
HW_LATENCY = {
    "NVLINK": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0, 0, 3.7),
               "collnet_chain": (0, 0, 2.8), "nvls": (0, 0, 25), "nvls_tree": (0, 0, 25), "pat": (0, 0, 4.0)},
    "PCI": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": (0, 0, 3.7),
            "collnet_chain": (0, 0, 2.8), "nvls": (0, 0, 0), "nvls_tree": (0, 0, 0), "pat": (0, 0, 4.0)},
    "NET": {"tree": (5.0, 8.5, 14), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0, 0, 31),
            "collnet_chain": (0, 0, 30), "nvls": (0, 0, 18), "nvls_tree": (0, 0, 20.9), "pat": (0, 0, 14)},
}
# ... .llMaxBws[index1][nodes]: index1 is the GPU architecture on one node, else the CPU vendor
# (0 Intel, 1 AMD or mixed); GB/s.
LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
# ... .perChMaxRingLL128Bws / perChMaxTreeLL128Bws / perChMaxTreeBws / perChMaxNVLSTreeBws [arch][nodes].
PER_CH_MAX_RING_LL128_BW = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
PER_CH_MAX_TREE_LL128_BW = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
PER_CH_MAX_NVLS_TREE_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))

# src/graph/tuning.cc, treeCorrectionFactor[protocol][log2(bytes/64)], 64 B to 256 MiB.
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

# src/graph/tuning.cc getNetOverhead: per-step network post overhead, microseconds.
NET_OVERHEAD_INTEL, NET_OVERHEAD_AMD, NET_OVERHEAD_OTHER = 1.0, 2.0, 1.0
# src/graph/tuning.cc ncclTopoGetAlgoTime: multi-node ring Simple latency "plateau" factor.
RING_PLATEAU_PRE_AMPERE, RING_PLATEAU = 1.9, 1.4

# src/graph/search.cc speedArrayIntra/Inter, sm90SpeedArrayIntra/Inter, sm100SpeedArrayIntra/Inter:
# the per-channel bandwidths (GB/s) the graph search tries, fastest first. Keyed by the first
# release (minor version) that has the array, read at each minor's newest tag.
_SPEEDS_DEFAULT_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_SPEEDS_DEFAULT_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4,
                         1.2, 0.24, 0.12)
_SM90_INTER_18 = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
_SM90_INTER_19 = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
_LOW_INTER = (20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
SPEEDS = {  # (sm class, inter) -> [(from minor, speeds)]
    (90, False): [(17, (66.0, 33.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)),
                  (18, (60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)),
                  (19, (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)),
                  (21, (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0))],
    (90, True): [(17, (48.0, 45.0, 30.0, 24.0, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)),
                 (18, _SM90_INTER_18), (19, _SM90_INTER_19)],
    (100, False): [(25, (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0)),
                   (27, (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)),
                   (29, (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0))],
    (100, True): [(25, _SM90_INTER_19),
                  (27, (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0) + _LOW_INTER),
                  (29, (96.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0) + _LOW_INTER),
                  (30, (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0) + _LOW_INTER)],
}
SPEEDS_INTRA = {0: _SPEEDS_DEFAULT_INTRA, 90: SPEEDS[(90, False)][-1][1], 100: SPEEDS[(100, False)][-1][1]}
SPEEDS_INTER = {0: _SPEEDS_DEFAULT_INTER, 90: SPEEDS[(90, True)][-1][1], 100: SPEEDS[(100, True)][-1][1]}


def _at(history: list, minor: int):
    value = history[0][1]
    for since, entry in history:
        if minor >= since:
            value = entry
    return value


def speeds(sm: int, inter: bool, version=None) -> tuple[float, ...]:
    """The search's speed table for the GPUs' SM and the NCCL version (newest when None).
    Before NCCL knew Blackwell (2.25) an SM100 GPU is searched with the SM90 table."""
    minor = version.minor if version is not None else 99
    if sm >= 100 and minor >= 25:
        return _at(SPEEDS[(100, inter)], minor)
    if sm >= 90:
        return _at(SPEEDS[(90, inter)], max(minor, 17))
    return _SPEEDS_DEFAULT_INTER if inter else _SPEEDS_DEFAULT_INTRA


def arch_index_for(sm: int, version=None) -> int:
    """compCapIndex, capped at Hopper before NCCL 2.25 had Blackwell rows."""
    index = arch_index(sm)
    return min(index, 2) if version is not None and version.minor < 25 else index


def ll_max_bw(index1: int, nodes: int, version=None) -> float:
    """llMaxBws; its Hopper row was the Ampere one before 2.21 (tuning.cc at v2.20.5-1)."""
    if index1 == 2 and version is not None and version.minor < 21:
        return LL_MAX_BW[1][nodes]
    return LL_MAX_BW[index1][nodes]


def hw_latency(hw: str, algo: str, proto: int, version=None) -> float:
    """hwLatencies, with the earlier values where they differ: Tree Simple 28 us on every hardware
    before 2.23; NVLSTree over the network 14 us before 2.28 (20.9 after)."""
    minor = version.minor if version is not None else 99
    if algo == "tree" and proto == 2 and minor < 23:
        return 28.0
    if algo == "nvls_tree" and hw == "NET" and minor < 28:
        return 14.0
    return HW_LATENCY[hw][algo][proto]


def base_latency(algo: str, proto: int, version=None) -> float:
    """baseLatencies; Tree Simple had none before 2.23 (tuning.cc at v2.22.3-1)."""
    if algo == "tree" and proto == 2 and version is not None and version.minor < 23:
        return 0.0
    return BASE_LATENCY[algo][proto]


def pat_factor(version=None) -> float:
    """PAT's bandwidth factor: 0.85 in 2.23, 0.75 from 2.24."""
    return 0.85 if version is not None and version.minor == 23 else 0.75


# Before 2.28 NVLS and NVLSTree took min(bwIntra, bwInter) per channel (bwInter / 2 for NVLSTree on
# more than two nodes) and converted bus to algorithm bandwidth by 5/6 (tuning.cc at v2.27.7-1).
LEGACY_NVLS_RATIO = 5.0 / 6.0


# src/include/device.h MAXCHANNELS (64); rings and trees search at most MAXCHANNELS/2
# (src/init.cc, ringGraph.maxChannels); NCCL_MAX_NVLS_ARITY 32; NCCL_MAX_DIRECT_ARITY 7.
MAX_CHANNELS = 64
MAX_RING_CHANNELS = MAX_CHANNELS // 2
MAX_NVLS_ARITY = 32
MAX_DIRECT_ARITY = 7
# src/graph/topo.h PCI_BW: Gen3 x16, the ring bandwidth under which NCCL uses 256 Simple threads.
PCI_BW = 12.0
# src/graph/search.cc ncclTopoDupChannels: channels are doubled when bwIntra >= 25 GB/s, except on
# sm > 80 when bwIntra < 50 with more than 4 channels.
DUP_MIN_BW, DUP_SM90_BW, DUP_SM90_MAX_CHANNELS = 25.0, 50.0, 4
