"""Issue 23's cases, written as the real repositories write them (synthetic copies of the shapes,
not the files): no false alarm on a correct setting, every clear mistake on its line, settings
read wherever launchers pass them."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, run_cli


def _check(tmp_path, files: dict[str, str], *args) -> list[tuple]:
    """(code, severity, path, line, message) of every finding of checking ``files`` (written in
    ``tmp_path``) from ``tmp_path``."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = run_cli("check", ".", "--isolated", "--no-cache", "--select", "ALL", "--preview", "--format", "json",
                     *map(str, args), cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    return [(f["code"], f["severity"], f["path"], f["line"], f["message"]) for f in report["findings"]]


def _at(found, *codes) -> list[tuple]:
    """(code, severity, path, line) of the findings of ``codes``."""
    return [f[:4] for f in found if f[0] in codes]


def _codes(found, path=None) -> set[str]:
    return {f[0] for f in found if path is None or f[2] == path}


# ---- names build systems, images and Google's plugins use -------------------------------------

def test_names_of_build_systems_images_and_google_plugins_are_known(tmp_path):
    dockerfile = ("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
                  "ENV NCCL_VERSION=2.21.5-1 NCCL_HOME=/opt/nccl/build NCCL_ROOT=/opt/nccl NCCL_ROOT_DIR=/opt/nccl\n"
                  "ENV NCCL_INCLUDE_DIR=/opt/nccl/include NCCL_LIB_DIR=/usr/local/gib/scripts\n"
                  "ENV NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb\n"
                  "ENV NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE=/usr/local/gib/configs/guest_config.txtpb\n")
    found = _check(tmp_path, {"Dockerfile": dockerfile})
    assert "ENV001" not in _codes(found), found


def test_a_name_no_nccl_reads_is_still_reported(tmp_path):
    found = _check(tmp_path, {"run.sh": "#!/bin/bash\nexport NCCL_IB_NET_LATENCY=50\nsrun all_reduce_perf\n"})
    assert _at(found, "ENV001") == [("ENV001", "warning", "run.sh", 2)]


# ---- shell variables that are not exported -------------------------------------------------------

def test_unexported_shell_variables_are_not_ncclss_settings(tmp_path):
    script = ("#!/bin/bash\n"
              "NCCL_TESTS=${NCCL_TESTS:-/opt/nccl-tests/build}\n"
              "NCCL_ARGS_2=\"-b 8 -e 8G -f 2\"\n"
              "$NCCL_TESTS/all_reduce_perf $NCCL_ARGS_2\n")
    assert _codes(_check(tmp_path, {"health.sh": script})) == set()


def test_a_variable_nccl_reads_set_without_export_before_the_launch_is_env009(tmp_path):
    script = "#!/bin/bash\n#SBATCH --nodes=2\nNCCL_IB_HCA=mlx5_0\nsrun python train.py\n"
    found = _check(tmp_path, {"train.sbatch": script})
    assert _at(found, "ENV009", "ENV001") == [("ENV009", "warning", "train.sbatch", 3)]
    assert "is a shell variable that is never exported: srun (line 4)" in found[0][4]


@pytest.mark.parametrize("script", [
    "NCCL_IB_HCA=mlx5_0\nexport NCCL_IB_HCA\nsrun python train.py\n",  # a later export
    "export NCCL_IB_HCA\nNCCL_IB_HCA=mlx5_0\nsrun python train.py\n",  # exported before
    "set -a\nNCCL_IB_HCA=mlx5_0\nsrun python train.py\n",
    "set -o allexport\nNCCL_IB_HCA=mlx5_0\nsrun python train.py\n",
    "declare -x NCCL_IB_HCA=mlx5_0\nsrun python train.py\n",
    "NCCL_IB_HCA=mlx5_0 srun python train.py\n",  # a prefix of the command
    "NCCL_IB_HCA=mlx5_0\nmpirun -x NCCL_IB_HCA=$NCCL_IB_HCA python train.py\n",  # passed on by value
    "NCCL_IB_HCA=mlx5_0\necho configured\n",  # nothing launched after it (a file others source)
    "if [ -n \"$A\" ]; then\n  NCCL_IB_HCA=mlx5_0\nelse\n  srun python train.py\nfi\n",  # other branch
])
def test_exported_prefixed_or_unlaunched_settings_are_not_env009(tmp_path, script):
    assert "ENV009" not in _codes(_check(tmp_path, {"train.sh": "#!/bin/bash\n" + script}))


