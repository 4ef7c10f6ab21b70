"""Answers the rules stage remembers (checks/_memo.py, MatrixContext, Pattern, numbers.remembered,
NcclVersion.rank, System.nearest_nets, renamed_text) must be the answers computed afresh: a node
checked after others gets what it would get alone, and a run gives the same findings twice."""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from topolint.checks import _memo
from topolint.checks._matrix import MatrixContext
from topolint.checks._memo import across_nodes, per_node
from topolint.checks._nvlink import Pattern, all_to_all, matrix_all_to_all, matrix_pattern
from topolint.engine.rule import load_rules
from topolint.engine.runner import RunOptions, run
from topolint.inputs.collect import collect
from topolint.model import numbers
from topolint.model.nccl_graph import _RENAMEABLE, renamed_text
from topolint.model.nccl_version import _ORDER_HEAD, ALIASES, NcclVersion
from topolint.model.numbers import strtoull

ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "fixtures" / "rules" / "NUMA006" / "bad.txt"
VERSIONS = [NcclVersion.parse(v) for v in ("2.12.12", "2.18.1", "2.26.2", "2.30.7")]


# ---- per node and across nodes -------------------------------------------------------------------
def test_per_node_answers_once_per_question_and_source():
    shared, calls = {}, Counter()
    a, b = object(), object()

    def answer(name):
        calls[name] += 1
        return [name]

    first = per_node(shared, "q", a, lambda: answer("a"))
    assert per_node(shared, "q", a, lambda: answer("again")) is first
    assert per_node(shared, "q", b, lambda: answer("b")) == ["b"]
    assert per_node(shared, "other", a, lambda: answer("other")) == ["other"]
    assert calls == {"a": 1, "b": 1, "other": 1}


def test_across_nodes_shares_equal_content_and_keeps_the_latest_few(monkeypatch):
    monkeypatch.setattr(_memo, "_ACROSS", type(_memo._ACROSS)())
    first = across_nodes("q", ("cells", ("NV18",)), dict)
    assert across_nodes("q", ("cells", ("NV18",)), lambda: pytest.fail("equal content asked again")) is first
    assert across_nodes("q", ("cells", ("NV12",)), dict) is not first
    for i in range(3 * _memo._ACROSS_LIMIT):
        across_nodes("q", (i,), dict)
    assert len(_memo._ACROSS) == _memo._ACROSS_LIMIT


