"""YAML with line marks: ``yaml.compose_all`` keeps every node's start mark (PyYAML, MIT)."""

from __future__ import annotations

from topolint.inputs.source import InputError, SourceFile


def compose_documents(source: SourceFile) -> list:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return [doc for doc in yaml.compose_all(source.text, Loader=loader) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else 0
        problem = exc.problem or exc.context or "syntax error"
        raise InputError(source.path, line, f"malformed YAML: {problem}", column) from None
    except yaml.YAMLError as exc:
        raise InputError(source.path, 1, f"malformed YAML: {exc}") from None


def is_map(node) -> bool:
    return getattr(node, "id", None) == "mapping"


def is_seq(node) -> bool:
    return getattr(node, "id", None) == "sequence"


def scalar(node) -> str | None:
    return node.value if getattr(node, "id", None) == "scalar" else None


def get(node, key: str):
    if not is_map(node):
        return None
    for key_node, value in node.value:
        if getattr(key_node, "value", None) == key:
            return value
    return None


def items(node):
    if is_map(node):
        for key_node, value in node.value:
            yield key_node, value


def where(node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def is_helm_template(text: str) -> bool:
    return "{{" in text and "}}" in text


def dig(node, *keys):
    for key in keys:
        node = get(node, key)
        if node is None:
            return None
    return node
