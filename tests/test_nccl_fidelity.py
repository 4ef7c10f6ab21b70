"""Issue 8, "found so far": each place where topolint and NCCL's own code parted, held to NCCL.

Every test fails on the behaviour topolint had before (ranking NICs by type first, one PXN rule
for every version, the relay GPU's GDR ignored, <pcilink> ignored, lxml's leniency, plugin
variables unknown) and cites the NCCL file and function it follows.
"""

from __future__ import annotations

import json

from conftest import run_cli

from topolint.inputs.source import SourceFile
from topolint.model.nccl_version import NcclVersion
from topolint.model.system import System
from topolint.parsers.nccl_topo_xml import parse_topology

CPU = ('<cpu host_hash="0x1" numaid="{numa}" affinity="{mask}" arch="x86_64" vendor="GenuineIntel" '
       'familyid="6" modelid="143">')


def gpu(bus, dev, gdr=1, links=""):
    return (f'<pci busid="{bus}" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" '
            f'link_width="16"><gpu dev="{dev}" sm="90" rank="{dev}" gdr="{gdr}">{links}</gpu></pci>')


def nic(bus, name, dev, speed=400000, gdr=1):
    return (f'<pci busid="{bus}" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" '
            f'link_width="16"><nic><net name="{name}" dev="{dev}" speed="{speed}" port="1" gdr="{gdr}"/></nic></pci>')


def switch(bus, *children, extra=""):
    return (f'<pci busid="{bus}" class="0x060400" vendor="0x10b5" device="0x8747" link_speed="32.0 GT/s PCIe" '
            f'link_width="16">{"".join(children)}{extra}</pci>')


NVS = '<nvlink target="0000:ff:00.0" count="18" tclass="0x068000"/>'


def xml(*sockets) -> str:
    body = "".join(CPU.format(numa=i, mask="0000ffff" if i == 0 else "ffff0000") + "".join(s) + "</cpu>"
                   for i, s in enumerate(sockets))
    return f'<system version="1">{body}</system>\n'


def system(text: str, version: str = "2.30.7") -> System:
    return System(parse_topology(SourceFile("t.xml", text)), NcclVersion.parse(version))


def net_named(s: System, name: str) -> tuple:
    return next(key for key, (_, fact) in s.nets.items() if fact.name == name)


def findings(tmp_path, text: str, *args) -> list[dict]:
    path = tmp_path / "topo.xml"
    path.write_text(text, encoding="utf-8")
    result = run_cli("check", str(path), "--format", "json", "--isolated", "--no-cache", *args)
    return json.loads(result.stdout)["findings"]


# 1. src/graph/topo.cc ncclTopoGetLocal: bandwidth first, then path type.
FAST_FAR = xml([switch("0000:10:00.0", gpu("0000:11:00.0", 0), nic("0000:12:00.0", "mlx5_0", 0, speed=100000)),
                switch("0000:20:00.0", nic("0000:21:00.0", "mlx5_1", 1, speed=400000))])


def test_nic_choice_is_bandwidth_first():
    s = system(FAST_FAR)
    nearest = s.nearest_nets(s.gpus["0000:11:00.0"])
    assert [s.nets[n][1].name for n, _ in nearest] == ["mlx5_1"]  # 400G at PHB beats 100G at PIX
    assert nearest[0][1].type == "PHB"
    assert not s.gdr_enabled(s.gpus["0000:11:00.0"], nearest[0][0])


def test_numa002_fires_when_the_faster_nic_is_behind_the_cpu(tmp_path):
    found = findings(tmp_path, FAST_FAR, "--select", "NUMA002")
    assert [f["code"] for f in found] == ["NUMA002"]
    assert "mlx5_1" in found[0]["message"]


# 2. src/graph/paths.cc ncclTopoComputePaths: a path better than PHB goes through the CPU when
#    ncclTopoCheckGdr fails; from 2.30.3 the relay GPU must pass ncclTopoCheckGdr too.
NO_GDR_NIC = xml([switch("0000:10:00.0", gpu("0000:11:00.0", 0, links=NVS), nic("0000:12:00.0", "mlx5_0", 0, gdr=0))],
                 [gpu("0000:91:00.0", 1, links=NVS)])
# The far GPU comes first: NCCL visits it before the relay's own GDR check reroutes the relay.
NO_GDR_RELAY = xml([gpu("0000:11:00.0", 0, links=NVS)],
                   [switch("0000:90:00.0", gpu("0000:91:00.0", 1, gdr=0, links=NVS), nic("0000:92:00.0", "mlx5_0", 0))])


def test_no_pxn_through_a_nic_without_gdr():
    for version in ("2.29.7", "2.30.7"):
        s = system(NO_GDR_NIC, version)
        assert s.gpu_net_paths["0000:91:00.0"][net_named(s, "mlx5_0")].type == "SYS", version


