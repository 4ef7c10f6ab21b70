"""YAML with line marks: lean nodes composed from libyaml's events (PyYAML, MIT), positions kept."""

from __future__ import annotations

import re
import struct
from array import array

from topolint.inputs.source import InputError, SourceFile

# libyaml's own composer recurses in C (deep enough nesting crashed the process; the one here
# does not), and topolint's walkers recurse in Python: nesting is bounded before composing (a
# cheap scan of the text) and after (the composed graph). Real manifests nest a few dozen levels.
MAX_DEPTH = 100
_MAX_TEXT_NESTING = 1000
# Aliases share nodes; a walker that follows them visits a node once per path to it. The
# expanded tree is bounded, so "billion laughs" documents are TL001, not an hour of work.
MAX_EXPANDED_NODES = 200_000
_BRACKETS = re.compile(r"[\[\]{}]")


def compose_documents(source: SourceFile) -> list:
    import yaml

    _check_text_nesting(source)
    try:
        documents, aliased = _compose_all(source.text)
        for document, aliases in zip(documents, aliased):
            check_graph(source.path, document, aliases)  # no alias, no shared node: a tree
            if aliases:
                _keep_sequences(document)
        return documents
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else 0
        problem = exc.problem or exc.context or "syntax error"
        raise InputError(source.path, line, f"malformed YAML: {problem}", column) from None
    except yaml.YAMLError as exc:
        raise InputError(source.path, 1, f"malformed YAML: {exc}") from None


# Lean nodes (issue 20): PyYAML's nodes each carry a __dict__ and two Mark objects of six fields,
# several times the bytes of the text they stand for. These keep what the readers use (kind,
# value, tag, style, start and end line and column) in slots, with the same attribute names.
class _Mark:
    __slots__ = ("line", "column")

    def __init__(self, line: int, column: int):
        self.line, self.column = line, column


class _Node:
    """``line`` counts from 1 (the one int a Location of the node keeps); marks count from 0."""

    __slots__ = ()

    @property
    def start_mark(self) -> _Mark:
        return _Mark(self.line - 1, self.column)

    @property
    def end_mark(self) -> _Mark:
        return _Mark(self.end_line, self.end_column)


_PLAIN = (True, False)  # libyaml's implicit flags of an untagged plain scalar
_QUOTED = (False, True)  # and of an untagged quoted or block one


class ScalarNode(_Node):
    """Most scalars: plain, untagged, on one line, their text their value (the end column follows).
    The others are _WrittenScalar."""

    __slots__ = ("line", "column", "value")
    id = "scalar"
    style = ""  # plain, as libyaml reports it

    @property
    def tag(self) -> str:
        return _resolver().resolve(_yaml_nodes().ScalarNode, self.value, _PLAIN)

    @property
    def end_line(self) -> int:
        return self.line - 1

    @property
    def end_column(self) -> int:
        return self.column + len(self.value)


class _WrittenScalar(ScalarNode):
    """``_style`` is the style, or (style, tag, implicit flags) for a tagged scalar; ``_end`` is
    the end column, or (end line, end column) for a scalar over more than one line."""

    __slots__ = ("_style", "_end")

    @property
    def style(self):
        style = self._style
        return style[0] if type(style) is tuple else style

    @property
    def tag(self) -> str:
        style = self._style
        if type(style) is tuple:
            if style[1] is not None and style[1] != "!":
                return style[1]
            flags = style[2]
        else:
            flags = _QUOTED if style else _PLAIN
        return _resolver().resolve(_yaml_nodes().ScalarNode, self.value, flags)

    @property
    def end_line(self) -> int:
        end = self._end
        return end[0] if type(end) is tuple else self.line - 1

    @property
    def end_column(self) -> int:
        end = self._end
        return end[1] if type(end) is tuple else end


_HEAD = struct.Struct("<BIIII")  # a collection's _pos: the width of its items' places, then its own
_PAIRS = {1: struct.Struct("<BB"), 2: struct.Struct("<HH"), 4: struct.Struct("<II"), 5: struct.Struct("<ii")}
_CODES = ((0xFF, 1, "B"), (0xFFFF, 2, "H"), (0xFFFFFFFF, 4, "I"))  # 5: "i", an item before its collection


