"""Differential test: topolint's port of NCCL's graph code (model/nccl_graph.py, nccl_xml.py)
against answers of NCCL's own code, for every NCCL tag and environment set in the answers.

The answers (tests/oracle/answers.json.gz) were computed by NCCL's src/graph/xml.cc, topo.cc and
paths.cc built host-only per release tag, outside this repository (docs/nccl-fidelity.md says
how). Generated topologies are rebuilt from their seed and index (tests/oracle/generate.py) and
must hash as they did; fixtures are read from the repository, corpus files through the
``corpus`` fixture. By default every tag and env set runs on a fixed stratified sample (every
twentieth generated topology, every fixture and corpus file) and on NCCL's refusals of the first
generated topology that gives each shape of message; TOPOLINT_ORACLE_FULL=1 runs all of them.
Refusals are compared by stage and WARN text (docs/nccl-fidelity.md "NCCL's refusal text"),
TOPO001's quote of that text on every tag, and the PXN relays of the matrices the answer
topologies show (``nvidia-smi topo -m``, checks/_matrix.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "oracle"))

from compare import differences, env_of, load_answers, matrix_of, model_answer, version_of  # noqa: E402
from generate import generate  # noqa: E402

from topolint.model.nccl_version import BEHAVIOURS, NcclVersion  # noqa: E402

ANSWERS = load_answers()
TAGS = sorted(ANSWERS["tags"], key=lambda t: NcclVersion.parse(t))
FULL = os.environ.get("TOPOLINT_ORACLE_FULL") == "1"

# Differences the test names instead of failing on. "duplicate_gpu" is a known gap of the port
# (docs/nccl-fidelity.md), bounded per tag; "read_past" lists the refusals whose text is kept
# different, file by file. A crash of NCCL's code (stage "crash" in the answers: a file without
# <system> before 2.30.7, findLocalCpu recursing forever before 2.26, ncclTopoSort recursing
# over stale link slots) must be a crash of the port too, never a refusal.
NAMED = {
    "duplicate_gpu": "two GPUs with one bus id (TOPO005 reports the file as an error). Before 2.30.7 both GPU "
                     "nodes get that id, so paths.cc getPath gives them one path slot and NCCL's paths between "
                     "them are what calloc or the previous search left there (2.18 to 2.21 differ from the "
                     "port on one fixture); the port reproduces 2.30.7's own ids (ncclTopoAddGpuSub)",
    "read_past": "ncclTopoSort (src/graph/topo.cc) looks for the link up the tree past the node's last link "
                 "slot, into the memory after its link array: what it finds there depends on the build's "
                 "struct layout, and the answers show both outcomes for one file (gen-8-52 and gen-8-942 crash "
                 "on some tags and fail \"Failed to find reverse path\" on others). The port reports the read "
                 "as a crash (undefined behaviour) instead of guessing NCCL's text",
}
KNOWN_GAP_LIMIT = {"duplicate_gpu": 1}  # topologies per tag: a growing gap fails
# The refusals kept different ("read_past"), as (file, NCCL's text): a new one fails.
KEPT_DIFFERENT = {
    ("gen-8-417.xml", "Failed to find reverse path from remNode 1/20000 nlinks 1 to node 3/0"),
    ("gen-8-52.xml", "Failed to find reverse path from remNode 1/20000 nlinks 2 to node 3/0"),
    ("gen-8-942.xml", "Failed to find reverse path from remNode 1/2e000 nlinks 3 to node 3/1"),
    ("gen-8-942.xml", "Failed to find reverse path from remNode 1/17000 nlinks 1 to node 3/0"),
}
# Answers whose refusal has no WARN text: ncclTopoFlattenBcmSwitches (src/graph/topo.cc) returns
# ncclTopoIdToIndex's ncclInternalError for a sub-switch linked twice (a <pcilink> to it too), and
# ncclTopoIdToIndex (src/graph/topo.h) warns about nothing. They compare as the empty text (the
# port gives "" and says why in TopologyRejected.detail); a new one fails.
EMPTY_MESSAGE = {"gen-8-236.xml", "gen-8-499.xml", "gen-8-795.xml", "gen-8-950.xml"}


def _signature(version: NcclVersion) -> tuple:
    """Versions with the same behaviour rows get the same answer from the port: compute once."""
    return tuple(repr(version.behaviour(name)) for name in dict.fromkeys(b.name for b in BEHAVIOURS)) + (
        version.max_xml_nodes, version.max_xml_children)


def _in_sample(entry: dict) -> bool:
    return FULL or entry["kind"] != "generated" or entry["index"] % 20 == 0


def _message_shape(answer: dict) -> tuple:
    return answer["stage"], re.sub(r"\b[0-9a-f]+\b", "N", answer["message"])


def _refusal_sample() -> set[str]:
    """Generated topologies outside the sample whose refusals are compared too: the first that
    gives each shape of NCCL's message (numbers and ids aside) and those named above."""
    chosen, shapes = set(), set()
    named = {name for name, _ in KEPT_DIFFERENT} | EMPTY_MESSAGE
    entries = sorted(((e["index"], d) for d, e in ANSWERS["topologies"].items() if e["kind"] == "generated"))
    for index, digest in entries:
        if _in_sample(ANSWERS["topologies"][digest]):
            continue
        answers = [ANSWERS["distinct"][a] for envs in ANSWERS["answers"][digest].values() for a in envs.values()]
        new = {_message_shape(a) for a in answers if not a["accepted"]} - shapes
        if new or f"gen-8-{index}.xml" in named:
            chosen.add(digest)
            shapes |= new
    return chosen