# ---- matrices ------------------------------------------------------------------------------------
def _node(folder: Path, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nvidia-smi-topo.txt").write_text(text, encoding="utf-8")
    return collect([str(folder)]).nodes[0]


def _fresh(context: MatrixContext) -> MatrixContext:
    """The same matrix with answers of its own (what a node checked alone derives)."""
    fresh = MatrixContext.__new__(MatrixContext)
    fresh.__dict__.update(context.__dict__)
    fresh._memo, fresh._numa, fresh._paths = {}, {}, {}
    return fresh


def _answers(mc: MatrixContext, version) -> list:
    view = mc.view
    return ([mc.numa_node(label) for label in view.matrix.columns]
            + [mc.path(g, n) for g in view.gpus for n in view.nics]
            + [mc.nearest_nics(g, version) for g in view.gpus]
            + [mc.nccl(version) and mc.nccl(version).relay(g, n) for g in range(len(view.gpus))
               for n in range(len(view.nics))]
            + [mc.pxn_proxy(g, version) for g in view.gpus]
            + [mc.best_nvlink(g) for g in view.gpus])


@pytest.mark.parametrize("version", VERSIONS, ids=str)
def test_nodes_with_one_matrix_share_answers_that_each_would_derive_alone(tmp_path, version):
    text = MATRIX.read_text(encoding="utf-8")
    one = MatrixContext(node := _node(tmp_path / "a", text), node.matrices[0])
    other = MatrixContext(node := _node(tmp_path / "b", text), node.matrices[0])
    assert other._memo is one._memo and other.content == one.content
    assert _answers(one, version) == _answers(_fresh(one), version)
    assert _answers(other, version) == _answers(_fresh(other), version)


def test_a_matrix_that_differs_in_one_cell_has_answers_of_its_own(tmp_path):
    text = MATRIX.read_text(encoding="utf-8")
    gpu_row = next(line for line in text.splitlines() if line.startswith("GPU0"))
    changed = text.replace(gpu_row, gpu_row.replace("PXB ", "SYS ", 1))
    assert changed != text
    one = MatrixContext(node := _node(tmp_path / "a", text), node.matrices[0])
    other = MatrixContext(node := _node(tmp_path / "b", changed), node.matrices[0])
    assert other._memo is not one._memo
    version = VERSIONS[-1]
    assert _answers(other, version) == _answers(_fresh(other), version)
    assert matrix_all_to_all(other) == all_to_all(matrix_pattern(other.view))


def test_a_matrix_too_large_to_share_keeps_its_answers(tmp_path, monkeypatch):
    from topolint.checks import _matrix

    monkeypatch.setattr(_matrix, "SHARED_CELLS", 1)
    text = MATRIX.read_text(encoding="utf-8")
    one = MatrixContext(node := _node(tmp_path / "a", text), node.matrices[0])
    other = MatrixContext(node := _node(tmp_path / "b", text), node.matrices[0])
    assert one.content is None and other._memo is not one._memo
    assert _answers(other, VERSIONS[-1]) == _answers(_fresh(other), VERSIONS[-1])
    assert matrix_all_to_all(other) == all_to_all(matrix_pattern(other.view))


# ---- NVLink patterns ---------------------------------------------------------------------------
def _reference_all_to_all(p: Pattern):
    """all_to_all as it was written before its tables (faba356), asking count/peers each time."""
    def count(a, b):
        return p.pairs.get(frozenset((a, b)), 0)

    def peers(gpu):
        return [g for g in p.gpus if g != gpu and count(gpu, g) > 0]

    if sum(1 for g in p.gpus if p.switch.get(g)) >= 2:
        linked = [g for g in p.gpus if p.switch.get(g)]
        mode = Counter(p.switch[g] for g in linked).most_common(1)[0][0]
        lacking = {g: [] for g in p.gpus if not p.switch.get(g) and not peers(g)}
        low = {g: p.switch[g] for g in linked if p.switch[g] < mode}
        return ("switch", linked, mode, lacking, low)
    members = [g for g in p.gpus if peers(g)]
    if len(members) < 3:
        return None
    full = [g for g in members if len(peers(g)) == len(members) - 1]
    if 2 * len(full) < len(members):
        return None
    counts = Counter(count(a, b) for i, a in enumerate(members) for b in members[i + 1:] if count(a, b))
    mode = counts.most_common(1)[0][0]
    lacking = {}
    outside = [g for g in p.gpus if g not in members]
    if outside and len(full) == len(members):
        for g in outside:
            lacking[g] = list(members)
    for g in members:
        missing = [m for m in members if m != g and not count(g, m)]
        if missing:
            lacking[g] = missing
    low = {}
    for g in members:
        below = [count(g, m) for m in members if m != g and 0 < count(g, m) < mode]
        if below:
            low[g] = min(below)
    return ("pairs", members, mode, lacking, low)


def _random_pattern(rng: random.Random) -> Pattern:
    gpus = [f"g{i}" for i in range(rng.randint(0, 9))]
    if gpus and rng.random() < 0.2:
        gpus.append(rng.choice(gpus))  # a repeated bus id (TOPO003's business, still patterned)
    pattern = Pattern(gpus=gpus)
    density = rng.random()
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            if a != b and rng.random() < density:
                pattern.pairs[frozenset((a, b))] = rng.choice((2, 4, 12, 18, 18, 18))
    if rng.random() < 0.3:
        for g in gpus:
            if rng.random() < 0.8:
                pattern.switch[g] = rng.choice((6, 12, 18, 18))
    return pattern


def test_all_to_all_answers_as_the_question_by_question_version():
    rng = random.Random(9)
    for _ in range(3000):
        pattern = _random_pattern(rng)
        found = all_to_all(pattern)
        expected = _reference_all_to_all(pattern)
        got = None if found is None else (found.kind, found.members, found.links, found.lacking, found.low)
        assert got == expected, pattern
        for a in pattern.gpus:
            assert pattern.peers(a) == [g for g in pattern.gpus if g != a and pattern.pairs.get(frozenset((a, g)), 0)]
            for b in pattern.gpus:
                assert pattern.count(a, b) == pattern.pairs.get(frozenset((a, b)), 0)


def test_a_pattern_filled_in_after_a_question_answers_from_all_its_pairs():
    pattern = Pattern(gpus=["a", "b", "c"])
    pattern.pairs[frozenset(("a", "b"))] = 18
    assert pattern.peers("c") == []
    pattern.pairs[frozenset(("a", "c"))] = 12
    assert pattern.peers("c") == ["a"] and pattern.count("c", "a") == 12


# ---- remembered number reads ---------------------------------------------------------------------
@pytest.mark.parametrize("read", [numbers.decimal, numbers.hex_int, numbers.cpulist, numbers.cpumask])
def test_remembered_reads_answer_as_the_read_itself(read):
    texts = [None, "", " 7 ", "0x1f", "ff,ffffffff", "0-3,8-11", "12abc", "-1", "00000000,ffffffff",
             "9" * 30, "1," * 400, "\u0661", "0-100000000"]
    for text in texts * 2:  # the second round is answered from the table
        assert read(text) == read.__wrapped__(text)
    assert all(key is None or len(key) <= numbers.MEMO_TEXT for key in read.cache)


def test_remembered_table_stays_bounded():
    for i in range(numbers.MEMO_ENTRIES + 50):
        assert numbers.decimal(str(i)) == i
    assert 0 < len(numbers.decimal.cache) <= numbers.MEMO_ENTRIES


def test_cpu_set_intersections_are_the_merged_intervals():
    rng = random.Random(5)
    sets = [numbers.CpuSet.of((a, a + rng.randint(0, 6)) for a in rng.sample(range(200), rng.randint(0, 12)))
            for _ in range(60)]
    sets.append(numbers.CpuSet.of((2 * i, 2 * i) for i in range(numbers.MEMO_INTERVALS + 5)))  # not remembered
    for a in sets:
        for b in sets:
            expected = numbers.CpuSet.of((x, x) for x in range(400) if x in a and x in b)
            assert a & b == expected == a._intersection(b)
            assert a.issubset(b) == all(x in b for x in range(400) if x in a)


def test_strtol_family_remembers_each_base_apart():
    assert numbers.strtol("010") == (8, True)
    assert numbers.strtol("010", 10) == (10, True)
    assert strtoull("ff", 16) == (255, True) and numbers.strtol("ff") == (0, False)


# ---- NCCL version ------------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS, ids=str)
def test_rank_is_remembered_without_changing_the_version_value(version):
    for name in (*_ORDER_HEAD, *ALIASES):
        assert version.rank(name) == version._rank(name) == version.rank(name)
    twin = NcclVersion(version.major, version.minor, version.patch)
    assert twin == version and hash(twin) == hash(version) and repr(twin) == repr(version)
    with pytest.raises(ValueError):
        version.rank("FOO")


# ---- the renamed digest ----------------------------------------------------------------------------
def _renamed_by_regex(text: str) -> str:
    seen: dict = {}

    def stand_in(match: re.Match) -> str:
        attribute, value = match.group(2), match.group(3)
        identity = (attribute, value) if attribute == "name" else ("hex", strtoull(value, 16)[0])
        return f"{match.group(1)}#{seen.setdefault(identity, len(seen))}#{len(value)}"

    return _RENAMEABLE.sub(stand_in, text)


def test_renamed_text_is_the_regex_substitution():
    xml = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in (ROOT / "fixtures").rglob("*.xml")]
    assert len(xml) > 20
    rng = random.Random(3)
    pieces = ['name="', 'guid="', 'host_hash="', ' ', '\t', '\n', '\xa0', '\u2003', '"', 'a', '0x1F', ':', '.',
              '_', '=', 'x', '<', '>', 'hostname="', '#', '-']
    texts = xml + ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    for text in texts:
        assert renamed_text(text) == _renamed_by_regex(text), text