class _Collection(list, _Node):
    """A sequence or mapping is the list of its items (one object, not a node and a list). An
    item that is a plain ``ScalarNode`` is kept as its bare text and made a node when read
    (``item``): most of a manifest is such scalars, and a node object each cost more than its
    text. ``_pos`` holds the collection's line (from 1), column, end line (from 0) and end column
    (_HEAD), then the line and column of each item (0, 0 for an item kept as a node), its line as
    the lines after the collection's, in 1, 2 or 4 bytes each (the fewest that hold them all)."""

    __slots__ = ("_tag", "_pos")
    style = None
    __hash__ = object.__hash__  # a node, not a value: compared and hashed by identity
    __eq__ = object.__eq__
    __ne__ = object.__ne__

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at line {self.line}>"

    line = property(lambda self: _HEAD.unpack_from(self._pos)[1])
    column = property(lambda self: _HEAD.unpack_from(self._pos)[2])
    end_line = property(lambda self: _HEAD.unpack_from(self._pos)[3])
    end_column = property(lambda self: _HEAD.unpack_from(self._pos)[4])

    def item(self, at: int):
        """The node of item ``at``."""
        value = self[at]
        if type(value) is not str:
            return value
        node = ScalarNode()
        node.value = value
        pos = self._pos
        pair = _PAIRS[pos[0]]
        lines, node.column = pair.unpack_from(pos, _HEAD.size + pair.size * at)
        node.line = _HEAD.unpack_from(pos)[1] + lines
        return node

    def nodes(self) -> list:
        return [self.item(at) for at in range(len(self))]


class SequenceNode(_Collection):
    __slots__ = ()
    id = "sequence"

    @property
    def value(self) -> list:
        return self.nodes()

    @property
    def tag(self) -> str:
        return self._tag or "tag:yaml.org,2002:seq"


class MappingNode(_Collection):
    """``value`` is the list of (key, value) pairs, as PyYAML's; the node itself holds them as
    keys and values in turn (a tuple per pair would cost more than the two nodes' text)."""

    __slots__ = ()
    id = "mapping"

    @property
    def value(self) -> list:  # a view for readers outside this module
        nodes = self.nodes()
        return list(zip(nodes[0::2], nodes[1::2]))

    @property
    def tag(self) -> str:
        return self._tag or "tag:yaml.org,2002:map"


_NO_PLACE = (0, 0)  # the place of an item kept as a node (its own line and column)


def _packed(line: int, column: int, end, places: array) -> bytes:
    """A collection's _pos, from its items' places (lines after its own, columns)."""
    top = max(places, default=0)
    size, code = next((size, code) for bound, size, code in _CODES if top <= bound)
    if places and min(places) < 0:  # never seen from libyaml; kept exact all the same
        size, code = 5, "i"
    return _HEAD.pack(size, line, column, end.line, end.column) + (array(code, places).tobytes() if places else b"")

_MERGE = "tag:yaml.org,2002:merge"
# Scalars shared per parse (key names, kinds, labels repeat on every object): the first ones of
# a file, far more than the key names of a manifest, few enough that the table stays small beside
# the text when every word is new (an env map of names).
_SHARED_WORDS = 512


class _SharedSequenceNode(SequenceNode):
    """A sequence in a document with aliases: it may be read through more than one path, so
    ``each`` leaves its items in place."""

    __slots__ = ()


def _keep_sequences(root) -> None:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or node.id == "scalar":
            continue
        seen.add(id(node))
        if type(node) is SequenceNode:
            node.__class__ = _SharedSequenceNode
        stack += _children(node)


def each(node):
    """The items of a sequence node, for a reader that reads them once: in a document without
    aliases each item is let go of as the next is read, so the facts read from a long list do
    not sit beside the whole of its tree (issue 20: memory bounded by the input)."""
    if type(node) is not SequenceNode:
        yield from (node.value if is_seq(node) else ())
        return
    for at in range(len(node)):
        item = node.item(at)
        node[at] = None
        yield item
    node.clear()
    node._pos = node._pos[:_HEAD.size]


def _explicit(tag):
    return None if tag is None or tag == "!" else tag  # "!" is the non-specific tag: resolved as untagged


_resolver_instance = None


def _resolver():
    global _resolver_instance
    if _resolver_instance is None:
        import yaml

        _resolver_instance = yaml.resolver.Resolver()
    return _resolver_instance