def test_relay_gpu_needs_gdr_from_2_30_3():
    before, after = system(NO_GDR_RELAY, "2.29.7"), system(NO_GDR_RELAY, "2.30.3")
    assert before.gpu_net_paths["0000:11:00.0"][net_named(before, "mlx5_0")].type == "PXN"
    assert after.gpu_net_paths["0000:11:00.0"][net_named(after, "mlx5_0")].type == "SYS"


def test_numa001_is_an_error_when_nccl_uses_sys(tmp_path):
    found = findings(tmp_path, NO_GDR_NIC, "--select", "NUMA001")
    assert found and all(f["severity"] == "error" for f in found)
    assert not any("PXN" in f["message"] for f in found)


# 6. src/graph/topo.cc ncclTopoAddPciLinks: <pcilink> joins two switches (a LOC link, PXB).
PCILINK = xml([switch("0000:10:00.0", gpu("0000:11:00.0", 0), extra='<pcilink target="0000:20:00.0"/>'),
               switch("0000:20:00.0", nic("0000:21:00.0", "mlx5_0", 0), extra='<pcilink target="0000:10:00.0"/>')])


def test_pcilink_makes_pxb_with_gdr():
    s = system(PCILINK)
    net = net_named(s, "mlx5_0")
    assert s.gpu_net_paths["0000:11:00.0"][net].type == "PXB"
    assert s.gdr_enabled(s.gpus["0000:11:00.0"], net)
    # Before 2.22 no handler keeps <pcilink> (src/graph/xml.cc ncclTopoXmlLoadPci): it is dropped.
    old = system(PCILINK, "2.21.5")
    assert old.gpu_net_paths["0000:11:00.0"][net_named(old, "mlx5_0")].type == "PHB"


# 7. Behaviour by version (topolint/model/nccl_version.py BEHAVIOURS, each row citing NCCL).
def test_version_rows():
    v = NcclVersion.parse
    assert v("2.27.3").rank("PXN") < v("2.27.3").rank("P2C") and v("2.27.5").rank("P2C") < v("2.27.5").rank("PXN")
    assert v("2.27.5").behaviour("pxn_rule") == "pxn_type" and v("2.27.6").behaviour("pxn_rule") == "worse_than_pxn"
    assert v("2.27.7").behaviour("pxn_c2c_default") == 0 and v("2.28.3").behaviour("pxn_c2c_default") == 1
    assert v("2.29.1").behaviour("p2c_merge") == "merge" and v("2.29.2").behaviour("p2c_merge") == "merge_local"
    assert v("2.28.9").default_gdr_level == "PXB" and v("2.30.7").default_gdr_level == "P2C"
    assert not v("2.30.4").behaviour("set_paths_type_first") and v("2.30.7").behaviour("set_paths_type_first")
    assert not v("2.30.4").behaviour("gdr_off_mlopart") and v("2.30.7").behaviour("gdr_off_mlopart")
    speeds = {name for name, _ in v("2.12.10").behaviour("pci_speeds")}
    assert "32 GT/s" not in speeds and "32 GT/s" in {name for name, _ in v("2.12.12").behaviour("pci_speeds")}


GRACE = ('<system version="1"><cpu host_hash="0x1" numaid="0" affinity="ffff" arch="arm64" vendor="ARM">'
         '<pci busid="0009:01:00.0" class="0x030200" vendor="0x10de" device="0x2342" link_speed="32.0 GT/s PCIe" '
         'link_width="16"><gpu dev="0" sm="90" rank="0" gdr="1"><c2c bw="32000" count="10"/></gpu></pci>'
         '<pci busid="0000:01:00.0" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" '
         'link_width="16"><nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic></pci>'
         '</cpu></system>\n')


def test_gdr_over_c2c_on_2_27_and_2_28_reads_p2c_as_c2c():
    # src/graph/paths.cc ncclTopoCheckGdr (2.27-2.28): level PXB, but a P2C distance counts as C2C.
    for version, expected in (("2.26.6", False), ("2.27.7", True), ("2.28.9", True), ("2.30.7", True)):
        s = system(GRACE, version)
        assert s.gdr_enabled(s.gpus["0009:01:00.0"], net_named(s, "mlx5_0")) is expected, version