def test_renamed_text_matches_the_regex_on_the_corpus(corpus):
    files = [p for p in corpus.rglob("*.xml") if p.is_file()]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        assert renamed_text(text) == _renamed_by_regex(text), path


# ---- whole runs ------------------------------------------------------------------------------------
def _cold(monkeypatch) -> None:
    """Forget what earlier nodes left in the tables shared across nodes."""
    from topolint.model import nccl_graph, system

    monkeypatch.setattr(_memo, "_ACROSS", type(_memo._ACROSS)())
    monkeypatch.setattr(system, "_PATHS", type(system._PATHS)())
    monkeypatch.setattr(nccl_graph, "_DIGESTS", type(nccl_graph._DIGESTS)())
    monkeypatch.setattr(nccl_graph, "_ACCEPTED", set())


def _by_node(collection) -> dict[str, list]:
    """Each node's findings from its own rules (the cluster stage compares nodes: not a node alone)."""
    from topolint.checks import check_needs
    from topolint.engine.runner import is_cluster_check

    rules = [r for r in load_rules() if r.check == "inputs" or not is_cluster_check(check_needs(r.check) or ())]
    result = run(rules, collection, RunOptions(nccl_version=NcclVersion.parse("2.30.7")))
    assert not result.internal_errors
    found: dict[str, list] = {}
    for finding in result.findings:
        found.setdefault(finding.node, []).append(dataclasses.asdict(finding))
    return found


def test_a_node_checked_after_others_gets_what_it_gets_alone(tmp_path, monkeypatch):
    """Copies of rule fixtures and a healthy dump, two of each: the answers shared across nodes
    must not carry one node's facts into another's findings, nor change with the order."""
    sources = [ROOT / "fixtures" / "rules" / "NUMA006" / "bad.txt", ROOT / "fixtures" / "rules" / "NVL001" / "bad_pair.txt",
               ROOT / "fixtures" / "rules" / "NVL001" / "bad_dump_no_nvswitch_link.xml",
               ROOT / "fixtures" / "samples" / "healthy-8gpu-dump.xml"]
    alone: dict[str, list] = {}
    for i, source in enumerate(sources * 2):
        folder = tmp_path / f"node{i}"
        folder.mkdir()
        shutil.copy(source, folder / source.name)
        _cold(monkeypatch)
        alone.update(_by_node(collect([str(folder)])))
    assert len(alone) >= 4  # most of the nodes have findings
    _cold(monkeypatch)
    assert _by_node(collect([str(tmp_path)])) == alone
    assert _by_node(collect([str(tmp_path)])) == alone  # again, every table warm


def test_values_keys_hash_as_tuples_and_leave_their_hash_behind_when_pickled():
    import pickle

    from topolint.model.values import Values

    key = Values(("2.30.7", (("0000:17:00.0", "gpu"),), b"digest"))
    assert hash(key) == hash(tuple(key)) and {tuple(key): 1}[key] == 1
    copy = pickle.loads(pickle.dumps(key))
    assert copy == key and type(copy) is Values and "_hash" not in copy.__dict__
