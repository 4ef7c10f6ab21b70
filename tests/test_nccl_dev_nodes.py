"""Two GPUs on one bus id (a duplicated <pci>): what NCCL's graph makes of them, by version.

From 2.30.7 src/graph/topo.cc ncclTopoAddGpuSub gives a GPU whose DEV node exists its own id,
NCCL_TOPO_GPU_LOCAL_ID(busId, nGpus), and a LOC link to that DEV, so the two GPUs are LOC to
each other over the DEV and see the rest of the machine alike. Before, both GPU nodes carry the
bus id and src/graph/paths.cc getPath gives them one path slot: the second GPU's slot is never
written (DIS). The expected values are NCCL's own answers for this fixture (tests/test_oracle.py).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from topolint.model.nccl_graph import GPU, NcclSystem
from topolint.model.nccl_version import NcclVersion

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "rules" / "TL004" / "good.xml"


def _system(tag: str) -> NcclSystem:
    return NcclSystem(SimpleNamespace(path=str(FIXTURE), text=FIXTURE.read_text(), bom=False), NcclVersion.parse(tag))


@pytest.mark.parametrize("tag, between", [("v2.30.3-1", ("DIS", 0.0)), ("v2.30.7-1", ("LOC", 5000.0))])
def test_second_gpu_on_a_bus_id(tag, between):
    system = _system(tag)
    gpus = system.nodes[GPU]
    assert [g.attrs["rank"] for g in gpus] == [0, 1]
    path = gpus[0].paths[GPU][1]
    assert (system.type_name(path.type), path.bw) == between
    assert (gpus[0].id != gpus[1].id) is (tag == "v2.30.7-1")


def test_the_gpu_behind_the_dev_sees_the_cpu_as_its_sibling_does():
    system = _system("v2.30.7-1")
    first, second = system.nodes[GPU]
    assert [(p.type, p.bw) for p in second.paths["CPU"]] == [(p.type, p.bw) for p in first.paths["CPU"]]
    assert system.type_name(second.paths[GPU][1].type) == "LOC"
