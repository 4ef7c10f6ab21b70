"""PCIE002: ACS P2P redirect (ReqRedir+ or CmpltRedir+; SrcValid alone does not redirect) on a
bridge above GPUs or fabric NICs, on bare metal: peer traffic goes up to the root complex.

The devices below a bridge come from its bus range (lspci -vvv) or the tree. A node is bare
metal only from evidence (systemd-detect-virt says none): then it is an error; a VM (any
hypervisor sign) is silent, since its ACS bits are virtual; with no evidence either way it is
a warning that says what would settle it. In an excerpt with no device lines (a grep of
``ACSCtl:``) it is one warning per file naming the lines: the devices below are unknown.
"""

from __future__ import annotations

from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._host import PciTree, lspci_unjudged, pci_tree, virtualisation, vm_unjudged
from topolint.checks._topology import where
from topolint.engine.finding import Hit
from topolint.model.node import file_entity, pci_entity

NEEDS = ("lspci",)
_REDIRECT_FLAGS = ("ReqRedir", "CmpltRedir")
_TARGETS = {"gpu": "GPU", "fabric-nic": "NIC"}


class Parameters(CheckParameters):
    pass


def _flags(acs) -> str:
    return " ".join(f"{flag}{'+' if acs.flags.get(flag) else '-'}" for flag in ("SrcValid", *_REDIRECT_FLAGS))


def _bridge_hits(node: str, tree: PciTree, virt) -> Iterator[Hit]:
    for bridge in tree.lspci.devices:
        if bridge.address is None or bridge.acs_ctl is None or not bridge.acs_ctl.redirects:
            continue
        below = [(d, _TARGETS[kind]) for d in tree.descendants(bridge) if (kind := tree.kind(d)) in _TARGETS]
        if not below:
            continue  # nothing NCCL sends peer traffic between sits below it
        names = ", ".join(f"{label} {d.address}" for d, label in below[:8]) + (", ..." if len(below) > 8 else "")
        fields = {"bridge": bridge.address, "below": names, "count": len(below), "flags": _flags(bridge.acs_ctl),
                  "name": bridge.description or bridge.class_name or "bridge"}
        evidence = [f"{where(bridge.acs_ctl.loc)}: ACSCtl: {_flags(bridge.acs_ctl)} on {bridge.address}"]
        evidence += [f"{where(d.loc)}: {label} {d.address} is below {bridge.address}" for d, label in below[:4]]
        evidence += virt.evidence
        hit = Hit(entity=pci_entity(node, bridge.address), location=bridge.acs_ctl.loc, fields=fields,
                  evidence=evidence)
        if virt.state == "unknown":
            hit.variant, hit.severity = "unknown_virt", "warning"
            hit.evidence.append(f"whether ACS matters here depends on bare metal: {virt.settle}")
        yield hit


def _excerpt_hit(node: str, lspci, virt) -> Iterator[Hit]:
    anonymous = [d for d in lspci.devices if d.address is None and d.acs_ctl is not None]
    redirecting = [d for d in anonymous if d.acs_ctl.redirects]
    if not redirecting:
        return
    lines = ", ".join(str(d.acs_ctl.loc.line) for d in redirecting)
    fields = {"path": lspci.path, "lines": lines, "count": len(redirecting), "total": len(anonymous)}
    evidence = [f"{where(d.acs_ctl.loc)}: ACSCtl: {_flags(d.acs_ctl)}" for d in redirecting[:8]]
    evidence.append(f"{lspci.path} has no device lines: which bridges these are, and whether GPUs or NICs sit "
                    "below them, is unknown (`sudo lspci -vvv` of the whole node settles it)")
    evidence += virt.evidence
    yield Hit(entity=file_entity(node, lspci.path), location=redirecting[0].acs_ctl.loc, fields=fields,
              evidence=evidence, variant="excerpt", severity="warning")


def check(context, params: Parameters) -> Iterator[Hit]:
    virt = virtualisation(context.node)
    if virt.state == "vm":
        context.notes.append(vm_unjudged(virt, "its ACS bits"))  # virtual ones
        return
    for lspci in context.node.lspci:
        context.notes.extend(lspci_unjudged(lspci, "ACS redirect bits"))
        if lspci.kind == "verbose":
            yield from _bridge_hits(context.node.name, pci_tree(context, lspci), virt)
        if lspci.kind in ("verbose", "excerpt"):
            yield from _excerpt_hit(context.node.name, lspci, virt)
