"""Host-fact parsers (lspci, lspci trees, dmesg and /proc/cmdline, numactl -H, hwloc XML) on
hand-written inputs: every variant of output-formats.md sections 7 and 11, positions on facts,
bad input as TL001 when named and skipped in a folder walk. Linear cost: tests/test_linear_cost.py
(deterministic call counts), timing: benchmarks/."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, run_cli

from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import Location
from topolint.model.host import LspciFile
from topolint.parsers.hwloc_xml import parse_hwloc
from topolint.parsers.kernel_iommu import parse_cmdline, parse_dmesg
from topolint.parsers.lspci import parse_lspci
from topolint.parsers.numactl import parse_numactl

VVV = """\
0000:15:01.0 PCI bridge [0604]: Intel Corporation Device [8086:352a] (rev 04) (prog-if 00 [Normal decode])
\tNUMA node: 0
\tBus: primary=15, secondary=16, subordinate=17, sec-latency=0
\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00
\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <16us
\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)
\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
\tCapabilities: [220 v1] Access Control Services
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
\tKernel driver in use: pcieport

16:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)
\tNUMA node: 0
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)
\tKernel driver in use: nvidia
"""


def _parse(parser, text: str, path: str = "in.txt"):
    return parser(SourceFile(path=path, text=text))


def test_lspci_verbose_devices_links_and_positions():
    lspci = _parse(parse_lspci, VVV)
    assert lspci.kind == "verbose" and lspci.has_ids
    bridge, gpu = lspci.devices
    assert (bridge.address, bridge.vendor_id, bridge.device_id, bridge.class_code) == \
        ("0000:15:01.0", "8086", "352a", "0604")
    assert bridge.port_type == "Root Port" and bridge.driver == "pcieport"
    assert (bridge.secondary_bus, bridge.subordinate_bus) == (0x16, 0x17)
    assert bridge.lnk_cap2_max_gts == 32.0
    assert bridge.acs_ctl.flags["SrcValid"] and not bridge.acs_ctl.redirects
    assert gpu.address == "0000:16:00.0"  # no -D: domain 0000
    assert gpu.parent == "0000:15:01.0"  # from the bridge's bus range
    assert (gpu.lnk_sta.speed_gts, gpu.lnk_sta.width, gpu.lnk_sta.speed_flag, gpu.lnk_sta.width_flag) == \
        (2.5, 16, "downgraded", "ok")
    assert gpu.lnk_sta.loc == Location(path="in.txt", line=16, column=3)
    assert (gpu.numa_node, gpu.numa_loc.line) == (0, 13)
    LspciFile.model_validate(lspci.model_dump())  # parser output fits the schema


@pytest.mark.parametrize("indent", ["  ", "    ", "        "])
def test_lspci_whitespace_altered_pastes_parse_alike(indent):
    altered = VVV.replace("\t", indent)
    lspci = _parse(parse_lspci, altered)
    assert [d.address for d in lspci.devices] == ["0000:15:01.0", "0000:16:00.0"]
    assert lspci.devices[1].lnk_sta.speed_gts == 2.5


def test_lspci_access_denied_leaves_links_unknown():
    lspci = _parse(parse_lspci, "17:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"
                                "\tCapabilities: <access denied>\n\tKernel driver in use: nvidia\n")
    device = lspci.devices[0]
    assert device.capabilities_denied is not None and device.lnk_sta is None and device.acs_ctl is None


def test_lspci_grep_excerpt_gives_one_anonymous_device_per_line():
    text = "".join(f"\t\tACSCtl:\tSrcValid{s} TransBlk- ReqRedir{s} CmpltRedir{s} UpstreamFwd- EgressCtrl- DirectTrans-\n"
                   for s in "-+-")
    lspci = _parse(parse_lspci, text)
    assert lspci.kind == "excerpt"
    assert [d.address for d in lspci.devices] == [None, None, None]
    assert [d.acs_ctl.redirects for d in lspci.devices] == [False, True, False]
    assert [d.acs_ctl.loc.line for d in lspci.devices] == [1, 2, 3]


def test_lspci_one_line_lists():
    lspci = _parse(parse_lspci, "0001:00:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] "
                                "[10de:20b2] (rev a1)\n03:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, "
                                "5-Port PCI Express Gen 3 (8.0 GT/s) Switch (rev ca)\n")
    assert lspci.kind == "list"
    assert [(d.address, d.vendor_id, d.device_id) for d in lspci.devices] == \
        [("0001:00:00.0", "10de", "20b2"), ("0000:03:00.0", None, None)]


def test_lspci_tree_gives_addresses_and_parents():
    tree = ("-+-[0000:00]-+-00.0  Advanced Micro Devices, Inc. [AMD] Device 14a4\n"
            " |           +-01.1-[01-02]----00.0-[02]--+-00.0  NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]\n"
            " |           |                            \\-00.1  NVIDIA Corporation AD102 High Definition Audio\n"
            " |           \\-07.1-[03]----00.0  Mellanox Technologies MT2910 Family [ConnectX-7]\n"
            " \\-[0000:40]-+-00.0  Advanced Micro Devices, Inc. [AMD] Device 14a4\n")
    lspci = _parse(parse_lspci, tree)
    assert lspci.kind == "tree"
    got = {d.address: d.parent for d in lspci.devices}
    assert got == {"0000:00:00.0": None, "0000:00:01.1": None, "0000:01:00.0": "0000:00:01.1",
                   "0000:02:00.0": "0000:01:00.0", "0000:02:00.1": "0000:01:00.0", "0000:00:07.1": None,
                   "0000:03:00.0": "0000:00:07.1", "0000:40:00.0": None}
    assert lspci.by_address()["0000:02:00.0"].description.startswith("NVIDIA Corporation AD102GL")


def test_lspci_garbage_is_tl001_when_named_and_skipped_in_a_folder(tmp_path):
    bad = tmp_path / "node" / "lspci.txt"
    bad.parent.mkdir()
    bad.write_text(VVV + "this line is not lspci output\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        _parse(parse_lspci, bad.read_text())
    assert error.value.line == VVV.count("\n") + 1
    named = run_cli("check", bad, "--format", "concise")
    assert named.exit_code == 2 and f"{bad}:{error.value.line}:1: TL001" in named.stdout
    walked = run_cli("check", bad.parent, "--format", "concise", "-v")
    assert "TL001" not in walked.stdout and "lspci.txt: skipped, malformed lspci output" in walked.stderr


def test_dmesg_iommu_hypervisor_and_command_line():
    log = _parse(parse_dmesg, "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on\n"
                              "[    0.000000] DMI: Dell Inc. PowerEdge XE9680/0GCMJK, BIOS 1.6.10 09/14/2023\n"
                              "[    0.000000] Hypervisor detected: KVM\n"
                              "[    0.512345] DMAR: IOMMU enabled\n"
                              "[    1.234567] iommu: Default domain type: Translated\n")
    assert log.default_domain.value == "Translated"
    assert (log.default_domain.loc.line, log.default_domain.loc.column) == (5, 44)
    assert log.hypervisor.value == "KVM" and log.cpu_vendor.value == "Intel"
    assert log.cmdline.value.endswith("intel_iommu=on") and log.dmi.value.startswith("Dell Inc.")


def test_cmdline_parameters_keep_their_columns():
    cmdline = _parse(parse_cmdline, "BOOT_IMAGE=/vmlinuz ro iommu=pt\n")
    assert [(p.value, p.loc.column) for p in cmdline.parameters] == \
        [("BOOT_IMAGE=/vmlinuz", 1), ("ro", 21), ("iommu=pt", 24)]


def test_numactl_cpu_less_nodes_and_distances():
    table = _parse(parse_numactl, "available: 3 nodes (0-2)\nnode 0 cpus: 0 1 2 3 8 9\nnode 0 size: 1024 MB\n"
                                  "node 0 free: 512 MB\nnode 1 cpus: 4 5 6 7\nnode 1 size: 1024 MB\n"
                                  "node 2 cpus:\nnode 2 size: 16384 MB\nnode distances:\nnode   0   1   2\n"
                                  "  0:  10  21  13\n  1:  21  10  31\n  2:  13  31  10\n")
    assert [(n.node_id, n.cpus, n.size_mb) for n in table.nodes] == \
        [(0, "0-3,8-9", 1024), (1, "4-7", 1024), (2, "", 16384)]
    assert table.distances[2] == [13, 31, 10] and not table.partial


def test_numactl_cut_paste_is_partial_and_garbage_is_an_error():
    assert _parse(parse_numactl, "available: 4 nodes (0-3)\nnode 0 cpus: 0 1\n").partial
    with pytest.raises(InputError) as error:
        _parse(parse_numactl, "available: 2 nodes (0-1)\nnode 0 cpus: 0 1 x\n")
    assert error.value.line == 2


HWLOC = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd" [<!ENTITY boom "expanded">]>
<topology version="3.0">
  <object type="Machine" os_index="0" cpuset="0x000000ff" nodeset="0x00000003">
    <object type="Package" os_index="1" cpuset="0x000000f0" nodeset="0x00000002">
      <object type="NUMANode" os_index="1" cpuset="0x000000f0" nodeset="0x00000002" local_memory="1"/>
      <object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[80-81]">
        <object type="PCIDev" pci_busid="0000:81:00.0" pci_type="0207 [15b3:1021] [15b3:0041] 00" pci_link_speed="63.015385">
          <info name="note" value="&boom;"/>
          <object type="OSDev" name="mlx5_0" subtype="OpenFabrics" osdev_type="48"/>
        </object>
      </object>
    </object>
  </object>
</topology>
"""


