"""Dependencies earn their place: networkx only for the graph export (an optional extra), jinja2
only where documentation is rendered from templates."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(requirements: list[str]) -> set[str]:
    return {r.split(";")[0].split(">")[0].split("=")[0].split("[")[0].strip().lower() for r in requirements}


def test_networkx_is_an_optional_extra_not_a_requirement():
    assert "networkx" not in _names(PROJECT["dependencies"])
    assert "networkx" in _names(PROJECT["optional-dependencies"]["graph"])
    assert "networkx" in _names(PROJECT["optional-dependencies"]["test"])


def test_only_the_graph_export_imports_networkx():
    importers = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "topolint").rglob("*.py")
                       if "import networkx" in p.read_text(encoding="utf-8"))
    assert importers == ["topolint/model/system.py"]


def _run_without(module: str, *args: str) -> subprocess.CompletedProcess:
    """topolint in a fresh interpreter where ``import module`` fails, as when it is not installed."""
    code = (f"import sys; sys.modules[{module!r}] = None; from topolint.cli import main; "
            f"raise SystemExit(main({list(args)!r}))")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("path", ["fixtures/samples/dgx-like-2socket-dump.xml", "fixtures/infra-repo",
                                  "fixtures/rules/TL003/bad_numa_nvlink"])
def test_checks_run_without_networkx(path):
    done = _run_without("networkx", "check", path, "--isolated", "--format", "concise", "--preview")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "Found" in done.stdout


def test_graph_export_without_networkx_says_how_to_get_it():
    code = ("import sys; sys.modules['networkx'] = None\n"
            "from topolint.inputs.collect import collect\nfrom topolint.model.system import System\n"
            "from topolint.model.nccl_version import NEWEST, NcclVersion\n"
            "node = collect(['fixtures/samples/healthy-8gpu-dump.xml']).nodes[0]\n"
            "try:\n    System(node.topologies[0], NcclVersion.parse(NEWEST)).graph\n"
            "except ImportError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "pip install 'topolint[graph]'" in done.stdout, done.stdout + done.stderr


def test_jinja2_loads_only_to_render_documentation_and_the_html_report():
    importers = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "topolint").rglob("*.py")
                       if "import jinja2" in p.read_text(encoding="utf-8"))
    assert importers == ["topolint/docs.py", "topolint/reporters/html.py"]
    done = _run_without("jinja2", "check", "fixtures/samples/dgx-like-2socket-dump.xml", "--isolated")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