REFUSAL_SAMPLE = _refusal_sample()


def _text(digest: str, entry: dict, corpus_dir: Path | None) -> str | None:
    if entry["kind"] == "generated":
        text, _ = generate(entry["seed"], entry["index"])
    elif entry["kind"] == "fixture":
        text = (ROOT / entry["path"]).read_bytes().decode("utf-8", errors="surrogateescape")
    else:
        if corpus_dir is None:
            return None
        path = corpus_dir / entry["path"].split("corpus/", 1)[1]
        if not path.is_file():
            return None
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    raw = text.encode("utf-8", errors="surrogateescape")
    assert hashlib.sha256(raw).hexdigest() == digest, f"{entry} changed since the answers were computed"
    return text


_MODEL: dict[tuple, dict] = {}
_MATRIX: dict[tuple, str | None] = {}  # the matrix a default-environment load shows (compare.matrix_of)


def _model(digest: str, path: str, text: str, version: NcclVersion, env_key: str) -> dict:
    key = (digest, _signature(version), env_key)
    if key not in _MODEL:
        bom = text.startswith("\ufeff")

        def keep_matrix(system):
            if env_key == "default" and _matrix_candidate(text):
                _MATRIX[key[:2]] = matrix_of(system)

        _MODEL[key] = model_answer(text[1:] if bom else text, path, version, env_of(env_key), bom=bom,
                                   then=keep_matrix)
    return _MODEL[key]


@pytest.fixture(scope="module")
def corpus_dir():
    here = ROOT.parent / "shared" / "corpus"
    return here if here.is_dir() else None


def test_answers_cover_the_issue_minimum():
    minor = {NcclVersion.parse(t).minor for t in TAGS}
    assert {10, 11, 12, 13, 14, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30} <= minor
    assert {"v2.12.10-1", "v2.12.12-1", "v2.18.1-1", "v2.18.5-1", "v2.27.3-1", "v2.27.5-1", "v2.27.7-1",
            "v2.30.3-1", "v2.30.7-1"} <= set(TAGS)
    generated = [e for e in ANSWERS["topologies"].values() if e["kind"] == "generated"]
    assert len(generated) >= 990 and len(ANSWERS["topologies"]) >= 1000  # 1000 generated, 2 pairs hash alike
    assert {e["kind"] for e in ANSWERS["topologies"].values()} == {"generated", "fixture", "corpus"}


def test_generator_is_stable():
    """Same seed, same bytes (the answers are keyed by hash)."""
    entries = [(d, e) for d, e in ANSWERS["topologies"].items() if e["kind"] == "generated"][:50]
    for digest, entry in entries:
        text, _ = generate(entry["seed"], entry["index"])
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == digest


