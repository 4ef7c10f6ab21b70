#!/usr/bin/env python3
"""Writes the topology fixtures of the site-rule templates (fixtures/site-templates/*/*.xml):
small two-GPU, two-NIC dumps, each with the one difference its template looks for.
Run from the repository root: python scripts/make_site_template_fixtures.py
"""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "site-templates"


def dump(gpus=(("0x2330", 18), ("0x2330", 18)), nets=("mlx5_0", "mlx5_1"), speed=400000, static=False):
    """A topology dump as NCCL writes it; static=True: a vendor file (no host hash, no ranks)."""
    cpu = '  <cpu numaid="0" affinity="ffffffff" arch="x86_64">' if static else \
        '  <cpu host_hash="0x1a2b3c4d5e6f7081" numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">'
    lines = ['<system version="1">', cpu]
    for i, (device, links) in enumerate(gpus):
        bus = f"0000:{0x18 + 0x20 * i:02x}:00.0"
        lines.append(f'    <pci busid="{bus}" class="0x030200" vendor="0x10de" device="{device}" subsystem_vendor="0x10de" subsystem_device="0x16c1" link_speed="32.0 GT/s PCIe" link_width="16">')
        rank = "" if static else f' rank="{i}"'
        lines.append(f'      <gpu dev="{i}" sm="90"{rank} gdr="1">')
        if links:
            lines.append(f'        <nvlink target="fffffff:ffff:ff" count="{links}" tclass="0x068000"/>')
        lines.append('      </gpu>')
        lines.append('    </pci>')
    for i, name in enumerate(nets):
        bus = f"0000:{0x19 + 0x20 * i:02x}:00.0"
        lines.append(f'    <pci busid="{bus}" class="0x020700" vendor="0x15b3" device="0x1021" subsystem_vendor="0x15b3" subsystem_device="0x0041" link_speed="32.0 GT/s PCIe" link_width="16">')
        lines.append('      <nic>')
        lines.append(f'        <net name="{name}" dev="{i}" speed="{speed}" port="1" latency="0.000000" guid="0xa088c20300e2f4{i:02x}" maxconn="131072" gdr="1"/>')
        lines.append('      </nic>')
        lines.append('    </pci>')
    lines += ['  </cpu>', '</system>']
    return "\n".join(lines) + "\n"

FILES = {
    "net_speed_minimum/bad.xml": dump(speed=200000),
    "net_speed_minimum/good.xml": dump(),
    "site_nic_min_count/bad.xml": dump(nets=("mlx5_0",)),
    "site_nic_min_count/good.xml": dump(),
    "site_nic_min_count/good_static.xml": dump(nets=("mlx5_0",), static=True),
    "site_gpu_count/bad.xml": dump(gpus=(("0x2330", 18),)),
    "site_gpu_count/good.xml": dump(),
    "site_gpu_count/good_static.xml": dump(gpus=(("0x2330", 18),), static=True),  # states only what it states
    "site_gpu_model/bad.xml": dump(gpus=(("0x2330", 18), ("0x2331", 18))),
    "site_gpu_model/good.xml": dump(),
    "site_nvlink_min_count/bad.xml": dump(gpus=(("0x2330", 18), ("0x2330", 12))),
    "site_nvlink_min_count/bad_no_nvlink.xml": dump(gpus=(("0x2330", 18), ("0x2330", 0))),
    "site_nvlink_min_count/good.xml": dump(),
}
if __name__ == "__main__":
    for name, text in FILES.items():
        path = ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(path.relative_to(ROOT.parent.parent))
