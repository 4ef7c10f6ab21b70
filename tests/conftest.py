"""Shared test helpers: run the CLI in-process, read fixtures and the shared corpus."""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from topolint.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
CORPUS = ROOT.parent / "shared" / "corpus"
UPDATE = os.environ.get("TOPOLINT_UPDATE_SNAPSHOTS") == "1"
# Tests check what the rules compute, not what a result cache remembers (tests/test_cache.py
# turns it back on), and must not leave .topolint_cache folders behind.
os.environ["TOPOLINT_NO_CACHE"] = "1"


def stand_in(bin_dir: Path, name: str, body: str) -> Path:
    """An executable ``bin_dir/name``: a Python script with json, os, subprocess, sys and time
    imported, then ``body`` (stand-ins for the tools collect and health run)."""
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport json, os, subprocess, sys, time\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def snapshot(self) -> str:
        return f"exit code: {self.exit_code}\n--- stdout\n{self.stdout}--- stderr\n{self.stderr}"


def run_cli(*args: str, cwd: Path = ROOT) -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse usage errors
                code = int(exc.code or 0)
    finally:
        os.chdir(previous)
    return CliResult(code, out.getvalue(), err.getvalue())


def assert_snapshot(name: str, actual: str) -> None:
    """Compare with tests/snapshots/NAME; TOPOLINT_UPDATE_SNAPSHOTS=1 rewrites it."""
    path = SNAPSHOTS / name
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"snapshot {name} was missing and has been written; review it and rerun")
    assert actual == path.read_text(encoding="utf-8"), f"snapshot {name} differs (TOPOLINT_UPDATE_SNAPSHOTS=1 to accept)"


def load_benchmark(name: str):
    """A script of benchmarks/ as a module (its generators make the test clusters and fleets)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (it sits beside the checkout in CI)")
    return CORPUS
