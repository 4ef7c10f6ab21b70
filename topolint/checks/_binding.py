"""Literal rank maps of a launch: CUDA_VISIBLE_DEVICES lists, Slurm map_gpu/map_ldom, numactl."""

from __future__ import annotations

import re

from topolint.checks._config import related_scopes
from topolint.model import config as cfg
from topolint.model.numbers import decimal


MAX_LIST = 4096  # ranks or devices a literal map can name on one node, with headroom


def int_list(text: str) -> list[int] | None:
    """``0,1,2`` or ``0*2,1*2`` (Slurm repeat counts); None when anything is computed or the
    list would be longer than MAX_LIST (a repeat count is never expanded past it)."""
    if not text or "$" in text:
        return None
    out: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]+)(?:\*([0-9]+))?\s*", part)
        value, repeat = (decimal(match.group(1)), decimal(match.group(2) or "1")) if match else (None, None)
        if value is None or repeat is None or len(out) + repeat > MAX_LIST:
            return None
        out.extend([value] * repeat)
    return out or None


def slurm_map(value: str, key: str) -> list[int] | None:
    """``map_gpu:0,1`` / ``verbose,map_ldom:0,0,1,1`` -> the list."""
    match = re.search(rf"(?:^|,){key}:([0-9*,]+)$", value or "")
    return int_list(match.group(1)) if match else None


def visible_devices(config, fact) -> list[int] | None:
    """The last literal CUDA_VISIBLE_DEVICES on the path to ``fact``, at or before its line."""
    found = None
    for other in config.launch:
        if other.kind == cfg.CUDA_VISIBLE_DEVICES and related_scopes(other.scope, fact.scope) \
                and other.loc.line <= fact.loc.line:
            found = other
    return int_list(found.value) if found is not None else None, found
