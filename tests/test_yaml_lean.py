"""parsers/_yaml.py composes lean nodes from libyaml's events (issue 20): the same tree, marks,
styles, tags and errors as PyYAML's composer."""

from __future__ import annotations

import pytest
import yaml

from topolint.parsers import _yaml

SAMPLES = [
    "a: 1\nb: [x, 'y', \"z\"]\nc: {d: null, e: ~}\n",
    "---\n- &t {k: v}\n- *t\n- !!str 3\n- ! 4\n- |\n  line\n  two\n- >\n  folded\n  text\n...\n---\nx\n",
    "base: &b {NCCL_DEBUG: INFO}\nsvc:\n  <<: *b\n  own: 1\nlist: []\nmap: {}\n",
    "",
    "---\n",
    "k: \"esc\\taped\"\n? complex\n: value\n",
    "plain: two words  # comment\nwide: é😀 x\nwrapped: a\n  b\nflow: {a: b c, d: [e  f]}\n",
]


def _plain(node, pyyaml: bool):
    marks = (node.start_mark.line, node.start_mark.column, node.end_mark.line, node.end_mark.column)
    if node.id == "scalar":
        return ("scalar", node.tag, node.value, node.style or None, marks)
    children = node.value
    if node.id == "mapping":
        children = [part for pair in children for part in pair]
    return (node.id, node.tag, [_plain(child, pyyaml) for child in children], marks)


@pytest.mark.parametrize("text", SAMPLES)
def test_lean_nodes_are_pyyamls(text):
    expected = [_plain(doc, True) for doc in yaml.compose_all(text, Loader=yaml.CSafeLoader) if doc is not None]
    documents, _ = _yaml._compose_all(text)
    assert [_plain(doc, False) for doc in documents] == expected


@pytest.mark.parametrize(("text", "problem", "line"), [
    ("a: *nope\n", "found undefined alias", 1),
    ("a: &x 1\nb: &x 2\n", "second occurrence", 2),
    ("a: [1\n", "expected ',' or ']'", 2),
])
def test_errors_are_pyyamls(tmp_path, text, problem, line):
    from topolint.inputs.source import InputError, read_source

    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        _yaml.compose_documents(read_source(str(path), path))
    assert problem in str(caught.value) and caught.value.line == line


def test_each_leaves_shared_lists_whole():
    documents, _ = _yaml._compose_all("a: &l [1, 2]\nb: *l\n")
    _yaml._keep_sequences(documents[0])
    shared = _yaml.get(documents[0], "a")
    assert [n.value for n in _yaml.each(shared)] == ["1", "2"]
    assert [n.value for n in _yaml.each(_yaml.get(documents[0], "b"))] == ["1", "2"]
    plain, _ = _yaml._compose_all("a: [1, 2]\n")
    once = _yaml.get(plain[0], "a")
    assert [n.value for n in _yaml.each(once)] == ["1", "2"] and once.value == []


@pytest.mark.parametrize("text", ["a: b\x01c\n", "a: é\x07\n", "a: \"\\q\"\n", "x: [\n", "\ufeffa: 1\n"])
def test_libyaml_reads_the_text_in_chunks_as_it_reads_a_str(text):
    def outcome(compose):
        try:
            return [_plain(doc, False) for doc in compose()]
        except yaml.YAMLError as exc:
            return str(exc)

    assert outcome(lambda: _yaml._compose_all(text)[0]) == \
        outcome(lambda: list(yaml.compose_all(text, Loader=yaml.CSafeLoader)))