def test_exports_every_later_launch_drops_are_env009(tmp_path):
    script = ("#!/bin/bash\nexport NCCL_SOCKET_IFNAME=ens5\nexport NCCL_DEBUG=WARN\n"
              "srun --export=NONE python train.py\n"
              "docker run --rm -e NCCL_DEBUG img python train.py\n")
    found = _check(tmp_path, {"train.sh": script})
    assert _at(found, "ENV009") == [("ENV009", "warning", "train.sh", 2)]  # NCCL_DEBUG reaches the container
    assert "is exported but never reaches NCCL" in found[0][4]


# ---- deprecated names NCCL still reads; transports without evidence -------------------------------

def test_deprecated_names_nccl_still_reads_are_info(tmp_path):
    script = ("#!/bin/bash\nexport NCCL_MIN_NCHANNELS=32\nexport NCCL_MAX_NCHANNELS=32\nexport NCCL_LAUNCH_MODE=GROUP\n"
              "export NCCL_TREE_THRESHOLD=0\ntorchrun train.py\n")
    found = {(f[3], f[1]) for f in _check(tmp_path, {"run.sh": script}) if f[0] == "ENV002"}
    assert found == {(2, "info"), (3, "info"), (4, "info"), (5, "warning")}  # the removed one stays a warning


def test_ib_disable_without_rdma_evidence_is_info(tmp_path):
    found = _check(tmp_path, {"deepspeed_env.env": "NCCL_SOCKET_IFNAME=eth0\nNCCL_IB_DISABLE=1\n"})
    assert [(f[0], f[1]) for f in found if f[0] in ("ENV006", "NET007")] == [("ENV006", "info")]


# ---- values NCCL's parsers refuse --------------------------------------------------------------

def test_values_outside_what_nccl_accepts_are_env003(tmp_path):
    script = ("#!/bin/bash\nexport NCCL_NTHREADS=1\nexport NCCL_IB_RETRY_CNT=14\nexport NCCL_IB_TIMEOUT=22\n"
              "export NCCL_NTHREADS_OK=0\nexport NCCL_IB_SL=-1\nexport NCCL_SOCKET_NTHREADS=16\ntorchrun t.py\n")
    found = [(f[3]) for f in _check(tmp_path, {"run.sh": script}) if f[0] == "ENV003"]
    assert found == [2, 3]


def test_cta_range_follows_the_nccl_version(tmp_path):
    files = {"run.sh": "#!/bin/bash\nexport NCCL_MIN_CTAS=64\ntorchrun t.py\n"}
    assert "ENV003" not in _codes(_check(tmp_path, files))
    assert "ENV003" in _codes(_check(tmp_path, files, "--nccl-version", "2.24.3"))


# ---- settings on launchers' command lines ------------------------------------------------------

@pytest.mark.parametrize("line", [
    "mpirun -np 16 -x NCCL_TREE_THRESHOLD=0 a.out",  # Open MPI
    "mpiexec -genv NCCL_TREE_THRESHOLD 0 a.out",  # MPICH / Hydra
    "mpiexec.hydra -genv NCCL_TREE_THRESHOLD=0 a.out",  # Intel MPI
    "srun --export=ALL,NCCL_TREE_THRESHOLD=0 a.out",
    "docker run --rm -e NCCL_TREE_THRESHOLD=0 img a.out",
    "docker run --rm --env NCCL_TREE_THRESHOLD=0 img a.out",
])
def test_command_line_settings_are_read_with_their_line(tmp_path, line):
    found = _check(tmp_path, {"run.sh": "#!/bin/bash\n\n" + line + "\n"})
    assert _at(found, "ENV002") == [("ENV002", "warning", "run.sh", 3)]


