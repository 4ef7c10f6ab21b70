"""Seeded generator of NCCL topology XML files for the differential test against NCCL's own code.

Independent of topolint (it imports nothing from it) so the same files can be fed to NCCL's
topology code built elsewhere. Randomness comes from a small PRNG of our own (splitmix64), so a
seed gives byte-identical files on every Python version.

The files cover what NCCL's graph code tells apart (src/graph/topo.cc ncclTopoAddPci,
ncclTopoAddNvLinks, ncclTopoAddPciLinks, ncclTopoAddC2c, ncclTopoFlattenBcmSwitches;
src/graph/paths.cc ncclTopoComputePaths): 1 to 4 sockets of Intel, AMD or Arm (Grace with C2C),
nested PCIe switches with PLX and Broadcom ids, ``<pcilink>``, GPUs with and without NVLink
(pairs, cube mesh, NVSwitch), NICs of mixed speeds and ports, ``gdr`` flags, GPUs without a
``<gpu>`` child (static files) and the textual oddities NCCL's parser (src/graph/xml.cc) refuses.

    python tests/oracle/generate.py OUTDIR [--count 1000] [--seed 8]

writes OUTDIR/gen-SEED-NNNN.xml and OUTDIR/index.tsv (file, seed, index, sha256, features).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

DEFAULT_SEED = 8
DEFAULT_COUNT = 1000
MASK64 = (1 << 64) - 1


class SplitMix64:
    """splitmix64 (Steele, Lea, Flood 2014): tiny, fast and the same everywhere."""

    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def chance(self, percent: int) -> bool:
        return self.below(100) < percent

    def pick(self, items):
        return items[self.below(len(items))]


CPUS = [  # (arch, vendor, familyid, modelid)
    ("x86_64", "GenuineIntel", 6, 85),   # Skylake
    ("x86_64", "GenuineIntel", 6, 143),  # Sapphire Rapids
    ("x86_64", "GenuineIntel", 6, 207),  # Emerald Rapids
    ("x86_64", "AuthenticAMD", 25, 1),
    ("x86_64", "AuthenticAMD", 23, 49),
    ("arm64", "ARM", None, None),
]
SPEEDS = ["16.0 GT/s PCIe", "32.0 GT/s PCIe", "8.0 GT/s PCIe", "32 GT/s", "16 GT/s", "5.0 GT/s PCIe",
          "64.0 GT/s PCIe", "Unknown"]
WIDTHS = [16, 16, 16, 8, 4, 0]
GPU_MODELS = [(70, "0x1db5"), (80, "0x20b2"), (90, "0x2330"), (100, "0x2901"), (86, "0x2235"), (89, "0x2684")]
NET_SPEEDS = [100000, 200000, 400000, 400000, 25000, 800000, -1]
SWITCHES = [  # (vendor, device, subsystem_vendor, subsystem_device at level 0, at level 1)
    ("0x10b5", "0x8747", "0x10b5", "0x8747", "0x8747"),   # PLX/Broadcom PEX 8747
    ("0x1000", "0xc010", "0x1000", "0xa064", "0xa064"),   # Broadcom PEX Gen4 (flattened by NCCL)
    ("0x1000", "0xc030", "0x1000", "0x0000", "0x1000"),   # Broadcom PEX Gen5 (flattened by NCCL)
    ("0x1000", "0xc030", "0x1000", "0x0000", "0x0000"),   # Gen5 without the level-1 id
    ("0x8086", "0x347a", "0x8086", "0x0000", "0x0000"),   # Intel root port
]
ODDITIES = ["split_attrs", "space_eq", "bom", "text", "long_value", "single_quote", "nvlink_no_tclass",
            "tab", "declaration"]


class Builder:
    """One topology: a tree of elements kept as nested lists, rendered once at the end."""

    def __init__(self, rng: SplitMix64):
        self.rng = rng
        self.bus = 0x10
        self.features: set[str] = set()
        self.gpus: list[dict] = []
        self.nics: list[dict] = []
        self.switches: list[dict] = []
        self.net_dev = 0

    def busid(self, domain: int = 0) -> str:
        self.bus += 1 + self.rng.below(3)
        return f"{domain:04x}:{self.bus & 0xff:02x}:00.0" if self.bus < 0x100 else f"{1 + self.bus // 0x100:04x}:{self.bus & 0xff:02x}:00.0"

    def link_attrs(self) -> dict:
        rng = self.rng
        speed = rng.pick(SPEEDS) if rng.chance(40) else "32.0 GT/s PCIe"
        width = rng.pick(WIDTHS) if rng.chance(30) else 16
        return {"link_speed": speed, "link_width": str(width)}

    def element(self, name: str, attrs: dict, children=None) -> list:
        return [name, attrs, children if children is not None else []]

    def gpu(self, sm: int, device: str, nvswitch: bool) -> list:
        rng = self.rng
        bus = self.busid()
        index = len(self.gpus)
        gdr = "0" if rng.chance(8) else "1"
        if gdr == "0":
            self.features.add("gpu_gdr0")
        gpu_attrs = {"dev": str(index), "sm": str(sm), "rank": str(index), "gdr": gdr}
        gpu_el = self.element("gpu", gpu_attrs)
        info = {"bus": bus, "el": gpu_el, "sm": sm}
        self.gpus.append(info)
        attrs = {"busid": bus, "class": "0x030200" if rng.chance(80) else "0x030000", "vendor": "0x10de",
                 "device": device, "subsystem_vendor": "0x10de", "subsystem_device": "0x16c1", **self.link_attrs()}
        if rng.chance(4):
            self.features.add("static_gpu")  # a GPU PCI device without <gpu>: NCCL adds no GPU for it
            return self.element("pci", attrs)
        if nvswitch:
            gpu_el[2].append(self.element("nvlink", {"target": "0000:ff:00.0", "count": str(rng.pick([12, 18, 6])),
                                                     "tclass": "0x068000"}))
        return self.element("pci", attrs, [gpu_el])

    def nic(self) -> list:
        rng = self.rng
        bus = self.busid()
        ports = 2 if rng.chance(20) else 1
        nets = []
        for port in range(ports):
            speed = rng.pick(NET_SPEEDS)
            gdr = "0" if rng.chance(10) else "1"
            if gdr == "0":
                self.features.add("nic_gdr0")
            name = f"mlx5_{self.net_dev}"
            attrs = {"name": name, "dev": str(self.net_dev), "speed": str(speed), "port": str(port + 1),
                     "latency": "0.000000", "guid": f"0x{0x1000 + self.net_dev:x}", "maxconn": "131072",
                     "gdr": gdr}
            self.net_dev += 1
            nets.append(self.element("net", attrs))
        self.nics.append({"bus": bus})
        attrs = {"busid": bus, "class": "0x020700" if rng.chance(85) else "0x020000", "vendor": "0x15b3",
                 "device": "0x1021", "subsystem_vendor": "0x15b3", "subsystem_device": "0x0023", **self.link_attrs()}
        return self.element("pci", attrs, [self.element("nic", {}, nets)])

    def switch(self, children: list, level: int, model) -> list:
        vendor, device, sub_vendor, sub0, sub1 = model
        bus = self.busid()
        attrs = {"busid": bus, "class": "0x060400", "vendor": vendor, "device": device,
                 "subsystem_vendor": sub_vendor, "subsystem_device": sub1 if level else sub0, **self.link_attrs()}
        if vendor == "0x1000":
            self.features.add("bcm_switch")
        el = self.element("pci", attrs, children)
        self.switches.append({"bus": bus, "el": el})
        return el

    def endpoint(self, kind: str, sm: int, device: str, nvswitch: bool) -> list:
        return self.gpu(sm, device, nvswitch) if kind == "gpu" else self.nic()

    def socket_devices(self, n_gpus: int, n_nics: int, sm: int, device: str, nvswitch: bool) -> list:
        """PCIe trees under one CPU: endpoints grouped under switches of 0 to 3 levels."""
        rng = self.rng
        kinds = ["gpu"] * n_gpus + ["nic"] * n_nics
        # Shuffle with our PRNG (Fisher-Yates) so the order is stable across Python versions.
        for i in range(len(kinds) - 1, 0, -1):
            j = rng.below(i + 1)
            kinds[i], kinds[j] = kinds[j], kinds[i]
        trees, i = [], 0
        while i < len(kinds):
            group = kinds[i:i + 1 + rng.below(4)]
            i += len(group)
            depth = rng.pick([0, 1, 1, 2, 2, 3])
            model = rng.pick(SWITCHES)
            leaves = [self.endpoint(k, sm, device, nvswitch) for k in group]
            if depth == 0:
                trees.extend(leaves)
                continue
            node = leaves
            for level in range(depth, 0, -1):
                if level == depth and len(node) > 1 and rng.chance(40):
                    node = [self.switch([leaf], level, model) for leaf in node]  # one switch per leaf
                node = [self.switch(node, level - 1 if depth > 1 else 0, model)]
            trees.extend(node)
        return trees

    def nvlinks(self, topology: str) -> None:
        rng, gpus = self.rng, [g for g in self.gpus if g["el"]]
        if topology == "pairs":
            for a, b in zip(gpus[0::2], gpus[1::2]):
                count = str(rng.pick([1, 2, 4, 12]))
                a["el"][2].append(self.element("nvlink", {"target": b["bus"], "count": count, "tclass": "0x030200"}))
                b["el"][2].append(self.element("nvlink", {"target": a["bus"], "count": count, "tclass": "0x030200"}))
        elif topology == "cube":  # DGX-1 style hybrid cube mesh on 8 GPUs, partial on fewer
            edges = [(0, 1, 1), (0, 2, 1), (0, 3, 2), (0, 4, 2), (1, 2, 2), (1, 3, 1), (1, 5, 2), (2, 3, 1),
                     (2, 6, 2), (3, 7, 2), (4, 5, 1), (4, 6, 1), (4, 7, 2), (5, 6, 2), (5, 7, 1), (6, 7, 1)]
            for a, b, count in edges:
                if a < len(gpus) and b < len(gpus) and not rng.chance(5):
                    for x, y in ((a, b), (b, a)):
                        gpus[x]["el"][2].append(self.element(
                            "nvlink", {"target": gpus[y]["bus"], "count": str(count), "tclass": "0x030200"}))

    def pcilinks(self) -> None:
        rng = self.rng
        if len(self.switches) < 2 or not rng.chance(15):
            return
        a, b = rng.pick(self.switches), rng.pick(self.switches)
        if a is b:
            return
        self.features.add("pcilink")
        a["el"][2].append(self.element("pcilink", {"target": b["bus"]}))
        if rng.chance(70):
            b["el"][2].append(self.element("pcilink", {"target": a["bus"]}))


def build_topology(rng: SplitMix64) -> tuple[list, set[str]]:
    b = Builder(rng)
    n_sockets = rng.pick([1, 2, 2, 2, 4, 3])
    cpu_model = rng.pick(CPUS)
    sm, device = rng.pick(GPU_MODELS)
    grace = cpu_model[0] == "arm64" and rng.chance(60)
    nvlink = "none" if sm < 70 else rng.pick(["none", "pairs", "cube", "nvswitch", "nvswitch"])
    if grace:
        sm, device, nvlink = 90, "0x2342", rng.pick(["nvswitch", "none"])
        b.features.add("c2c")
    b.features.add(f"nvlink_{nvlink}")
    b.features.add(f"sockets_{n_sockets}")
    cpus = []
    for socket in range(n_sockets):
        n_gpus = 1 if grace else rng.pick([0, 1, 2, 2, 4, 4])
        n_nics = rng.pick([0, 1, 1, 2, 4]) if socket == 0 or rng.chance(60) else 0
        children = b.socket_devices(n_gpus, n_nics, sm, device, nvlink == "nvswitch")
        arch, vendor, family, model = cpu_model
        attrs = {"host_hash": "0x5eed", "numaid": str(socket),
                 "affinity": f"{0xffff << (16 * socket):0{4 * n_sockets}x}", "arch": arch, "vendor": vendor}
        if family is not None:
            attrs.update({"familyid": str(family), "modelid": str(model)})
        if rng.chance(4):
            b.features.add("cpu_numa_missing")
            del attrs["numaid"]
        if rng.chance(6) and children:
            b.features.add("nic_at_cpu")
            children.append(b.nic())
        cpus.append(b.element("cpu", attrs, children))
    if grace:
        for g in b.gpus:
            g["el"][2].append(b.element("c2c", {"bw": str(rng.pick([64000, 32000])), "count": "10"}))
    b.nvlinks(nvlink)
    b.pcilinks()
    return ["system", {"version": "1"}, cpus], b.features


def render(tree: list, oddity: str | None, rng: SplitMix64) -> str:
    """NCCL_TOPO_DUMP_FILE's layout (two-space indent, one element per line), with one oddity."""
    lines: list[str] = []

    def attrs_text(attrs: dict) -> str:
        return "".join(f' {k}="{v}"' for k, v in attrs.items())

    def walk(node: list, depth: int) -> None:
        name, attrs, children = node
        pad = "  " * depth
        if children:
            lines.append(f"{pad}<{name}{attrs_text(attrs)}>")
            for child in children:
                walk(child, depth + 1)
            lines.append(f"{pad}</{name}>")
        else:
            lines.append(f"{pad}<{name}{attrs_text(attrs)}/>")

    walk(tree, 0)
    if oddity is None:
        return "\n".join(lines) + "\n"
    candidates = [i for i, line in enumerate(lines) if "<pci " in line or "<net " in line or "<gpu " in line]
    at = rng.pick(candidates) if candidates else 0
    line = lines[at]
    if oddity == "split_attrs":
        lines[at] = line.replace('" ', '"\n' + " " * 6, 1)
    elif oddity == "space_eq":
        lines[at] = line.replace('="', ' = "', 1)
    elif oddity == "bom":
        lines[0] = "\ufeff" + lines[0]
    elif oddity == "text":
        opening = [i for i, text in enumerate(lines) if text.rstrip().endswith(">") and not text.rstrip().endswith("/>")
                   and "</" not in text]
        lines.insert(rng.pick(opening) + 1, "    stray text")
    elif oddity == "long_value":
        lines[at] = line.replace('busid="', 'busid="' + "0" * 300, 1)
    elif oddity == "single_quote":
        lines[at] = line.replace('class="', "class='", 1).replace('" vendor=', "' vendor=", 1)
    elif oddity == "nvlink_no_tclass":
        nv = [i for i, text in enumerate(lines) if "<nvlink " in text]
        if nv:
            lines[nv[0]] = lines[nv[0]].replace(' tclass="0x030200"', "").replace(' tclass="0x068000"', "")
    elif oddity == "tab":
        lines[at] = "\t" + line.lstrip()
    elif oddity == "declaration":
        lines.insert(0, '<?xml version="1.0"?>')
    return "\n".join(lines) + "\n"


def generate(seed: int, index: int) -> tuple[str, set[str]]:
    """The topology number ``index`` of a run seeded with ``seed``."""
    rng = SplitMix64((seed << 32) ^ index)
    tree, features = build_topology(rng)
    oddity = rng.pick(ODDITIES) if rng.chance(12) else None
    if oddity:
        features.add(f"odd_{oddity}")
    return render(tree, oddity, rng), features


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for index in range(args.count):
        text, features = generate(args.seed, index)
        name = f"gen-{args.seed}-{index:04d}.xml"
        (args.outdir / name).write_text(text, encoding="utf-8")
        rows.append(f"{name}\t{args.seed}\t{index}\t{sha256(text)}\t{','.join(sorted(features))}")
    (args.outdir / "index.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
