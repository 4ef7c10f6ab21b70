"""The built wheel works on its own: rule definitions ship inside it (topolint/_rules/) and the
console script runs from a directory outside the repository.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile

import pytest
from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("topolint-*.whl")
    return built


def test_wheel_contains_the_rules(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "topolint/_rules/NUMA001.toml" in names
    shipped = {n.split("/")[-1] for n in names if n.startswith("topolint/_rules/") and n.count("/") == 2}
    assert shipped == {p.name for p in (ROOT / "rules").glob("*.toml")}
    profiles = {n.split("/")[-1] for n in names if n.startswith("topolint/_rules/profiles/")}
    assert profiles == {p.name for p in (ROOT / "rules" / "profiles").glob("*.toml")}  # docs/profiles.md
    assert "topolint/cli.py" in names
    assert "topolint/templates/report.html.j2" in names  # the HTML report's template (reporters/html.py)
    assert not any(n.startswith(("tests/", "fixtures/")) for n in names)


def test_installed_wheel_runs_outside_the_repository(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # The dependencies come from the test interpreter's own site-packages (which may itself be a
    # venv's, where --system-site-packages would see the base interpreter's instead), named in a
    # .pth file: .pth files inside a directory added that way are not run, so the editable
    # checkout's finder does not shadow the wheel.
    site_dirs = [p for p in sys.path if p.endswith("site-packages")]
    (purelib,) = (env_dir / "lib").glob("python*/site-packages")
    (purelib / "test-deps.pth").write_text("\n".join(site_dirs) + "\n")
    proc = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--force-reinstall", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(FIXTURES / "rules" / "NUMA001" / "bad.xml", work / "bad.xml")
    proc = subprocess.run([str(env_dir / "bin" / "topolint"), "check", "bad.xml", "--format", "concise"],
                          cwd=work, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "bad.xml:9:7: NUMA001 [error]" in proc.stdout
    where = subprocess.run([str(python), "-c", "import topolint, pathlib; print(pathlib.Path(topolint.__file__).parent)"],
                           cwd=work, capture_output=True, text=True, timeout=60)
    installed = where.stdout.strip()
    assert str(env_dir) in installed, f"the venv imported {installed}, not the wheel"
    rules = subprocess.run([str(env_dir / "bin" / "topolint"), "rules"], cwd=work, capture_output=True,
                           text=True, timeout=60)
    assert rules.returncode == 0 and "NUMA001" in rules.stdout
    html = subprocess.run([str(env_dir / "bin" / "topolint"), "check", "bad.xml", "--format", "html", "-o", "r.html"],
                          cwd=work, capture_output=True, text=True, timeout=120)
    assert html.returncode == 1, html.stderr
    assert "<svg" in (work / "r.html").read_text(encoding="utf-8")  # the template shipped in the wheel