def _yaml_nodes():
    import yaml.nodes

    return yaml.nodes


class _Chunks:
    """The text as a stream: libyaml given a str encodes the whole of it to UTF-8 first (another
    copy of the input for the length of the parse); read from a stream it takes a chunk at a time."""

    __slots__ = ("_text", "_at")
    name = "<unicode string>"  # what libyaml's errors call a str input

    def __init__(self, text: str):
        self._text, self._at = text, 0

    def read(self, size: int = -1) -> str:
        at = self._at
        end = len(self._text) if size < 0 else at + size
        self._at = end
        return self._text[at:end]


def _compose_all(text: str) -> list:
    """``yaml.compose_all`` (its errors included) into lean nodes, from libyaml's event stream,
    without recursion. Anchors are per document, as in PyYAML."""
    import yaml
    from yaml.composer import ComposerError
    from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(_Chunks(text))
    words: dict = {}
    documents, aliased = [], []  # each document, and whether it has an alias
    try:
        get_event = loader.get_event
        get_event()  # StreamStart
        while not loader.check_event(yaml.StreamEndEvent):
            get_event()  # DocumentStart
            anchors: dict = {}
            stack: list = []  # the open collections (each the list of its items)
            places: list = []  # and the places of their items, packed when they close (signed)
            lines: list = []  # and their lines
            root = None
            aliases = False
            last_line = -1
            while True:
                event = get_event()
                kind = type(event)
                if kind is AliasEvent:
                    aliases = True
                    node = anchors.get(event.anchor)
                    if node is None:
                        raise ComposerError(None, None, "found undefined alias", event.start_mark)
                elif kind is ScalarEvent or kind is SequenceStartEvent or kind is MappingStartEvent:
                    mark = event.start_mark
                    line = mark.line + 1
                    column = mark.column
                    anchor = event.anchor
                    if kind is ScalarEvent:
                        value = event.value
                        shared = words.get(value)
                        if shared is not None:
                            value = shared
                        elif len(words) < _SHARED_WORDS and len(value) <= 64:
                            words[value] = value
                        style = event.style
                        flags = event.implicit
                        end = event.end_mark
                        if (event.tag is None and style == "" and flags == _PLAIN and end.line + 1 == line
                                and end.column - column == len(value)):
                            if stack and anchor is None:  # the commonest item: its text and place
                                stack[-1].append(value)
                                places[-1].extend((line - lines[-1], column))
                                continue
                            node = ScalarNode()
                        else:
                            node = _WrittenScalar()
                            if event.tag is not None or flags != (_QUOTED if style else _PLAIN):
                                style = (style, event.tag, flags)
                            node._style = style
                            node._end = end.column if end.line + 1 == line else (end.line, end.column)
                        node.value = value
                        if line == last_line:
                            line = last_line  # the same int object for nodes on one line
                        last_line = line
                        node.line, node.column = line, column
                    else:
                        node = SequenceNode() if kind is SequenceStartEvent else MappingNode()
                        node._tag = _explicit(event.tag)
                        node._pos = _HEAD.pack(1, line, column, 0, 0)  # its end when it closes
                    if anchor is not None:
                        if anchor in anchors:
                            first = anchors[anchor]
                            first_mark = yaml.Mark("<unicode string>", 0, first.line - 1, first.column, None, None)
                            raise ComposerError("found duplicate anchor; first occurrence", first_mark,
                                                "second occurrence", mark)
                        anchors[anchor] = node
                elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                    node = stack.pop()
                    node._pos = _packed(lines.pop(), node.column, event.end_mark, places.pop())
                    if stack:
                        continue  # added to its parent when it opened
                    root = node
                    continue
                else:  # DocumentEnd
                    break
                if stack:
                    stack[-1].append(node)
                    places[-1].extend(_NO_PLACE)
                elif kind is AliasEvent or kind is ScalarEvent:
                    root = node
                if kind is SequenceStartEvent or kind is MappingStartEvent:
                    stack.append(node)
                    places.append(array("i"))
                    lines.append(line)
            if root is not None:
                documents.append(root)
                aliased.append(aliases)
        return documents, aliased
    finally:
        loader.dispose()


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
        stack, depths = [root], [1]  # two lists: no tuple per node
        while stack:
            node, depth = stack.pop(), depths.pop()
            if depth > MAX_DEPTH:
                raise _graph_error(path, node, f"nested deeper than {MAX_DEPTH} levels")
            if node.id != "scalar":
                if depth == MAX_DEPTH and node:
                    raise _graph_error(path, node.item(len(node) - 1), f"nested deeper than {MAX_DEPTH} levels")
                children = _children(node)  # the items kept as text are scalars: deep enough is checked
                stack += children
                depths += [depth + 1] * len(children)
        return
    expanded: dict[int, int] = {}  # node id -> size of its expanded tree
    on_path: set[int] = set()
    stack = [(root, 1, None)]
    while stack:
        node, depth, children = stack.pop()
        key = id(node)
        if children is not None:  # every child is done
            on_path.discard(key)
            texts = len(node) - len(children) if node.id != "scalar" else 0  # one node each
            expanded[key] = min(MAX_EXPANDED_NODES + 1, 1 + texts + sum(expanded[id(c)] for c in children))
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise _graph_error(path, node, "an alias refers to a node that contains it")
        if depth > MAX_DEPTH:
            raise _graph_error(path, node, f"nested deeper than {MAX_DEPTH} levels")
        children = _children(node)
        if depth == MAX_DEPTH and node.id != "scalar" and len(children) < len(node):  # an item kept as text is one level deeper
            last = max(at for at in range(len(node)) if type(node[at]) is str or id(node[at]) not in expanded)
            if type(node[last]) is str:
                raise _graph_error(path, node.item(last), f"nested deeper than {MAX_DEPTH} levels")
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
    """The items of a collection that are nodes (not those kept as text)."""
    return [] if node.id == "scalar" else [item for item in node if type(item) is not str]


