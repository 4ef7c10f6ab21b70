"""JSON outputs (``ip -j addr``, ``ip -j route``): bounded decoding, numbers through
model/numbers.py, and the line and column of each object a parser keeps."""

from __future__ import annotations

import json
import re

from topolint.inputs.source import InputError
from topolint.model.facts import Location, build
from topolint.model.nesting import json_deepest
from topolint.model.numbers import decimal, unsigned_decimal


def _reject(name: str):
    raise ValueError(f"{name} is not a number here")


def load(path: str, text: str, tool: str):
    """The decoded document; InputError with the line and column of the first problem."""
    try:
        return json.loads(text, parse_int=decimal, parse_float=unsigned_decimal, parse_constant=_reject)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"malformed {tool} JSON: {exc.msg}", exc.colno) from None
    except RecursionError:
        line, column = json_deepest(text)
        raise InputError(path, line, f"malformed {tool} JSON: nested too deeply", column) from None
    except ValueError as exc:
        raise InputError(path, 1, f"malformed {tool} JSON: {exc}") from None


class Positions:
    """Locations of successive occurrences of ``"key"`` in the text, in document order."""

    def __init__(self, path: str, text: str, key: str):
        self.path = path
        self.starts = [m.start() for m in re.finditer(r'"%s"\s*:' % re.escape(key), text)]
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.next = 0

    def take(self) -> Location:
        if self.next >= len(self.starts):
            return build(Location, path=self.path, line=1, column=0)
        offset = self.starts[self.next]
        self.next += 1
        low, high = 0, len(self.line_starts) - 1
        while low < high:  # the last line start at or before offset
            middle = (low + high + 1) // 2
            if self.line_starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return build(Location, path=self.path, line=low + 1, column=offset - self.line_starts[low] + 1)
