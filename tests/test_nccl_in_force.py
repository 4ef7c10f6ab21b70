"""The NCCL version in force (model/nccl_in_force.py): every version source form with its file and
line, which one wins in a job, and the findings judged against it (ENV002 not-yet)."""

from __future__ import annotations

import re
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
    ("nvcr.io/nvidia/pytorch:19.11-py3", ("2.5.6",), ""),
    ("nvcr.io/nvidia/tensorflow:20.03-tf2-py3", ("2.6.3",), ""),
    ("nvcr.io/nvidia/tensorflow:18.12-py3", ("2.3.7",), ""),
    ("nvcr.io/nvidia/jax:24.04-py3", (), "no cited release-notes row"),
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


# ---- containers: Kubernetes and docker compose -------------------------------------------------
_POD = """{group}:
  - name: c
    image: {image}
    env:
      - name: NCCL_NVLS_ENABLE
        value: "1"
"""
_MAIN = "containers:\n  - name: main\n    image: ubuntu:22.04\n"  # a pod's init containers run before these
# Each kind with its pod spec's indentation (parsers/kubernetes.py finds pod specs wherever they are).
_KINDS = {
    "Deployment": ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: t\nspec:\n  template:\n    spec:\n", 6),
    "StatefulSet": ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: t\nspec:\n  template:\n    spec:\n", 6),
    "Job": ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: t\nspec:\n  template:\n    spec:\n", 6),
    "MPIJob": ("apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: t\nspec:\n  mpiReplicaSpecs:\n"
               "    Worker:\n      template:\n        spec:\n", 10),
    "PyTorchJob": ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: t\nspec:\n"
                   "  pytorchReplicaSpecs:\n    Worker:\n      template:\n        spec:\n", 10),
    "JobSet": ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: t\nspec:\n  replicatedJobs:\n"
               "    - name: workers\n      template:\n        spec:\n          template:\n            spec:\n", 14),
    "RayJob": ("apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: t\nspec:\n  rayClusterSpec:\n"
               "    workerGroupSpecs:\n      - groupName: gpu\n        template:\n          spec:\n", 12),
}


def _manifest(kind: str, group: str = "containers", image: str = "nvidia/cuda:11.6.2-devel-ubuntu20.04") -> str:
    head, indent = _KINDS[kind]
    pod = _POD.format(group=group, image=image) + (_MAIN if group == "initContainers" else "")
    return head + "".join(" " * indent + line + "\n" for line in pod.rstrip("\n").split("\n"))


@pytest.mark.parametrize("kind", sorted(_KINDS))
@pytest.mark.parametrize("group", ["containers", "initContainers"])
def test_a_containers_image_sets_its_settings_version(tmp_path, monkeypatch, kind, group):
    text = _manifest(kind, group)
    _write(tmp_path, "deploy.yaml", text)
    image_line = next(i for i, line in enumerate(text.split("\n"), 1) if "image:" in line)
    _, findings = _env002(["deploy.yaml"], monkeypatch, tmp_path)
    assert [f.message.split(": NCCL reads")[0] for f in findings] == [
        f"NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from deploy.yaml:{image_line} image "
        "nvidia/cuda:11.6.2-devel-ubuntu20.04"]
    assert any(e.startswith(f"NCCL source: deploy.yaml:{image_line} image nvidia/cuda:11.6.2-devel-ubuntu20.04: "
                            "nvidia/cuda 11.6.2 ubuntu20.04 images were built with NCCL 2.12.10")
               for e in findings[0].evidence)


@pytest.mark.parametrize("image, why", [
    ("nvcr.io/nvidia/pytorch:24.01-py3", "no cited release-notes row"),  # never guessed
    ("myorg/trainer:v3", "nothing is known about the NCCL in myorg/trainer:v3"),
    ("nvidia/cuda:${CUDA_TAG}", "named by a variable"),
    ("ubuntu:22.04", "no source of the job's NCCL"),  # no NCCL in the image: the setting's own version
])
def test_a_container_whose_images_nccl_is_unknown_keeps_the_default(tmp_path, monkeypatch, image, why):
    _write(tmp_path, "deploy.yaml", _manifest("Deployment", image=image))
    result, findings = _env002(["deploy.yaml"], monkeypatch, tmp_path)
    assert findings == []
    if "no source" not in why:
        assert any("(Deployment/t/c): judged with assumed NCCL 2.30.7" in n and why in n for n in result.notes)


