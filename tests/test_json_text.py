"""reporters/_json_text.py writes what ``json.dumps(document, indent=2)`` writes, byte for byte."""

from __future__ import annotations

import json
import random

import pytest

from topolint.reporters._json_text import dumps_indented

_STRINGS = ["", "plain", "quote \" and \\ backslash", "tab\tnew\nline", "\u00e9th0", "\u2028", "\x00\x1f",
            "emoji \U0001f600", "</script>"]
_SCALARS = [None, True, False, 0, -1, 2**70, 0.1, -0.0, 1e300, 1e-300, float("nan"), float("inf"),
            float("-inf"), *_STRINGS]


def _tree(rng: random.Random, depth: int):
    roll = rng.random()
    if depth == 0 or roll < 0.4:
        return rng.choice(_SCALARS)
    if roll < 0.7:
        return [_tree(rng, depth - 1) for _ in range(rng.randrange(0, 4))]
    if roll < 0.75:
        return tuple(_tree(rng, depth - 1) for _ in range(rng.randrange(0, 3)))
    return {rng.choice(_STRINGS) + str(i): _tree(rng, depth - 1) for i in range(rng.randrange(0, 4))}


@pytest.mark.parametrize("seed", range(300))
def test_random_documents_are_written_as_json_dumps_writes_them(seed):
    document = _tree(random.Random(seed), 5)
    assert dumps_indented(document) == json.dumps(document, indent=2)


@pytest.mark.parametrize("document", [
    {1: "an int key"},  # json.dumps turns keys into strings its own way
    {"a": {None: [1]}},
    {"a": {"b": object()}},  # no plain value: json.dumps's own error
])
def test_anything_else_is_json_dumps_own_answer(document):
    try:
        expected = json.dumps(document, indent=2)
    except TypeError as exc:
        with pytest.raises(TypeError, match=str(exc)[:20]):
            dumps_indented(document)
    else:
        assert dumps_indented(document) == expected