def test_genvlist_and_bare_x_pass_names_on(tmp_path):
    from topolint.inputs.source import SourceFile
    from topolint.parsers.shell import parse_shell

    config = parse_shell(SourceFile("x.sh", "mpiexec -genvlist NCCL_DEBUG,NCCL_ALGO -x NCCL_IB_HCA a.out\n"
                                            "docker run -e NCCL_SOCKET_IFNAME img\n"))
    assert [(s.name, s.source, s.passthrough) for s in config.settings] == [
        ("NCCL_DEBUG", "mpirun-genvlist", True), ("NCCL_ALGO", "mpirun-genvlist", True),
        ("NCCL_IB_HCA", "mpirun-x", True), ("NCCL_SOCKET_IFNAME", "docker-env", True)]


_MPIJOB = """apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: nccl-tests
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: nccl-tests
            command:
            - mpirun
            - -np
            - "16"
            - -x
            - NCCL_DEBUG=WARN
            - -x
            - NCCL_LL_THRESHOLD=0
            - -x
            - NCCL_TREE_THRESHOLD=0
            - /opt/nccl-tests/build/all_reduce_perf
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: worker
            image: nccl-tests
            command: ["/bin/bash", "-c"]
            args:
            - |
              export NCCL_SOCKET_IFNAME=eth0
              NCCL_IB_HCA=mlx5_0 /usr/sbin/sshd -D
"""


def test_mpijob_command_lists_are_read(tmp_path):
    found = _check(tmp_path, {"mpijob.yaml": _MPIJOB})
    assert sorted(f[3] for f in found if f[0] == "ENV002") == [21, 23]  # the two removed -x variables
    # the launcher runs mpirun, not NCCL: only the worker (IB settings, no RDMA device) is ENV008's
    assert _at(found, "ENV008") == [("ENV008", "warning", "mpijob.yaml", 30)]


def test_a_container_script_keeps_its_lines(tmp_path):
    from topolint.inputs.source import SourceFile
    from topolint.parsers.kubernetes import parse_yaml

    config = parse_yaml(SourceFile("mpijob.yaml", _MPIJOB))
    assert [(s.name, s.loc.line, s.loc.column) for s in config.settings if s.scope.startswith("MPIJob/nccl-tests/Worker")] \
        == [("NCCL_SOCKET_IFNAME", 35, 22), ("NCCL_IB_HCA", 36, 15)]


def test_a_folded_command_string_is_read(tmp_path):
    from topolint.inputs.source import SourceFile
    from topolint.parsers.kubernetes import parse_yaml

    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
            "    command: [\"/bin/bash\", \"-c\"]\n    args: [\n        \"mpirun \\\n"
            "        -x NCCL_IB_HCA=eth0 \\\n        -x NCCL_NET_PLUGIN=none \\\n        a.out\",\n      ]\n")
    config = parse_yaml(SourceFile("pod.yaml", text))
    assert [(s.name, s.value, s.loc.line, s.loc.column) for s in config.settings] == [
        ("NCCL_IB_HCA", "eth0", 10, 12), ("NCCL_NET_PLUGIN", "none", 11, 12)]


def test_configmap_scripts_are_read(tmp_path):
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nccl\ndata:\n  run.sh: |-\n    #!/bin/bash\n"
            "    mpirun -x NCCL_NTHREADS=1 a.out\n")
    assert _at(_check(tmp_path, {"cm.yaml": text}), "ENV003") == [("ENV003", "error", "cm.yaml", 8)]


# ---- docker compose env_file ----------------------------------------------------------------------

