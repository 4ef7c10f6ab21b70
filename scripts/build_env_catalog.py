#!/usr/bin/env python3
"""Build topolint/data/nccl_env.json, the NCCL environment variable catalog.

Sources (facts, not code): the machine-readable table ``nccl-env.tsv`` (name, type, default,
values, status, since, summary) and nccl-formats.md section 3 (value syntax, level names,
renames and removals), both in the shared reference folder beside the checkout. The facts of
section 3 that the table does not carry in a parseable form are the constants below, each
with the section it comes from. Run from the repository root:

    python scripts/build_env_catalog.py [--tsv PATH] [--check]

``--check`` exits 1 when the committed catalog differs from what this script produces
(tests/test_env_catalog.py does the same).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TSV = ROOT.parent / "shared" / "reference" / "nccl-env.tsv"
OUTPUT = ROOT / "topolint" / "data" / "nccl_env.json"
# Names read by NCCL's own plugins and contrib/ (NVIDIA/nccl at a release tag) and by network
# plugins, each with the file that reads it and the repository commit (facts, not code).
PLUGIN_TSV = ROOT / "topolint" / "data" / "plugin_env.tsv"
NEWEST = "2.30.7"

# §3.2: level-valued variables; exact path names (HEAD list), or a legacy leading digit.
LEVEL_NAMES = ["LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"]
LEGACY_LEVELS = ["LOC", "PIX", "PXB", "PHB", "SYS", "SYS"]  # levelsOldToNew; > 5 clamps to SYS
LEVEL_VARIABLES = {"NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL", "NCCL_IB_GDR_LEVEL"}
# §3.2: NCCL_NET_MERGE_LEVEL uses nicPathKvList with prefix matching.
MERGE_LEVELS = ["LOC", "PORT", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"]
# §3.3: interface and HCA list syntax ['^']['='] entry (',' entry)*, entry name[:port[:rail[:plane]]].
IFLIST_VARIABLES = {"NCCL_SOCKET_IFNAME": 1, "NCCL_IB_HCA": 3, "NCCL_OOB_NET_IFNAME": 1}  # fields after name
MAX_HCAS = 32
# Token lists (TSV values column, written out): case-insensitive, '^' excludes.
TOKEN_LISTS = {
    "NCCL_ALGO": ["Ring", "Tree", "CollnetDirect", "CollnetChain", "Collnet", "NVLS", "NVLSTree", "PAT"],
    "NCCL_PROTO": ["LL", "LL128", "Simple"],
}
# §3.4: replacements and advice for removed, renamed and deprecated variables.
ADVICE = {
    "NCCL_LL_THRESHOLD": (None, "NCCL picks protocols by its tuning model since 2.5; to force one use NCCL_PROTO"),
    "NCCL_TREE_THRESHOLD": (None, "NCCL picks algorithms by its tuning model since 2.5; to force one use NCCL_ALGO"),
    "NCCL_THREAD_THRESHOLD": (None, "NCCL picks thresholds by its tuning model since 2.5"),
    "NCCL_SINGLE_RING_THRESHOLD": (None, "remove it; NCCL ignores it since 2.3"),
    "NCCL_RINGS": (None, "remove it; NCCL builds rings from the topology (NCCL_TOPO_FILE for a custom layout)"),
    "NCCL_IB_CUDA_SUPPORT": ("NCCL_NET_GDR_LEVEL", "use NCCL_NET_GDR_LEVEL to control GPUDirect RDMA"),
    "NCCL_IB_GDR_LEVEL": ("NCCL_NET_GDR_LEVEL", "same values"),
    "NCCL_CHECKS_DISABLE": ("NCCL_CHECK_MODE", "argument checks are controlled by NCCL_CHECK_MODE"),
    "NCCL_MAX_NRINGS": ("NCCL_MAX_CTAS", "legacy alias of NCCL_MAX_NCHANNELS (itself deprecated in 2.17)"),
    "NCCL_MIN_NRINGS": ("NCCL_MIN_CTAS", "legacy alias of NCCL_MIN_NCHANNELS (itself deprecated in 2.17)"),
    "NCCL_MAX_NCHANNELS": ("NCCL_MAX_CTAS", "the more restrictive of the two wins"),
    "NCCL_MIN_NCHANNELS": ("NCCL_MIN_CTAS", "the more restrictive of the two wins"),
    "NCCL_CHECK_POINTERS": ("NCCL_CHECK_MODE", "set NCCL_CHECK_MODE=DEBUG_LOCAL"),
    "NCCL_MNNVL": ("NCCL_MNNVL_ENABLE", "same values"),
    "NCCL_NCCL_ALLOC_P2P_NET_LL_BUFFERS": ("NCCL_ALLOC_P2P_NET_LL_BUFFERS",
                                           "the doubled prefix was a bug of 2.14.3-2.16.2, fixed in 2.16.5"),
    "NCCL_WORK_FIFO_DEPTH": ("NCCL_WORK_FIFO_BYTES", "sized in bytes since 2.22"),
}
# First version without the variable, where the TSV gives only "last seen" or a range.
REMOVED_IN = {"NCCL_NCCL_ALLOC_P2P_NET_LL_BUFFERS": "2.16.5", "NCCL_SHARED_BUFF_COUNT": "2.9.0",
              "NCCL_CHECKS_DISABLE": "2.3.5", "NCCL_SINGLE_RING_THRESHOLD": "2.3.0"}
# Values NCCL reads as "unset" without a message (debug.cc keeps NCCL_LOG_NONE for them).
EXTRA_CHOICES = {"NCCL_DEBUG": ["NONE"]}
DEPRECATED_VALUES = {"NCCL_LAUNCH_MODE": {"GROUP": "2.9"}}

# MIN_CTAS and MAX_CTAS share theirs: MAXCHANNELS, 64 from 2.25 (32 before).
_CTA_RANGES = [{"from": "2.25", "min": 1, "max": 64, "auto": "<=0",
                "effect": "NCCL caps the CTA count at MAXCHANNELS (64); 0 or less leaves the default",
                "source": "src/init.cc envConfigOverride and the MAXCHANNELS cap (v2.30.7-1)"},
               {"min": 1, "max": 32, "auto": "<=0",
                "effect": "NCCL caps the CTA count at MAXCHANNELS (32 before 2.25)",
                "source": "src/init.cc (v2.24.3-1, MAXCHANNELS 32)"}]
# Integer ranges NCCL (or the verbs field it fills) accepts, read at the release tags named; a
# value outside is not used as written. Rows apply from ``from`` (the newest row first); ``auto``
# values mean "unset" to NCCL. ``effect`` says what happens to a value outside the range.
VALUE_RANGES = {
    "NCCL_NTHREADS": [{"min": 64, "max": 512, "multiple_of": 32, "auto": "<=0",
                       "effect": "NCCL uses 512 for a value that is not a multiple of 32 or is above 512, "
                                 "and 64 below 64",
                       "source": "src/graph/tuning.cc getNthreads (v2.8.4-1 to v2.30.7-1)"}],
    "NCCL_LL128_NTHREADS": [{"min": 160, "max": 640, "multiple_of": 32, "auto": "<=0",
                             "effect": "NCCL uses 640 for a value that is not a multiple of 32 or is above 640, "
                                       "and 160 below 160",
                             "source": "src/graph/tuning.cc getNthreads (NCCL_LL128_MAX_NTHREADS/4 to 640)"}],
    "NCCL_IB_RETRY_CNT": [{"min": 0, "max": 7,
                           "effect": "the QP's retry count is a 3-bit field: the verbs driver rejects the value or "
                                     "keeps its low bits",
                           "source": "src/transport/net_ib/connect.cc ncclIbQpRts (qpAttr.retry_cnt, v2.30.7-1)"}],
    "NCCL_IB_TIMEOUT": [{"min": 0, "max": 31,
                         "effect": "the QP's local ACK timeout is a 5-bit exponent: the verbs driver rejects the "
                                   "value or keeps its low bits",
                         "source": "src/transport/net_ib/connect.cc ncclIbQpRts (qpAttr.timeout, v2.30.7-1)"}],
    "NCCL_IB_SL": [{"min": 0, "max": 15, "auto": -1,
                    "effect": "the service level is a 4-bit field of the address vector: the driver keeps its "
                              "low bits",
                    "source": "src/transport/net_ib/connect.cc (qpAttr.ah_attr.sl, v2.30.7-1)"}],
    "NCCL_IB_TC": [{"min": 0, "max": 255, "auto": -1,
                    "effect": "the traffic class is an 8-bit field: NCCL's value is cut to its low 8 bits",
                    "source": "src/transport/net_ib/connect.cc (qpAttr.ah_attr.grh.traffic_class, v2.30.7-1)"}],
    "NCCL_IB_FIFO_TC": [{"min": 0, "max": 255, "auto": -1,
                         "effect": "the traffic class is an 8-bit field: NCCL's value is cut to its low 8 bits",
                         "source": "src/transport/net_ib/connect.cc (rtrAttr->tc, v2.30.7-1)"}],
    "NCCL_IB_QPS_PER_CONNECTION": [{"min": 1, "max": 128,
                                    "effect": "NCCL holds at most NCCL_IB_MAX_QPS (128) queue pairs per connection",
                                    "source": "src/transport/net_ib/common.h NCCL_IB_MAX_QPS (v2.30.7-1)"}],
    "NCCL_SOCKET_NTHREADS": [{"min": 0, "max": 16, "auto": -2,
                              "effect": "NCCL warns and uses 16 (MAX_THREADS)",
                              "source": "src/transport/net_socket.cc ncclNetSocketGetNsockNthread (v2.30.7-1)"}],
    "NCCL_MIN_CTAS": "CTAS",
    "NCCL_MAX_CTAS": "CTAS",
}

# Variables other software reads under NCCL_ names (rule-catalog.md ENV001; nccl-formats.md §3.6).
PYTORCH_RENAMED = {  # c10d reads the TORCH_NCCL_* name first, then the old NCCL_* one (deprecated)
    "NCCL_ASYNC_ERROR_HANDLING": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "NCCL_BLOCKING_WAIT": "TORCH_NCCL_BLOCKING_WAIT",
    "NCCL_DESYNC_DEBUG": "TORCH_NCCL_DESYNC_DEBUG",
    "NCCL_ENABLE_TIMING": "TORCH_NCCL_ENABLE_TIMING",
    "NCCL_AVOID_RECORD_STREAMS": "TORCH_NCCL_AVOID_RECORD_STREAMS",
    "NCCL_USE_COMM_NONBLOCKING": "TORCH_NCCL_USE_COMM_NONBLOCKING",
}
OTHER_PREFIXES = [
    {"prefix": "NCCL_TESTS_", "reader": "nccl-tests"},
    # GPUDirect-TCPX's names are listed one by one in plugin_env.tsv (google/nccl-plugin-gpudirecttcpx,
    # TCPX_PARAM adds NCCL_, TCPX_GET_ENV NCCL_GPUDIRECTTCPX_), so ENV001 catches their typos. The
    # TCPXO (FasTrak) plugin's source is not public: its names are known by their prefix only.
    {"prefix": "NCCL_FASTRAK_", "reader": "GCP GPUDirect-TCPXO (FasTrak) network plugin"},
    {"prefix": "OFI_NCCL_", "reader": "aws-ofi-nccl network plugin"},
]

_VERSION = re.compile(r"v?(\d+\.\d+(?:\.\d+)?)")


def _version(text: str) -> str | None:
    match = _VERSION.search(text or "")
    return match.group(1) if match else None


def _status(name: str, text: str) -> dict:
    entry: dict = {"status_text": text}
    lowered = text.lower()
    renamed = re.match(r"renamed to (NCCL_\w+) in ([\d.]+)", text)
    if renamed:
        entry.update(status="renamed", replacement=renamed.group(1), removed_in=renamed.group(2))
    elif lowered.startswith("bug name"):
        entry.update(status="removed")
    elif lowered.startswith("removed"):
        entry["status"] = "removed"
        removed_in = re.match(r"removed in ([\d.]+)", text)
        last = re.search(r"(?:last seen v|removed after )([\d.]+)", text)
        if removed_in:
            entry["removed_in"] = removed_in.group(1)
        elif last:
            entry["last_seen"] = last.group(1)
        replaced = re.search(r"(?:use|replaced by) (NCCL_\w+)", text)
        if replaced:
            entry["replacement"] = replaced.group(1)
    elif lowered.startswith("deprecated"):
        entry["status"] = "deprecated"
        when = re.match(r"deprecated \(?([\d.]+)", text)
        if when:
            entry["deprecated_in"] = when.group(1)
        if "not read by any source" in lowered:
            entry["status"] = "removed"
        use = re.search(r"use (NCCL_\w+)", text)
        if use:
            entry["replacement"] = use.group(1)
    elif lowered.startswith("internal/undocumented"):
        entry["status"] = "undocumented"
    else:
        entry["status"] = "current"
    if name in REMOVED_IN:
        entry["removed_in"] = REMOVED_IN[name]
        entry.pop("last_seen", None)
    if name in ADVICE:
        replacement, advice = ADVICE[name]
        if replacement:
            entry["replacement"] = replacement
        entry["advice"] = advice
    return entry


def _choices(name: str, kind: str, values: str) -> dict:
    if name in LEVEL_VARIABLES:
        return {"kind": "level", "choices": LEVEL_NAMES, "legacy": LEGACY_LEVELS}
    if name == "NCCL_NET_MERGE_LEVEL":
        return {"kind": "enum", "choices": MERGE_LEVELS, "match": "prefix"}
    if name in IFLIST_VARIABLES:
        return {"kind": "iflist", "list_syntax": "['^']['='] name[:port[:rail[:plane]]] (',' ...)",
                "max_fields": IFLIST_VARIABLES[name] + 1, **({"max_entries": MAX_HCAS} if name == "NCCL_IB_HCA" else {})}
    if name in TOKEN_LISTS:
        return {"kind": "tokens", "choices": TOKEN_LISTS[name], "case_insensitive": True,
                "list_syntax": "['^'] token (',' token)*; 'func:list;func:list' per collective (2.24+)"}
    if kind == "bitmask-list":
        head = values.split(";")[0]
        head = head.replace("comma list of", "").split(" or ")[0]
        tokens = [t.strip() for t in head.split(",") if re.fullmatch(r"[A-Z_0-9]+", t.strip())]
        if " or ALL" in values:
            tokens.append("ALL")
        return {"kind": "tokens", "choices": tokens, "case_insensitive": True, "list_syntax": "['^'] token (',' token)*"}
    if name == "NCCL_CTA_POLICY":
        return {"kind": "flags", "choices": ["DEFAULT", "EFFICIENCY", "ZERO"], "legacy_ints": [0, 1, 2],
                "case_insensitive": True}
    if name == "NCCL_NETDEVS_POLICY":
        return {"kind": "pattern", "pattern": r"(?i)AUTO|ALL|MAX:[1-9][0-9]*"}
    if kind == "enum-string":
        head = re.split(r"[(;]", values)[0]
        tokens = [t.strip() for t in head.split("|") if re.fullmatch(r"[A-Z_0-9]+", t.strip())]
        tokens += EXTRA_CHOICES.get(name, [])
        return {"kind": "enum", "choices": tokens, "case_insensitive": name != "NCCL_SOCKET_FAMILY"}
    if kind == "bool01":
        return {"kind": "int", "choices": ["0", "1"]}
    if kind == "bool":
        return {"kind": "bool", "choices": ["true", "false", "1", "0"], "case_insensitive": True}
    if kind.startswith("int"):
        found = re.findall(r"(?:^|\||,)\s*(-?\d+)(?=\s|$|\||=)", values)
        found = list(dict.fromkeys(found))
        result: dict = {"kind": "int"}
        if kind == "int enum" and len(found) >= 2:
            result["choices"] = found
        return result
    return {"kind": "string"}


def build(tsv: Path) -> dict:
    variables = {}
    with tsv.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            name = row["name"].strip()
            entry = {
                "type": row["type"],
                "default": row["default"],
                "values": row["values"],
                "since": _version(row["since_version_if_known"]),
                "summary": re.sub(r"\s*\[(src|doc)[^\]]*\]\s*$", "", row["summary"]).strip(),
                "reader": "nccl",
            }
            entry.update(_status(name, row["status"]))
            entry.update(_choices(name, row["type"], row["values"]))
            if name in DEPRECATED_VALUES:
                entry["deprecated_values"] = DEPRECATED_VALUES[name]
            if name in VALUE_RANGES:
                entry["ranges"] = _CTA_RANGES if VALUE_RANGES[name] == "CTAS" else VALUE_RANGES[name]
            variables[name] = entry
    _add_plugin_names(variables)
    for old, new in PYTORCH_RENAMED.items():
        variables.setdefault(old, {"reader": "pytorch", "status": "renamed", "replacement": new, "kind": "string",
                                   "summary": f"PyTorch c10d reads {new} first, then this deprecated name"})
    return {
        "comment": "Generated by scripts/build_env_catalog.py from nccl-env.tsv and nccl-formats.md section 3; do not edit.",
        "newest_version": NEWEST,
        "variables": dict(sorted(variables.items())),
        "other_prefixes": OTHER_PREFIXES,
    }


def _add_plugin_names(variables: dict) -> None:
    """Plugin-read names NCCL itself does not read become entries of their own reader."""
    with PLUGIN_TSV.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            name, source = row["name"], f"{row['repository']}@{row['commit'][:12]}:{row['source']}"
            if name in variables:
                continue
            variables[name] = {"reader": row["reader"], "kind": "string", "status": "current", "source": source,
                               "summary": f"read by {row['reader']} ({row['source']})"}


def render(catalog: dict) -> str:
    return json.dumps(catalog, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed catalog is stale")
    args = parser.parse_args(argv)
    text = render(build(args.tsv))
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run scripts/build_env_catalog.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(json.loads(text)['variables'])} variables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
