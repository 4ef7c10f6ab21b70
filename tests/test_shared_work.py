"""Work shared across the nodes of a cluster (benchmarks/scale.py) must give each node the answer
it would get alone: NCCL's load (TOPO001) and the noqa pre-check of the suppression pass."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from topolint.engine.suppression import _has_noqa
from topolint.inputs.source import SourceFile
from topolint.model import nccl_graph
from topolint.model.nccl_graph import NcclSystem, TopologyRejected, check_loads
from topolint.model.nccl_version import NcclVersion
from topolint.parsers.nccl_topo_xml import parse_topology

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = [NcclVersion.parse(v) for v in ("2.18.1", "2.26.2", "2.30.7")]
XML_FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.xml") if "<system" in p.read_text(errors="replace"))


def _topology(text: str, path: str = "topo.xml"):
    return parse_topology(SourceFile(path, text))


def _outcome(call) -> tuple | None:
    try:
        call()
    except TopologyRejected as error:
        return error.message, error.line, error.undefined
    return None


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch):
    monkeypatch.setattr(nccl_graph, "_ACCEPTED", set())


class _Graph:
    """Stands in for a graph NCCL built: check_loads releases it once it has the answer."""

    misreads: list = []  # nothing read past its end

    def release(self) -> None:
        pass


def _with_names(text: str, name: str) -> str:
    return re.sub(r'(\sname=")[^"]*(")', lambda m: m.group(1) + name + m.group(2), text)


@pytest.mark.parametrize("version", VERSIONS, ids=str)
def test_check_loads_answers_as_a_fresh_load_for_every_fixture(version):
    assert len(XML_FIXTURES) > 20
    for path in XML_FIXTURES:
        try:
            topology = _topology(path.read_text(encoding="utf-8-sig"), str(path))
        except Exception:  # noqa: BLE001 - a fixture lxml refuses is TL001, never loaded by NCCL's model
            continue
        expected = _outcome(lambda: NcclSystem(topology, version))
        assert _outcome(lambda: check_loads(topology, version)) == expected, path
        assert _outcome(lambda: check_loads(topology, version)) == expected, path  # from the memo


def test_a_node_differing_only_in_names_shares_the_acceptance(monkeypatch):
    text = (ROOT / "fixtures/rules/TOPO001/good.xml").read_text(encoding="utf-8")
    version = VERSIONS[-1]
    check_loads(_topology(text), version)
    built = []
    monkeypatch.setattr(nccl_graph, "NcclSystem", lambda *a: built.append(a) or _Graph())
    renamed = _with_names(text, "mlx5_9")
    assert renamed != text
    check_loads(_topology(renamed), version)
    assert built == []  # answered by the first node's load
    check_loads(_topology(_with_names(text, "mlx5_10")), version)  # another length: loaded again
    assert len(built) == 1


def test_which_host_hashes_and_guids_are_equal_is_never_shared(monkeypatch):
    """topo.cc ``ncclGetSystemId``: CPUs with one host hash (strtoull base 16) are one system, so
    a file whose two CPUs share a hash is not the file whose CPUs differ, whatever the digits."""
    cpu = ('<cpu host_hash="{}" numaid="{}" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143"/>')

    def two_cpus(first: str, second: str):
        return _topology(f'<system version="1">{cpu.format(first, 0)}{cpu.format(second, 1)}</system>\n')

    version = VERSIONS[-1]
    key = nccl_graph.renamed_digest
    assert key(two_cpus("0x11", "0x11"), version) == key(two_cpus("0x22", "0x22"), version)
    assert key(two_cpus("0x11", "0x22"), version) == key(two_cpus("0x33", "0x44"), version)
    assert key(two_cpus("0x11", "0x11"), version) != key(two_cpus("0x11", "0x22"), version)
    assert key(two_cpus("0x11", "11"), version) == key(two_cpus("0x22", "22"), version)  # one value as NCCL reads it
    assert key(two_cpus("0x11", "11"), version) != key(two_cpus("0x11", "12"), version)


@pytest.mark.parametrize("version", VERSIONS, ids=str)
def test_an_over_long_name_is_refused_after_a_short_one_was_accepted(version):
    text = (ROOT / "fixtures/rules/TOPO001/good.xml").read_text(encoding="utf-8")
    assert 'name="' in text
    check_loads(_topology(text), version)
    long = _topology(_with_names(text, "a" * 300))
    expected = _outcome(lambda: NcclSystem(long, version))
    assert expected is not None  # NCCL's reader refuses a value over its 255-byte buffer
    assert _outcome(lambda: check_loads(long, version)) == expected


def test_a_refusal_is_never_shared():
    # lxml reads ' name="ab"' as text; NCCL's reader stops on it: nothing is remembered.
    text = ('<system version="1"><cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">'
            ' name="ab"</cpu></system>\n')
    topology = _topology(text)
    expected = _outcome(lambda: NcclSystem(topology, VERSIONS[-1]))
    assert expected is not None
    assert _outcome(lambda: check_loads(topology, VERSIONS[-1])) == expected
    assert nccl_graph._ACCEPTED == set()


@pytest.mark.parametrize("text, found", [
    ("", False), ("# NoQa: NET001", True), ("#nOQA", True), ("no qa", False), ("#noq\na", False),
    ("K\u212a #\u2003noqa", True), ("#\u0130\u017f\u212a", False), ("x" * 100000 + "#  NOQA", True),
    ("noqa without a hash", False),
])
def test_noqa_precheck_finds_what_the_directive_pattern_can(text, found):
    from topolint.engine.suppression import _NOQA

    assert _has_noqa(text) is found
    assert (re.search(r"#\s*noqa", text, re.I) is not None) is found
    if _NOQA.search(text):
        assert _has_noqa(text)


def test_folders_resolve_as_realpath_does(tmp_path):
    from topolint.inputs.collect import _real_folder

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "relative").symlink_to("a/b")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    deep = str(tmp_path) + "/x" * 80  # past the depth the resolution recurses to
    for folder in [tmp_path, tmp_path / "a", tmp_path / "a" / "b", tmp_path / "link", tmp_path / "link" / "b",
                   tmp_path / "relative", tmp_path / "dangling", tmp_path / "missing" / "x", Path("/"), deep]:
        assert _real_folder(str(folder)) == os.path.realpath(folder), folder


def test_a_file_is_read_whole_and_bounded(tmp_path, monkeypatch):
    from topolint.inputs import source

    path = tmp_path / "dmesg.txt"
    text = "".join(f"[    0.{i:06d}] line {i}\n" for i in range(20000))
    path.write_text(text, encoding="utf-8")
    assert source.read_source("dmesg.txt", path).text == text
    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 1000)
    with pytest.raises(source.InputError, match="over the 1000-byte limit"):
        source.read_source("dmesg.txt", path)


def test_a_file_longer_than_its_size_said_is_read_to_its_end(tmp_path, monkeypatch):
    from topolint.inputs import source

    path = tmp_path / "lspci.txt"
    text = "x" * 200_000 + "\n"
    path.write_text(text, encoding="utf-8")
    real_fstat = os.fstat

    def stale_size(fd):  # as if the file grew after it was opened
        fields = list(real_fstat(fd))
        fields[6] = 10  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(source.os, "fstat", stale_size)
    assert source.read_source("lspci.txt", path).text == text


def test_a_cluster_of_distinct_nodes_keeps_a_bounded_number_of_nccl_graphs():
    """A check run turns the cycle collector off (cli.py) and NCCL's graphs are cycles: graphs
    of distinct nodes must be freed by reference counting, the path cache bounded (a 2,000-node
    cluster of distinct dumps peaked at 1.6 GB before)."""
    import gc
    import tracemalloc

    from topolint.model import system as system_module
    from topolint.model.system import System

    text = (ROOT / "fixtures/rules/TOPO001/good.xml").read_text(encoding="utf-8")
    assert 'device="0xc030"' in text
    version = VERSIONS[-1]

    def node(i: int):  # a distinct file per node: NCCL reads the bridge's device id
        topology = _topology(text.replace('device="0xc030"', f'device="0x{0xa000 + i:04x}"', 1))
        system = System(topology, version)
        assert system.gpu_net_paths and system.raw_paths
        check_loads(topology, version)

    collecting = gc.isenabled()
    gc.disable()
    tracemalloc.start()
    try:
        for i in range(60):
            node(i)
        after_60 = tracemalloc.get_traced_memory()[0]
        for i in range(60, 300):
            node(i)
        after_300 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        if collecting:
            gc.enable()
    assert len(system_module._PATHS) <= system_module._PATHS_LIMIT
    assert after_300 - after_60 < (after_60 / 60) * 240 / 4  # far less than linear in nodes
