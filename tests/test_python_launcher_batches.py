"""Python launchers are parsed a KiB of top-level statements at a time (issue 20: CPython's ast of a
whole file is some 130 bytes per byte). What a launcher yields, and the error a broken one gets,
are those of the file parsed whole, whatever the cuts fall in."""

from __future__ import annotations

import pytest

import topolint.parsers.python_launcher as launcher
from topolint.inputs.source import InputError, SourceFile
from topolint.model.config import ConfigFile


def _whole(source: SourceFile) -> ConfigFile:
    config = ConfigFile(path=source.path, format="python")
    launcher._Visitor(config, source.text, source).body(launcher._whole(source.text, source.path).body, "file")
    return config


def _facts(config: ConfigFile) -> tuple:
    return repr(config.settings), repr(config.launch), repr(config.skipped), repr(config.unreached), config.scopes


_UNITS = [
    'os.environ["NCCL_A{i}"] = "v{i}"\n',
    'DOC{i} = """\ntext at column 0\nos.environ["NCCL_IN_STRING"] = "no"\n"""\n',
    '@decorator\ndef f{i}():\n    os.environ.setdefault("NCCL_F{i}", "1")\n',
    'if ready:\n    os.environ["NCCL_IF{i}"] = "1"\nelse:\n    os.environ["NCCL_ELSE{i}"] = "0"\n',
    'try:\n    pass\nexcept OSError:\n    os.environ["NCCL_EXC{i}"] = "1"\nfinally:\n    pass\n',
    'cmd = ("export NCCL_SH{i}=1; "\n"torchrun x.py")\n',
    'values = {{\n"NCCL_D{i}": "1",\n}}\nos.environ.update(values, NCCL_K{i}="2")\n',
    "x = 1 + \\\n2\n# a comment\n\n",
    'os.environ["NCCL_R{i}"] = "\\u00e9t\\u00e9"  # été\r\n',
]


def _launcher(count: int, tail: str = "") -> str:
    return "import os\n" + "".join(_UNITS[i % len(_UNITS)].format(i=i) for i in range(count)) + tail


@pytest.mark.parametrize("batch", [40, 200, 1024])
def test_batches_read_what_the_whole_file_says(batch, monkeypatch):
    monkeypatch.setattr(launcher, "_BATCH", batch)
    source = SourceFile(path="launch.py", text=_launcher(300))
    streamed = launcher._streamed(source)
    assert streamed is not None
    assert _facts(streamed) == _facts(_whole(source))
    assert _facts(launcher.parse_python(source)) == _facts(streamed)


def test_a_future_import_past_the_first_batch_reads_the_file_whole(monkeypatch):
    monkeypatch.setattr(launcher, "_BATCH", 64)
    source = SourceFile(path="launch.py", text=_launcher(100, "from __future__ import annotations\n"))
    assert launcher._streamed(source) is None
    assert _facts(launcher.parse_python(source)) == _facts(_whole(source))


@pytest.mark.parametrize("tail", ["def broken(:\n", "x = (\n", "  indented = 1\n"])
def test_an_error_late_in_the_file_is_the_whole_parse_s(tail, monkeypatch):
    monkeypatch.setattr(launcher, "_BATCH", 64)
    source = SourceFile(path="launch.py", text=_launcher(100, tail))
    assert launcher._streamed(source) is None
    with pytest.raises(InputError) as streamed:
        launcher.parse_python(source)
    with pytest.raises(InputError) as whole:
        launcher._whole(source.text, source.path)
    assert str(streamed.value) == str(whole.value)
