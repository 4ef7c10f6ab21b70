"""``json.dumps(document, indent=2)``, byte for byte, at a fraction of its cost.

With ``indent`` set, the standard library encodes in pure Python (its C encoder only writes compact
JSON), a generator per value: a report of a thousand nodes' findings spent a quarter of a second
there. Reports are plain trees of dicts with string keys, lists, strings, numbers, booleans and
None; this writes those with the same C string escaper and the same separators, and hands anything
else (another key type, another value type) to ``json.dumps`` whole, so the output never differs.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii


class _Unplain(Exception):
    """A value outside the plain tree: json.dumps writes the whole document."""


def dumps_indented(document) -> str:
    parts: list[str] = []
    try:
        _encode(document, parts, "\n")
    except _Unplain:
        return json.dumps(document, indent=2)
    return "".join(parts)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    return float.__repr__(value)


def _encode(value, out: list[str], newline: str) -> None:
    if isinstance(value, str):
        out.append(encode_basestring_ascii(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        out.append("[")
        for index, item in enumerate(value):
            out.append(inner if index == 0 else "," + inner)
            _encode(item, out, inner)
        out.append(newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise _Unplain
            out.append((inner if index == 0 else "," + inner) + encode_basestring_ascii(key) + ": ")
            _encode(item, out, inner)
        out.append(newline + "}")
    else:
        raise _Unplain