# 5. src/graph/xml.cc xmlGetNode/xmlGetToken/xmlGetValue: what NCCL's reader refuses, lxml accepts.
def test_nccl_reader_refusals_are_topo001(tmp_path):
    good = xml([gpu("0000:11:00.0", 0)])
    cases = {
        "split": good.replace('" class=', '"\n class=', 1),
        "space_eq": good.replace('busid="', 'busid = "', 1),
        "text": good.replace("<cpu", "stray text <cpu", 1),
        "long": good.replace('busid="', 'busid="' + "0" * 300, 1),
        "no_tclass": xml([gpu("0000:11:00.0", 0, links='<nvlink target="0000:ff:00.0" count="18"/>')]),
    }
    assert not [f for f in findings(tmp_path, good, "--select", "TOPO001")]
    for name, text in cases.items():
        found = findings(tmp_path, text, "--select", "TOPO001")
        assert [f["code"] for f in found] == ["TOPO001"], name


def test_bom_is_topo001(tmp_path):
    path = tmp_path / "bom.xml"
    path.write_bytes(b"\xef\xbb\xbf" + xml([gpu("0000:11:00.0", 0)]).encode())
    result = run_cli("check", str(path), "--format", "json", "--isolated", "--no-cache", "--select", "TOPO001")
    found = json.loads(result.stdout)["findings"]
    assert [f["code"] for f in found] == ["TOPO001"] and "expecting '<'" in found[0]["message"]


def test_single_quotes_misread_before_2_27(tmp_path):
    """src/graph/xml.cc xmlGetValue at v2.26.6 ends a value at a double quote only: class='...'
    runs on to vendor's opening quote, and the next character, vendor's first, is not '>'."""
    text = xml([gpu("0000:11:00.0", 0)]).replace('class="0x030200"', "class='0x030200'")
    assert not findings(tmp_path, text, "--select", "TOPO001", "--nccl-version", "2.27.7")
    old = findings(tmp_path, text, "--select", "TOPO001", "--nccl-version", "2.26.6")
    assert [f["code"] for f in old] == ["TOPO001"]
    assert old[0]["message"] == ("line 1: NCCL 2.26.6 reads the single-quoted value of class up to the next double "
                                 "quote, as \"0x030200' vendor=\", and then stops with \"XML Parse : expected >, got "
                                 "'0'\"; communicator init fails")


def test_a_value_past_the_buffer_stays_undefined_before_2_27(tmp_path):
    """A single-quoted value whose next double quote is 256 or more characters on overruns NCCL's
    256-byte value buffer (xml.h: char value[MAX_STR_LEN+1]): no deterministic answer."""
    text = xml([gpu("0000:11:00.0", 0)]).replace('class="0x030200"', "class='0x030200" + " " * 300 + "'")
    old = findings(tmp_path, text, "--select", "TOPO001", "--nccl-version", "2.26.6")
    assert [f["code"] for f in old] == ["TOPO001"]
    assert "what NCCL then does is undefined" in old[0]["message"] and "256-byte buffer" in old[0]["message"]


# 9. ENV001: names NCCL's own plugins and contrib/ read (plugins/profiler inspector, tuner example).
def test_env001_knows_plugin_variables(tmp_path):
    env = tmp_path / "job.env"
    env.write_text("NCCL_INSPECTOR_ENABLE=1\nNCCL_TUNER_CONFIG_FILE=/etc/tuner.conf\nNCCL_INSPECTOR_ENABEL=1\n")
    result = run_cli("check", str(env), "--format", "json", "--isolated", "--no-cache", "--select", "ENV001")
    found = json.loads(result.stdout)["findings"]
    assert len(found) == 1 and "NCCL_INSPECTOR_ENABEL" in found[0]["message"]
    assert "NCCL_INSPECTOR_ENABLE" in found[0]["message"].split("NCCL_INSPECTOR_ENABEL", 1)[1]


def test_env001_knows_gpudirect_tcpx_names_and_catches_their_typos(tmp_path):
    """Google's GPUDirect-TCPX plugin (google/nccl-plugin-gpudirecttcpx, topolint/data/plugin_env.tsv)
    reads NCCL_GPUDIRECTTCPX_* (TCPX_GET_ENV) and NCCL_* (TCPX_PARAM) names: known one by one, so
    a misspelt one is ENV001 with the plugin's name as the suggestion (it was hidden by a prefix)."""
    env = tmp_path / "job.env"
    env.write_text("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2\nNCCL_GPUDIRECTTCPX_TX_BINDINGS=eth1:8-21\n"
                   "NCCL_TCPX_RXMEM_IMPORT_USE_GPU_PCI_CLIENT=1\nNCCL_FASTRAK_IFNAME=eth1\n"
                   "NCCL_GPUDIRECTTCPX_SOCKET_IFNAM=eth1\n")
    result = run_cli("check", str(env), "--format", "json", "--isolated", "--no-cache", "--select", "ENV001")
    found = json.loads(result.stdout)["findings"]
    assert [f["line"] for f in found] == [5]
    assert "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME" in found[0]["message"].split("NCCL_GPUDIRECTTCPX_SOCKET_IFNAM=", 1)[-1]


