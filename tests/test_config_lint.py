"""Config lint: NCCL settings in infra files (shell/Slurm, Dockerfile, Kubernetes, compose, env
files, Python launchers), the variable catalog, the example infra repo and start-up cost."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT, run_cli

from topolint.inputs.source import SourceFile

INFRA = FIXTURES / "infra-repo"
TABLE = ROOT / "tests" / "infra_repo_expected.tsv"
TSV = ROOT.parent / "shared" / "reference" / "nccl-env.tsv"
SARIF_SCHEMA = ROOT.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"
TOPOLOGY = FIXTURES / "topologies" / "4gpu-2numa-nvlink.xml"


def _expected():
    findings, clean = set(), set()
    with TABLE.open(encoding="utf-8") as handle:
        for row in csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            if not row:
                continue
            if row[0] == "clean":
                clean.add(row[1])
            else:
                findings.add((row[0], row[1], int(row[2])))
    return findings, clean


def _findings(*args, cwd=INFRA):
    result = run_cli("check", *args, "--format", "json", cwd=cwd)
    assert "Traceback" not in result.stderr
    return result, json.loads(result.stdout)["findings"]


# ---- the example infra repo ---------------------------------------------------------------------
def test_infra_repo_gives_exactly_the_table():
    expected, clean = _expected()
    result, findings = _findings(".")
    got = {(f["code"], f["path"], f["line"]) for f in findings}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"
    assert not {f["path"] for f in findings} & clean
    assert result.exit_code == 1


def test_infra_repo_sarif_validates_and_sits_on_the_right_lines():
    jsonschema = pytest.importorskip("jsonschema")
    if not SARIF_SCHEMA.is_file():
        pytest.skip("SARIF schema not present")
    result = run_cli("check", ".", "--format", "sarif", cwd=INFRA)
    sarif = json.loads(result.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(sarif)
    expected, _ = _expected()
    results = sarif["runs"][0]["results"]
    assert len(results) == len(expected)
    for item in results:
        location = item["locations"][0]["physicalLocation"]
        path, line = location["artifactLocation"]["uri"], location["region"]["startLine"]
        assert (item["ruleId"], path, line) in expected
        text = (INFRA / path).read_text(encoding="utf-8").splitlines()[line - 1]
        message = item["message"]["text"]
        name = message.split("=", 1)[0].split()[-1] if "=" in message.split()[0] else message.split()[0]
        if item["ruleId"] != "ENV008":
            assert name in text, (item["ruleId"], path, line, text)
        column = location["region"].get("startColumn")
        if column and item["ruleId"] != "ENV008":
            assert text[column - 1:].startswith(name), (text, column, name)


def test_folder_of_machine_outputs_still_one_node(tmp_path):
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "topo.xml").write_text(TOPOLOGY.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "node1" / "run.sh").write_text("#!/bin/bash\nexport NCCL_ALGO=Ring\n", encoding="utf-8")
    result, findings = _findings("node1", "--preview", cwd=tmp_path)
    assert [f["code"] for f in findings] == ["ENV005"]
    assert findings[0]["node"] == "node1"


# ---- parsers ------------------------------------------------------------------------------------
def _settings(parser, text, path="x"):
    config = parser(SourceFile(path, text))
    return config, [(s.name, s.value, s.loc.line, s.loc.column, s.scope, s.default_only) for s in config.settings]


def test_shell_scopes_steps_and_defaults():
    from topolint.parsers.shell import parse_shell

    text = (
        "#!/bin/bash\n"
        "#SBATCH --export=ALL,NCCL_IB_HCA=mlx5_0,mlx5_1\n"
        "export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_ALGO=Ring\n"
        "if true; then export NCCL_PROTO=LL; elif false; then export NCCL_PROTO=LL128; else export NCCL_PROTO=Simple; fi\n"
        "NCCL_IB_TIMEOUT=22 srun --export=ALL,NCCL_CROSS_NIC=1 \\\n"
        "   env NCCL_BUFFSIZE=1 python x.py\n"
        "mpirun -x NCCL_NET=IB -x NCCL_DEBUG -genv NCCL_P2P_LEVEL NVL a.out\n"
        "f() {\n  export NCCL_MIN_CTAS=4\n}\n"
    )
    config, got = _settings(parse_shell, text)
    assert got == [
        ("NCCL_IB_HCA", "mlx5_0,mlx5_1", 2, 22, "job", False),
        ("NCCL_DEBUG", "WARN", 3, 8, "file", True),
        ("NCCL_ALGO", "Ring", 3, 39, "file", False),
        ("NCCL_PROTO", "LL", 4, 22, "file/if@4", False),
        ("NCCL_PROTO", "LL128", 4, 61, "file/elif@4", False),
        ("NCCL_PROTO", "Simple", 4, 91, "file/else@4", False),
        ("NCCL_IB_TIMEOUT", "22", 5, 1, "file/step@5", False),
        ("NCCL_CROSS_NIC", "1", 5, 38, "file/step@5", False),
        ("NCCL_BUFFSIZE", "1", 6, 8, "file/step@5", False),
        ("NCCL_NET", "IB", 7, 11, "file/step@7", False),
        ("NCCL_DEBUG", None, 7, 26, "file/step@7", False),
        ("NCCL_P2P_LEVEL", "NVL", 7, 43, "file/step@7", False),
        ("NCCL_MIN_CTAS", "4", 9, 10, "file/fn:f", False),
    ]
    assert config.settings[10].passthrough


def test_shell_unterminated_quote_stops_the_analysis_not_an_error():
    from topolint.parsers.shell import parse_shell

    config = parse_shell(SourceFile("x", "export NCCL_NTHREADS=$((1+2))\necho 'open\nNCCL_DEBUG=INFO\n"))
    assert [(s.name, s.value) for s in config.settings] == [("NCCL_NTHREADS", None)]  # arithmetic: computed
    assert [(s.line, s.reason) for s in config.skipped] == [(2, "unterminated single quote: lines 2-4 not analysed")]


def test_dockerfile_both_env_forms_and_stages():
    from topolint.parsers.dockerfile import parse_dockerfile

    text = 'FROM a AS build\nENV NCCL_DEBUG WARN now\nFROM b\nENV NCCL_ALGO=Ring \\\n    NCCL_PROTO="LL 128"\n'
    _, got = _settings(parse_dockerfile, text)
    assert got == [("NCCL_DEBUG", "WARN now", 2, 5, "stage:build", False),
                   ("NCCL_ALGO", "Ring", 4, 5, "stage:1", False),
                   ("NCCL_PROTO", "LL 128", 5, 5, "stage:1", False)]


@pytest.mark.parametrize("text, expected", [
    # The next line follows directly: no blank is put between the two halves of a word.
    ('FROM a\nENV NCCL_P2P_LEVEL="nv\\\nl"\n', [("NCCL_P2P_LEVEL", "nvl", 2, 5)]),
    # Empty and comment lines inside a continuation are dropped; the instruction goes on.
    ("FROM a\nENV NCCL_ALGO=Ring \\\n\n# note\n    NCCL_PROTO=LL\n",
     [("NCCL_ALGO", "Ring", 2, 5), ("NCCL_PROTO", "LL", 5, 5)]),
    # Blanks after the escape character still continue the line.
    ("FROM a\nENV NCCL_ALGO=Ring \\  \n  NCCL_PROTO=LL\n", [("NCCL_ALGO", "Ring", 2, 5), ("NCCL_PROTO", "LL", 3, 3)]),
    # An escaped escape character at the end is a literal backslash, not a continuation.
    ("FROM a\nENV NCCL_ALGO=Ring\\\\\nENV NCCL_PROTO=LL\n",
     [("NCCL_ALGO", "Ring\\", 2, 5), ("NCCL_PROTO", "LL", 3, 5)]),
    # The escape directive changes the character.
    ("# escape=`\nFROM a\nENV NCCL_ALGO=Ring `\n  NCCL_PROTO=LL\n", [("NCCL_ALGO", "Ring", 3, 5), ("NCCL_PROTO", "LL", 4, 3)]),
])
def test_dockerfile_lines_join_as_buildkit_joins_them(text, expected):
    """BuildKit frontend/dockerfile/parser/parser.go ``Parse``: ``trimContinuationCharacter``
    with ``lineContinuationRegex``, comment and ``isEmptyContinuationLine`` lines skipped, and
    the halves written one after the other into the instruction's buffer."""
    from topolint.parsers.dockerfile import parse_dockerfile

    config = parse_dockerfile(SourceFile("Dockerfile", text))
    assert [(s.name, s.value, s.loc.line, s.loc.column) for s in config.settings] == expected


