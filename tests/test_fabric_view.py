"""The fabric joins (model/fabric_view.py) and the NCCL behaviour the fabric rules assume, by
version: each statement is NCCL's own code, cited where it is tested."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

from topolint.inputs.sniff import sniff
from topolint.inputs.source import SourceFile
from topolint.model.fabric_view import FabricView
from topolint.model.facts import Location, build
from topolint.model.host import LspciDevice, LspciFile
from topolint.model.nccl_version import NcclVersion
from topolint.model.node import NodeModel
from topolint.parsers.registry import parse


def node_of(*texts: str) -> NodeModel:
    node = NodeModel("n")
    for i, text in enumerate(texts):
        node.add(parse(sniff(text), SourceFile(f"f{i}.txt", text)))
    return node


def _device(address, parent=None, port_type=None, class_code="0604"):
    return build(LspciDevice, address=address, parent=parent, port_type=port_type, class_code=class_code,
                 vendor_id="10de" if class_code == "0302" else "15b3", loc=build(Location, path="lspci.txt", line=1))


def test_an_hca_is_placed_in_lspci_tree_by_its_ibdev2netdev_address():
    node = node_of("0000:18:00.0 mlx5_0 (MT4129 - MCX75310AAS) ConnectX-7 fw 28.39 port 1 (ACTIVE) ==> ib0 (Up)\n")
    tree = [_device("0000:00:01.0", port_type="Root Port"), _device("0000:15:00.0", "0000:00:01.0", "Upstream Port"),
            _device("0000:16:00.0", "0000:15:00.0", "Downstream Port"), _device("0000:16:01.0", "0000:15:00.0"),
            _device("0000:17:00.0", "0000:16:00.0", class_code="0302"),
            _device("0000:18:00.0", "0000:16:01.0", class_code="0207"),
            _device("0000:00:02.0", port_type="Root Port"), _device("0000:40:00.0", "0000:00:02.0", class_code="0302")]
    node.add(build(LspciFile, path="lspci.txt", kind="vvv", devices=tree))
    gpus, loc, address = FabricView(node)._gpus_under_switch("mlx5_0")
    assert gpus == ["the GPU at 0000:17:00.0"] and address == "0000:18:00.0" and loc.path == "f0.txt"


def test_route_to_takes_the_longest_prefix_then_the_interface_subnet():
    node = node_of("default via 10.0.0.1 dev eth0\n10.1.0.0/16 dev ens1 scope link\n10.1.2.0/24 dev ens2 scope link\n",
                   "5: ens9: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP\n"
                   "    inet 192.168.7.4/24 scope global ens9\n")
    view = FabricView(node)
    assert view.route_to("10.1.2.9")[0] == "ens2" and view.route_to("10.1.9.9")[0] == "ens1"
    assert view.route_to("8.8.8.8")[0] == "eth0"
    node_without_routes = node_of("5: ens9: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP\n"
                                  "    inet 192.168.7.4/24 scope global ens9\n")
    assert FabricView(node_without_routes).route_to("192.168.7.20")[0] == "ens9"


def test_nccl_gid_index_default_changed_at_2_21():
    # src/transport/net_ib.cc: NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", 0) at v2.20.5, -1 from v2.21.5, where
    # ncclIbGetGidIndex() scans the table (address family, RoCE version) when it is negative.
    assert not NcclVersion.parse("2.20.5").gid_index_auto and NcclVersion.parse("2.21.5").gid_index_auto
    fixture = FIXTURES / "rules" / "ROCE004"
    args = ("check", fixture / "good_auto.env", "--select", "ROCE004", "--topology", fixture / "topology",
            "--format", "json")
    old = json.loads(run_cli(*args, "--nccl-version", "2.20.5").stdout)["findings"]
    assert [f["entity"] for f in old] == ["env/NCCL_IB_GID_INDEX@fixtures/rules/ROCE004/good_auto.env#file"]
    assert "uses index 0" in old[0]["message"]
    assert json.loads(run_cli(*args, "--nccl-version", "2.21.5").stdout)["findings"] == []


def test_gid_index_pointing_at_different_kinds_across_ports(tmp_path):
    (tmp_path / "topo").mkdir()
    (tmp_path / "topo" / "show_gids.txt").write_text(
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
        "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a04\t192.168.10.4  \tv2\tens1f0\n"
        "mlx5_1\t1\t2\t0000:0000:0000:0000:0000:ffff:c0a8:0b04\t192.168.11.4  \tv2\tens1f1\n"
        "mlx5_1\t1\t3\tfe80:0000:0000:0000:0e42:a1ff:fe00:0002\t\t\tv2\tens1f1\n")
    (tmp_path / "job.env").write_text("NCCL_IB_GID_INDEX=3\n")
    result = run_cli("check", tmp_path / "job.env", "--select", "ROCE004", "--topology", tmp_path / "topo",
                     "--format", "json")
    message = json.loads(result.stdout)["findings"][0]["message"]
    assert "different kinds of GID" in message and "link-local" in message


def _roce(tmp_path, env: str, version: str, tclass: str | None = None):
    (tmp_path / "mlnx_qos.txt").write_text("$ mlnx_qos -i ens1f0\nPriority trust state: dscp\nPFC configuration:\n"
                                           "\tpriority 0 1 2 3 4 5 6 7\n\tenabled  0 0 0 1 0 0 0 0\n")
    if tclass:
        (tmp_path / "tc.txt").write_text(f"/sys/class/infiniband/mlx5_0/tc/1/traffic_class:{tclass}\n")
        (tmp_path / "ibdev2netdev.txt").write_text("mlx5_0 port 1 ==> ens1f0 (Up)\n")
    (tmp_path / "job.env").write_text(env)
    result = run_cli("check", tmp_path, "--select", "ROCE003", "--nccl-version", version, "--format", "json")
    return json.loads(result.stdout)["findings"]


def test_roce_marking_follows_nccl_ib_tc_and_its_default_by_version(tmp_path):
    # src/transport/net_ib.cc: NCCL_PARAM(IbTc, "IB_TC", 0) up to v2.25.1; -1 from v2.26.2, where
    # meta.tc = ncclParamIbTc() != -1 ? ncclParamIbTc() : config->trafficClass, else NCCL_IB_TC_DEFAULT (0).
    unset = _roce(tmp_path, "NCCL_DEBUG=WARN\n", "2.25.1")
    assert len(unset) == 1 and "priority 0" in unset[0]["message"] and "NCCL_IB_TC=96" in unset[0]["fix"]
    assert any("uses 0 (its default up to 2.25)" in e for e in unset[0]["evidence"])
    newer = _roce(tmp_path, "NCCL_DEBUG=WARN\n", "2.26.2")
    assert any("communicator's traffic class" in e for e in newer[0]["evidence"])
    assert _roce(tmp_path, "NCCL_IB_TC=106\n", "2.26.2") == []  # DSCP 26 -> priority 3, the PFC priority


def test_sysfs_traffic_class_overrides_nccl_ib_tc(tmp_path):
    findings = _roce(tmp_path, "NCCL_IB_TC=106\n", "2.27.7", tclass="Global tclass=0")
    assert len(findings) == 1 and any("overrides NCCL_IB_TC" in e for e in findings[0]["evidence"])


def test_control_message_class_exists_from_2_22(tmp_path):
    # src/transport/net_ib.cc: NCCL_PARAM(IbFifoTc, "IB_FIFO_TC", ...) first appears in v2.22.3.
    env = "NCCL_IB_TC=106\nNCCL_IB_FIFO_TC=0\n"
    assert _roce(tmp_path, env, "2.21.5") == []
    assert [f["message"].split(": ", 1)[1][:40] for f in _roce(tmp_path, env, "2.22.3")] == \
        ["NCCL's data lands on lossless priority 3"]


def test_net004_site_profile_rate():
    from topolint.checks import port_rate_low
    from topolint.engine.runner import CheckContext, RunOptions

    node = node_of("CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n")
    context = CheckContext(node, RunOptions(NcclVersion.parse("2.27.7")))
    assert list(port_rate_low.check(context, port_rate_low.Parameters())) == []
    hits = list(port_rate_low.check(context, port_rate_low.Parameters(expected_gbps={"MT4129": 400})))
    assert [(h.entity, h.fields["against"]) for h in hits] == [("n/nic/mlx5_0:1", "the site profile's 400 Gb/s for MT4129")]