# 3. The PXN relay for a NIC is its local GPU (src/graph/topo.cc ncclTopoGetLocalGpu) and must be a
#    direct NVLink peer (src/graph/paths.cc ncclTopoComputePaths: paths[GPU][g].type <= PATH_NVL).
def _matrix_findings(path, codes):
    result = run_cli("check", str(path), "--format", "json", "--isolated", "--no-cache", "--select", codes)
    return {f["message"].split(" (")[0]: f for f in json.loads(result.stdout)["findings"]}


def test_matrix_pxn_relay_is_the_nics_local_gpu(corpus):
    found = _matrix_findings(corpus / "nvidia-smi-topo" /
                             "dgx1v-style-8xv100-nv1-nv2-cube-mesh-single-edr-nic_oneflow-benchmark.txt", "NUMA001")
    assert found["GPU 7"]["severity"] == "error"  # its NVLink peer GPU3 is not mlx5_0's relay (GPU2)
    assert found["GPU 6"]["severity"] == "warning" and "through GPU 2" in found["GPU 6"]["message"]


# 4. NCCL gives SYS only across a CPU-to-CPU link (src/graph/paths.cc ncclTopoSetPaths, LINK_SYS):
#    SYS in a matrix between a GPU and a NIC of one NUMA node is PHB to NCCL.
def test_matrix_sys_within_one_numa_node_is_phb(corpus):
    found = _matrix_findings(corpus / "nvidia-smi-topo" / "8x-rtx4090-2nic-tabs-nic-rows-short_go-gpuallocator-issue-17.txt",
                             "NUMA001,NUMA002")
    assert {g: found[g]["code"] for g in ("GPU 4", "GPU 5", "GPU 7")} == dict.fromkeys(("GPU 4", "GPU 5", "GPU 7"),
                                                                                     "NUMA002")
    assert found["GPU 0"]["code"] == "NUMA001"


# 8. NUMA002 names NCCL 2.30.7's default GDR level, P2C (src/graph/paths.cc ncclTopoCheckGdr).
def test_numa002_names_p2c_for_2_30_7(tmp_path):
    found = findings(tmp_path, FAST_FAR, "--select", "NUMA002")
    assert "NCCL_NET_GDR_LEVEL P2C" in found[0]["message"]


# ncclTopoGetLocalNet / ncclTopoGetLocalGpu (src/graph/topo.cc): 2.18.1-2.18.3 share a mask of
# best NETs round robin between the GPUs that have that mask (getLocalNetMask); from 2.18.5 each
# GPU starts at its bit-mirrored dev and steps once per channel within its share.
FOUR_NICS = xml([switch("0000:10:00.0", gpu("0000:11:00.0", 0), gpu("0000:12:00.0", 1),
                        *(nic(f"0000:1{3 + i}:00.0", f"mlx5_{i}", i) for i in range(4)))])


def channel_nets(version: str) -> tuple[list[list[int]], list[int]]:
    """The NET of channels 0..3 per GPU, and each NET's local GPU (the PXN relay)."""
    from types import SimpleNamespace

    from topolint.model.nccl_graph import NcclSystem

    s = NcclSystem(SimpleNamespace(path="t.xml", text=FOUR_NICS, bom=False), NcclVersion.parse(version), {})
    return [[s.local_net(g, c) for c in range(4)] for g in range(2)], [s.local_gpu(n) for n in range(4)]


def test_channel_nic_by_net_mask_before_2_18_5():
    v = NcclVersion.parse
    assert v("2.18.3").behaviour("local_net_rule") == "net_mask"
    assert v("2.18.5").behaviour("local_net_rule") == "per_channel"
    assert channel_nets("2.18.1") == ([[0, 2, 0, 2], [1, 3, 1, 3]], [0, 1, 0, 1])
    assert channel_nets("2.18.5") == ([[0, 1, 0, 1], [2, 3, 2, 3]], [0, 0, 1, 1])


def test_local_gpu_asked_after_the_load_on_2_18_1_does_not_fail():
    """On generated topology 8/134 NCCL 2.18.1 loads (ncclTopoComputePaths' own
    ncclTopoGetLocalGpu calls pass), but the final paths give two best-type GPUs of a NIC
    different NET masks, so asking again fails (topo.cc ncclTopoGetLocalGpu WARN): topolint
    then falls back to its own choice instead of a traceback."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "oracle"))
    from generate import generate

    text, _ = generate(8, 134)
    s = system(text, "2.18.1")
    assert s.nccl() is not None
    assert all(s.local_gpu(net) in s.gpus for net in s.nets)
