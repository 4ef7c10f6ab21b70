"""Profiles (docs/profiles.md): the built-in ones are valid and cited, corpus samples of known
systems match the profile of their kind (and nothing else), and a profile chosen by --profile,
by a glob of node names in the configuration or by match drives the site templates and NET004."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.inputs.collect import collect
from topolint.profiles.choice import ProfileChoice
from topolint.profiles.library import builtin_profiles_dir, library, load_profile_file
from topolint.profiles.model import ProfileError

HEALTHY = FIXTURES / "samples" / "healthy-8gpu-dump.xml"
# The site templates instantiated with no values of their own: each takes the node's profile's.
PACK = FIXTURES / "profile-rules"
REQUIRED = {"hgx-a100", "dgx-a100", "hgx-h100", "dgx-h100", "hgx-h200", "dgx-h200", "hgx-b200", "dgx-b200",
            "gb200-tray", "h100-nvl", "nd-h100-v5", "p5-48xlarge", "a3-highgpu-8g"}


def test_builtin_profiles_are_valid_and_every_value_is_cited():
    found = library(validate_builtin=True)
    assert REQUIRED <= set(found.names())
    for name in found.names():
        profile = found.get(name)
        assert profile.values, name
        for value_name, value in profile.values.items():
            where = profile.sources[value.source]
            assert where.startswith("https://"), (name, value_name, where)
        assert not set(profile.values) & set(profile.unknown), name  # a value left out says why, once


def test_h100_nvl_states_the_twelve_links_it_is_built_with():
    profile = library().get("h100-nvl")
    assert profile.value("nvlinks") == 12 and "issues/162" in profile.sources[profile.values["nvlinks"].source]


def test_a_profile_file_with_an_uncited_value_is_refused(tmp_path):
    path = tmp_path / "site-h100.toml"
    path.write_text('name = "site-h100"\ntitle = "ours"\n[sources]\n[values]\ngpu_count = { value = 8, source = "x" }\n')
    with pytest.raises(ProfileError, match="values.gpu_count.source"):
        load_profile_file(path)
    path.write_text('name = "site-h100"\ntitle = "ours"\n[sources]\nx = "https://example.org"\n'
                    '[values]\ngpu_count = { value = "eight", source = "x" }\n')
    with pytest.raises(ProfileError, match="expected int"):
        load_profile_file(path)


def _chosen(path) -> str | None:
    collection = collect([str(path)])
    (node,) = collection.nodes
    found = ProfileChoice(library()).for_node(node)
    return found.profile.name if found.profile is not None else None


# Corpus samples of known systems (MANIFEST.tsv) and the profile each is matched to by what it reveals.
KNOWN = [
    ("nccl-topo/azure-ndv5-8xH100-8NDR-2numa_OLD-affinity-swapped_azhpc-images.xml", "nd-h100-v5"),
    ("nccl-topo/aws-p5-48xlarge-8xH100-32EFA-2numa-full_2026_aws-ofi-nccl.xml", "p5-48xlarge"),
    ("nccl-topo/oci-bm-gpu-h100-8-8xH100-16x200G-roce-2numa_oci-hpc.xml", "hgx-h100"),
    ("nccl-topo/ibm-cloud-gx3d-h100-vsi-8xH100-8x200G-roce-2numa_ibm-cloud-docs.xml", "hgx-h100"),
    ("nvidia-smi-topo/a100-8gpu-nv12-compacted-spacing_ml-engineering.txt", "hgx-a100"),  # DGX/HGX A100 NV12
    # Not one of the profiles' shapes: nothing is chosen (a wrong profile would raise false findings).
    ("nccl-topo/azure-ndv4-8xA100-8HDR-4numa_azhpc-images.xml", None),  # 4 NUMA nodes, not ND H100 v5's 2
    ("nccl-topo/aws-p5-48xlarge-8xH100-32EFA-2numa-partial_2023_aws-ofi-nccl.xml", None),  # lists no GPUs
    ("nvidia-smi-topo/8x-a800-nv8-9nic-numa-affinity-partial_nccl-issue-933.txt", None),  # NV8, not NV12
    ("nvidia-smi-topo/h100-8gpu-nv18-no-nics-cpu-numa-affinity_ml-engineering.txt", None),  # H100, H200, B200 alike
]


@pytest.mark.parametrize("sample,expected", KNOWN, ids=[k[0].split("/")[1][:40] for k in KNOWN])
def test_corpus_samples_match_the_profile_of_their_kind(corpus, sample, expected):
    assert _chosen(corpus / sample) == expected


def test_a_tie_chooses_none_and_says_which(corpus):
    collection = collect([str(corpus / KNOWN[-1][0])])
    found = ProfileChoice(library()).for_node(collection.nodes[0])
    assert found.profile is None and "hgx-b200, hgx-h100, hgx-h200 alike" in found.how


def test_healthy_corpus_samples_stay_clean_under_their_profiles(corpus):
    for sample, expected in KNOWN[:5]:
        result = run_cli("check", corpus / sample, "--rule-dir", PACK, "--select", "SITE,NET004", "--no-cache",
                         "--isolated")
        assert "SITE2" not in result.stdout and "NET004" not in result.stdout, (sample, result.stdout)


def test_profile_option_judges_every_node_and_names_its_source():
    result = run_cli("check", HEALTHY.relative_to(ROOT), "--profile", "gb200-tray", "--rule-dir", PACK.relative_to(ROOT),
                     "--select", "SITE201", "--no-cache", "--isolated")
    assert result.exit_code == 1
    assert "SITE201 [error] the dump lists 8 GPUs; profile gb200-tray states 4" in result.stdout
    assert "profile gb200-tray (NVIDIA GB200 compute tray (NVL72); --profile gb200-tray): gpu_count = 4" in result.stdout
    assert "nd128isr_ndr_gb200_v6.conf" in result.stdout  # the value's source, in the evidence


def test_unknown_profile_is_a_usage_error():
    result = run_cli("check", HEALTHY.relative_to(ROOT), "--profile", "dgx-h999", "--isolated")
    assert result.exit_code == 2 and "no such profile" in result.stderr and "dgx-h100" in result.stderr


def test_config_globs_choose_a_profile_per_node_group(tmp_path):
    cluster = tmp_path / "cluster"
    for node in ("tray-01", "tray-02", "hgx-01"):
        (cluster / node).mkdir(parents=True)
        (cluster / node / "topo.xml").write_text(HEALTHY.read_text())
    (tmp_path / ".topolint.toml").write_text(f'rule-dirs = ["{PACK.as_posix()}"]\n'
                                             '[profiles]\n"tray-*" = "gb200-tray"\n"*" = "dgx-h100"\n')
    result = run_cli("check", "cluster", "--select", "SITE201", "--no-cache", "--format", "json", cwd=tmp_path)
    flagged = sorted(f["node"] for f in json.loads(result.stdout)["findings"] if f["code"] == "SITE201")
    assert flagged == ["tray-01", "tray-02"], result.stdout  # hgx-01 is a DGX H100 with its 8 GPUs
    (tmp_path / ".topolint.toml").write_text('[profiles]\n"tray-*" = "gb300-tray"\n')
    bad = run_cli("check", "cluster", "--no-cache", cwd=tmp_path)
    assert bad.exit_code == 2 and "profiles.tray-*" in bad.stderr and "gb300-tray" in bad.stderr


def test_site_profile_dirs_are_validated_and_chosen(tmp_path):
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "lab-h100.toml").write_text(
        'name = "lab-h100"\ntitle = "our lab H100 nodes"\nextends = "hgx-h100"\n'
        '[sources]\ninventory = "https://example.org/lab/inventory (our purchase order)"\n'
        '[values]\nnic_count = { value = 10, source = "inventory" }\n')
    (tmp_path / ".topolint.toml").write_text(f'rule-dirs = ["{PACK.as_posix()}"]\nprofile-dirs = ["profiles"]\n'
                                             '[profiles]\n"*" = "lab-h100"\n')
    (tmp_path / "node").mkdir()
    (tmp_path / "node" / "topo.xml").write_text(HEALTHY.read_text())
    result = run_cli("check", "node", "--select", "SITE204", "--no-cache", "--format", "concise", cwd=tmp_path)
    assert "profile lab-h100 states 10" in result.stdout, result.stdout + result.stderr


IBSTAT = """CA 'mlx5_ib0'
\tCA type: MT4129
\tNumber of ports: 1
\tSystem image GUID: 0x58a2e10300dae626
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 200
\t\tLink layer: InfiniBand
"""


def test_net004_reads_the_profiles_port_rates(tmp_path):
    path = tmp_path / "ibstat.txt"
    path.write_text(IBSTAT)
    alone = run_cli("check", path, "--select", "NET004", "--no-cache", "--isolated")
    assert alone.exit_code == 0, alone.stdout  # one port, no sibling, no profile: nothing to compare with
    result = run_cli("check", path, "--select", "NET004", "--profile", "nd-h100-v5", "--no-cache", "--isolated")
    assert result.exit_code == 1
    assert "below the profile's 400 Gb/s for mlx5_ib* ports" in result.stdout, result.stdout
    assert "port_gbps = mlx5_ib* 400" in result.stdout


def test_profiles_ship_in_the_package_folder():
    assert (builtin_profiles_dir() / "hgx-h100.toml").is_file()


# Each rule of the pack on the healthy 8x H100 SXM5 dump (it matches hgx-h100 by itself), and on
# the same dump judged against a profile it is not, or with one NVLink, or one net's rate, changed.
def _dump(tmp_path, old: str = "", new: str = "") -> str:
    text = HEALTHY.read_text()
    (tmp_path / "topo.xml").write_text(text.replace(old, new, 1) if old else text)
    return str(tmp_path / "topo.xml")


PACK_CASES = [
    ("SITE201", "gb200-tray", "", "", "the dump lists 8 GPUs; profile gb200-tray states 4"),
    ("SITE202", "hgx-a100", "", "", "is H100 SXM5 (0x10de:0x2330); profile hgx-a100 states A100 SXM4"),
    ("SITE203", None, 'count="18"', 'count="17"', "has 17 NVLinks; profile hgx-h100 states 18"),
    ("SITE204", "p5-48xlarge", "", "", "profile p5-48xlarge states 32"),
    ("SITE205", "p5-48xlarge", 'speed="400000"', 'speed="50000"', "runs at 50 Gb/s; profile p5-48xlarge states 100 Gb/s"),
]


@pytest.mark.parametrize("code,profile,old,new,message", PACK_CASES, ids=[c[0] for c in PACK_CASES])
def test_profile_pack_rules_judge_against_the_profile(tmp_path, code, profile, old, new, message):
    chosen = ["--profile", profile] if profile else []
    good = run_cli("check", _dump(tmp_path), "--rule-dir", PACK, "--select", code, "--no-cache", "--isolated")
    assert good.exit_code == 0, good.stdout + good.stderr
    bad = run_cli("check", _dump(tmp_path, old, new), "--rule-dir", PACK, "--select", code, "--no-cache",
                  "--isolated", "--format", "concise", *chosen)
    assert bad.exit_code == 1 and message in bad.stdout, bad.stdout + bad.stderr


def test_pack_rules_load_as_site_rules():
    from topolint.engine.rule import validate_rule_file

    for path in sorted(PACK.glob("*.toml")):
        rule = validate_rule_file(path)
        assert rule.parameters == {}, path  # every value from the profile


def _pair(tmp_path, links: str = 'count="17"') -> str:
    text = HEALTHY.read_text()
    for node, body in (("gpu01", text), ("gpu02", text.replace('count="18"', links, 1))):
        (tmp_path / "cluster" / node).mkdir(parents=True)
        (tmp_path / "cluster" / node / "topo.xml").write_text(body)
    return str(tmp_path / "cluster")


def test_fleet001_compares_a_group_too_small_for_a_majority_with_the_profile(tmp_path):
    cluster = _pair(tmp_path)
    alone = run_cli("check", cluster, "--select", "FLEET001", "--no-cache", "--isolated", "--format", "json",
                    "--profile", "dgx-h100")
    findings = [f for f in json.loads(alone.stdout)["findings"] if f["code"] == "FLEET001"]
    assert [(f["node"], f["severity"]) for f in findings] == [("gpu02", "warning")], alone.stdout
    assert "gpu02 GPU 0000:18:00.0: 17 NVLinks; profile dgx-h100 states 18 NVLinks" in findings[0]["message"]
    assert any("aws-efa-cheatsheet" in e or "awsome-distributed-training" in e for e in findings[0]["evidence"])


def test_fleet001_without_a_profile_says_there_is_no_majority(tmp_path):
    text = HEALTHY.read_text().replace('count="18"', 'count="16"')  # 16 NVLinks a GPU: no profile's shape
    for node, body in (("gpu01", text), ("gpu02", text.replace('count="16"', 'count="15"', 1))):
        (tmp_path / "cluster" / node).mkdir(parents=True)
        (tmp_path / "cluster" / node / "topo.xml").write_text(body)
    result = run_cli("check", tmp_path / "cluster", "--select", "FLEET001", "--no-cache", "--isolated",
                     "--format", "json")
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "FLEET001"]
    assert sorted((f["node"], f["severity"]) for f in findings) == [("gpu01", "info"), ("gpu02", "info")]
    assert all("no majority" in f["message"] for f in findings), result.stdout