def test_compose_env_file_forms_order_and_precedence(tmp_path):
    compose = ("services:\n"
               "  a:\n    image: x\n    env_file: common.env\n"
               "  b:\n    image: x\n    env_file:\n      - common.env\n      - override.env\n"
               "    environment:\n      NCCL_DEBUG: WARN\n"
               "  c:\n    image: x\n    env_file:\n      - path: ../shared/nccl.env\n        required: false\n"
               "      - path: missing.env\n        required: false\n")
    files = {"app/compose.yaml": compose, "app/common.env": "NCCL_DEBUG=INFO\nNCCL_SOCKET_IFNAM=eth0\n",
             "app/override.env": "NCCL_DEBUG=TRACE\n", "shared/nccl.env": "NCCL_IB_HCA=mlx5_0\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    from topolint.inputs.source import read_source
    from topolint.parsers.kubernetes import parse_yaml

    import os
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        config = parse_yaml(read_source("app/compose.yaml", tmp_path / "app" / "compose.yaml"))
    finally:
        os.chdir(here)
    got = [(s.scope, s.name, s.value, s.loc.path, s.loc.line, s.source) for s in config.settings]
    assert got == [
        ("service:a", "NCCL_DEBUG", "INFO", "app/common.env", 1, "compose-env-file"),
        ("service:a", "NCCL_SOCKET_IFNAM", "eth0", "app/common.env", 2, "compose-env-file"),
        ("service:b", "NCCL_DEBUG", "INFO", "app/common.env", 1, "compose-env-file"),
        ("service:b", "NCCL_SOCKET_IFNAM", "eth0", "app/common.env", 2, "compose-env-file"),
        ("service:b", "NCCL_DEBUG", "TRACE", "app/override.env", 1, "compose-env-file"),
        ("service:b", "NCCL_DEBUG", "WARN", "app/compose.yaml", 11, "compose-env"),
        ("service:c", "NCCL_IB_HCA", "mlx5_0", "shared/nccl.env", 1, "compose-env-file")]
    assert [s.reason for s in config.skipped] == ["env_file missing.env: no such file (required: false, so compose "
                                                  "skips it): not read"]
    found = _check(tmp_path, {})
    # the typo is reported once, on its own line, though two services read it and the file is checked too
    assert _at(found, "ENV001") == [("ENV001", "warning", "app/common.env", 2)]
    assert _at(found, "ENV007") == [("ENV007", "info", "app/compose.yaml", 11)]


def test_compose_env_file_setting_socket_ifname_is_seen_by_net006(tmp_path):
    topology = FIXTURES / "rules" / "NET006" / "topology"
    compose = "services:\n  trainer:\n    image: x\n    env_file: nccl.env\n    environment:\n      - NCCL_IB_HCA=mlx5_0\n"
    found = _check(tmp_path, {"compose.yaml": compose, "nccl.env": "NCCL_SOCKET_IFNAME=eth0\n"}, "--topology", topology)
    assert "NET006" not in _codes(found, "compose.yaml")
    found = _check(tmp_path, {"nccl.env": "NCCL_DEBUG=WARN\n"}, "--topology", topology)
    assert "NET006" in _codes(found), found


def test_compose_merge_keys_give_one_finding_per_setting(tmp_path):
    compose = ("x-template: &tpl\n  image: x\n  environment:\n    - NCCL_NTHREADS=1\n"
               "services:\n  one:\n    <<: *tpl\n  two:\n    <<: *tpl\n")
    found = _check(tmp_path, {"compose.yaml": compose})
    assert _at(found, "ENV003") == [("ENV003", "error", "compose.yaml", 4)]


# ---- NET007 with NCCL_NET=IB; one finding per setting and cause -----------------------------------

def _replica(kind: str, replicas: int) -> str:
    return (f"    {kind}:\n      replicas: {replicas}\n      template:\n        spec:\n          containers:\n"
            "          - name: pytorch\n            env:\n            - {name: NCCL_IB_DISABLE, value: \"1\"}\n"
            "            - {name: NCCL_NET, value: IB}\n")


_PYTORCHJOB = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: t}\nspec:\n  pytorchReplicaSpecs:\n"
               + _replica("Master", 1) + _replica("Worker", 3))


def test_ib_disabled_with_nccl_net_ib_fails_at_init_one_finding_per_setting(tmp_path):
    found = _check(tmp_path, {"job.yaml": _PYTORCHJOB})
    assert _at(found, "NET007", "ENV007", "ENV006") == [("NET007", "error", "job.yaml", 13),
                                                         ("NET007", "error", "job.yaml", 22)]
    assert all("NCCL fails at communicator init" in f[4] for f in found if f[0] == "NET007")


# ---- hidden folders and GitHub Actions -------------------------------------------------------------

