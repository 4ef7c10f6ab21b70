"""SARIF logical locations and related-location links, from the one entity grammar."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_cli

from topolint.model.entities import EntityRef, parse_entity


@pytest.mark.parametrize("entity, expected, label", [
    ("dgx01/gpu/0000:9a:00.0", EntityRef("gpu", "0000:9a:00.0", "dgx01"), "GPU 0000:9a:00.0"),
    ("dgx01/nic/mlx5_0:1", EntityRef("nic", "mlx5_0:1", "dgx01"), "NIC mlx5_0:1"),
    ("dgx01/cpu/1", EntityRef("cpu", "1", "dgx01"), "NUMA 1"),
    ("dgx01/cpu/#2", EntityRef("cpu", "#2", "dgx01"), "CPU #2"),
    ("dgx01/file/topo/a.xml", EntityRef("file", "topo/a.xml", "dgx01"), "topo/a.xml"),
    ("dgx01/system", EntityRef("system", "dgx01", "dgx01"), "system dgx01"),
    ("env/NCCL_ALGO@fixtures/infra-repo/slurm/train.sbatch#file",
     EntityRef("env", "NCCL_ALGO", "fixtures/infra-repo/slurm/train.sbatch#file"), "NCCL_ALGO"),
    ("container/MPIJob/bert/Worker/worker@k8s/mpijob.yaml",
     EntityRef("container", "MPIJob/bert/Worker/worker", "k8s/mpijob.yaml"), "container MPIJob/bert/Worker/worker"),
    ("launch/ranks-per-node@run.sbatch#file", EntityRef("launch", "ranks-per-node", "run.sbatch#file"),
     "ranks-per-node"),
    ("env/gpu/0000:01:00.0", EntityRef("gpu", "0000:01:00.0", "env"), "GPU 0000:01:00.0"),  # a node named env
])
def test_parse_entity(entity, expected, label):
    assert parse_entity(entity) == expected and parse_entity(entity).label == label


def _sarif(*args: str) -> list[dict]:
    result = run_cli("check", *args, "--isolated", "--format", "sarif")
    assert result.exit_code == 1, result.stderr
    return json.loads(result.stdout)["runs"][0]["results"]


def test_environment_entities_are_variables():
    results = _sarif("fixtures/infra-repo")
    env = [r for r in results if r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].startswith("env/")]
    assert env, "the infra fixture sets NCCL variables"
    for result in env:
        (logical,) = result["locations"][0]["logicalLocations"]
        assert logical["kind"] == "variable"  # SARIF 3.33.7; it was "NCCL_ALGO@fixtures"-like before
        assert logical["name"] == logical["fullyQualifiedName"][4:].split("@")[0]
        assert re.fullmatch(r"NCCL_[A-Z0-9_]+", logical["name"])
    kinds = {loc["kind"] for r in results for loc in r["locations"][0]["logicalLocations"]}
    assert "@" not in "".join(kinds) and "/" not in "".join(kinds)
    container = [loc for r in results for loc in r["locations"][0]["logicalLocations"]
                 if loc["fullyQualifiedName"].startswith("container/")]
    assert container and {loc["kind"] for loc in container} == {"object"}


def test_hardware_entities_keep_their_device_kind():
    (result, *_) = _sarif("fixtures/rules/NUMA001/bad.xml")
    (logical,) = result["locations"][0]["logicalLocations"]
    assert logical["kind"] == "gpu" and logical["name"] == logical["fullyQualifiedName"].split("/", 2)[2]


def _links(text: str) -> list[tuple[str, int]]:
    return [(label, int(target)) for label, target in re.findall(r"(?<!\\)\[((?:[^\]\\]|\\.)*)\]\((\d+)\)", text)]


@pytest.mark.parametrize("dump", ["fixtures/rules/NUMA005/bad.xml", "fixtures/rules/NUMA001/bad_pxn.xml"])
def test_link_text_is_the_entity_label_and_target_its_related_id(dump):
    results = [r for r in _sarif(dump) if r.get("relatedLocations")]
    assert results
    for result in results:
        links = _links(result["message"]["text"])
        by_id = {loc["id"]: loc for loc in result["relatedLocations"]}
        assert [target for _, target in links] == sorted(by_id)
        for label, target in links:
            entity = by_id[target]["logicalLocations"][0]["fullyQualifiedName"]
            assert label == parse_entity(entity).label
            assert not label.isdigit()  # "See [0](1)." named nothing


def test_link_like_text_in_a_message_is_escaped():
    from topolint.engine.finding import Finding, Related
    from topolint.model.facts import Location
    from topolint.reporters.sarif import _message

    finding = Finding(code="X001", slug="x", category="x", severity="info", message="value [a](2) as written",
                      path="a", line=1, column=0, node="n", entity="n/gpu/0000:01:00.0", fix="",
                      related=[Related(Location(path="a", line=2, column=0), "n/nic/mlx5_[1]:1", "nic")])
    assert _message(finding) == "value \\[a\\](2) as written. See [NIC mlx5_\\[1\\]:1](1)."
