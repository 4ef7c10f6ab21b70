"""Rules whose verdict depends on the configured NCCL version (fixtures run with the newest)."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

GRACE = FIXTURES / "rules" / "NUMA002" / "good_c2c.xml"


def _findings(*args):
    result = run_cli("check", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)["findings"]


def test_grace_nic_is_fine_from_nccl_2_27():
    code, findings = _findings(GRACE, "--select", "NUMA002", "--nccl-version", "2.27.7")
    assert code == 0 and findings == []


def test_grace_nic_needs_gdr_c2c_on_nccl_2_26():
    code, findings = _findings(GRACE, "--select", "NUMA002", "--nccl-version", "2.26.2")
    assert code == 1 and findings
    assert all("NCCL_NET_GDR_C2C=1" in f["fix"] for f in findings)
    assert any("C2C" in e for f in findings for e in f["evidence"])


def test_gdr_read_default_needs_an_nvlink_peer_before_ampere_from_2_19_1():
    """src/graph/paths.cc ncclTopoCheckGdr: `gdrReadParam < 0 && gpu->gpu.cudaCompCap < 80` appears in
    v2.19.1-1; up to v2.18.6-1 the NVLink-peer condition applied to every GPU."""
    from topolint.model.nccl_version import NcclVersion

    assert NcclVersion.parse("2.18.6").gdr_read_needs_nvlink_peer(90)
    assert not NcclVersion.parse("2.19.1").gdr_read_needs_nvlink_peer(90)
    assert NcclVersion.parse("2.27.3").gdr_read_needs_nvlink_peer(75)