def is_map(node) -> bool:
    return getattr(node, "id", None) == "mapping"


def is_seq(node) -> bool:
    return getattr(node, "id", None) == "sequence"


def scalar(node) -> str | None:
    return node.value if getattr(node, "id", None) == "scalar" else None


def get(node, key: str):
    if not is_map(node):
        return None
    for at in range(0, len(node), 2):
        name = node[at]
        if (name if type(name) is str else getattr(name, "value", None)) == key:
            return node.item(at + 1)
    return None


def items(node):
    if is_map(node):
        for at in range(0, len(node), 2):
            yield node.item(at), node.item(at + 1)


def where(node) -> tuple[int, int]:
    return node.line, node.column + 1


def written_scalar(node) -> tuple[int, int, str] | None:
    """Line, column and exact text of a one-line scalar as written: plain, or single- or
    double-quoted with no escape in it; None otherwise (block scalars, folded or escaped text)."""
    value = scalar(node)
    if value is None or node.line - 1 != node.end_line:
        return None
    quote = {None: "", "": "", "'": "'", '"': '"'}.get(node.style)  # plain: None or "" (libyaml)
    if quote is None or (quote and (quote in value or "\\" in value)):
        return None
    written = f"{quote}{value}{quote}" if quote else value  # plain: the value itself, not a copy
    if node.end_column - node.column != len(written):
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


def _is_merge_key(key) -> bool:
    return key.value == "<<" or key.tag == _MERGE  # "<<" untagged resolves to the merge tag, and only it


def merged(node):
    """A mapping with its YAML merge keys applied (``<<: *template``, ``<<: [*a, *b]``), as compose
    and Kubernetes' loaders apply them: the mapping's own keys win, then the merged mappings in
    order. The result is a mapping node of the same pairs (key and value nodes keep their marks,
    so a setting from a template points at the template's line)."""
    if not is_map(node) or not any(k == "<<" if type(k) is str else _is_merge_key(k) for k in node[0::2]):
        return node
    pairs = list(items(node))
    own = [(k, v) for k, v in pairs if not _is_merge_key(k)]
    seen = {k.value for k, _ in own}
    flat = [part for pair in own for part in pair]
    for key, value in pairs:
        if not _is_merge_key(key):
            continue
        for source in (value.value if is_seq(value) else [value]):
            for k, v in (items(merged(source)) if is_map(source) else []):
                if k.value not in seen:
                    seen.add(k.value)
                    flat += (k, v)
    result = MappingNode(flat)
    result._tag = node._tag
    result._pos = _HEAD.pack(1, *_HEAD.unpack_from(node._pos)[1:]) + _PAIRS[1].pack(*_NO_PLACE) * len(flat)
    return result