def test_hwloc_locality_os_devices_and_no_entity_expansion():
    assert sniff(HWLOC) == "hwloc"
    topology = _parse(parse_hwloc, HWLOC, "lstopo.xml")
    (nic,) = topology.os_devices
    assert (nic.name, nic.subtype, nic.bus_id, nic.numa_nodes) == ("mlx5_0", "OpenFabrics", "0000:81:00.0", [1])
    assert nic.loc.line == 10
    assert [p.link_speed_gbs for p in topology.pci] == [63.015385]
    assert "expanded" not in str(topology.model_dump())


def test_hwloc_osdev_type_is_an_enum_before_hwloc_3_and_a_bit_mask_after():
    v2 = HWLOC.replace('version="3.0"', 'version="2.0"').replace('subtype="OpenFabrics" osdev_type="48"',
                                                               'osdev_type="3"')
    assert [o.osdev_class for o in _parse(parse_hwloc, v2).os_devices] == ["openfabrics"]
    v3 = HWLOC.replace('subtype="OpenFabrics" osdev_type="48"', 'osdev_type="16"')
    assert [o.osdev_class for o in _parse(parse_hwloc, v3).os_devices] == ["network"]


HOST_FORMATS = ("lspci", "dmesg", "cmdline", "numactl", "hwloc")
HOST_FIXTURES = sorted(p for p in (FIXTURES / "rules").glob("**/*") if p.is_file() and p.suffix in (".txt", ".xml")
                       and sniff(p.read_text(encoding="utf-8", errors="replace")) in HOST_FORMATS)


@pytest.mark.parametrize("sample", HOST_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_host_fixture_facts_match_the_schema(sample):
    """Parsers build facts without validation (fast path); the schema still holds for what they build."""
    from topolint.parsers.registry import parse

    text = sample.read_text(encoding="utf-8")
    facts = parse(sniff(text), SourceFile(path=sample.name, text=text))
    type(facts).model_validate(facts.model_dump())


def test_hwloc_io_locality_of_a_huge_nodeset_is_listed_once_and_bounded():
    """A nodeset naming 65,536 NUMA nodes was expanded for every I/O object below it (a 47 KB file
    took 71 s and 1.3 GB); now one list per nodeset, of at most MAX_LISTED_NODES ids."""
    from growers import _hwloc_wide_nodeset

    from topolint.parsers.hwloc_xml import MAX_LISTED_NODES, parse_hwloc

    topology = parse_hwloc(SourceFile(path="wide.xml", text=_hwloc_wide_nodeset(3)))
    assert [len(p.numa_nodes) for p in topology.pci] == [MAX_LISTED_NODES] * 3
    assert topology.pci[0].numa_nodes[:3] == [0, 1, 2]
    assert topology.pci[0].numa_nodes is topology.pci[2].numa_nodes
