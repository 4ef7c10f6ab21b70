"""Kubernetes nodes' labels into a NodeLabelsFile, from what ``kubectl`` prints:

- node objects: ``kubectl get node[s] -o yaml`` or ``-o json`` (a Node, or a List of them):
  ``metadata.name`` and ``metadata.labels``;
- ``kubectl describe node``: ``Name:`` and the ``Labels:`` block (one ``key=value`` a line);
- ``kubectl get nodes --show-labels``: a table whose last column holds ``k=v,k=v``;
- a pasted labels block (``key: value`` or ``key=value`` lines) that names no node.

The labels that place a node in the network (topology.kubernetes.io/*, the clouds' own, the
NVLink clique ``nvidia.com/gpu.clique``) are read by fleet/scheduler.py; every label is kept.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.facts import build, location
from topolint.model.scheduler import NodeLabels, NodeLabelsFile
from topolint.parsers._lines import PROMPT, lines_of
from topolint.parsers._yaml import compose_documents, each, get, is_map, is_seq, items, scalar, where

WHAT = "Kubernetes node labels"
LABEL_KEY = r"(?:[A-Za-z0-9][A-Za-z0-9.-]{0,252}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,62}"
_LABEL_EQ = re.compile(rf"({LABEL_KEY})=(\S{{0,63}})$")
_LABEL_COLON = re.compile(rf"[ \t]*({LABEL_KEY}):[ \t]*(\S{{0,65}})[ \t]*$")
_SHOW_LABELS_HEAD = re.compile(r"[ \t]*NAME[ \t]+STATUS[ \t]+ROLES[ \t]+AGE[ \t]+VERSION\b.*\bLABELS[ \t]*$")
# A pasted labels block is told from other "key: value" text by its keys: every one a prefixed
# label key, one of them a topology label.
TOPOLOGY_PREFIXES = ("topology.kubernetes.io/", "topology.k8s.aws/", "cloud.google.com/gce-topology",
                     "oci.oraclecloud.com/", "network.topology.nvidia.com/", "nvidia.com/gpu.clique",
                     "failure-domain.beta.kubernetes.io/")
# Far more label keys than a cluster uses, few enough to stay small beside the text if all are new.
_SHARED_KEYS = 512
_DESCRIBE_NAME = re.compile(r"Name:[ \t]+(\S+)[ \t]*$")


def kind_of(text: str) -> str | None:
    """Which of the shapes above ``text`` starts like (the sniffer asks): "objects", "describe",
    "table", "block", or None."""
    lines = [line for line in text[:8192].splitlines() if line.strip()][:6]
    if lines and PROMPT.match(lines[0]) and "kubectl" in lines[0]:
        lines = lines[1:]
    if not lines:
        return None
    if _SHOW_LABELS_HEAD.match(lines[0]):
        return "table"
    if _DESCRIBE_NAME.match(lines[0]) and re.search(r"^Labels:[ \t]", text[:8192], re.M):
        return "describe"
    if re.search(r'^(?:[ \t-]*kind:[ \t]*(?:Node|NodeList)[ \t]*$|[ \t]*"kind"[ \t]*:[ \t]*"Node(?:List)?")', text[:8192], re.M):
        return "objects"
    keys = [(_LABEL_COLON.match(line) or _LABEL_EQ.match(line.strip())) for line in lines]
    if all(key is not None and "/" in key.group(1) for key in keys) and \
            any(key.group(1).startswith(TOPOLOGY_PREFIXES) for key in keys):
        return "block"
    return None


def parse_k8s_nodes(source: SourceFile) -> NodeLabelsFile:
    kind = kind_of(source.text)
    if kind == "objects":
        nodes = _objects(source)
    elif kind == "describe":
        nodes = _described(source)
    elif kind == "table":
        nodes = _table(source)
    else:
        nodes = [_block(source)]
    if not nodes:
        raise InputError(source.path, 1, f"malformed {WHAT}: no node")
    return build(NodeLabelsFile, path=source.path, nodes=nodes)


def _objects(source: SourceFile) -> list[NodeLabels]:
    path = source.path
    found = []
    for document in compose_documents(source):
        objects = get(document, "items")
        for node in (each(objects) if is_seq(objects) else [document]):
            if scalar(get(node, "kind")) not in (None, "Node"):
                continue
            metadata = get(node, "metadata")
            name = scalar(get(metadata, "name"))
            labels_node = get(metadata, "labels")
            if name is None and labels_node is None:
                continue
            labels, locs = {}, {}
            for key, value in items(labels_node):
                label = scalar(key)
                if label is None or scalar(value) is None:
                    raise InputError(path, where(key)[0], f"malformed {WHAT}: a label is a key and a string")
                labels[label] = scalar(value)
                locs[label] = location(path, *where(value))
            at = metadata if is_map(metadata) else node
            found.append(build(NodeLabels, node=name, labels=labels, label_locs=locs, loc=location(path, *where(at))))
    return found


def _described(source: SourceFile) -> list[NodeLabels]:
    path = source.path
    found: list[NodeLabels] = []
    current = None
    in_labels = False
    for number, raw in enumerate(lines_of(source.text), start=1):
        name = _DESCRIBE_NAME.match(raw)
        if name:
            current = build(NodeLabels, node=name.group(1), loc=location(path, number, 1))
            found.append(current)
            in_labels = False
            continue
        if raw[:1] not in (" ", "\t", ""):
            in_labels = raw.startswith("Labels:")
            raw = raw[len("Labels:"):] if in_labels else raw
        if not in_labels or current is None or not raw.strip():
            continue
        text = raw.strip()
        if text == "<none>":
            continue
        match = _LABEL_EQ.match(text)
        if match is None:
            raise InputError(path, number, f"malformed {WHAT}: expected key=value in the Labels block; found "
                                           f"{text[:60]!r}", len(raw) - len(raw.lstrip()) + 1)
        current.labels[match.group(1)] = match.group(2)
        current.label_locs[match.group(1)] = location(path, number, raw.index(text) + len(match.group(1)) + 2)
    return found


def _table(source: SourceFile) -> list[NodeLabels]:
    path = source.path
    found = []
    header = None
    keys: dict[str, str] = {}  # every node names the same few dozen label keys: one string each
    for number, raw in enumerate(lines_of(source.text), start=1):
        if not raw.strip() or (header is None and PROMPT.match(raw)):
            continue
        if header is None:
            header = raw
            continue
        words = raw.split()
        if len(words) < 2:
            raise InputError(path, number, f"malformed {WHAT}: expected a node's row (NAME ... LABELS)", 1)
        labels, locs = {}, {}
        column = raw.rindex(words[-1]) + 1
        for pair in words[-1].split(","):
            key, eq, value = pair.partition("=")
            if not eq or not re.fullmatch(LABEL_KEY, key):
                if words[-1] == "<none>":
                    break
                raise InputError(path, number, f"malformed {WHAT}: expected key=value labels; found {pair[:60]!r}",
                                 column)
            key = keys.setdefault(key, key) if len(keys) < _SHARED_KEYS else keys.get(key, key)
            labels[key] = value
            locs[key] = location(path, number, column)
            column += len(pair) + 1
        found.append(build(NodeLabels, node=words[0], labels=labels, label_locs=locs,
                           loc=location(path, number, raw.index(words[0]) + 1)))
    return found


def _block(source: SourceFile) -> NodeLabels:
    path = source.path
    labels, locs, first = {}, {}, None
    for number, raw in enumerate(lines_of(source.text), start=1):
        if not raw.strip():
            continue
        match = _LABEL_COLON.match(raw) or _LABEL_EQ.match(raw.strip())
        if match is None:
            raise InputError(path, number, f"malformed {WHAT}: expected 'key: value' label lines; found "
                                           f"{raw.strip()[:60]!r}", len(raw) - len(raw.lstrip()) + 1)
        first = first or number
        labels[match.group(1)] = match.group(2)
        locs[match.group(1)] = location(path, number, raw.find(match.group(2), raw.find(match.group(1)) +
                                                               len(match.group(1))) + 1)
    return build(NodeLabels, node=None, labels=labels, label_locs=locs, loc=location(path, first or 1, 1))
