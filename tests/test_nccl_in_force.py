"""The NCCL version in force (model/nccl_in_force.py): every version source form with its file and
line, which one wins in a job, and the findings judged against it (ENV002 not-yet)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import topolint
from topolint.model.nccl_reads import not_read, table
from topolint.model.nccl_sources import DATA, image_source, nccl_version_text, torch_wheels
from topolint.model.nccl_version import NcclVersion
from topolint.inputs.source import read_source
from topolint.parsers.dockerfile import parse_dockerfile
from topolint.parsers.shell import parse_shell

ROOT = Path(__file__).resolve().parent.parent


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _sources(path: Path):
    parse = parse_dockerfile if path.name.startswith("Dockerfile") else parse_shell
    return parse(read_source(str(path), path)).nccl_sources


def _env002(paths, monkeypatch, folder: Path, **options):
    monkeypatch.chdir(folder)
    result = topolint.check([str(p) for p in paths], select=["ENV002"], isolated=True, **options)
    return result, [f for f in result.findings if f.code == "ENV002"]


# ---- the forms, each read with its line and column ----------------------------------------------
@pytest.mark.parametrize("command, kind, written, version", [
    ("apt-get install -y libnccl2=2.21.5-1+cuda12.4", "apt", "libnccl2=2.21.5-1+cuda12.4", "2.21.5"),
    ("sudo apt install libnccl-dev=2.18.3-1+cuda12.2", "apt", "libnccl-dev=2.18.3-1+cuda12.2", "2.18.3"),
    ("dnf install -y libnccl-2.21.5-1+cuda12.4", "dnf", "libnccl-2.21.5-1+cuda12.4", "2.21.5"),
    ("yum install -y libnccl-devel-2.19.3-1+cuda12.3", "dnf", "libnccl-devel-2.19.3-1+cuda12.3", "2.19.3"),
    ("conda install -y -c conda-forge nccl=2.21.5.1", "conda", "nccl=2.21.5.1", "2.21.5"),
    ("mamba install conda-forge::nccl==2.18.3", "conda", "conda-forge::nccl==2.18.3", "2.18.3"),
    ("spack load nccl@2.18.3", "spack", "nccl@2.18.3", "2.18.3"),
    ("module load nccl/2.18.3-cuda12", "module", "nccl/2.18.3-cuda12", "2.18.3"),
    ("ml nccl/2.19.3", "module", "nccl/2.19.3", "2.19.3"),
    ("pip install nvidia-nccl-cu12==2.18.3", "pip-nccl", "nvidia-nccl-cu12==2.18.3", "2.18.3"),
    ("python3 -m pip install -U nvidia-nccl-cu11==2.14.3", "pip-nccl", "nvidia-nccl-cu11==2.14.3", "2.14.3"),
    ("uv pip install nvidia-nccl-cu13==2.28.9", "pip-nccl", "nvidia-nccl-cu13==2.28.9", "2.28.9"),
    ("pip3 install torch==2.1.0", "pip-torch", "torch==2.1.0", "2.18.1"),
    ("pip install torch==2.8.0 torchvision", "pip-torch", "torch==2.8.0", "2.27.3"),
])
def test_each_form_in_a_script_and_a_dockerfile(tmp_path, command, kind, written, version):
    script = _write(tmp_path, "run.sh", f"#!/bin/bash\nset -e\n  {command}\n")
    dockerfile = _write(tmp_path, "Dockerfile", f"FROM ubuntu:22.04\nRUN apt-get update && \\\n    {command}\n")
    for path, line, column in ((script, 3, 3 + command.index(written)), (dockerfile, 3, 5 + command.index(written))):
        found = [s for s in _sources(path) if s.kind == kind]
        assert [(s.written, s.versions, s.loc.line, s.loc.column) for s in found] == [(written, (version,), line, column)]


@pytest.mark.parametrize("command, why", [
    ("apt-get install -y libnccl2", "no exact version"),
    ("pip install torch", "no exact version"),
    ("pip install torch>=2.1", "no exact version"),
    ("pip install --index-url https://download.pytorch.org/whl/cu121 torch==2.1.0", "not PyPI's wheel"),
    ("pip install torch==2.1.0+cu121", "not a PyPI release version"),
    ("pip install torch==1.13.1", "links NCCL in"),
    ("pip install nvidia-nccl-cu12==$NCCL", "no exact version"),
    ("module load nccl", "no exact version"),
])
def test_a_source_without_a_version_says_why(tmp_path, command, why):
    found = [s for s in _sources(_write(tmp_path, "run.sh", f"{command}\n")) if s.kind != "image"]
    assert len(found) == 1 and found[0].versions == () and why in found[0].unknown


def test_requirements_constraints_and_conda_environment_files(tmp_path):
    _write(tmp_path, "requirements.txt", "numpy==1.26.4\n-c constraints.txt\ntorch==2.2.0  # the framework\n")
    _write(tmp_path, "constraints.txt", "nvidia-nccl-cu12==2.19.3 ; platform_system == 'Linux'\n")
    _write(tmp_path, "environment.yml", "name: train\ndependencies:\n  - python=3.11\n  - nccl=2.18.3.1\n"
                                        "  - pip:\n    - nvidia-nccl-cu12==2.18.3\n")
    script = _write(tmp_path, "setup.sh", "pip install -r requirements.txt\nconda env create -f environment.yml\n")
    found = [(s.kind, s.written, s.versions, s.loc.path.rsplit("/", 1)[-1], s.loc.line) for s in _sources(script)]
    assert found == [("pip-nccl", "nvidia-nccl-cu12==2.19.3", ("2.19.3",), "constraints.txt", 1),
                     ("pip-torch", "torch==2.2.0", ("2.19.3",), "requirements.txt", 3),
                     ("conda", "nccl=2.18.3.1", ("2.18.3",), "environment.yml", 4),
                     ("pip-nccl", "nvidia-nccl-cu12==2.18.3", ("2.18.3",), "environment.yml", 6)]
    assert all("setup.sh:" in s.via for s in _sources(script))


def test_a_dockerfile_reads_the_requirements_file_it_copies(tmp_path):
    _write(tmp_path, "deps/reqs.txt", "nvidia-nccl-cu12==2.18.3\n")
    dockerfile = _write(tmp_path, "Dockerfile", "FROM python:3.11\nCOPY deps/reqs.txt /tmp/requirements.txt\n"
                                                "RUN pip install -r /tmp/requirements.txt\n")
    found = [s for s in _sources(dockerfile) if s.kind == "pip-nccl"]
    assert [(s.versions, s.loc.path.endswith("deps/reqs.txt"), s.loc.line) for s in found] == [(("2.18.3",), True, 1)]


@pytest.mark.parametrize("reference, versions, unknown", [
    ("nvidia/cuda:11.6.2-devel-ubuntu20.04", ("2.12.10",), ""),
    ("nvidia/cuda:12.2.2-cudnn8-runtime-ubuntu22.04", ("2.18.5", "2.19.3"), ""),  # re-pushed with newer NCCL
    ("nvidia/cuda:12.4.1-base-ubuntu22.04", (), ""),  # base images install no NCCL
    ("nvidia/cuda:99.0.0-devel-ubuntu22.04", (), "no row"),
    ("nvcr.io/nvidia/mxnet:24.05-py3", ("2.21.5",), ""),
    ("nvcr.io/nvidia/pytorch:24.01-py3", (), "no cited release-notes row"),  # never guessed
    ("ubuntu:22.04", (), ""),
    ("myorg/trainer:latest", (), "nothing is known"),
])
def test_base_images(reference, versions, unknown):
    from topolint.model.facts import Location

    source = image_source(reference, Location(path="Dockerfile", line=1), "stage:0")
    assert source.versions == versions and unknown in source.unknown
    if versions:
        assert "https://" in source.detail  # every row cites where it comes from


def test_package_version_spellings():
    assert [nccl_version_text(t) for t in ("2.12.12-1+cuda11.6", "2.21.5.1", "2.26.2.post1", "2.18.3", "2.18",
                                           "1.3.4", "2.x")] == ["2.12.12", "2.21.5", "2.26.2", "2.18.3", None, None, None]


# ---- the two cases under Why, and which source wins ---------------------------------------------
def test_why_apt_pin_and_pip_wheel(tmp_path, monkeypatch):
    shutil.copy(ROOT / "fixtures/rules/ENV002/bad_apt_pin.Dockerfile", tmp_path / "Dockerfile")
    shutil.copy(ROOT / "fixtures/rules/ENV002/bad_pip_wheel.sh", tmp_path / "train.sh")
    _, findings = _env002(["Dockerfile", "train.sh"], monkeypatch, tmp_path)
    messages = {f.path: f for f in findings}
    apt, pip = messages["Dockerfile"], messages["train.sh"]
    assert "NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.12 from Dockerfile:4 apt pin" in apt.message
    assert "2.17.1-2.30.7" in apt.message and any("src/transport/nvls.cc" in e for e in apt.evidence)
    assert "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.3 from train.sh:3 pip wheel pin" in pip.message
    assert "2.21.5-2.30.7" in pip.message
    # the image's NCCL (2.12.10) is named as replaced by the pin
    assert any("replaces NCCL 2.12.10 (Dockerfile:2 base image)" in e for e in apt.evidence)


def test_configured_version_wins_and_verbose_says_the_inputs_disagree(tmp_path, monkeypatch):
    shutil.copy(ROOT / "fixtures/rules/ENV002/bad_apt_pin.Dockerfile", tmp_path / "Dockerfile")
    result, findings = _env002(["Dockerfile"], monkeypatch, tmp_path, nccl_version="2.21.5")
    assert findings == []
    assert any("judged with NCCL 2.21.5 from --nccl-version: the inputs say NCCL 2.12.12; --nccl-version wins" in n
               for n in result.notes)
    _write(tmp_path, ".topolint.toml", 'nccl-version = "2.16.5"\n')
    monkeypatch.chdir(tmp_path)
    result = topolint.check(["Dockerfile"], select=["ENV002"])
    assert [f.message.split(": NCCL reads")[0] for f in result.findings] == [
        "NCCL_NVLS_ENABLE is not read yet by NCCL 2.16.5 from nccl-version in .topolint.toml"]


def test_a_torch_wheel_over_an_image_wins(tmp_path, monkeypatch):
    _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch==2.1.0\n"
                                   "ENV NCCL_MNNVL_ENABLE=1\n")
    _, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert len(findings) == 1 and "not read yet by NCCL 2.18.1 from Dockerfile:2 pip torch wheel" in findings[0].message
    assert any("installed over NCCL 2.21.5 (Dockerfile:1 base image)" in e for e in findings[0].evidence)
    assert any("pypi.org/project/torch/2.1.0" in e for e in findings[0].evidence)


def test_an_nccl_wheel_alone_under_an_ngc_framework_settles_nothing(tmp_path, monkeypatch):
    _write(tmp_path, "Dockerfile", "FROM nvcr.io/nvidia/mxnet:24.05-py3\nRUN pip install nvidia-nccl-cu12==2.18.3\n"
                                   "ENV NCCL_MNNVL_ENABLE=1\n")
    result, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    # 2.21.5 (the image's, which NGC's framework loads) reads it; 2.18.3 does not: no finding
    assert findings == []
    _write(tmp_path, "Dockerfile", "FROM nvcr.io/nvidia/mxnet:24.05-py3\nRUN pip install nvidia-nccl-cu12==2.18.3\n"
                                   "ENV NCCL_NVLS_ENABLE=1\nENV NCCL_MNNVL=1\n")
    _, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert findings == []  # NCCL_MNNVL: read by neither 2.18.3 nor 2.21.5, but it is ENV002's renamed case
    # for 2.21.5 only (lifecycle) and not for 2.18.3: not every candidate agrees, so nothing is said


def test_an_image_tag_of_several_ncll_versions_reports_only_what_holds_for_each(tmp_path, monkeypatch):
    _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:12.2.2-devel-ubuntu22.04\nENV NCCL_MNNVL_ENABLE=1\n"
                                   "ENV NCCL_NVLS_ENABLE=1\n")
    _, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert [f.message.split(": NCCL reads")[0] for f in findings] == [
        "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.5 or 2.19.3 from Dockerfile:1 base image"]


def test_unknown_sources_keep_the_default_and_verbose_says_why(tmp_path, monkeypatch):
    _write(tmp_path, "Dockerfile", "FROM nvcr.io/nvidia/pytorch:24.01-py3\nENV NCCL_MNNVL_ENABLE=1\n")
    _write(tmp_path, "launch.sh", "export NCCL_MNNVL_ENABLE=1\nsrun python train.py\n")
    result, findings = _env002(["Dockerfile", "launch.sh"], monkeypatch, tmp_path)
    assert findings == []
    assert any("Dockerfile (stage:0): judged with assumed NCCL 2.30.7" in n and "no cited release-notes row" in n
               for n in result.notes)
    assert not any(n.startswith("ENV002 launch.sh") for n in result.notes)  # nothing read: nothing to say


def test_a_script_copied_into_the_image_runs_with_its_nccl(tmp_path, monkeypatch):
    _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:11.6.2-runtime-ubuntu20.04\nCOPY train.sh /workspace/\n")
    _write(tmp_path, "train.sh", "export NCCL_NVLS_ENABLE=1\ntorchrun train.py\n")
    _write(tmp_path, "host.sh", "export NCCL_NVLS_ENABLE=1\nsrun ./train.sh\n")  # not copied: not settled
    result, findings = _env002(["Dockerfile", "train.sh", "host.sh"], monkeypatch, tmp_path)
    assert [(f.path, f.message.split(": NCCL reads")[0]) for f in findings] == [
        ("train.sh", "NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from Dockerfile:1 base image")]
    assert any("the file is copied into Dockerfile stage:0 at Dockerfile:2" in e for e in findings[0].evidence)
    assert any("host.sh" in n and "no file installs its NCCL" in n for n in result.notes) is False  # nothing read


def test_a_docker_run_step_runs_with_its_image_only(tmp_path, monkeypatch):
    _write(tmp_path, "run.sh", "pip install nvidia-nccl-cu12==2.18.3\nexport NCCL_MNNVL_ENABLE=1\n"
                               "docker run -e NCCL_NVLS_ENABLE=1 nvidia/cuda:11.6.2-runtime-ubuntu20.04 ./app\n")
    _, findings = _env002(["run.sh"], monkeypatch, tmp_path)
    assert sorted(f.message.split(": NCCL reads")[0] for f in findings) == [
        "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.3 from run.sh:1 pip wheel pin",
        "NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from run.sh:3 base image"]


def test_an_nccl_log_sets_a_nodes_version(tmp_path, monkeypatch):
    """Node-side checks judge with the node's NCCL: PXN exists only from 2.12, so NUMA001's PXN
    warnings become errors on a node whose log says NCCL 2.11.4."""
    node = tmp_path / "node17"
    node.mkdir()
    shutil.copy(ROOT / "fixtures/samples/dgx-like-2socket-dump.xml", node / "topo.xml")
    monkeypatch.chdir(tmp_path)
    before = topolint.check(["node17"], select=["NUMA001"], isolated=True)
    _write(node, "nccl.log", "node17:4242:4342 [0] NCCL INFO NCCL version 2.11.4+cuda11.4\n")
    after = topolint.check(["node17"], select=["NUMA001"], isolated=True)
    pinned = topolint.check(["node17"], select=["NUMA001"], isolated=True, nccl_version="2.30.7")
    assert {f.severity for f in before.findings} == {"warning"}
    assert {f.severity for f in after.findings} == {"error"} and len(after.findings) == len(before.findings)
    assert {f.severity for f in pinned.findings} == {"warning"}  # --nccl-version wins over the log


# ---- the tables ---------------------------------------------------------------------------------
def test_every_table_row_cites_its_source():
    for name in ("torch_wheels.tsv", "cuda_images.tsv", "ngc_containers.tsv"):
        lines = [line for line in (DATA / name).read_text().splitlines() if line and not line.startswith("#")]
        assert len(lines) > 1
        for line in lines[1:]:
            assert "https://" in line.split("\t")[-1], (name, line)
    assert torch_wheels()["2.1.0"][:2] == ("nvidia-nccl-cu12", "2.18.1")


def test_read_table_holds_what_nccl_reads_at_its_tags():
    assert [(r.first, r.before) for r in table()["NCCL_NVLS_ENABLE"]] == [(NcclVersion(2, 17, 1), NcclVersion(2, 16, 5))]
    assert not_read("NCCL_NVLS_ENABLE", NcclVersion(2, 17, 0)) is None  # between tags: not settled
    assert not_read("NCCL_NVLS_ENABLE", NcclVersion(2, 16, 5)).state == "not-yet"
    assert not_read("NCCL_MNNVL", NcclVersion(2, 22, 3)).state == "no-longer"
    assert not_read("NCCL_DEBUG", NcclVersion(2, 1, 0)) is None  # before the oldest open-source tag


def test_a_value_is_checked_with_the_parser_of_the_version_in_force(tmp_path, monkeypatch):
    """NCCL_ALGO's per-collective form is read from 2.24; 2.23's parseList matches no algorithm."""
    _write(tmp_path, "Dockerfile", 'FROM nvidia/cuda:12.2.2-devel-ubuntu22.04\nENV NCCL_ALGO="allreduce:tree;allgather:ring"\n')
    monkeypatch.chdir(tmp_path)
    old = topolint.check(["Dockerfile"], select=["ENV003"], isolated=True)
    new = topolint.check(["Dockerfile"], select=["ENV003"], isolated=True, nccl_version="2.24.3")
    assert [f.line for f in old.findings] == [2] and "per-collective form" in old.findings[0].message
    assert any(e.startswith("NCCL version: NCCL 2.18.5 or 2.19.3 from Dockerfile:1 base image") for e in old.findings[0].evidence)
    assert new.findings == []