def test_kubernetes_jobset_pytorchjob_and_init_containers():
    from topolint.parsers.kubernetes import parse_yaml

    text = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 4
        template:
          spec:
            initContainers:
            - name: init
              env: [{name: NCCL_DEBUG, value: WARN}]
            containers:
            - name: main
              env:
              - name: NCCL_IB_HCA
                valueFrom: {configMapKeyRef: {name: x, key: y}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - name: pytorch
            env: [{name: NCCL_ALGO, value: Ring}]
"""
    config, got = _settings(parse_yaml, text)
    assert got == [("NCCL_DEBUG", "WARN", 15, 28, "JobSet/js/workers/init", False),
                   ("NCCL_IB_HCA", None, 19, 23, "JobSet/js/workers/main", False),
                   ("NCCL_ALGO", "Ring", 33, 26, "PyTorchJob/pt/Worker/pytorch", False)]
    replicas = {f.scope: f.value for f in config.launch if f.kind == "replicas"}
    assert replicas["JobSet/js/workers/main"] == "8" and replicas["PyTorchJob/pt/Worker/pytorch"] == "3"


def test_compose_list_and_map_forms():
    from topolint.parsers.kubernetes import parse_yaml

    text = "services:\n  a:\n    environment:\n      - NCCL_DEBUG=INFO\n      - NCCL_ALGO\n  b:\n    environment:\n      NCCL_PROTO: Simple\n"
    config, got = _settings(parse_yaml, text)
    assert config.format == "compose"
    assert got == [("NCCL_DEBUG", "INFO", 4, 9, "service:a", False), ("NCCL_ALGO", None, 5, 9, "service:a", False),
                   ("NCCL_PROTO", "Simple", 8, 7, "service:b", False)]


def test_python_launcher_forms():
    from topolint.parsers.python_launcher import parse_python

    text = ("import os\nos.environ['NCCL_ALGO'] = 'Ring'\nos.environ.setdefault('NCCL_DEBUG', 'WARN')\n"
            "os.environ.update({'NCCL_PROTO': 'LL'}, NCCL_CROSS_NIC='1')\nos.environ['NCCL_X'] = compute()\n")
    _, got = _settings(parse_python, text)
    assert got == [("NCCL_ALGO", "Ring", 2, 13, "file", False), ("NCCL_DEBUG", "WARN", 3, 24, "file", True),
                   ("NCCL_PROTO", "LL", 4, 21, "file", False), ("NCCL_CROSS_NIC", "1", 4, 41, "file", False),
                   ("NCCL_X", None, 5, 13, "file", False)]


def test_malformed_yaml_is_tl001_with_its_line(tmp_path):
    (tmp_path / "job.yaml").write_text("apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n", encoding="utf-8")
    result, findings = _findings("job.yaml", cwd=tmp_path)
    assert [(f["code"], f["line"]) for f in findings] == [("TL001", 5)]
    assert result.exit_code == 2


def test_malformed_yaml_in_a_folder_walk_is_tl001(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.yaml").write_text("a: [\n", encoding="utf-8")
    (tmp_path / "repo" / "b.sh").write_text("export NCCL_ALGO=Ring\n", encoding="utf-8")
    _, findings = _findings("repo", cwd=tmp_path)
    assert sorted(f["code"] for f in findings) == ["ENV005", "TL001"]


def test_helm_template_and_unparsable_lines_listed_with_verbose():
    result = run_cli("check", ".", "--verbose", "--format", "concise", cwd=INFRA)
    assert "charts/trainer/templates/job.yaml:1: skipped, Helm template" in result.stderr
    assert "slurm/train.sbatch:12" not in result.stderr  # $((..)) is one word now, not a skipped line
    assert "NET001 not run on config files: no interface facts: give --topology" in result.stderr
    assert "TL001" not in result.stdout


def test_config_file_without_nccl_content_is_skipped(tmp_path):
    (tmp_path / "x.sh").write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    result = run_cli("check", "x.sh", "--verbose", cwd=tmp_path)
    assert result.exit_code == 0 and "TL002" not in result.stdout
    assert "x.sh: skipped, shell file with no NCCL settings" in result.stderr


# ---- --topology ---------------------------------------------------------------------------------
def _write(tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


def test_topology_turns_env006_into_nvl003_and_net007(tmp_path):
    name = _write(tmp_path, "run.sh", "export NCCL_P2P_DISABLE=1\nexport NCCL_IB_DISABLE=1\n")
    _, plain = _findings(name, "--select", "ENV006,NVL003,NET007", cwd=tmp_path)
    assert [f["code"] for f in plain] == ["ENV006", "ENV006"]
    _, known = _findings(name, "--select", "ENV006,NVL003,NET007", "--topology", str(TOPOLOGY), cwd=tmp_path)
    assert [f["code"] for f in known] == ["NVL003", "NET007"]


def test_net007_lists_the_first_rdma_settings_and_counts_the_rest(tmp_path):
    # One evidence line per RDMA setting in each NET007 finding grew with the pairs (issue 20).
    from topolint.checks._config import RDMA_SETTINGS_LISTED

    hcas = "".join(f"export NCCL_IB_HCA=mlx5_{i}\n" for i in range(RDMA_SETTINGS_LISTED + 5))
    name = _write(tmp_path, "run.sh", "export NCCL_IB_DISABLE=1\n" + hcas)
    _, found = _findings(name, "--select", "NET007", cwd=tmp_path)
    assert [f["code"] for f in found] == ["NET007"]
    cited = [e for e in found[0]["evidence"] if "in the same scope configures RDMA" in e]
    assert len(cited) == RDMA_SETTINGS_LISTED and "NCCL_IB_HCA=mlx5_0" in cited[0]
    assert found[0]["evidence"][-1] == "... and 5 more settings in the same scope configure RDMA"


def test_topology_without_the_hardware_clears_env006(tmp_path):
    topo = TOPOLOGY.read_text(encoding="utf-8")
    single = topo.split("  <cpu numaid=\"1\"")[0] + "</system>\n"
    single = single.replace('class="0x020700"', 'class="0x020000"').replace("mlx5_0", "eth0").replace('gdr="1"/></nic>', '/></nic>')
    _write(tmp_path, "topo.xml", single.replace('<pci busid="0000:12:00.0"', '<!-- --><pci busid="0000:12:00.0"'))
    name = _write(tmp_path, "run.sh", "export NCCL_IB_DISABLE=1\n")
    _, found = _findings(name, "--select", "ENV006,NET007", "--topology", "topo.xml", cwd=tmp_path)
    assert found == []


def test_numa002_uses_the_configured_gdr_level(tmp_path):
    bad = FIXTURES / "rules" / "NUMA002" / "bad.xml"
    name = _write(tmp_path, "env.sh", "export NCCL_NET_GDR_LEVEL=PHB\n")
    _, before = _findings(str(bad), "--select", "NUMA002", cwd=tmp_path)
    _, after = _findings(name, "--select", "NUMA002", "--topology", str(bad), cwd=tmp_path)
    assert before and after == []


def test_net002_prefix_rule(tmp_path):
    name = _write(tmp_path, "a.env", "NCCL_IB_HCA=mlx5_1\n")
    _, found = _findings(name, "--select", "NET002", "--topology", str(TOPOLOGY), cwd=tmp_path)
    assert found == []
    name = _write(tmp_path, "b.env", "NCCL_IB_HCA=^mlx5\n")
    _, found = _findings(name, "--select", "NET002", "--topology", str(TOPOLOGY), cwd=tmp_path)
    assert [f["code"] for f in found] == ["NET002"] and "leaves no HCA" in found[0]["message"]


# ---- catalog ------------------------------------------------------------------------------------
@pytest.mark.skipif(not TSV.is_file(), reason="shared reference nccl-env.tsv not present")
def test_committed_catalog_equals_what_the_script_builds():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_env_catalog
    finally:
        sys.path.pop(0)
    built = build_env_catalog.render(build_env_catalog.build(TSV))
    committed = (ROOT / "topolint" / "data" / "nccl_env.json").read_text(encoding="utf-8")
    assert built == committed, "topolint/data/nccl_env.json is stale: run python scripts/build_env_catalog.py"


def test_catalog_facts():
    from topolint.model.nccl_env import check_value, lifecycle, lookup, suggest
    from topolint.model.nccl_version import NcclVersion

    assert lookup("NCCL_IB_GDR_LEVEL")["replacement"] == "NCCL_NET_GDR_LEVEL"
    assert lifecycle("NCCL_MNNVL", NcclVersion.parse("2.20.3")) is None
    assert lifecycle("NCCL_MNNVL", NcclVersion.parse("2.21.5"))[0] == "renamed"
    assert check_value("NCCL_P2P_DISABLE", "true") and check_value("NCCL_NET_GDR_LEVEL", "2") is None
    assert suggest("NCCL_SOCKET_IFNAMES") == "NCCL_SOCKET_IFNAME"


# ---- start-up -----------------------------------------------------------------------------------
def test_config_only_check_imports_neither_networkx_nor_jinja2():
    code = ("import sys; from topolint.cli import main; "
            f"main(['check', {str(FIXTURES / 'rules' / 'ENV004' / 'bad.env')!r}]); "
            "print('networkx' in sys.modules, 'jinja2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip().splitlines()[-1] == "False False", out.stdout + out.stderr
