"""NCCL version sources in one shell command, as the shell and Dockerfile parsers split it.

Read (each word keeps its line and column through ``locate``):

- ``apt-get/apt/aptitude install libnccl2=2.21.5-1+cuda12.4 libnccl-dev=...``;
- ``yum/dnf/microdnf/tdnf install libnccl-2.21.5-1+cuda12.4 libnccl-devel-...``;
- ``conda/mamba/micromamba install|create nccl=2.18.3[.1]``, ``conda env create|update -f FILE``
  (its ``- nccl=...`` dependencies and pip section);
- ``spack install|load|add nccl@2.18.3``; ``module load|add nccl/2.18.3``, ``ml nccl/2.18.3``;
- ``pip install`` (``pip3``, ``python -m pip``, ``uv pip``): ``nvidia-nccl-cu11|cu12|cu13==V``,
  ``torch==V`` (its wheel's pin, from data/nccl_versions/torch_wheels.tsv), and the same lines in
  the files of ``-r``/``-c`` (followed 4 deep; one that cannot be read is a source of unknown
  version: it may pin torch or an NCCL wheel). A torch from another index (``--index-url``,
  ``--extra-index-url``, ``-f``) or with a local version (``+cu121``) is not PyPI's wheel: its
  NCCL is unknown, never taken from the PyPI row.

An install of the package without an exact version is a source of unknown version: the job
loads whatever was newest when the image was built.
"""

from __future__ import annotations

import os
import re

from topolint.model.nccl_sources import NcclSource, nccl_version_text, torch_nccl

_WRAPPERS = {"sudo", "command", "time", "nohup", "exec", "builtin", "eval"}
_APT = {"apt-get", "apt", "aptitude"}
_DNF = {"yum", "dnf", "microdnf", "tdnf"}
_CONDA = {"conda", "mamba", "micromamba"}
_PIP = re.compile(r"pip(?:\d+(?:\.\d+)?)?$")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?$")
_APT_PACKAGE = re.compile(r"(libnccl2|libnccl-dev)(?:=(\S+))?$")
_DNF_PACKAGE = re.compile(r"libnccl(?:-devel|-static)?(?:-(2\.\d+\.\d+\S*))?$")
_CONDA_PACKAGE = re.compile(r"(?:[\w.-]+::)?nccl(?:(==?|>=|<=|>|<|~=|!=)(\S*))?$")
_PIP_REQUIREMENT = re.compile(r"(?P<name>nvidia-nccl-cu1[123]|torch)\s*(?:(?P<op>===?|>=|<=|~=|!=|>|<)\s*(?P<ver>[^\s;,#]+))?"
                              r"\s*(?:[;,#].*)?$", re.I)
_ML_SUBCOMMANDS = {"unload", "del", "rm", "list", "avail", "av", "purge", "spider", "save", "restore", "swap", "sw",
                   "show", "help", "reset", "refresh", "use", "unuse"}
_INDEX_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links"}
MAX_REQUIREMENT_DEPTH = 4


