"""Template: every GPU in a node's topology is the expected model, named as in
topolint/data/pci_devices.toml (`H100 SXM5`) or by PCI id (`0x10de:0x2330`).

The model is read from the PCI vendor and device ids of the GPU's `<pci>` element. A GPU
whose ids are missing, or not in the table when the parameter is a name, cannot be judged
and is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Optional

from topolint.model.schema import Field

from topolint.checks import CheckParameters
from topolint.checks._topology import gpu_label, pci_id, where
from topolint.checks.gpu_link_slow import known_devices
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity
from topolint.profiles.reveal import model_agrees

NEEDS = ("topology",)
PROFILE = {"model": "gpu_model"}  # unset: the node's profile's value (profiles/params.py)
# What a hit gives messages and fixes, besides the parameters:
FIELDS = ("gpu", "gpu_bus", "found")
PCI_ID = re.compile(r"0x[0-9a-f]{4}:0x[0-9a-f]{4}")


class Parameters(CheckParameters):
    model: Optional[str] = Field(default=None, min_length=1,
                                 description='the GPU model: a name from topolint/data/pci_devices.toml ("H100 SXM5", '
                                             '"A100 SXM4" names every A100 SXM4) or a PCI id ("0x10de:0x2330"); '
                                             "unset: the gpu_model of the node's profile")


def check(context, params: Parameters) -> Iterator[Hit]:
    if params.model is None:
        return
    devices = known_devices()
    wanted = params.model.strip().lower()
    by_id = PCI_ID.fullmatch(wanted) is not None
    for topology in context.node.topologies:
        pci_by_bus = topology.pci_by_bus()
        for gpu in topology.gpus:
            pci = pci_by_bus.get(gpu.bus_id)
            found_id = pci_id(pci) if pci is not None else None
            if found_id is None:
                continue
            name = devices.get(found_id, {}).get("name")
            if by_id:
                if found_id == wanted:
                    continue
            elif name is None or model_agrees(wanted, name):
                continue  # an unknown id cannot be compared with a name
            model = f"{name} ({found_id})" if name else found_id
            yield Hit(
                entity=gpu_entity(context.node.name, gpu.bus_id),
                location=gpu.loc,
                fields={"gpu": gpu_label(gpu), "gpu_bus": gpu.bus_id, "found": model},
                evidence=[f"{where(pci.loc)}: <pci busid=\"{gpu.bus_id}\"> vendor={pci.vendor} device={pci.device}"
                          + (f" is {name} (topolint/data/pci_devices.toml)" if name else "")],
            )
