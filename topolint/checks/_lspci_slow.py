"""PCIE004 from lspci: a GPU or NIC of a known model whose link can reach less than the model
supports, because its own LnkCap or the LnkCap of the port at the other end is lower (a Gen4
slot under a Gen5 GPU, an x8 slot under an x16 NIC). A link that trained below what both ends
support is PCIE001, not this. Devices behind a hypervisor's virtual bridges are skipped."""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks._host import generation, is_hypervisor_device, pci_ids
from topolint.checks._topology import where
from topolint.engine.finding import Hit
from topolint.model.node import gpu_entity, pci_entity
from topolint.model.pcie import GT_PER_GENERATION

_KINDS = {"gpu": "gpu", "fabric-nic": "nic", "nic": "nic"}


def _limit(device, other) -> tuple[int | None, int | None, object]:
    """(generation, width, the LnkCap line that limits) of the link's capability."""
    caps = [c for c in (device.lnk_cap, other.lnk_cap if other is not None else None) if c is not None]
    gens = [(generation(c.speed_gts), c) for c in caps if generation(c.speed_gts)]
    widths = [(c.width, c) for c in caps if c.width]
    if not gens or not widths:
        return None, None, None
    gen, gen_cap = min(gens, key=lambda g: g[0])
    width, width_cap = min(widths, key=lambda w: w[0])
    return gen, width, gen_cap if gen_cap is not device.lnk_cap else width_cap


def lspci_hits(node: str, tree, devices: dict) -> Iterator[Hit]:
    lspci = tree.lspci
    for device in lspci.devices:
        kind = _KINDS.get(tree.kind(device))
        ids = pci_ids(device)
        model = devices.get(f"0x{ids.replace(':', ':0x')}" if ids else "")
        if kind is None or model is None or model.get("kind") != kind or device.lnk_cap is None:
            continue
        if device.capabilities_denied is not None:
            continue
        other = tree.other_end(device)
        gen, width, limiting = _limit(device, other)
        want_gen, want_lanes = int(model["pcie_gen"]), int(model["lanes"])
        if gen is None or (gen >= want_gen and width >= want_lanes):
            continue
        if any(is_hypervisor_device(a) for a in tree.ancestors(device)):
            continue  # behind a hypervisor's virtual bridges the capabilities are made up
        by = "its own LnkCap" if limiting is device.lnk_cap else f"the port above it, {other.address}"
        label = f"{'GPU' if kind == 'gpu' else 'NIC'} {device.address}"
        fields = {"device": label, "bus": device.address, "model": model["name"],
                  "numa": device.numa_node if device.numa_node is not None else "unknown",
                  "speed": f"{GT_PER_GENERATION[gen]} GT/s", "width": width, "gen": gen, "want_gen": want_gen,
                  "want_speed": f"{GT_PER_GENERATION[want_gen]} GT/s", "want_lanes": want_lanes}
        evidence = [f"{where(device.loc)}: {device.address} [{ids}] ({model['name']})",
                    f"{where(device.lnk_cap.loc)}: LnkCap: Speed {device.lnk_cap.speed_text}, Width x{device.lnk_cap.width}"]
        if other is not None:
            evidence.append(f"{where(other.lnk_cap.loc)}: the other end, {other.address}, supports Speed "
                            f"{other.lnk_cap.speed_text}, Width x{other.lnk_cap.width}")
        evidence.append(f"the link can reach at most Gen{gen} x{width}, limited by {by}; {model['name']} supports "
                        f"PCIe Gen{want_gen} x{want_lanes} (topolint/data/pci_devices.toml)")
        entity = gpu_entity(node, device.address) if kind == "gpu" else pci_entity(node, device.address)
        yield Hit(entity=entity, location=(device.lnk_sta or device.lnk_cap).loc, fields=fields, evidence=evidence,
                  variant="width" if width < want_lanes else "default")
