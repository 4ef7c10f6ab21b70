"""The stale link slots NCCL's Broadcom flattening leaves (topolint/model/nccl_memory.py).

src/graph/topo.cc ncclTopoFlattenBcmSwitches drops links with memmove and nodes with
ncclTopoRemoveNode; ncclTopoConnectNodes and ncclTopoSort then find the end of a link array by
the first NULL remNode, not by nlinks. The expected answers below are what NCCL's own code
answered for these two hand-written files (the oracle of tests/test_oracle.py, run on
v2.18.6-1, v2.23.4-1 and v2.30.7-1).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from topolint.model.nccl_graph import GPU, NcclSystem, TopologyRejected
from topolint.model.nccl_memory import NodeMemory, Slot, Struct
from topolint.model.nccl_version import NcclVersion

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nccl"


def _system(name: str, tag: str) -> NcclSystem:
    path = FIXTURES / name
    return NcclSystem(SimpleNamespace(path=str(path), text=path.read_text(), bom=False), NcclVersion.parse(tag))


def _gpu_types(system: NcclSystem) -> list[list[str]]:
    return [[system.type_name(p.type) for p in gpu.paths[GPU]] for gpu in system.nodes[GPU]]


def test_dropping_a_link_leaves_a_copy_of_the_last_one_behind():
    struct = Struct(node=None, slots=[Slot("PCI", ("CPU", 0), 48.0), Slot("PCI", ("PCI", 1), 8.0)], nlinks=2)
    NodeMemory.drop_link(struct, 1)
    assert struct.nlinks == 1 and len(struct.slots) == 2  # the slot is stale, not NULL
    NodeMemory.drop_link(struct, 0)
    assert struct.nlinks == 0 and [s.rem for s in struct.slots] == [("CPU", 0), ("PCI", 1)]


@pytest.mark.parametrize("tag", ["v2.23.4-1", "v2.30.7-1"])
def test_an_empty_gen5_sub_switch_costs_the_switch_its_uplink(tag):
    """The switch's link to the removed sub-switch stays as a stale slot after its CPU link;
    ncclTopoSort shifts the CPU link into it and out of nlinks, then reads on past the array
    (NCCL crashes with SIGSEGV on these tags)."""
    with pytest.raises(TopologyRejected) as refused:
        _system("bcm_lost_uplink.xml", tag)
    assert refused.value.crash


def test_before_gen5_flattening_the_same_file_loads():
    """2.18 flattens Gen4 switches only (getBcmGen has no Gen5 before 2.20): PHB between the GPUs."""
    system = _system("bcm_lost_uplink.xml", "v2.18.6-1")
    assert _gpu_types(system) == [["LOC", "PHB"], ["PHB", "LOC"]]


@pytest.mark.parametrize("tag, between, bw", [("v2.18.6-1", "PXB", 6.0), ("v2.23.4-1", "PIX", 48.0),
                                              ("v2.30.7-1", "PIX", 48.0)])
def test_a_flattened_sub_switch_puts_its_gpu_beside_the_others(tag, between, bw):
    system = _system("bcm_sub_gpu.xml", tag)
    gpus = system.nodes[GPU]
    assert [g.attrs["bus"] for g in gpus] == ["0000:13:00.0", "0000:12:00.0", "0000:21:00.0"]
    assert _gpu_types(system)[0] == ["LOC", between, "PHB"]
    assert gpus[0].paths[GPU][1].bw == bw
