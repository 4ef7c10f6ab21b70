"""`topolint collect` runs the fabric commands (topolint/data/collect.toml), once per interface
where a row says so, and `topolint check` reads the bundle: findings point into its files, and a
failed RDMA tool in the manifest keeps NET005 from calling a gigabit link the only one."""

from __future__ import annotations

import json

from conftest import run_cli

from topolint.commands.collect import CollectCommand, collect, load_table

IBDEV2NETDEV = "mlx5_0 port 1 ==> ens1f0 (Up)\\nmlx5_1 port 1 ==> ens1f1 (Up)\\n"
QOS = "Priority trust state: dscp\\nPFC configuration:\\n\\tpriority 0 1 2 3 4 5 6 7\\n\\tenabled  0 0 0 0 0 0 0 0\\n"


def row(file: str, *argv: str, **extra) -> CollectCommand:
    return CollectCommand(file=file, argv=tuple(argv), timeout=10, **extra)


def test_the_table_has_the_fabric_commands():
    rows = {r.file: r for r in load_table()}
    for file, fmt in (("ibstat.txt", "ibstat"), ("ibv_devinfo.txt", "ibv_devinfo"), ("ibdev2netdev.txt", "ibdev2netdev"),
                      ("show_gids.txt", "show_gids"), ("ip-addr.json", "ip-addr"), ("ip-route.json", "ip-route"),
                      ("mountinfo.txt", "mounts"), ("ethtool.txt", "ethtool"), ("mlnx_qos.txt", "mlnx_qos"),
                      ("dcb-pfc.txt", "mlnx_qos"), ("roce-ecn.txt", "sysfs-dump")):
        assert rows[file].format == fmt
    order = [r.file for r in load_table()]
    assert order.index("ibdev2netdev.txt") < order.index("mlnx_qos.txt")  # per-netdev rows read it
    assert order.index("ip-addr.json") < order.index("ethtool.txt")


def test_per_interface_rows_write_one_file_with_a_header_per_interface(tmp_path, monkeypatch):
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "mlnx_qos"  # prints the same unconfigured QoS for any -i IF
    fake.write_text(f"#!/bin/sh\nprintf '{QOS}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    bundle = tmp_path / "bundle"
    result = collect(bundle, [row("ibdev2netdev.txt", "printf", IBDEV2NETDEV),
                              row("mlnx_qos.txt", "mlnx_qos", "-i", "{rdma_netdev}", format="mlnx_qos"),
                              row("ethtool.txt", "echo", "{netdev}")])
    text = (bundle / "mlnx_qos.txt").read_text()
    assert text.startswith("$ mlnx_qos -i ens1f0\n") and "$ mlnx_qos -i ens1f1\n" in text
    statuses = {c["file"]: c["status"] for c in result.manifest["commands"]}
    assert statuses == {"ibdev2netdev.txt": "ok", "mlnx_qos.txt": "ok", "ethtool.txt": "skipped"}
    check = run_cli("check", bundle, "--select", "ROCE001", "--format", "json")
    findings = json.loads(check.stdout)["findings"]
    assert sorted(f["entity"].split("/")[-1] for f in findings) == ["ens1f0", "ens1f1"]
    assert {f["path"].rsplit("/", 1)[-1] for f in findings} == {"mlnx_qos.txt"}


def test_a_missing_rdma_tool_in_the_manifest_keeps_net005_from_only_link(tmp_path):
    ethtool = "Settings for eno1:\\n\\tSpeed: 1000Mb/s\\n\\tLink detected: yes\\n"
    collect(tmp_path, [row("ethtool-eno1.txt", "printf", ethtool, format="ethtool"),
                       row("ibstat.txt", "no-such-ibstat-tool", format="ibstat")])
    manifest = json.loads((tmp_path / "topolint-bundle.json").read_text())
    manifest["commands"][1]["argv"] = ["ibstat"]  # as the real row names it
    (tmp_path / "topolint-bundle.json").write_text(json.dumps(manifest))
    assert "NET005" not in run_cli("check", tmp_path, "--select", "NET005", "--format", "concise").stdout
    manifest["commands"] = manifest["commands"][:1]
    (tmp_path / "topolint-bundle.json").write_text(json.dumps(manifest))
    assert "NET005 [error]" in run_cli("check", tmp_path, "--select", "NET005", "--format", "concise").stdout


def test_a_per_interface_file_is_capped_as_a_whole_and_marked_truncated(tmp_path, monkeypatch):
    """Each interface's output is under the cap, all of them are not: the one that would pass
    it is left out whole, and the manifest says the file was cut."""
    from topolint.commands import collect as collecting

    monkeypatch.setattr(collecting, "STDOUT_CAP", 100)
    bundle = tmp_path / "bundle"
    result = collect(bundle, [row("ibdev2netdev.txt", "printf", IBDEV2NETDEV),
                              row("echo.txt", "echo", "{rdma_netdev}", "x" * 30)])
    text = (bundle / "echo.txt").read_text()
    assert text == f"$ echo ens1f0 {'x' * 30}\nens1f0 {'x' * 30}\n"
    entry = next(c for c in result.manifest["commands"] if c["file"] == "echo.txt")
    assert entry["status"] == "ok"
    assert entry["truncated"] == {"file": {"kept": 83, "read": 166}}
    assert "ens1f1: left out" in entry["message"]