def test_each_container_of_a_pod_and_a_configmap_it_takes_through_envfrom(tmp_path, monkeypatch):
    _write(tmp_path, "deploy.yaml", """apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      containers:
        - name: old
          image: nvidia/cuda:11.6.2-runtime-ubuntu20.04
          env:
            - name: NCCL_NVLS_ENABLE
              value: "1"
          envFrom:
            - configMapRef:
                name: nccl
        - name: new
          image: nvidia/cuda:12.4.1-runtime-ubuntu22.04
          env:
            - name: NCCL_NVLS_ENABLE
              value: "1"
""")
    _write(tmp_path, "nccl-env.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nccl\ndata:\n"
                                      "  NCCL_MNNVL_ENABLE: \"1\"\n---\napiVersion: v1\nkind: ConfigMap\n"
                                      "metadata:\n  name: unused\ndata:\n  NCCL_MNNVL_ENABLE: \"1\"\n")
    result, findings = _env002(["deploy.yaml", "nccl-env.yaml"], monkeypatch, tmp_path)
    assert sorted((f.path, f.line, f.message.split(": NCCL reads")[0]) for f in findings) == [
        ("deploy.yaml", 12, "NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from deploy.yaml:10 image "
                            "nvidia/cuda:11.6.2-runtime-ubuntu20.04"),
        ("nccl-env.yaml", 6, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.12.10 from deploy.yaml:10 image "
                             "nvidia/cuda:11.6.2-runtime-ubuntu20.04")]
    taken = next(f for f in findings if f.path == "nccl-env.yaml")
    assert any("ConfigMap/nccl is read by Job/train/old through envFrom (deploy.yaml:16)" in e for e in taken.evidence)
    # ConfigMap/unused (no container takes it) is judged with the default: no finding at nccl-env.yaml:13