_WORKFLOW = """name: gpu
on: [push]
env:
  NCCL_DEBUG: WARN
jobs:
  test:
    runs-on: [self-hosted, gpu]
    container:
      image: nvcr.io/nvidia/pytorch:24.05-py3
      env:
        NCCL_SOCKET_IFNAME: eth0
    services:
      cache:
        image: redis
        env:
          NCCL_ALGO: Ring
    env:
      NCCL_DEBUG: INFO
    steps:
      - name: configure
        run: |
          echo "NCCL_NTHREADS=1" >> "$GITHUB_ENV"
          echo NCCL_IB_TIMEOUT=${{ matrix.timeout }} >> $GITHUB_ENV
      - name: train
        env:
          NCCL_DEBUG: ${{ inputs.debug }}
        run: |
          export NCCL_TREE_THRESHOLD=0
          torchrun --nproc-per-node 8 train.py
      - name: python step
        shell: python
        run: print(1)
"""


def test_github_actions_levels_and_github_env():
    from topolint.inputs.source import SourceFile
    from topolint.parsers.github_actions import parse_workflow

    config = parse_workflow(SourceFile(".github/workflows/gpu.yml", _WORKFLOW))
    assert [(s.name, s.value, s.loc.line, s.loc.column, s.scope, s.source) for s in config.settings] == [
        ("NCCL_DEBUG", "WARN", 4, 3, "file", "gha-env"),
        ("NCCL_DEBUG", "INFO", 18, 7, "file/job:test", "gha-env"),
        ("NCCL_SOCKET_IFNAME", "eth0", 11, 9, "file/job:test", "gha-container-env"),
        ("NCCL_ALGO", "Ring", 16, 11, "file/job:test/service:cache", "gha-service-env"),
        ("NCCL_NTHREADS", "1", 22, 17, "file/job:test", "github-env"),
        ("NCCL_IB_TIMEOUT", None, 23, 16, "file/job:test", "github-env"),  # ${{ }}: computed when it runs
        ("NCCL_DEBUG", None, 26, 11, "file/job:test/step@24", "gha-env"),
        ("NCCL_TREE_THRESHOLD", "0", 28, 18, "file/job:test/step@24", "export")]
    assert [s.reason for s in config.skipped] == ["run script in shell 'python': not analysed"]