@pytest.mark.parametrize("tag", TAGS)
def test_model_agrees_with_nccl(tag, corpus_dir):
    version = version_of(tag)
    distinct = ANSWERS["distinct"]
    compared, refusals, named, problems = 0, 0, {name: set() for name in NAMED}, []
    for digest, by_tag in ANSWERS["answers"].items():
        entry = ANSWERS["topologies"][digest]
        whole = _in_sample(entry)
        if tag not in by_tag or not (whole or digest in REFUSAL_SAMPLE):
            continue
        text = _text(digest, entry, corpus_dir)
        if text is None:
            continue
        path = entry.get("path") or f"gen-{entry['seed']}-{entry['index']}.xml"
        for env_key, answer_id in by_tag[tag].items():
            expected = distinct[answer_id]
            if not whole and expected["accepted"]:
                continue  # outside the sample only NCCL's refusals and crashes are compared
            got = _model(digest, path, text, version, env_key)
            compared += 1
            refusals += not expected["accepted"]
            diffs = differences(expected, got)
            if not expected["accepted"] and expected["stage"] != "crash" and not expected["message"]:
                assert Path(path).name in EMPTY_MESSAGE, f"{path} [{env_key}]: NCCL {tag} refuses it without a WARN"
            if diffs and got.get("_duplicate_gpu"):
                named["duplicate_gpu"].add(digest)
                continue
            if diffs and got["stage"] == "crash" and (Path(path).name, expected["message"]) in KEPT_DIFFERENT:
                named["read_past"].add(digest)
                continue
            problems.extend(f"{path} [{env_key}] {diff}" for diff in diffs)
    assert compared > 0 and refusals > 0
    assert not problems, f"{len(problems)} disagreements with NCCL {tag}:\n" + "\n".join(problems[:20])
    for name, limit in KNOWN_GAP_LIMIT.items():
        assert len(named[name]) <= limit, f"{name} ({NAMED[name]}): {len(named[name])} topologies on {tag}"


# ---- TOPO001 says what NCCL says --------------------------------------------------------------
# The rows that decide what NCCL's reader (src/graph/xml.cc) and the attribute checks of
# ncclTopoGetSystemFromXml answer: tags that agree on them give TOPO001 the same file's findings.
_READER_ROWS = ("xml_value_checks", "pcilinks", "c2c_links", "gpu_link_missing_warn", "system_node_checked",
                "gpu_dev_node")


def _reported_by_topo001(answer: dict) -> bool:
    """The refusals TOPO001 reports (checks/_nccl_load.py NcclLoad.reported): the reader's, and
    a missing attribute NCCL never fills in from the machine."""
    from topolint.checks._nccl_load import _NEVER_FILLED

    return answer["stage"] == "xml" or (answer["stage"] == "system" and
                                         any(m in answer["message"] for m in _NEVER_FILLED))


# Refusals of files lxml cannot read either (not well-formed XML): topolint reports them as TL001
# with the XML error and its line, and no rule, TOPO001 included, runs on them.
TL001_INSTEAD = {("../shared/corpus/nccl-topo/h200-8gpu-8x400G-baremetal-FRAGMENT-truncated_nccl-tests-issue-256.xml",
                  "XML Parse : unterminated nic")}


def test_topo001_quotes_nccls_own_text(corpus_dir):
    """For every refusal TOPO001 reports, on every tag, the finding where NCCL stops quotes NCCL's
    WARN text as the answers hold it (tab, CR and LF written \\t, \\r, \\n)."""
    from topolint.checks import nccl_rejects_file
    from topolint.checks._nccl_load import load_of
    from topolint.engine.rule import load_rules
    from topolint.engine.runner import to_finding
    from topolint.inputs.source import InputError, SourceFile, decode_input
    from topolint.parsers.nccl_topo_xml import parse_topology

    rule = next(r for r in load_rules() if r.code == "TOPO001")
    compared, tags, problems, unreadable = 0, set(), [], set()
    for digest, by_tag in ANSWERS["answers"].items():
        entry = ANSWERS["topologies"][digest]
        wanted = {tag: ANSWERS["distinct"][envs["default"]] for tag, envs in by_tag.items()
                  if not ANSWERS["distinct"][envs["default"]]["accepted"]}
        wanted = {tag: answer for tag, answer in wanted.items() if _reported_by_topo001(answer)}
        if not wanted:
            continue
        text = _text(digest, entry, corpus_dir)
        if text is None:
            continue
        path = entry.get("path") or f"gen-{entry['seed']}-{entry['index']}.xml"
        data = text.encode("utf-8", errors="surrogateescape")
        try:
            topology = parse_topology(SourceFile(path, decode_input(path, data), bom=data.startswith(b"\xef\xbb\xbf")))
        except InputError:  # malformed for every XML reader: TL001 reports the file instead
            unreadable |= {(path, answer["message"]) for answer in wanted.values()}
            continue
        messages: dict[tuple, list[str]] = {}
        for tag, answer in wanted.items():
            version = version_of(tag)
            key = tuple(repr(version.behaviour(name)) for name in _READER_ROWS) + (version.max_xml_nodes,
                                                                                   version.max_xml_children)
            if key not in messages:
                hits = nccl_rejects_file.topology_hits("n/system", topology, None, load_of(topology, version), version)
                messages[key] = [to_finding(rule, "n", hit).message.replace(str(version), "<version>")
                                 for hit in hits]
            quote = f'"{nccl_rejects_file.shown(answer["message"])}"'
            compared += 1
            tags.add(tag)
            if not any(quote in message for message in messages[key]):
                problems.append(f"{path} [{tag}]: NCCL says {answer['message']!r}, TOPO001 {messages[key]}")
    assert compared > 100 and tags == set(TAGS)
    assert unreadable <= TL001_INSTEAD, unreadable
    assert not problems, f"{len(problems)} TOPO001 texts differ from NCCL's:\n" + "\n".join(problems[:20])


