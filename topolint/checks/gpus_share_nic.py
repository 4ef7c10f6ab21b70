"""NUMA006 (preview): more GPUs share one fabric NIC than the node's NIC-to-GPU ratio needs.

From a complete ``nvidia-smi topo -m`` matrix: NICs are grouped by card (ports PIX to each
other with the same relation to every GPU), NICs nearest to no GPU (frontend, storage) are
dropped, a GPU with several equally near cards counts a share of one for each. No NIC columns
means unknown: nothing is reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from topolint.checks import CheckParameters
from topolint.checks._matrix import gpu_text, matrix_contexts
from topolint.engine.finding import Hit

NEEDS = ("complete topology or matrix",)


class Parameters(CheckParameters):
    pass


def cards(mc) -> list[list[str]]:
    view = mc.view
    groups: list[list[str]] = []
    for nic in view.nics:
        for group in groups:
            first = group[0]
            if view.rel(first, nic) == "PIX" and all(view.rel(g, first) == view.rel(g, nic) for g in view.gpus):
                group.append(nic)
                break
        else:
            groups.append([nic])
    return groups


def check(context, params: Parameters) -> Iterator[Hit]:
    version = context.version
    for mc in matrix_contexts(context.node, complete_only=True, shared=context.shared):
        view = mc.view
        if not view.nics or not view.gpus:
            continue
        groups = cards(mc)
        card_of = {nic: i for i, group in enumerate(groups) for nic in group}
        load = [0.0] * len(groups)
        users: list[list[str]] = [[] for _ in groups]
        for gpu in view.gpus:
            _, nearest = mc.nearest_nics(gpu, version)
            chosen = sorted({card_of[n] for n in nearest})
            for card in chosen:
                load[card] += 1.0 / len(chosen)
                users[card].append(gpu)
        used = [i for i, value in enumerate(load) if value > 0]
        if not used:
            continue
        ratio = math.ceil(len(view.gpus) / len(used))
        for card in used:
            if load[card] <= ratio + 1e-9:
                continue
            nic = groups[card][0]
            shares = f"{load[card]:g}"
            fields = {
                "nic": mc.nic_text(nic),
                "load": shares,
                "gpus": ", ".join(gpu_text(g) for g in users[card]),
                "cards": len(used),
                "gpu_count": len(view.gpus),
                "ratio": ratio,
            }
            row = view.rows.get(nic)
            loc = row.loc if row is not None else mc.matrix.header_loc
            others = [mc.nic_text(groups[i][0]) + f" ({load[i]:g})" for i in used if i != card]
            yield Hit(entity=mc.nic_entity(nic), location=loc, fields=fields,
                      evidence=[f"{mc.matrix.path}: nearest NIC card of {', '.join(users[card])}: "
                                f"{' + '.join(mc.nic_text(n) for n in groups[card])}",
                                f"{len(used)} NIC cards serve {len(view.gpus)} GPUs: {ratio} GPUs per card "
                                f"would do; the others carry {', '.join(others) or 'none'}"])