def test_hidden_folders_are_read_or_listed(tmp_path):
    files = {".github/workflows/gpu.yml": _WORKFLOW, ".venv/bin/activate.sh": "export NCCL_SOCKET_IFNAM=eth0\n",
             ".git/hooks/pre-commit.sh": "export NCCL_SOCKET_IFNAM=eth0\n", "run.sh": "#!/bin/bash\nsrun x\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    result = run_cli("check", ".", "--isolated", "--format", "concise", "--verbose", cwd=tmp_path)
    found = {line.split(": ", 2)[1].split()[0] + "@" + line.split(":")[0] for line in result.stdout.splitlines()
             if ": " in line and line[0] != " " and not line.startswith("Found")}
    assert found == {"ENV003@.github/workflows/gpu.yml", "ENV002@.github/workflows/gpu.yml",
                     "ENV004@.github/workflows/gpu.yml", "ENV005@.github/workflows/gpu.yml"}, result.stdout
    assert ".git/: skipped, a hidden folder" in result.stderr and ".venv/: skipped, a hidden folder" in result.stderr


def test_a_composite_action_is_not_a_helm_template(tmp_path):
    action = ("name: t\nruns:\n  using: composite\n  steps:\n    - shell: bash\n      env:\n"
              "        NCCL_SOCKET_IFNAM: ${{ inputs.ifname }}\n      run: echo ${{ inputs.x }}\n")
    assert _at(_check(tmp_path, {"ci/action.yml": action}), "ENV001") == [("ENV001", "warning", "ci/action.yml", 7)]


# ---- NET002 from a node folder of ibstat, ibdev2netdev and ip addr ---------------------------------

def _ibstat(n: int) -> str:
    return "".join(f"CA 'mlx5_{i}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
                   f"\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n" for i in range(n))


def test_net002_reads_hca_names_from_the_node_outputs_and_suggests_the_typo(tmp_path):
    node = tmp_path / "node17"
    node.mkdir()
    (node / "ibstat.txt").write_text(_ibstat(8))
    (node / "ibdev2netdev.txt").write_text("".join(f"mlx5_{i} port 1 ==> ib{i} (Up)\n" for i in range(8)))
    (node / "ip-addr.txt").write_text((FIXTURES / "rules" / "NET006" / "topology" / "ip-addr.txt").read_text())
    script = "#!/bin/bash\nexport NCCL_IB_HCA=mlx5_0,mlx5_9\nsrun a.out\nexport NCCL_IB_HCA==mxl5_6\nsrun b.out\n"
    found = _check(tmp_path, {"jobs/train.sh": script}, "--topology", node)
    net002 = [f for f in found if f[0] == "NET002"]
    assert [f[:4] for f in net002] == [("NET002", "error", "jobs/train.sh", 2), ("NET002", "error", "jobs/train.sh", 4)]
    assert "mlx5_9 matches no HCA (HCAs there: mlx5_0" in net002[0][4]  # no such device: no guess
    assert "mxl5_6 matches no HCA (did you mean mlx5_6?)" in net002[1][4]


# ---- settings in the other places real launchers put them -------------------------------------------

def test_shell_commands_in_python_strings_are_read(tmp_path):
    launcher = ('"""Docs: export NCCL_SOCKET_IFNAM=eth0 is how you would do it."""\n'
                "import subprocess\n"
                "cmd = ['pdsh', '-w', 'h1', 'export NCCL_DEBUG=info;', 'export NCCL_IB_TIMEOUT=40;']\n"
                "env = ('export NCCL_SOCKET_IFNAME=^docker,lo; '\n"
                "       'export NCCL_NTHREADS=1; ')\n"
                "subprocess.run('NCCL_TREE_THRESHOLD=0 deepspeed train.py', shell=True)\n")
    found = _check(tmp_path, {"launch.py": launcher})
    assert sorted(f[:4] for f in found) == [("ENV002", "warning", "launch.py", 6), ("ENV003", "error", "launch.py", 3),
                                            ("ENV003", "error", "launch.py", 5), ("ENV004", "info", "launch.py", 3)]


def test_a_heredoc_fed_to_bash_c_cat_is_the_files_content(tmp_path):
    script = "#!/bin/bash\nbash -c \"cat > /etc/nccl.conf\" <<'EOF'\nNCCL_IB_TIMEOUT=40\nEOF\n"
    assert _at(_check(tmp_path, {"setup.sh": script}), "ENV003") == [("ENV003", "error", "setup.sh", 3)]


def test_tmux_sessions_started_over_ssh_by_xargs_take_their_e_settings(tmp_path):
    script = ("#!/bin/bash\nxargs -a hosts -I {} ssh {} tmux new-session -d -s train -c $(pwd) \\\n"
              "    -e NCCL_TREE_THRESHOLD=0 \\\n    python train.py\n")
    assert _at(_check(tmp_path, {"launch.sh": script}), "ENV002") == [("ENV002", "warning", "launch.sh", 3)]


def test_a_conf_file_of_exports_is_read_as_shell(tmp_path):
    exports = "# sourced by the job scripts\nexport NCCL_SOCKET_IFNAM=eth0\n"
    found = _check(tmp_path, {"site-nccl.conf": exports, "nccl-site.conf": exports, "nccl.conf": "NCCL_DEBUG=WARN\n"})
    assert sorted(_at(found, "ENV001")) == [("ENV001", "warning", "nccl-site.conf", 2),
                                            ("ENV001", "warning", "site-nccl.conf", 2)]


def test_a_malformed_workflow_is_tl001_with_its_line(tmp_path):
    workflow = "on: [push]\njobs:\n  a:\n    steps:\n      - run: |\n        echo hi\n    env: [\n"
    found = _check(tmp_path, {".github/workflows/ci.yml": workflow, "run.sh": "#!/bin/bash\nexport NCCL_NTHREADS=1\n"})
    assert _at(found, "TL001", "ENV003") == [("TL001", "error", ".github/workflows/ci.yml", 7),
                                             ("ENV003", "error", "run.sh", 2)]  # the other inputs are still checked
