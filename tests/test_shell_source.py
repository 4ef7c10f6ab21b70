"""`source` / `.` followed inside the checked tree (fixtures/shell-source): settings of a sourced
file apply in the sourcing scope, findings point at the line in each file, cycles stop."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli

from topolint.inputs.source import SourceFile
from topolint.parsers._sourced import script_dir
from topolint.parsers.shell import parse_shell

SOURCE = FIXTURES / "shell-source"


def _check(*args):
    result = run_cli("check", "shell-source", "--isolated", "--no-cache", "--format", "json", *args, cwd=FIXTURES)
    assert "Traceback" not in result.stderr
    return result, json.loads(result.stdout)["findings"]


def test_net007_across_a_sourced_file():
    # Before: source was not followed and the RDMA setting in lib/common.sh was never seen.
    _, findings = _check()
    (net,) = [f for f in findings if f["code"] == "NET007"]
    assert (net["path"], net["line"]) == ("shell-source/train.sbatch", 10)
    assert "shell-source/lib/common.sh:2: NCCL_IB_HCA=mlx5_0,mlx5_1" in net["message"]


def test_findings_in_a_sourced_file_point_there_once_and_its_directives_apply():
    _, findings = _check()
    located = sorted((f["code"], f["path"], f["line"], f["suppressed"]) for f in findings if f["code"] != "NET007")
    assert located == [("ENV001", "shell-source/lib/tuning.sh", 1, True), ("ENV002", "shell-source/lib/tuning.sh", 2, False)]


def test_what_is_not_followed_is_listed_with_verbose():
    result, _ = _check("--verbose")
    assert "shell-source/train.sbatch:8: skipped, source $DIR/lib/missing.sh: no such file in the checked tree" in result.stderr
    assert "shell-source/train.sbatch:9: skipped, source /etc/profile: /etc/profile is outside the checked tree" in result.stderr
    assert "shell-source/lib/common.sh:3: skipped, source ${BASH_SOURCE%/*}/common.sh: shell-source/lib/common.sh " \
           "is already being read (a cycle)" in result.stderr


def test_sourced_settings_keep_their_own_path_and_the_sourcing_scope():
    source = SourceFile("shell-source/train.sbatch", (SOURCE / "train.sbatch").read_text(), real_path=SOURCE / "train.sbatch")
    config = parse_shell(source)
    assert [(s.name, s.loc.path, s.loc.line, s.scope) for s in config.settings] == [
        ("NCCL_IB_HCA", "shell-source/lib/common.sh", 2, "file"),
        ("NCCL_SOCKET_IFNAM", "shell-source/lib/tuning.sh", 1, "file"),
        ("NCCL_IB_GDR_LEVEL", "shell-source/lib/tuning.sh", 2, "file"),
        ("NCCL_NET", "shell-source/train.sbatch", 10, "file/step@10")]
    assert sorted(s.path for s in config.included) == ["shell-source/lib/common.sh", "shell-source/lib/tuning.sh"]


def test_script_folder_expressions():
    assert script_dir('$(dirname "$0")/common.sh') == ("common.sh", "script")
    assert script_dir('$(dirname "${BASH_SOURCE[0]}")/x.sh') == ("x.sh", "file")
    assert script_dir("${BASH_SOURCE%/*}/c.sh") == ("c.sh", "file")
    assert script_dir('$(cd "$(dirname "${BASH_SOURCE[0]}")" >/dev/null 2>&1 && pwd)') == ("", "file")
    assert script_dir('$(dirname "$(readlink -f "$0")")/y') == ("y", "script")
    assert script_dir("$DIR/c.sh", {"DIR": "script"}) == ("c.sh", "script")
    assert script_dir("$HOME/c.sh") is None


def test_deeply_nested_sources_stop_at_the_limit(tmp_path):
    for i in range(12):
        (tmp_path / f"s{i}.sh").write_text(f"export NCCL_NTHREADS={i}\nsource ./s{i + 1}.sh\n")
    (tmp_path / "s12.sh").write_text("export NCCL_DEBUG=WARN\n")
    config = parse_shell(SourceFile("s0.sh", (tmp_path / "s0.sh").read_text(), real_path=tmp_path / "s0.sh"))
    assert len(config.settings) == 9  # the script and 8 nested files
    assert any("more than 8 nested source commands" in s.reason for s in config.skipped)


def test_plain_source_of_a_sibling_file(tmp_path):
    # The case: `source ./common.sh` with NCCL_IB_HCA there and NCCL_NET=Socket here.
    (tmp_path / "common.sh").write_text("export NCCL_IB_HCA=mlx5_0\n")
    (tmp_path / "train.sh").write_text("source ./common.sh\nexport NCCL_NET=Socket\n")
    result = run_cli("check", "train.sh", "--isolated", "--no-cache", "--format", "json", cwd=tmp_path)
    assert [(f["code"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]] == [
        ("NET007", "train.sh", 2)]