class PinReader:
    """Reads the sources of commands into ``sources``. ``locate(word)`` gives a word's Location;
    ``open_file(path, via)`` returns (display path, lines) of a file a command names, or None;
    ``notes`` collects what could not be read (for --verbose)."""

    def __init__(self, sources: list, locate, open_file, notes: list[str] | None = None):
        self.sources = sources
        self.locate = locate
        self.open_file = open_file
        self.notes = notes if notes is not None else []

    def command(self, words: list[str], scope: str) -> None:
        words = _unwrapped(words)
        if not words:
            return
        head = os.path.basename(words[0])
        self.at = self.locate(words[0])
        if head in _APT and "install" in words[1:]:
            self._packages(words, scope, "apt", _APT_PACKAGE)
        elif head in _DNF and "install" in words[1:]:
            self._packages(words, scope, "dnf", _DNF_PACKAGE)
        elif head in _CONDA:
            self._conda(words, scope)
        elif head == "spack" and len(words) > 1 and words[1] in ("install", "load", "add"):
            for word in words[2:]:
                if word == "nccl" or word.startswith("nccl@") or word.startswith("nccl%") or word.startswith("nccl+"):
                    version = re.match(r"nccl@=?([\d.]+)", word)
                    self._add("spack", word, scope, version.group(1) if version else None)
        elif head in ("module", "ml"):
            args = words[1:]
            if args and args[0] in ("load", "add", "try-load"):
                args = args[1:]
            elif head == "module" or (args and (args[0] in _ML_SUBCOMMANDS or args[0].startswith("-"))):
                args = []  # module list/unload/...; `ml -nccl` unloads
            if args:
                for word in args:
                    if word == "nccl" or word.startswith("nccl/"):
                        self._add("module", word, scope, word.split("/", 1)[1].split("-", 1)[0] if "/" in word else None)
        elif _PIP.match(head) or (_PYTHON.match(head) and words[1:3] == ["-m", "pip"]) or (head == "uv" and words[1:2] == ["pip"]):
            start = 1 if _PIP.match(head) else 3 if _PYTHON.match(head) else 2
            if start < len(words) and words[start] == "install":
                self._pip(words[start + 1:], scope, None, 0)

    # ---- forms ----------------------------------------------------------------------------------
    def _add(self, kind: str, word: str, scope: str, version_text: str | None, loc=None, via: str = "",
             torch_index: str = "") -> None:
        loc = loc or self.locate(word)
        if kind == "pip-torch":
            self._torch(word, scope, version_text, loc, via, torch_index)
            return
        version = nccl_version_text(version_text) if version_text and "$" not in version_text else None
        if version is None:
            why = f"{word}: no exact version" if not version_text or "$" in version_text or "*" in version_text \
                else f"{word}: {version_text!r} is not an NCCL 2.x version"
            self.sources.append(NcclSource(kind, word, loc, scope, unknown=why + " (the newest when it was installed)"
                                           if not version_text else why, via=via))
            return
        self.sources.append(NcclSource(kind, word, loc, scope, (version,), detail=f"{word} installs NCCL {version}",
                                       via=via))

    def _torch(self, word: str, scope: str, version_text: str | None, loc, via: str, index: str) -> None:
        if not version_text:
            unknown = f"{word}: no exact version (the newest when it was installed)"
        elif index:
            unknown = f"{word} installed with {index}: not PyPI's wheel, whose pin is the one cited"
        elif "+" in version_text or "$" in version_text or "*" in version_text:
            unknown = f"{word}: not a PyPI release version"
        else:
            versions, detail, unknown = torch_nccl(version_text)
            if versions:
                self.sources.append(NcclSource("pip-torch", word, loc, scope, versions, detail=detail, via=via))
                return
        self.sources.append(NcclSource("pip-torch", word, loc, scope, unknown=unknown, via=via))

    def _packages(self, words: list[str], scope: str, kind: str, pattern: re.Pattern) -> None:
        for word in words[words.index("install") + 1:]:
            match = pattern.match(word)
            if match:
                self._add(kind, word, scope, match.groups()[-1])

    def _conda(self, words: list[str], scope: str) -> None:
        args = words[1:]
        if args[:1] == ["env"] and args[1:2] and args[1] in ("create", "update"):
            for option, value in _option_values(args[2:], ("-f", "--file")):
                self._environment_file(value, scope)
            return
        if not args or args[0] not in ("install", "create", "update"):
            return
        for word in args[1:]:
            match = _CONDA_PACKAGE.match(word)
            if match:
                op, version = match.group(1), match.group(2)
                self._add("conda", word, scope, version.split("=", 1)[0] if op in ("=", "==") else None)

    def _pip(self, args: list[str], scope: str, via: str | None, depth: int, loc=None) -> None:
        index = next((f"{option} {value}" for option, value in _option_values(args, tuple(_INDEX_OPTIONS))
                      if "pypi.org" not in value), "")
        for option, value in _option_values(args, ("-r", "--requirement", "-c", "--constraint")):
            self._requirements(value, scope, depth, index)
        for word in args:
            match = _PIP_REQUIREMENT.match(word)
            if match and not word.startswith("-"):
                self._requirement(match, word, scope, None, via or "", index)

    def _requirement(self, match: re.Match, word: str, scope: str, loc, via: str, index: str) -> None:
        op, version = match.group("op"), match.group("ver")
        exact = version if op in ("==", "===") else None
        if match.group("name").lower() == "torch":
            self._add("pip-torch", word, scope, exact, loc=loc, via=via, torch_index=index)
        else:
            self._add("pip-nccl", word, scope, exact, loc=loc, via=via)

    def _requirements(self, path: str, scope: str, depth: int, index: str) -> None:
        if depth >= MAX_REQUIREMENT_DEPTH:
            self.notes.append(f"pip -r {path}: more than {MAX_REQUIREMENT_DEPTH} nested requirement files: not followed")
            return
        opened = self.open_file(path, f"pip -r {path} at {self.at.path}:{self.at.line}")
        if opened is None:  # it may pin torch or an NCCL wheel: what the environment loads is unknown
            self.sources.append(NcclSource("pip-file", f"pip install -r {path}", self.at, scope,
                                           unknown=f"pip install -r {path}: the file is not read here"))
            return
        display, lines, via, loc_of = opened
        for number, text in enumerate(lines, 1):
            text = text.split(" #", 1)[0].strip()
            if not text or text.startswith("#"):
                continue
            words = text.split()
            if words[0] in ("-r", "--requirement", "-c", "--constraint") and len(words) > 1:
                nested = os.path.join(os.path.dirname(path), words[1])
                self._requirements(nested, scope, depth + 1, index)
                continue
            if words[0].split("=", 1)[0] in _INDEX_OPTIONS or words[0].startswith("-i"):
                index = index or (text if "pypi.org" not in text else "")
                continue
            match = _PIP_REQUIREMENT.match(text)
            if match:
                self._requirement(match, text.split(";", 1)[0].strip(), scope, loc_of(number), via, index)

    def _environment_file(self, path: str, scope: str) -> None:
        opened = self.open_file(path, f"conda env -f {path} at {self.at.path}:{self.at.line}")
        if opened is None:
            self.sources.append(NcclSource("pip-file", f"conda env -f {path}", self.at, scope,
                                           unknown=f"conda env -f {path}: the file is not read here"))
            return
        display, lines, via, loc_of = opened
        for number, text in enumerate(lines, 1):
            item = re.match(r"\s*-\s*['\"]?([^'\"#]+?)['\"]?\s*(?:#.*)?$", text)
            if not item:
                continue
            spec = item.group(1).replace(" ", "")
            conda = _CONDA_PACKAGE.match(spec)
            if conda:
                op, version = conda.group(1), conda.group(2)
                self._add("conda", spec, scope, version.split("=", 1)[0] if op in ("=", "==") else None,
                          loc=loc_of(number), via=via)
                continue
            pip = _PIP_REQUIREMENT.match(spec)
            if pip:
                self._requirement(pip, spec, scope, loc_of(number), via, "")


