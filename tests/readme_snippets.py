"""Code blocks of README.md and docs/*.md, with the snippet markers that say how each is tested.

The convention (docs/snippets.md): every fenced block but a ``text`` one (an output, or a format
shown) has an HTML comment on the line before it (blank lines between are allowed):

    <!-- snippet: files=topo.xml=fixtures/samples/dgx-like-2socket-dump.xml exit=1 -->
    <!-- snippet: no-run (needs a Slurm cluster) -->
    <!-- snippet: tested-by=tests/test_setup.py::test_python_api_snippet_runs_as_written -->
    <!-- snippet: same-as=fixtures/site-templates/site_env_required/rules/SITE101.toml -->

``tests/test_snippets.py`` runs the first kind, checks the syntax of the others and fails on a
block without a marker, so docs written later are bound too.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Blocks that show output or a format rather than something to run or write: no marker needed.
OUTPUT_LANGUAGES = {"text", "mermaid", "dot", "svg"}
KEYS = {"files", "exit", "as", "run", "standins", "output", "tested-by", "same-as", "lint"}
_MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(?P<indent> {0,6})(?P<fence>```+)(?P<lang>[\w+-]*)\s*$")


@dataclass
class Snippet:
    document: str  # README.md or docs/NAME.md
    line: int  # the line of its opening fence
    lang: str
    body: str
    section: str  # the heading it is under
    marker: str | None = None  # the text of its marker comment; None: unmarked
    kind: str = ""  # run, no-run, tested-by, same-as ("" when unmarked)
    keys: dict[str, str] = field(default_factory=dict)
    reason: str = ""  # the "(why)" of a marker
    output: str | None = None  # the ``text`` block shown as its output (run snippets)
    problem: str = ""  # a marker that does not parse

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"


def documents() -> list[Path]:
    """README.md and docs/*.md (docs/rules/ is generated from the rule definitions and tested by tests/test_docs.py)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parse_marker(snippet: Snippet, text: str) -> None:
    snippet.marker = text
    reason = re.search(r"\((.*)\)\s*$", text, re.S)
    if reason:
        snippet.reason = reason.group(1).strip()
        text = text[:reason.start()].strip()
    if text == "no-run":
        snippet.kind = "no-run"
        if not snippet.reason:
            snippet.problem = "no-run needs its reason: <!-- snippet: no-run (why) -->"
        return
    try:
        words = shlex.split(text)
    except ValueError as exc:
        snippet.problem = f"marker does not parse: {exc}"
        return
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or name not in KEYS:
            snippet.problem = f"unknown marker word {word!r} (keys: {', '.join(sorted(KEYS))}; or no-run (why))"
            return
        snippet.keys[name] = value
    snippet.kind = "tested-by" if "tested-by" in snippet.keys else "same-as" if "same-as" in snippet.keys else "run"


def snippets_of(path: Path) -> list[Snippet]:
    lines = path.read_text(encoding="utf-8").splitlines()
    document = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    found: list[Snippet] = []
    section, index = "", 0
    while index < len(lines):
        line = lines[index]
        heading = re.match(r"#+ (.*)", line)
        if heading:
            section = heading.group(1).strip()
        fence = _FENCE.match(line)
        if not fence:
            index += 1
            continue
        indent, ticks = fence["indent"], fence["fence"]
        end = index + 1
        while end < len(lines) and not (lines[end].startswith(indent + ticks) and not lines[end].strip("`").strip()):
            end += 1
        body = "".join(text[len(indent):] + "\n" if text.startswith(indent) else text.lstrip() + "\n"
                       for text in lines[index + 1:end])
        snippet = Snippet(document, index + 1, fence["lang"], body, section)
        above = index - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        marker = _MARKER.match(lines[above]) if above >= 0 else None
        if marker:
            _parse_marker(snippet, marker.group(1))
        found.append(snippet)
        index = end + 1
    _attach_outputs(found, lines)
    return found


def _attach_outputs(found: list[Snippet], lines: list[str]) -> None:
    """A run snippet's output is the ``text`` block right after it, with only prose between (no heading)."""
    for snippet, after in zip(found, found[1:]):
        if snippet.kind != "run" or after.lang != "text" or snippet.keys.get("output") == "no":
            continue
        between = lines[snippet.line:after.line - 1]
        closing = next(i for i, text in enumerate(between) if text.strip().startswith("```"))
        if not any(re.match(r"#+ ", text) or _MARKER.match(text) for text in between[closing + 1:]):
            snippet.output = after.body


def all_snippets() -> list[Snippet]:
    return [snippet for path in documents() for snippet in snippets_of(path)]


def snippets_for(test: str) -> list[str]:
    """The bodies of the snippets marked ``tested-by=TEST`` (``tests/test_x.py::test_name``)."""
    bodies = [s.body for s in all_snippets() if s.keys.get("tested-by") == test]
    assert bodies, f"no snippet in README.md or docs/ is marked tested-by={test}"
    return bodies


def blocks(section: str, lang: str, document: str = "README.md") -> list[str]:
    """The ``lang`` code blocks under the heading ``section`` (up to the next heading of its level)."""
    lines = (ROOT / document).read_text(encoding="utf-8").splitlines(keepends=True)
    found, level, fenced, body = False, 0, False, []
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"(#+) (.*)\n", line) if not fenced else None
        if heading and found and len(heading.group(1)) <= level:
            break
        if heading and heading.group(2) == section:
            found, level = True, len(heading.group(1))
        elif found:
            body.append(line)
    assert found, f"{document} has no section {section!r}"
    return re.findall(rf"^```{lang}\n(.*?)^```", "".join(body), re.M | re.S)
