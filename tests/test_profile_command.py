"""`topolint profile` (docs/profiles.md): a profile written from a known-good node bundle validates,
loads as a site profile, judges that node clean and a changed node (a GPU or a port missing) not;
its values cite the node's input lines; the output is deterministic; --list names the profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, load_benchmark, run_cli

from topolint.profiles.library import library, load_profile_file

fleet = load_benchmark("fleet")
PACK = FIXTURES / "profile-rules"  # SITE201-205: the site templates with no values of their own


def _node(root: Path, name: str, fault: str | None = None) -> Path:
    """One HGX H100 node bundle as `topolint collect` writes it (benchmarks/fleet.py), with ``fault``."""
    folder = root / name
    folder.mkdir(parents=True)
    files = {"nccl-topo-dump.xml": fleet.topo_dump(0, fault), "lspci-vvv.txt": fleet.lspci(0, fault),
             "numactl-H.txt": fleet.numactl(), "ibstat.txt": fleet.ibstat(0, fault),
             "nvidia-smi-nvlink.txt": fleet.nvlink_status(0, fault), **fleet.versions(fault),
             "topolint-bundle.json": fleet.manifest(name)}
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site folder: a good node, its profile written into profiles/ (-o), and the configuration."""
    root = tmp_path_factory.mktemp("site")
    _node(root / "nodes", "gpu0001")
    (root / "profiles").mkdir()
    result = run_cli("profile", "--from", "nodes/gpu0001", "-o", "profiles/ours-h100.toml", "--isolated", cwd=root)
    assert result.exit_code == 0, result.stderr
    (root / ".topolint.toml").write_text('profile-dirs = ["profiles"]\nrule-dirs = ["rules"]\n', encoding="utf-8")
    (root / "rules").mkdir()
    for rule in PACK.glob("*.toml"):
        (root / "rules" / rule.name).write_text(rule.read_text(encoding="utf-8"), encoding="utf-8")
    return root


def test_the_written_profile_validates_and_cites_the_node_lines(site):
    path = site / "profiles" / "ours-h100.toml"
    profile = load_profile_file(path)  # validated, name = the file's name
    assert profile.name == "ours-h100" and not profile.match  # chosen by name only
    assert {k: v.value for k, v in profile.values.items()} == {
        "gpu_count": 8, "gpu_model": "H100 SXM5", "gpu_sm": 90, "nvlinks": 18, "nic_count": 8,
        "nic_names": "mlx5_*", "port_gbps": {"mlx5_*": 400}, "numa_nodes": 2}
    assert set(profile.unknown) == {"net_gbps"}
    for name, value in profile.values.items():
        where = profile.sources[value.source]
        assert where.startswith("file:gpu0001/"), where
        file, line = where[len("file:"):].rsplit(":", 1)
        text = (site / "nodes" / file).read_text(encoding="utf-8").splitlines()[int(line) - 1]
        assert text.strip(), (name, where)  # the cited line exists in the node's file
    rate = profile.sources[profile.values["port_gbps"].source]
    assert "Rate: 400" in (site / "nodes" / rate[5:].rsplit(":", 1)[0]).read_text().splitlines()[int(rate.rsplit(":", 1)[1]) - 1]
    assert "ours-h100" in library((site / "profiles",)).names()


def test_the_node_it_was_written_from_is_clean_against_it(site):
    result = run_cli("check", "nodes/gpu0001", "--profile", "ours-h100", "--select", "SITE,NET004",
                     "--no-cache", "--format", "json", cwd=site)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["findings"] == []


@pytest.mark.parametrize("fault,code", [("gpu_missing", "SITE201"), ("port_missing", "SITE204")])
def test_a_changed_node_differs_from_it(site, fault, code):
    _node(site / "changed", f"n-{fault.replace('_', '-')}", fault)
    result = run_cli("check", "changed", "--profile", "ours-h100", "--select", "SITE,NET004", "--no-cache",
                     "--format", "json", cwd=site)
    assert result.exit_code == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert [f["code"] for f in findings if f["path"].startswith(f"changed/n-{fault.replace('_', '-')}/")] == [code]
    assert any("ours-h100" in f["message"] for f in findings)


def test_the_output_is_deterministic_and_the_same_as_the_written_file(site):
    first = run_cli("profile", "--from", "nodes/gpu0001", "--name", "ours-h100", "--isolated", cwd=site)
    second = run_cli("profile", "--from", str(site / "nodes" / "gpu0001"), "--name", "ours-h100", "--isolated")
    assert first.exit_code == second.exit_code == 0
    assert first.stdout == second.stdout == (site / "profiles" / "ours-h100.toml").read_text(encoding="utf-8")


def test_a_folder_that_is_not_one_node_is_exit_2(site, tmp_path):
    _node(tmp_path / "two", "a")
    _node(tmp_path / "two", "b")
    result = run_cli("profile", "--from", "two", "--isolated", cwd=tmp_path)
    assert result.exit_code == 2 and "holds 2 nodes (a, b), not one" in result.stderr and not result.stdout
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing\n")
    result = run_cli("profile", "--from", "empty", "--isolated", cwd=tmp_path)
    assert result.exit_code == 2 and "nothing to write a profile from" in result.stderr
    result = run_cli("profile", "--from", "nodes/gpu0001/ibstat.txt", "--isolated", cwd=site)
    assert result.exit_code == 2 and "not a folder" in result.stderr
    result = run_cli("profile", "--from", "nodes/gpu0001", "--name", "hgx-h100", "--isolated", cwd=site)
    assert result.exit_code == 2 and "built-in" in result.stderr


def test_list_names_the_builtin_and_site_profiles(site):
    result = run_cli("profile", "--list", cwd=site)
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()}
    assert {name: "built-in" for name in library().names()}.items() <= rows.items()
    assert rows["ours-h100"] == "site" and "as node gpu0001 was" in result.stdout
    assert "hgx-h100" in run_cli("profile", "--list", "--isolated", cwd=site).stdout
    assert "ours-h100" not in run_cli("profile", "--list", "--isolated", cwd=site).stdout