def pin_command(words: list[str]) -> bool:
    """Whether ``words`` may install or load an NCCL (a cheap test before reading them)."""
    words = _unwrapped(words)
    head = os.path.basename(words[0]) if words else ""
    return head in _APT or head in _DNF or head in _CONDA or head in ("spack", "module", "ml", "uv") \
        or bool(_PIP.match(head)) or (bool(_PYTHON.match(head)) and words[1:3] == ["-m", "pip"])


def _unwrapped(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and (words[i] in _WRAPPERS or re.match(r"[A-Za-z_]\w*=", words[i])
                              or (i and words[i - 1] == "sudo" and words[i].startswith("-"))):
        i += 1
    return list(words[i:])


def _option_values(args: list[str], names: tuple[str, ...]):
    """(option, value) of ``-r FILE``, ``-rFILE``, ``--requirement=FILE`` words."""
    for i, word in enumerate(args):
        for name in names:
            if word == name and i + 1 < len(args):
                yield name, args[i + 1]
            elif name.startswith("--") and word.startswith(name + "="):
                yield name, word[len(name) + 1:]
            elif not name.startswith("--") and word.startswith(name) and len(word) > len(name) and word[len(name)] != "-":
                yield name, word[len(name):]


def file_opener(real_folder: str | None, shown_folder: str, copies: dict[str, str] | None = None, notes=None):
    """``open_file`` for PinReader: a file a command names, relative to ``real_folder`` (the
    script's folder, a Dockerfile's build context), or the build-context file a Dockerfile
    COPYs to that name (``copies``: basename in the image -> path in the context). Returns
    (display path, lines, via, line -> Location) or None (a note says why)."""
    from topolint.inputs.source import InputError, read_source
    from topolint.model.facts import Location, build

    read: dict[str, object] = {}  # one read per file, however many commands name it

    def open_file(path: str, how: str):
        if path not in read:
            read[path] = _open(path, how)
        found = read[path]
        return found if found is None else (*found[:2], how, found[3])

    def _open(path: str, how: str):
        if real_folder is None or "$" in path:
            return None
        relative = (copies or {}).get(os.path.basename(path)) if os.path.isabs(path) or (copies or {}).get(
            os.path.basename(path)) else path
        if relative is None or os.path.isabs(relative):
            return None
        real = os.path.join(real_folder, relative)
        shown = os.path.normpath(os.path.join(shown_folder, relative)).replace(os.sep, "/")
        if not os.path.isfile(real):
            if notes is not None:
                notes.append(f"{how}: {shown} is not a file here: its NCCL pins are not read")
            return None
        try:
            source = read_source(shown, real)
        except InputError as exc:
            if notes is not None:
                notes.append(f"{how}: {exc.message}")
            return None
        return shown, source.text.split("\n"), how, lambda number: build(Location, path=shown, line=number, column=1)

    return open_file