# ---- nvidia-smi topo -m follows the same PXN rows --------------------------------------------
# Tags on each side of every row the PXN answer of a matrix depends on (model/nccl_version.py
# pxn_rule, local_net_rule, local_gpu_among_best, pxn_relay_needs_gdr); every tag with FULL.
MATRIX_TAGS = ("v2.11.4-1", "v2.12.10-1", "v2.12.12-1", "v2.14.3-1", "v2.17.1-1", "v2.18.1-1", "v2.18.5-1",
               "v2.19.4-1", "v2.27.3-1", "v2.27.5-1", "v2.27.6-1", "v2.30.3-1", "v2.30.7-1")
# Generated topologies whose PXN answer changes across 2.18.1 / 2.18.5 / 2.19 and that a matrix
# can state (outside the every-fifth sample); the answers hold none across 2.13.4 / 2.14.3 or
# 2.17.1 / 2.18.1 (tests/test_nccl_edges.py holds a DGX-1V matrix at those rows to the port).
MATRIX_ROW_CASES = {212, 486}


def _matrix_candidate(text: str) -> bool:
    """A file whose matrix can say all NCCL's PXN choice reads: GPUDirect on everywhere (a matrix
    shows no gdr flags) and no C2C (a matrix shows P2C paths as SYS or NODE)."""
    return 'gdr="0"' not in text and "<c2c" not in text


def test_matrix_pxn_agrees_with_nccl(corpus_dir):
    """A matrix (checks/_matrix.py MatrixContext.pxn_proxy) gives the PXN relay NCCL's own code
    gave for the file the matrix shows, at every tag around each PXN row: the first NIC a GPU
    reaches by PXN, and through which GPU, or none."""
    from types import SimpleNamespace

    from topolint.checks._matrix import MatrixContext
    from topolint.inputs.source import SourceFile
    from topolint.parsers.nvidia_smi_topo import parse_matrix

    tags = TAGS if FULL else MATRIX_TAGS
    compared, relays, problems = 0, {}, []
    for digest, by_tag in ANSWERS["answers"].items():
        entry = ANSWERS["topologies"][digest]
        if not (_in_sample(entry) or entry["index"] in MATRIX_ROW_CASES):
            continue
        text = _text(digest, entry, corpus_dir)
        if text is None or not _matrix_candidate(text):
            continue
        path = entry.get("path") or f"gen-{entry['seed']}-{entry['index']}.xml"
        for tag in tags:
            expected = ANSWERS["distinct"][by_tag[tag]["default"]] if tag in by_tag else None
            if expected is None or not expected["accepted"]:
                continue
            version = version_of(tag)
            _model(digest, path, text, version, "default")  # the port's load, shared with the test above
            matrix_text = _MATRIX.get((digest, _signature(version)))
            if matrix_text is None:
                continue
            matrix = parse_matrix(SourceFile("topo-m.txt", matrix_text))
            context = MatrixContext(SimpleNamespace(name="n", topologies=[], matrices=[matrix]), matrix)
            for g in range(len(expected["relay"])):
                nccl = next(((relay, n) for n, relay in enumerate(expected["relay"][g]) if relay not in (g, -2)),
                            (None, None))
                want = (None, None) if nccl[0] is None else (f"GPU{nccl[0]}", f"mlx5_{nccl[1]}")
                got = context.pxn_proxy(f"GPU{g}", version)[:2]
                compared += 1
                relays.setdefault((path, g), {})[tag] = want
                if got != want:
                    problems.append(f"{path} GPU{g} [{tag}]: NCCL {want}, matrix {got}")
    for before, after in (("v2.11.4-1", "v2.12.10-1"), ("v2.12.10-1", "v2.12.12-1"), ("v2.18.1-1", "v2.18.5-1"),
                          ("v2.18.5-1", "v2.19.4-1")):  # rows whose answers the matrices held here tell apart
        assert any(by.get(before) not in (None, by.get(after)) and after in by for by in relays.values()), before
    assert compared > 300
    assert not problems, f"{len(problems)} PXN answers differ:\n" + "\n".join(problems[:20])
