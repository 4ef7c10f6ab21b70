"""An NCCL-shaped topology from an ``nvidia-smi topo -m`` matrix, for nodes that have no XML.

The matrix gives the GPUs' NVLink counts to each peer (NV#), the PCIe relation of every pair of
devices (PIX: one switch; PXB: several switches; PHB/NODE: through the host bridge; SYS: across
the CPU interconnect) and the NICs' names (NIC Legend). It does not give the GPU model, the PCIe
generation, NIC speeds or the CPU, so these come from options (``--gpu-sm``, ``--pcie-gen``,
``--nic-gbps``) or from other files of the node (ibstat rates through refine.py), and every
estimate made from a matrix says which values were assumed. The tree built:
- one CPU per socket group (MatrixView.socket_groups: labels joined by PIX/PXB/PHB/NODE);
- devices joined by PIX share a switch; switches joined by PXB share a parent switch;
- a GPU whose NV# counts to its peers add up to more than any GPU has links (18) is on NVSwitches
  with that many links (every pair of an HGX A100 reads NV12); otherwise the counts are direct
  GPU-to-GPU links.
Bus ids are made up (the matrix has none); entities are the matrix's labels, locations its rows.
"""

from __future__ import annotations

from topolint.model.facts import (
    GPU_CLASS,
    NVSWITCH_CLASS,
    Cpu,
    Gpu,
    Net,
    Nic,
    NvLink,
    PciDevice,
    TopologyFile,
    TopoMatrix,
    build,
)
from topolint.model.matrix import MatrixView, nv_count
from topolint.model.pcie import GT_PER_GENERATION

MAX_LINKS_PER_GPU = 18  # NVLink4/5 GPUs have 18; a larger sum over peers means NVSwitches


def _components(labels: list[str], joined) -> list[list[str]]:
    groups: list[list[str]] = []
    for label in labels:
        merged = [g for g in groups if any(joined(label, other) for other in g)]
        for g in merged:
            groups.remove(g)
        groups.append(sum(merged, []) + [label])
    return groups


def topology_from_matrix(matrix: TopoMatrix, notes: list[str], gpu_sm: int | None = None,
                         pcie_gen: int | None = None) -> tuple[TopologyFile, dict[str, str]] | None:
    """The topology and the names its made-up bus ids stand for (GPU index, as other matrix
    findings name GPUs; "switch-GPU0+NIC0" for a switch), or None without GPU rows."""
    view = MatrixView(matrix)
    gpus = [label for label in view.gpus if view.gpu_row(label) is not None]
    if not gpus:
        return None
    gen = pcie_gen or 4
    speed, width = f"{GT_PER_GENERATION[gen]} GT/s PCIe", "16"
    bus = {label: f"0000:{0x10 + 2 * i:02x}:00.0" for i, label in enumerate(view.gpus + view.nics)}
    loc_of = {row.label: row.loc for row in matrix.rows}
    header = matrix.header_loc
    groups = view.socket_groups
    cpus, pci, gpu_facts, nics = [], [], [], []
    switch_number = [0]
    aliases = {bus[label]: str(view.gpu_index(label)) for label in view.gpus}

    def switch(cpu: int, parent: str | None, members: list[str]) -> str:
        switch_number[0] += 1
        switch_bus = f"0000:{0xC0 + switch_number[0]:02x}:00.0"
        aliases[switch_bus] = "switch-" + "+".join(members)
        loc = loc_of.get(members[0], header)
        pci.append(build(PciDevice, bus_id=switch_bus, kind="bridge", pci_class="0x060400", link_speed=speed,
                         link_width=width, parent_bus_id=parent, cpu_index=cpu, attrs={}, loc=loc))
        return switch_bus

    for cpu_index in sorted(set(groups[label] for label in view.gpus + view.nics)):
        members = [label for label in view.gpus + view.nics if groups[label] == cpu_index]
        cpus.append(build(Cpu, index=cpu_index, numa_id=cpu_index, affinity=None, arch=None, vendor=None,
                          family_id=None, model_id=None, host_hash=None, attrs={}, loc=header))
        leaves = _components(members, lambda a, b: view.rel(a, b) == "PIX")
        trees = _components([str(i) for i in range(len(leaves))],
                            lambda a, b: any(view.rel(x, y) == "PXB" for x in leaves[int(a)] for y in leaves[int(b)]))
        for tree in trees:
            leaf_groups = [leaves[int(i)] for i in tree]
            top = switch(cpu_index, None, leaf_groups[0]) if len(leaf_groups) > 1 else None
            for leaf in leaf_groups:
                parent = switch(cpu_index, top, leaf) if len(leaf) > 1 or top else None
                for label in leaf:
                    kind = "gpu" if label in view.gpus else "nic"
                    pci.append(build(PciDevice, bus_id=bus[label], kind=kind,
                                     pci_class="0x030200" if kind == "gpu" else "0x020700", link_speed=speed,
                                     link_width=width, parent_bus_id=parent, cpu_index=cpu_index, attrs={},
                                     loc=loc_of.get(label, header)))
    for label in gpus:
        loc = loc_of[label]
        counts = {peer: nv_count(view.rel(label, peer)) for peer in view.gpus if peer != label}
        total = sum(counts.values())
        if total > MAX_LINKS_PER_GPU and len(set(c for c in counts.values() if c)) == 1:
            links = [build(NvLink, target=None, count=max(counts.values()), tclass=NVSWITCH_CLASS, attrs={}, loc=loc)]
        else:
            links = [build(NvLink, target=bus[peer], count=c, tclass=GPU_CLASS, attrs={}, loc=loc)
                     for peer, c in counts.items() if c]
        gpu_facts.append(build(Gpu, bus_id=bus[label], dev=view.gpu_index(label), sm=gpu_sm, rank=None, gdr=None,
                               cpu_index=groups[label], nvlinks=links, c2c=[], attrs={}, loc=loc))
    for j, label in enumerate(view.nics):
        loc = loc_of.get(label, header)
        net = build(Net, name=view.nic_name(label), dev=j, speed_mbps=None, port=1, gdr=True, guid=None,
                    attrs={}, loc=loc)
        nics.append(build(Nic, bus_id=bus[label], cpu_index=groups[label], nets=[net], loc=loc))
    notes.append(f"{matrix.path}: topology built from an nvidia-smi topo -m matrix (made-up bus ids): "
                 f"PCIe Gen{gen} x16 {'given' if pcie_gen else 'assumed (--pcie-gen)'}, "
                 f"{f'GPU SM {gpu_sm}, ' if gpu_sm else ''}"
                 "CPU interconnect not priced, GPUDirect RDMA assumed where the path allows it")
    if matrix.partial or matrix.restricted:
        notes.append(f"{matrix.path}: the matrix is partial or a restricted view; only the GPUs it shows are used")
    return build(TopologyFile, path=matrix.path, kind="static", version="1", system_loc=header, cpus=cpus,
                 pci=pci, gpus=gpu_facts, nics=nics, elements=[], tabs_between_elements=[]), aliases
