"""Fabric parsers (ibstat, ibstatus, ibv_devinfo, ibdev2netdev, show_gids, mlnx_qos/dcb, sysfs
dumps, ethtool, ip addr/route, mounts): what they keep, where it came from, and TL001 with the
line for what they cannot read."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from topolint.inputs.sniff import sniff
from topolint.inputs.source import InputError, SourceFile
from topolint.model import fabric
from topolint.parsers.registry import parse

CX7_IBSTAT = """CA 'mlx5_0'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: 28.39.2048
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 400
\t\tLink layer: InfiniBand
CA 'mlx5_1'
        CA type: MT4129
        Port 1:
                State: Down
                Physical state: Disabled
                Rate: 10
                Link layer: InfiniBand
"""


def read(text: str, fmt: str | None = None):
    found = sniff(text)
    assert found == fmt or fmt is None, found
    facts = parse(found, SourceFile("f.txt", text))
    type(facts).model_validate(facts.model_dump())  # build() output fits the schema
    return facts


def error(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse(sniff(text), SourceFile("f.txt", text))
    return caught.value


def test_ibstat_ports_states_rates_and_lines():
    ports = read(CX7_IBSTAT, "ibstat").ports
    assert [(p.hca, p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.model) for p in ports] == [
        ("mlx5_0", 1, "active", "linkup", 400.0, "infiniband", "MT4129"),
        ("mlx5_1", 1, "down", "disabled", 10.0, "infiniband", "MT4129")]
    assert ports[0].loc.line == 5 and ports[0].at("state").line == 6 and ports[1].at("rate").line == 15


def test_ibstat_noise_and_ibpanic_are_kept_apart():
    text = "ibwarn: [1] umad_init: umad_init\n" + CX7_IBSTAT + "ibpanic: [2] main: stat of IB device 'mlx5_8' failed\n"
    facts = read(text, "ibstat")
    assert len(facts.ports) == 2 and [f.line for f in facts.failures] == [18]


def test_ibstat_stray_line_is_tl001_with_its_line():
    exc = error(CX7_IBSTAT.replace("\t\tRate: 400\n", "\t\tRate 400\n"))
    assert exc.line == 8 and "malformed ibstat output" in exc.message


def test_ibstatus_rate_state_and_subnet_prefix():
    text = ("Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:0015:5dff:fd34:11eb\n"
            "\tstate:\t\t 4: ACTIVE\n\tphys state:\t 5: LinkUp\n\trate:\t\t 200 Gb/sec (4X HDR)\n"
            "\tlink_layer:\t InfiniBand\n")
    port = read(text, "ibstatus").ports[0]
    assert (port.state, port.phys_state, port.rate_gbps, port.subnet_prefix) == \
        ("active", "linkup", 200.0, "fe80:0000:0000:0000")


def test_ibv_devinfo_both_layouts_mtus_and_verbose_rate():
    text = ("hca_id:\tmlx4_0\n\ttransport:\t\t\tInfiniBand (0)\n\tvendor_part_id:\t\t\t4099\n"
            "\tdevice_cap_flags:\t\t0x1\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tUnknown flags: 0xe5620000\n"
            "\tDevice ports:\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n"
            "\t\t\tactive_mtu:\t\t1024 (3)\n\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
            "\t\t\tlink_layer:\t\tEthernet\n\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0e42:a1ff:fe00:0001\n")
    port = read(text, "ibv_devinfo").ports[0]
    assert (port.hca, port.port, port.state, port.active_mtu, port.max_mtu, port.link_layer, port.model,
            port.rate_gbps) == ("mlx4_0", 1, "active", 1024, 4096, "ethernet", "MT4099", 100.0)
    assert port.at("active_mtu").line == 11


def test_ibdev2netdev_plain_column_t_and_verbose():
    links = read("mlx5_0   port  1  ==>  ibp26s0   (Down)  # CX-7\n"
                 "0000:1a:00.0 mlx5_1 (MT4129 - MCX75310AAS) ConnectX-7 fw 28.39 port 1 (ACTIVE) ==> ens1 (Up)\n",
                 "ibdev2netdev").links
    assert [(x.hca, x.port, x.netdev, x.netdev_up, x.loc.line) for x in links] == [
        ("mlx5_0", 1, "ibp26s0", False, 1), ("mlx5_1", 1, "ens1", True, 2)]


def test_show_gids_cells_by_shape_not_position():
    text = ("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
            "mlx5_0\t1\t0\tfe80:0000:0000:0000:0ac0:ebff:fe21:03da\t\t\tv1\trdma0\n"
            "mlx5_0  1       3       0000:0000:0000:0000:0000:ffff:c0a8:d3f2 192.168.211.242          v2      rdma0\n"
            "mlx5_5  1       0       fe80:0000:0000:0000:08c0:eb03:00b6:a0b4                 v1\nn_gids_found=3\n")
    gids = read(text, "show_gids").gids
    assert [(g.hca, g.index, g.ipv4, g.version, g.netdev, g.link_local) for g in gids] == [
        ("mlx5_0", 0, None, "v1", "rdma0", True), ("mlx5_0", 3, "192.168.211.242", "v2", "rdma0", False),
        ("mlx5_5", 0, None, "v1", None, True)]


def test_mlnx_qos_trust_pfc_dscp2prio_and_wrapper_sysfs_lines():
    text = ("    ======== show configuration for device eth0 / mlx5_0========\n"
            "    Priority trust state: dscp\n    dscp2prio mapping:\n\tprio:3 dscp:31,30,29,28,27,26,25,24,\n"
            "    PFC configuration:\n        priority    0   1   2   3   4   5   6   7\n"
            "        enabled     0   0   0   1   0   0   0   0   \n"
            "    tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%\n         priority:  3\n"
            "    ECN Enabled for priority 3: /sys/class/net/eth0/ecn/roce_np/enable/3 = 1\n"
            "    QOS for rdma: /sys/class/infiniband/mlx5_0/tc/1/traffic_class = Global tclass=106\n")
    facts = read(text, "mlnx_qos")
    qos = facts.ports[0]
    assert (qos.interface, qos.hca, qos.trust) == ("eth0", "mlx5_0", "dscp")
    assert qos.pfc == [False, False, False, True, False, False, False, False] and qos.at("pfc").line == 7
    assert qos.dscp2prio[26] == 3 and 0 not in qos.dscp2prio
    assert [(e.interface, e.role, e.priority, e.enabled) for e in facts.ecn] == [("eth0", "np", 3, True)]
    assert [(t.hca, t.tc, t.tclass) for t in facts.traffic_classes] == [("mlx5_0", 1, 106)]


def test_dcb_pfc_and_app_lines():
    facts = read("pfc-cap 8 macsec-bypass off delay 0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
                 "dscp-prio 0:0 26:3 48:6\n", "mlnx_qos")
    assert facts.ports[0].pfc[3] and not any(facts.ports[0].pfc[:3]) and facts.ports[0].dscp2prio == {0: 0, 26: 3, 48: 6}


def test_sysfs_grep_gids_types_and_session_traffic_class():
    dump = read("/sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:d3f2\n"
                "/sys/class/infiniband/mlx5_0/ports/1/gids/4:0000:0000:0000:0000:0000:0000:0000:0000\n"
                "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3:RoCE v2\n"
                "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3:ens1f0\n", "sysfs-dump")
    assert [(g.index, g.ipv4, g.version, g.netdev) for g in dump.gids] == [(3, "192.168.211.242", "v2", "ens1f0")]
    assert dump.kinds() == {"gids"}
    session = read("root@h:~# cat /sys/class/infiniband/mlx5_2/tc/1/traffic_class\n"
                   "root@h:~# echo 106 > /sys/class/infiniband/mlx5_2/tc/1/traffic_class\n"
                   "root@h:~# cat /sys/class/infiniband/mlx5_2/tc/1/traffic_class\nGlobal tclass=106\nroot@h:~#\n",
                   "sysfs-dump")
    assert [(t.tclass, t.loc.line) for t in session.traffic_classes] == [(None, 1), (106, 4)]


def test_ethtool_speed_unknown_no_speed_and_tail():
    links = read("Settings for eth0:\n\tSupported link modes:   1000baseT/Full\n\t                        10000baseT/Full\n"
                 "\tSpeed: 1000Mb/s\n\tDuplex: Full\n\tLink detected: yes\n"
                 "Settings for ens3:\n\tLink detected: yes\n"
                 "Settings for enp5s0:\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n", "ethtool").links
    assert [(x.interface, x.speed_mbps, x.speed_text, x.link_detected) for x in links] == [
        ("eth0", 1000, "1000Mb/s", True), ("ens3", None, None, True), ("enp5s0", None, "Unknown!", None)]
    assert (links[0].at("speed").line, links[0].at("speed").column) == (4, 9)
    tail = read("\tSpeed: 400000Mb/s\n\tLanes: 8\n\tDuplex: Full\n", "ethtool").links[0]
    assert (tail.interface, tail.speed_mbps, tail.lanes) == (None, 400000, 8)


def test_ip_addr_text_brief_and_json():
    text = ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n"
            "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n    inet 127.0.0.1/8 scope host lo\n"
            "       valid_lft forever preferred_lft forever\n"
            "3: ens1f0@if9: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP group default\n"
            "    link/ether 0c:42:a1:00:00:01 brd ff:ff:ff:ff:ff:ff\n"
            "    inet 10.1.0.5/16 brd 10.1.255.255 scope global ens1f0\n")
    interfaces = read(text, "ip-addr").interfaces
    assert [(i.name, i.state, i.mtu, i.link_type, [(a.address, a.prefix, a.loc.line) for a in i.addresses])
            for i in interfaces] == [("lo", "UNKNOWN", 65536, "loopback", [("127.0.0.1", 8, 3)]),
                                     ("ens1f0", "UP", 9000, "ether", [("10.1.0.5", 16, 7)])]
    data = read('[{"ifindex":2,"ifname":"eth0","flags":["UP","LOWER_UP"],"mtu":1500,"operstate":"UP",\n'
                '"addr_info":[{"family":"inet","local":"10.0.0.4","prefixlen":24}]}]', "ip-addr").interfaces[0]
    assert (data.name, data.mtu, data.addresses[0].address, data.loc.line, data.addresses[0].loc.line) == \
        ("eth0", 1500, "10.0.0.4", 1, 2)


def test_ip_json_that_does_not_decode_is_tl001():
    exc = error('[{"ifindex":2,"ifname":"eth0","operstate":"UP",\n"addr_info":[{"local": NaN}]}]')
    assert "malformed ip -j addr JSON" in exc.message


def test_ip_route_text_and_json():
    routes = read("default via 10.0.0.1 dev eth0 proto dhcp src 10.0.0.4 metric 100\n"
                  "10.1.0.0/16 dev ens1f0 proto kernel scope link src 10.1.0.5\n"
                  "broadcast 10.1.255.255 dev ens1f0 table local\n", "ip-route").routes
    assert [(r.destination, r.gateway, r.device, r.source) for r in routes] == [
        ("default", "10.0.0.1", "eth0", "10.0.0.4"), ("10.1.0.0/16", None, "ens1f0", "10.1.0.5")]
    assert read('[{"dst":"default","gateway":"10.0.0.1","dev":"eth0"}]', "ip-route").routes[0].device == "eth0"


@pytest.mark.parametrize("text, form", [
    ("10.0.0.9:/data /mnt/data nfs4 rw,vers=4.1,proto=tcp,clientaddr=10.0.0.4,addr=10.0.0.9 0 0\n", "proc-mounts"),
    ("10.0.0.9:/data on /mnt/data type nfs4 (rw,vers=4.1,clientaddr=10.0.0.4,addr=10.0.0.9)\n", "mount"),
    ("263 121 0:46 / /mnt/data rw,relatime - nfs4 10.0.0.9:/data rw,vers=4.2,clientaddr=10.0.0.4,addr=10.0.0.9\n",
     "mountinfo"),
    ("/mnt/data from 10.0.0.9:/data\n Flags:rw,vers=4,proto=tcp,\nclientaddr=10.0.0.4,addr=10.0.0.9\n", "nfsstat"),
])
def test_mount_forms(text, form):
    facts = read(text, "mounts")
    mount = facts.mounts[0]
    assert (facts.form, mount.mountpoint, mount.fstype, mount.server, mount.options["clientaddr"]) == \
        (form, "/mnt/data", "nfs4", "10.0.0.9", "10.0.0.4")


def test_mixed_mount_forms_are_tl001():
    exc = error("a:/x /x nfs4 rw 0 0\na:/y on /y type nfs4 (rw)\n")
    assert exc.line == 2 and "mount" in exc.message


def test_named_malformed_fabric_file_exits_2_with_the_line(tmp_path):
    bad = tmp_path / "ibstat.txt"
    bad.write_text(CX7_IBSTAT + "this is not ibstat\n")
    result = run_cli("check", bad, "--format", "concise")
    assert result.exit_code == 2 and ":17:" in result.stdout and "TL001" in result.stdout


def test_node_model_files_fabric_facts_by_kind():
    from topolint.model.node import NodeModel

    node = NodeModel("n")
    node.add(read(CX7_IBSTAT))
    node.add(read("/sys/class/net/eth0/ecn/roce_np/enable/3:1\n"))
    assert {"ports", "qos"} <= node.available() and "gids" not in node.available()
    assert all(isinstance(f, fabric.FabricFile) for f in node.fabric)


def test_corpus_samples_parse(corpus):
    for folder in ("ibstat", "ibv_devinfo", "ibdev2netdev", "show_gids", "mlnx_qos", "ethtool", "mounts"):
        for sample in sorted((corpus / folder).iterdir()):
            text = sample.read_text(encoding="utf-8")
            assert sniff(text) is not None, sample.name
            facts = parse(sniff(text), SourceFile(sample.name, text))
            assert isinstance(facts, fabric.FabricFile)


@pytest.mark.parametrize("name, text, line", [
    ("ibstat.txt", CX7_IBSTAT + "\tPort 1:\n", 17),  # a port listed twice
    ("ibstatus.txt", "Infiniband device 'mlx5_0' port 1 status:\n\tstate:\t4: ACTIVE\n\tno colon here\n", 3),
    ("ibv_devinfo.txt", "hca_id:\tmlx5_0\n\ttransport:\tInfiniBand (0)\n\t\tport:\t1\n\t\t\tstate PORT_ACTIVE\n", 4),
    ("ibdev2netdev.txt", "mlx5_0 port 1 ==> ens1 (Up)\nmlx5_1 port one ==> ens2 (Up)\n", 2),
    ("show_gids.txt", "DEV\tPORT\tINDEX\tGID\tIPv4\tVER\tDEV\nmlx5_0\t1\tzero\tfe80::1\t\tv1\tens1\n", 2),
    ("mlnx_qos.txt", "Priority trust state: dscp\nPFC configuration:\n\tenabled 0 0 0\nsomething else\n", 3),
    ("sysfs.txt", "/sys/class/net/ens1/ecn/roce_np/enable/3:1\nnot a sysfs line\n", 2),
    ("ethtool.txt", "Settings for eth0:\n\tSpeed: 1000Mb/s\n", None),  # complete: readable
    ("ip-addr.txt", "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 state UNKNOWN\n    inet 127.0.0.1/8 scope host lo\n"
                    "    ??? not ip\n", 3),
    ("ip-route.txt", "default via 10.0.0.1 dev eth0\n10.0.0.0/24 dev eth0\nnot a route at all\n", 3),
    ("mounts.txt", "a:/x /x nfs4 rw 0 0\nb:/y /y nfs4\n", 2),
])
def test_malformed_named_fabric_input_is_tl001_with_its_line(tmp_path, name, text, line):
    path = tmp_path / name
    path.write_text(text)
    result = run_cli("check", path, "--format", "json")
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TL001"]
    if line is None:
        assert findings == [] and result.exit_code in (0, 1)
        return
    assert result.exit_code == 2 and [f["line"] for f in findings] == [line], result.stdout
    assert "malformed" in findings[0]["message"]


def test_other_network_filesystems_are_listed_with_verbose_not_judged(tmp_path):
    mounts = tmp_path / "mounts.txt"
    mounts.write_text("10.0.0.1@o2ib:/lustre /mnt/lustre lustre rw,flock 0 0\n"
                      "10.0.0.9:/data /mnt/data nfs4 rw,vers=4.1,clientaddr=10.0.0.4,addr=10.0.0.9 0 0\n")
    result = run_cli("check", mounts, "--verbose", "--format", "concise")
    assert "line 1: lustre 10.0.0.1@o2ib:/lustre on /mnt/lustre not judged by STOR001" in result.stderr
    assert "/mnt/data not judged" not in result.stderr