def test_what_a_containers_command_installs_runs_over_its_image(tmp_path, monkeypatch):
    """pip installs in the command (argv, ``sh -c`` script, a block scalar of args, compose's
    string) replace the image's NCCL for the framework; ``pip install -r FILE`` of the image is
    unknown."""
    _write(tmp_path, "deploy.yaml", """apiVersion: batch/v1
kind: Job
metadata:
  name: t
spec:
  template:
    spec:
      containers:
        - name: script
          image: nvidia/cuda:11.6.2-devel-ubuntu20.04
          command: ["bash", "-c", "pip install torch==2.1.0 && torchrun train.py"]
          env:
            - {name: NCCL_NVLS_ENABLE, value: "1"}
            - {name: NCCL_MNNVL_ENABLE, value: "1"}
        - name: block
          image: nvidia/cuda:11.6.2-devel-ubuntu20.04
          command: ["/bin/sh", "-c"]
          args:
            - |
              set -e
              pip install nvidia-nccl-cu12==2.19.3
              python train.py
          env:
            - {name: NCCL_MNNVL_ENABLE, value: "1"}
        - name: argv
          image: nvidia/cuda:11.6.2-devel-ubuntu20.04
          command: ["pip", "install", "-r", "requirements.txt"]
          env:
            - {name: NCCL_NVLS_ENABLE, value: "1"}
""")
    _write(tmp_path, "compose.yaml", "services:\n  s:\n    image: nvidia/cuda:11.6.2-devel-ubuntu20.04\n"
                                     "    command: bash -c \"pip install nvidia-nccl-cu12==2.18.3 && python train.py\"\n"
                                     "    environment:\n      NCCL_MNNVL_ENABLE: \"1\"\n")
    result, findings = _env002(["deploy.yaml", "compose.yaml"], monkeypatch, tmp_path)
    assert sorted((f.path, f.line, f.message.split(": NCCL reads")[0]) for f in findings) == [
        ("compose.yaml", 6, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.3 from compose.yaml:4 pip wheel pin"),
        ("deploy.yaml", 14, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.1 from deploy.yaml:11 pip torch wheel"),
        ("deploy.yaml", 24, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.19.3 from deploy.yaml:21 pip wheel pin")]
    # torch 2.1.0's NCCL 2.18.1 reads NCCL_NVLS_ENABLE (the image's 2.12.10 would not): no finding at line 13
    assert any("installed over NCCL 2.12.10 (deploy.yaml:10 image nvidia/cuda:11.6.2-devel-ubuntu20.04)" in e
               for e in next(f for f in findings if f.line == 14).evidence)
    assert any("(Job/t/argv): judged with assumed NCCL 2.30.7" in n and
               "pip install -r requirements.txt: the file is not read here" in n for n in result.notes)


def test_a_requirements_file_that_cannot_be_read_leaves_the_environment_unknown(tmp_path, monkeypatch):
    """It may pin torch or an NCCL wheel: the image's NCCL is not what the framework loads."""
    _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:11.6.2-devel-ubuntu20.04\nCOPY . /app\n"
                                   "RUN pip install -r /app/requirements.txt\nENV NCCL_NVLS_ENABLE=1\n")
    result, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert findings == []
    assert any("pip install -r /app/requirements.txt: the file is not read here" in n for n in result.notes)
    found = [s for s in _sources(tmp_path / "Dockerfile") if s.kind == "pip-file"]
    assert [(s.loc.line, s.versions) for s in found] == [(3, ())]


_BUILT = """# the image compose builds for the services below
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build
RUN apt-get update && apt-get install -y libnccl2=2.18.3-1+cuda12.2
FROM nvidia/cuda:11.6.2-runtime-ubuntu20.04 AS run
RUN pip install nvidia-nccl-cu12==2.19.3
"""


def test_a_compose_service_runs_its_image_or_the_dockerfile_it_builds(tmp_path, monkeypatch):
    _write(tmp_path, "docker/Dockerfile.gpu", _BUILT)  # sets nothing itself: read because a service builds it
    _write(tmp_path, "compose.yaml", """services:
  pulled:
    image: nvidia/cuda:11.6.2-devel-ubuntu20.04
    environment:
      NCCL_NVLS_ENABLE: "1"
  target:
    build:
      context: .
      dockerfile: docker/Dockerfile.gpu
      target: build
    environment:
      - NCCL_MNNVL_ENABLE=1
  final:
    build:
      context: docker
      dockerfile: Dockerfile.gpu
    image: myorg/trainer:latest
    pull_policy: build
    environment:
      NCCL_MNNVL_ENABLE: "1"
""")
    result, findings = _env002(["compose.yaml", "docker"], monkeypatch, tmp_path)
    assert [(f.line, f.message.split(": NCCL reads")[0]) for f in sorted(findings, key=lambda f: f.line)] == [
        (5, "NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from compose.yaml:3 image "
            "nvidia/cuda:11.6.2-devel-ubuntu20.04"),
        (12, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.3 from docker/Dockerfile.gpu:3 apt pin"),
        (20, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.19.3 from docker/Dockerfile.gpu:5 pip wheel pin")]
    built = next(f for f in findings if f.line == 12)
    assert any("the service is built from docker/Dockerfile.gpu stage:build (compose.yaml:8 build)" in e
               for e in built.evidence)
    assert any(n.startswith("docker/Dockerfile.gpu: read for the NCCL of the compose service it builds")
               for n in result.notes)
    assert not any(n.startswith("docker/Dockerfile.gpu: skipped") for n in result.notes)


def test_a_compose_env_file_runs_in_its_services_image(tmp_path, monkeypatch):
    _write(tmp_path, "compose.yaml", "services:\n  s:\n    image: nvidia/cuda:11.6.2-devel-ubuntu20.04\n"
                                     "    env_file: nccl.env\n")
    _write(tmp_path, "nccl.env", "NCCL_NVLS_ENABLE=1\n")
    _, findings = _env002(["compose.yaml"], monkeypatch, tmp_path)
    assert [(f.path, f.line, f.message.split(": NCCL reads")[0]) for f in findings] == [
        ("nccl.env", 1, "NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from compose.yaml:3 image "
                        "nvidia/cuda:11.6.2-devel-ubuntu20.04")]


def test_a_compose_service_with_image_and_build_may_run_either(tmp_path, monkeypatch):
    """Without pull_policy: build, Compose pulls the image when a registry has it and builds
    otherwise: a finding must hold for both, and an image nothing is known about settles nothing."""
    _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:11.6.2-runtime-ubuntu20.04\n"
                                   "RUN apt-get install -y libnccl2=2.12.12-1+cuda11.6\n")
    _write(tmp_path, "compose.yaml", """services:
  known:
    image: nvidia/cuda:12.2.2-runtime-ubuntu22.04
    build: .
    environment:
      NCCL_NVLS_ENABLE: "1"
      NCCL_MNNVL_ENABLE: "1"
  unknown:
    image: myorg/trainer
    build: .
    environment:
      NCCL_NVLS_ENABLE: "1"
""")
    result, findings = _env002(["compose.yaml", "Dockerfile"], monkeypatch, tmp_path)
    # NCCL_NVLS_ENABLE: 2.18.5 and 2.19.3 (the image) read it, 2.12.12 (the build) does not: nothing is said
    assert [(f.line, f.message.split(": NCCL reads")[0]) for f in findings] == [
        (7, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.12.12 or 2.18.5 or 2.19.3 from Dockerfile:2 apt pin, "
            "compose.yaml:3 image nvidia/cuda:12.2.2-runtime-ubuntu22.04")]
    assert any("(service:unknown): judged with assumed NCCL 2.30.7" in n and "compose pulls the image" in n
               and "nothing is known about the NCCL in myorg/trainer" in n for n in result.notes)


@pytest.mark.parametrize("build, why", [
    ("build: .", "the Dockerfile it builds, Dockerfile, is not among the checked files"),
    ("build:\n      context: .\n      dockerfile_inline: |\n        FROM nvidia/cuda:11.6.2-runtime-ubuntu20.04",
     "an inline Dockerfile (dockerfile_inline) is not read"),
    ("build: https://github.com/org/repo.git#main", "is not a folder here"),
    ("build:\n      context: .\n      target: missing", "has no stage 'missing'"),
])
def test_a_build_whose_dockerfile_is_not_read_leaves_the_version_unknown(tmp_path, monkeypatch, build, why):
    names = ["compose.yaml"]
    if "target" in build:
        _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:11.6.2-runtime-ubuntu20.04 AS run\nENV NCCL_DEBUG=WARN\n")
        names.append("Dockerfile")
    _write(tmp_path, "compose.yaml",
           f"services:\n  train:\n    {build}\n    environment:\n      NCCL_NVLS_ENABLE: \"1\"\n")
    result, findings = _env002(names, monkeypatch, tmp_path)
    assert findings == []
    assert any("(service:train): judged with assumed NCCL 2.30.7" in n and why in n for n in result.notes), result.notes


# ---- the version line alone (NCCL_DEBUG=VERSION) ------------------------------------------------
@pytest.mark.parametrize("text, found", [
    ("NCCL version 2.18.3+cuda12.2\n", ("2.18.3", 1, 1)),
    ("Loading model...\nrank 0 ready\nNCCL version 2.11.4+cuda11.4\nstep 10 loss 2.1\n", ("2.11.4", 3, 1)),
    ("[1,0]<stdout>:NCCL version 2.12.7+cuda11.4\n", ("2.12.7", 1, 15)),  # Open MPI's tag (printf up to 2.22)
    ("[2025-06-01 10:11:12] NCCL version 2.26.2+cuda12.8\n", ("2.26.2", 1, 23)),  # NCCL_DEBUG_TIMESTAMP_LEVELS=VERSION
    ("Tested with NCCL version 2.18.3+cuda12.2 on H100.\n", None),  # a sentence
    ("NCCL version 2.18.3+cuda12.2 is broken on this cluster\n", None),
    ("Output:\n\n    NCCL version 2.18.3+cuda12.2\n", None),  # an indented sample
    ("# Notes\n\nThe image prints:\n\n```\nNCCL version 2.18.3+cuda12.2\n```\n", None),  # Markdown
    ("Example\n=======\n\n.. code-block:: text\n\nNCCL version 2.18.3+cuda12.2\n", None),  # reStructuredText
    ("[rank0]: DistBackendError: remote process exited, NCCL version 2.27.3\n", None),  # torch's error text
])
def test_the_version_line_alone_is_an_nccl_log(tmp_path, text, found):
    from topolint.inputs.sniff import sniff
    from topolint.parsers.nccl_log import parse_nccl_log

    assert sniff(text) == ("nccl-log" if found else None)
    if found:
        log = parse_nccl_log(read_source("run.out", _write(tmp_path, "run.out", text))).log
        assert [(v.message, v.loc.line, v.loc.column) for v in log.versions] == [found]


def _node_version(paths):
    from topolint.engine.runner import CheckContext, RunOptions
    from topolint.inputs.collect import collect

    collection = collect(paths)
    context = CheckContext(collection.nodes[0], RunOptions(nccl_version=NcclVersion(2, 30, 7)))
    return context.node_version()


def test_a_node_bundles_version_line_is_the_nodes_version(tmp_path, monkeypatch):
    """CheckContext.node_version() (what the node rules and the fleet read) is the version line of
    the node's NCCL log, in a bundle (listed in its manifest or not) and in a plain folder."""
    import json

    shutil.copy(ROOT / "fixtures/samples/dgx-like-2socket-dump.xml", tmp_path / "topo.xml")
    _write(tmp_path, "train.out", "epoch 0\n[1,0]<stdout>:NCCL version 2.11.4+cuda11.4\n")
    monkeypatch.chdir(tmp_path)
    found = _node_version(["."])
    assert (found.origin, [str(v) for v in found.candidates]) == ("evidence", ["2.11.4"])
    assert [(s.loc.path, s.loc.line, s.loc.column) for s in found.sources] == [("train.out", 2, 15)]
    assert found.label() == "NCCL 2.11.4 from train.out:2 NCCL version line"
    # the node checks judge with it: PXN (NUMA001's relays) exists only from 2.12
    result = topolint.check(["."], select=["NUMA001"], isolated=True)
    assert result.findings and {f.severity for f in result.findings} == {"error"}

    bundle = tmp_path / "node17"
    bundle.mkdir()
    shutil.copy(ROOT / "fixtures/samples/dgx-like-2socket-dump.xml", bundle / "topo.xml")
    _write(bundle, "nccl-version.txt", "NCCL version 2.19.3+cuda12.3\n")
    _write(bundle, "other.log", "NCCL version 2.20.5+cuda12.4\n")  # not in the manifest: read as a walk reads it
    _write(bundle, "topolint-bundle.json", json.dumps({"topolint_bundle": 1, "host": "node17", "commands": [
        {"file": "nccl-version.txt", "argv": ["sh", "-c", "NCCL_DEBUG=VERSION ./app"], "status": "ok",
         "exit_code": 0, "format": "nccl-log"}]}, indent=1))
    found = _node_version(["node17"])
    assert [str(v) for v in found.candidates] == ["2.19.3", "2.20.5"] and found.version == NcclVersion(2, 20, 5)
    assert sorted((s.loc.path, s.loc.line) for s in found.sources) == [("node17/nccl-version.txt", 1),
                                                                        ("node17/other.log", 1)]
    assert found.reason == "the node ran several NCCL versions"


# ---- packages that pull torch in (data/nccl_versions/torch_dependents.tsv) ----------------------
_OVER_CUDA_11_6 = "FROM nvidia/cuda:11.6.2-devel-ubuntu20.04\nRUN {command}\nENV NCCL_NVLS_ENABLE=1\nENV NCCL_MNNVL_ENABLE=1\n"
_IMAGE_NCCL = ["NCCL_NVLS_ENABLE is not read yet by NCCL 2.12.10 from Dockerfile:1 base image",
               "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.12.10 from Dockerfile:1 base image"]
_VLLM_TORCH = ["NCCL_MNNVL_ENABLE is not read yet by NCCL 2.20.5 from Dockerfile:2 pip torch dependency"]


@pytest.mark.parametrize("command, expected", [
    # vllm 0.6.3 requires torch==2.4.0, whose wheel requires nvidia-nccl-cu12==2.20.5 (reads NVLS, not MNNVL)
    ("pip install vllm==0.6.3", _VLLM_TORCH),
    ("pip3 install 'vllm[all]==0.6.3'", _VLLM_TORCH),  # extras
    ("python3 -m pip install --upgrade torchvision==0.19.0 numpy", _VLLM_TORCH),  # torchvision 0.19.0: torch==2.4.0
    ("uv pip install --system torch vllm==0.6.3", _VLLM_TORCH),  # vllm's pin settles the unpinned torch
    ("pip install torch==2.1.0 torchvision",  # the command's own torch pin is what pip installs
     ["NCCL_MNNVL_ENABLE is not read yet by NCCL 2.18.1 from Dockerfile:2 pip torch wheel"]),
    # the torch pulled in is unknown: not judged with the image's NCCL
    ("pip install vllm", []),
    ("pip install 'vllm[all]>=0.6'", []),
    ("pip install accelerate==1.0.0", []),  # torch >=1.10.0: the newest torch that fits
    ("pip install deepspeed==0.15.4", []),  # an sdist: the metadata pip builds from it requires torch
    ("pip install 'transformers[torch]==4.46.1'", []),  # torch through the extra
    ("pip install --extra-index-url https://download.pytorch.org/whl/cu121 vllm==0.6.3", []),
    # nothing pulls torch in: the image's NCCL
    ("pip install transformers==4.46.1", _IMAGE_NCCL),  # torch only with an extra
    ("pip install --no-deps vllm==0.6.3", _IMAGE_NCCL),
    ("pip install --no-binary torchvision numpy myorg-trainer", _IMAGE_NCCL),  # an option's value; unlisted packages
])
def test_a_package_that_pulls_torch_in(tmp_path, monkeypatch, command, expected):
    _write(tmp_path, "Dockerfile", _OVER_CUDA_11_6.format(command=command))
    result, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert [f.message.split(": NCCL reads")[0] for f in findings] == expected
    if expected == _VLLM_TORCH:
        assert any(re.search(r"requires torch ?==2\.4\.0 \(https://pypi\.org/project/", e) and
                   "torch 2.4.0's wheel requires nvidia-nccl-cu12==2.20.5" in e for e in findings[0].evidence)
    if not expected:
        assert any(n.startswith("ENV002 Dockerfile (stage:0): judged with assumed NCCL 2.30.7") for n in result.notes)


@pytest.mark.parametrize("command, why", [
    ("pip install vllm", "vllm: no exact version, and vllm {newest} requires torch=="),
    ("pip install accelerate==1.0.0",
     "accelerate 1.0.0 requires torch >=1.10.0 (https://pypi.org/project/accelerate/1.0.0/): pip installs the newest"),
    ("pip install vllm==0.0.1", "vllm==0.0.1: no row of this release, and vllm {newest} requires torch=="),
])
def test_verbose_names_the_package_and_the_row(tmp_path, monkeypatch, command, why):
    from topolint.model.nccl_sources import torch_dependents

    newest = max(torch_dependents()["vllm"].values(), key=lambda r: [int(x) for x in r[0].split(".")[:3]])[0]
    _write(tmp_path, "Dockerfile", _OVER_CUDA_11_6.format(command=command))
    result, _ = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert any(why.format(newest=newest) in n for n in result.notes), result.notes


def test_a_requirements_file_and_a_constraints_file(tmp_path, monkeypatch):
    _write(tmp_path, "requirements.txt", "numpy==1.26.4 \\\n    --hash=sha256:00\n"  # pip-compile's hashes
                                         "vllm[all] == 0.6.3 \\\n    --hash=sha256:11  # serving\n")
    _write(tmp_path, "constraints.txt", "accelerate==1.0.0\n")  # constrains, installs nothing
    _write(tmp_path, "Dockerfile", "FROM nvidia/cuda:11.6.2-devel-ubuntu20.04\nCOPY requirements.txt constraints.txt /\n"
                                   "RUN pip install -r /requirements.txt -c /constraints.txt\n"
                                   "ENV NCCL_NVLS_ENABLE=1\nENV NCCL_MNNVL_ENABLE=1\n")
    _, findings = _env002(["Dockerfile"], monkeypatch, tmp_path)
    assert [f.message.split(": NCCL reads")[0] for f in findings] == [
        "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.20.5 from requirements.txt:3 pip torch dependency"]
    found = [s for s in _sources(tmp_path / "Dockerfile") if s.kind == "pip-dependent"]
    assert [(s.written, s.loc.path.rsplit("/", 1)[-1], s.loc.line, "Dockerfile:3" in s.via) for s in found] == [
        ("vllm[all] == 0.6.3", "requirements.txt", 3, True)]


def test_a_hashed_torch_pin_in_a_requirements_file(tmp_path):
    _write(tmp_path, "requirements.txt", "torch==2.1.0 \\\n    --hash=sha256:00 \\\n    --hash=sha256:11\n")
    script = _write(tmp_path, "setup.sh", "pip install --require-hashes -r requirements.txt\n")
    assert [(s.kind, s.written, s.versions, s.loc.line) for s in _sources(script)] == [
        ("pip-torch", "torch==2.1.0", ("2.18.1",), 1)]


def test_a_conda_environments_pip_section(tmp_path):
    _write(tmp_path, "environment.yml", "dependencies:\n  - python=3.11\n  - transformers\n  - pip:\n"
                                        "    - vllm==0.6.3\n  - numpy\n")
    script = _write(tmp_path, "setup.sh", "conda env create -f environment.yml\n")
    assert [(s.kind, s.written, s.versions, s.loc.line) for s in _sources(script)] == [
        ("pip-dependent", "vllm==0.6.3", ("2.20.5",), 5)]  # conda's own transformers is no pip install


def test_a_containers_command_that_installs_a_torch_dependent(tmp_path, monkeypatch):
    head, indent = _KINDS["Job"]
    pod = ["containers:",
           '  - {name: pinned, image: "nvidia/cuda:11.6.2-devel-ubuntu20.04",',
           '     command: ["bash", "-c", "pip install vllm==0.6.3 && python -m vllm.entrypoints.openai.api_server"],',
           '     env: [{name: NCCL_NVLS_ENABLE, value: "1"}, {name: NCCL_MNNVL_ENABLE, value: "1"}]}',
           '  - {name: unpinned, image: "nvidia/cuda:11.6.2-devel-ubuntu20.04", command: ["pip", "install", "vllm"],',
           '     env: [{name: NCCL_MNNVL_ENABLE, value: "1"}]}']
    _write(tmp_path, "deploy.yaml", head + "".join(" " * indent + line + "\n" for line in pod))
    result, findings = _env002(["deploy.yaml"], monkeypatch, tmp_path)
    assert [(f.line, f.message.split(": NCCL reads")[0]) for f in findings] == [
        (11, "NCCL_MNNVL_ENABLE is not read yet by NCCL 2.20.5 from deploy.yaml:10 pip torch dependency")]
    assert any("(Job/t/unpinned): judged with assumed NCCL 2.30.7" in n and "vllm: no exact version" in n
               for n in result.notes)


def test_the_dependents_table():
    from topolint.model.nccl_sources import pulled_torch, torch_dependents

    table = torch_dependents()
    for package in ("vllm", "torchvision", "torchaudio", "xformers", "deepspeed", "accelerate", "lightning",
                    "nemo-toolkit", "megatron-core"):
        assert package in table, package
    lines = [line for line in (DATA / "torch_dependents.tsv").read_text().splitlines() if not line.startswith("#")]
    for line in lines[1:]:
        package, version, *_, citation = line.split("\t")
        assert citation.startswith(f"https://pypi.org/project/{package}/{version}/ https://files.pythonhosted.org/")
    assert pulled_torch("vllm", "0.6.3", frozenset())[:2] == (True, "2.4.0")
    assert pulled_torch("Nemo_Toolkit", None, frozenset())[0] is True  # PEP 503 names
    assert pulled_torch("numpy", "1.26.4", frozenset())[0] is False  # not listed: never taken to pull torch
    assert pulled_torch("transformers", "4.46.1", frozenset())[0] is False
    assert pulled_torch("transformers", "4.46.1", frozenset({"torch"}))[0] is True
    assert pulled_torch("transformers", "4.46.1", frozenset({"deepspeed"}))[:3] == (
        True, "", "transformers[deepspeed,deepspeed-testing] 4.46.1 requires deepspeed >=0.9.3 "
                  "(https://pypi.org/project/transformers/4.46.1/)")  # through deepspeed, which always requires torch
    # flash-attn 2.x's sdists cannot be built without torch: only 1.0.5 has a row, and it requires torch
    assert [v for v, lines in table["flash-attn"].values()] == ["1.0.5"]
    assert pulled_torch("flash-attn", "2.6.3", frozenset())[0] is True  # some release does: unknown, never the image's
