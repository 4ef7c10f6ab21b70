"""YAML with line marks: ``yaml.compose_all`` keeps every node's start mark (PyYAML, MIT)."""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile

# libyaml's composer recurses in C (deep enough nesting crashes the process), and topolint's
# walkers recurse in Python: nesting is bounded before composing (a cheap scan of the text) and
# after (the composed graph). Real manifests nest a few dozen levels.
MAX_DEPTH = 100
_MAX_TEXT_NESTING = 1000
# Aliases share nodes; a walker that follows them visits a node once per path to it. The
# expanded tree is bounded, so "billion laughs" documents are TL001, not an hour of work.
MAX_EXPANDED_NODES = 200_000
_BRACKETS = re.compile(r"[\[\]{}]")


def compose_documents(source: SourceFile) -> list:
    import yaml

    _check_text_nesting(source)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = [doc for doc in yaml.compose_all(source.text, Loader=loader) if doc is not None]
        aliases = "*" in source.text  # no alias, no shared node: a tree
        for document in documents:
            check_graph(source.path, document, aliases)
        return documents
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else 0
        problem = exc.problem or exc.context or "syntax error"
        raise InputError(source.path, line, f"malformed YAML: {problem}", column) from None
    except yaml.YAMLError as exc:
        raise InputError(source.path, 1, f"malformed YAML: {exc}") from None


def _check_text_nesting(source: SourceFile) -> None:
    """TL001 for nesting the composer should never see: unclosed ``[``/``{`` or a line whose
    indentation and ``- `` prefix alone are longer than any real manifest's."""
    depth = 0
    for line_number, line in enumerate(source.text.split("\n"), start=1):
        deepest = depth
        for bracket in _BRACKETS.findall(line) if "[" in line or "{" in line or depth else ():
            depth += 1 if bracket in "[{" else -1
            deepest = max(deepest, depth)
        prefix = len(line) - len(line.lstrip(" -?:"))
        if deepest > _MAX_TEXT_NESTING or prefix > 2 * _MAX_TEXT_NESTING:
            raise InputError(source.path, line_number, f"malformed YAML: nested deeper than {MAX_DEPTH} levels")


def check_graph(path: str, root, aliases: bool = True) -> None:
    """TL001 for a composed document that is deeper than MAX_DEPTH, or, when it has ``aliases``,
    cyclic (an alias inside its own anchor) or whose aliases expand past MAX_EXPANDED_NODES.
    One pass over the distinct nodes, without recursion."""
    if not aliases:
        stack = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise _graph_error(path, node, f"nested deeper than {MAX_DEPTH} levels")
            if node.id != "scalar":
                stack.extend((child, depth + 1) for child in _children(node))
        return
    expanded: dict[int, int] = {}  # node id -> size of its expanded tree
    on_path: set[int] = set()
    stack = [(root, 1, None)]
    while stack:
        node, depth, children = stack.pop()
        key = id(node)
        if children is not None:  # every child is done
            on_path.discard(key)
            expanded[key] = min(MAX_EXPANDED_NODES + 1, 1 + sum(expanded[id(c)] for c in children))
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise _graph_error(path, node, "an alias refers to a node that contains it")
        if depth > MAX_DEPTH:
            raise _graph_error(path, node, f"nested deeper than {MAX_DEPTH} levels")
        children = _children(node)
        on_path.add(key)
        stack.append((node, depth, children))
        stack.extend((child, depth + 1, None) for child in children if id(child) not in expanded)
    if expanded[id(root)] > MAX_EXPANDED_NODES:
        raise _graph_error(path, root, f"aliases expand to more than {MAX_EXPANDED_NODES} nodes "
                           "(nested anchors, as in a 'billion laughs' document)")


def _graph_error(path: str, node, problem: str) -> InputError:
    line, column = where(node)
    return InputError(path, line, f"malformed YAML: {problem}", column)


def _children(node) -> list:
    if node.id == "mapping":
        return [part for pair in node.value for part in pair]
    return node.value if node.id == "sequence" else []


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


def written_scalar(node) -> tuple[int, int, str] | None:
    """Line, column and exact text of a one-line scalar as written: plain, or single- or
    double-quoted with no escape in it; None otherwise (block scalars, folded or escaped text)."""
    value = scalar(node)
    if value is None or node.start_mark.line != node.end_mark.line:
        return None
    quote = {None: "", "": "", "'": "'", '"': '"'}.get(node.style)  # plain: None or "" (libyaml)
    if quote is None or (quote and (quote in value or "\\" in value)):
        return None
    written = f"{quote}{value}{quote}"
    if node.end_mark.column - node.start_mark.column != len(written):
        return None  # the scalar is written some other way (an escape, a line fold)
    line, column = where(node)
    return line, column, written


def written_value(config, node, skip: int = 0) -> dict:
    """EnvSetting's ``value_at``/``value_written`` for a YAML scalar; with ``skip``, the part of
    the scalar's text from that many characters in (``NAME=`` of a compose list item), unquoted."""
    written = written_scalar(node) if node is not None else None
    if written is None:
        return {}
    line, column, text = written
    if skip:
        quoted = 1 if text[:1] in ("'", '"') else 0
        column, text = column + quoted + skip, text[quoted + skip:len(text) - quoted]
    return {"value_at": config.loc(line, column), "value_written": text} if text else {}


_HELM_ACTION = re.compile(r"(?<!\$)\{\{")  # GitHub Actions' ${{ }} is an expression, not a template


def is_helm_template(text: str) -> bool:
    return "}}" in text and _HELM_ACTION.search(text) is not None


def dig(node, *keys):
    for key in keys:
        node = get(node, key)
        if node is None:
            return None
    return node


def merged(node):
    """A mapping with its YAML merge keys applied (``<<: *template``, ``<<: [*a, *b]``), as compose
    and Kubernetes' loaders apply them: the mapping's own keys win, then the merged mappings in
    order. The result is a mapping node of the same pairs (key and value nodes keep their marks,
    so a setting from a template points at the template's line)."""
    if not is_map(node) or not any(getattr(k, "tag", "") == "tag:yaml.org,2002:merge" or k.value == "<<"
                                   for k, _ in node.value):
        return node
    import yaml

    own = [(k, v) for k, v in node.value if not (getattr(k, "tag", "") == "tag:yaml.org,2002:merge" or k.value == "<<")]
    seen = {k.value for k, _ in own}
    pairs = list(own)
    for key, value in node.value:
        if key.value != "<<" and getattr(key, "tag", "") != "tag:yaml.org,2002:merge":
            continue
        for source in (value.value if is_seq(value) else [value]):
            for k, v in (merged(source).value if is_map(source) else []):
                if k.value not in seen:
                    seen.add(k.value)
                    pairs.append((k, v))
    return yaml.MappingNode(node.tag, pairs, node.start_mark, node.end_mark)
