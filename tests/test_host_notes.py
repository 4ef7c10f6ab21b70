"""Issue 9: a host rule that stays silent because its inputs cannot settle the question says why
under --verbose (and only there): lspci without root or without -vvv, a VM, an IOMMU mode no
input states, a static topology file's link values."""

from __future__ import annotations

from conftest import FIXTURES, run_cli

RULES = FIXTURES / "rules"
LIST = ("0000:17:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n"
        "0000:18:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n")


def _notes(path, code: str, verbose: bool = True) -> list[str]:
    args = ["check", str(path), "--select", code, "--preview", "--format", "json", "--isolated"]
    result = run_cli(*args, *(["--verbose"] if verbose else []))
    assert result.exit_code == 0, result.stdout + result.stderr  # silent: nothing found
    prefix = f"topolint: {code} "
    return [line[len(prefix):] for line in result.stderr.splitlines() if line.startswith(prefix)]


def test_access_denied_capabilities_say_why_link_states_are_not_judged():
    notes = _notes(RULES / "PCIE001" / "good_access_denied.txt", "PCIE001")
    assert len(notes) == 1
    assert "good_access_denied.txt:" in notes[0] and "Capabilities: <access denied>" in notes[0]
    assert "link states not judged" in notes[0] and "sudo lspci -vvv" in notes[0]
    assert _notes(RULES / "PCIE001" / "good_access_denied.txt", "PCIE001", verbose=False) == []


def test_a_device_list_has_no_capabilities_to_judge(tmp_path):
    path = tmp_path / "lspci.txt"
    path.write_text(LIST, encoding="utf-8")
    for code, what in (("PCIE001", "link states"), ("PCIE002", "ACS redirect bits"),
                       ("PCIE004", "GPU and NIC link capabilities")):
        notes = _notes(path, code)
        assert len(notes) == 1 and notes[0].endswith(
            f"lspci.txt: an lspci device list has no capability lines: {what} not judged "
            "(`sudo lspci -vvv` settles it)"), notes


def test_a_vm_says_why_acs_is_not_judged():
    notes = _notes(RULES / "PCIE002" / "good_vm_bundle", "PCIE002")
    assert len(notes) == 1 and notes[0].startswith("not judged on a VM (")
    assert "systemd-detect-virt says" in notes[0] and "its ACS bits are the hypervisor's" in notes[0]


def test_the_iommu_rule_says_what_would_settle_it():
    notes = _notes(RULES / "PCIE003" / "good_no_iommu_pt_alone.txt", "PCIE003")
    assert len(notes) == 1 and "no input settles the IOMMU's default domain type" in notes[0]
    assert "a missing iommu=pt is not evidence" in notes[0]
    vm = _notes(RULES / "PCIE003" / "good_vm.txt", "PCIE003")
    assert len(vm) == 1 and "not judged on a VM (" in vm[0] and "Hypervisor detected: KVM" in vm[0]
    assert _notes(RULES / "PCIE003" / "good_passthrough.txt", "PCIE003") == []  # settled: passthrough


def test_a_static_topology_files_link_values_are_not_judged(tmp_path):
    # Alone, a static file leaves PCIE004 without its inputs (the runner says so); beside lspci
    # output the rule runs, and says why it passes over the file.
    assert _notes(RULES / "PCIE004" / "good_static.xml", "PCIE004") == [
        "not run on node good_static: no topology-dump or lspci input"]
    node = tmp_path / "node"
    node.mkdir()
    (node / "topo.xml").write_text((RULES / "PCIE004" / "good_static.xml").read_text(encoding="utf-8"), encoding="utf-8")
    (node / "lspci.txt").write_text(LIST, encoding="utf-8")
    notes = _notes(node, "PCIE004")
    assert len(notes) == 2 and any("topo.xml: a static topology file states link values" in n for n in notes), notes
    assert _notes(RULES / "PCIE004" / "good.xml", "PCIE004") == []  # a dump: judged, and clean
