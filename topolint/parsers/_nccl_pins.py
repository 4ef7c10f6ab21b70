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
  ``--extra-index-url``, ``-f``, uv's ``--torch-backend``) or with a local version (``+cu121``) is
  not PyPI's wheel: its NCCL is unknown, never taken from the PyPI row;
- a package whose published metadata requires torch (data/nccl_versions/torch_dependents.tsv:
  ``vllm==0.6.3`` requires ``torch==2.4.0``, ``accelerate`` a range): it pulls the torch wheel in,
  with that torch's NCCL when the row pins it exactly, else of unknown version. One ``pip install``
  is one resolution: its own ``torch==X`` is the torch installed (a dependent that disagrees fails
  the install), a dependent's exact pin settles an unpinned ``torch`` beside it, and
  ``--no-deps`` pulls nothing. A package the table does not list pulls nothing.

An install of the package without an exact version is a source of unknown version: the job
loads whatever was newest when the image was built.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from topolint.model.nccl_sources import NcclSource, nccl_version_text, pulled_torch, torch_nccl

_WRAPPERS = {"sudo", "command", "time", "nohup", "exec", "builtin", "eval"}
_APT = {"apt-get", "apt", "aptitude"}
_DNF = {"yum", "dnf", "microdnf", "tdnf"}
_CONDA = {"conda", "mamba", "micromamba"}
_PIP = re.compile(r"pip(?:\d+(?:\.\d+)?)?$")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?$")
_APT_PACKAGE = re.compile(r"(libnccl2|libnccl-dev)(?:=(\S+))?$")
_DNF_PACKAGE = re.compile(r"libnccl(?:-devel|-static)?(?:-(2\.\d+\.\d+\S*))?$")
_CONDA_PACKAGE = re.compile(r"(?:[\w.-]+::)?nccl(?:(==?|>=|<=|>|<|~=|!=)(\S*))?$")
# A requirement's tail: its marker, a comment, pip-compile's ``--hash=...`` options and line continuation.
_TAIL = r"\s*(?:[;,#\\].*|--\S.*)?$"
_PIP_REQUIREMENT = re.compile(r"(?P<name>nvidia-nccl-cu1[123]|torch)\s*(?:(?P<op>===?|>=|<=|~=|!=|>|<)\s*(?P<ver>[^\s;,#]+))?"
                              + _TAIL, re.I)
# Any other requirement (PEP 508 without the marker): a package that may pull torch in.
_PIP_PACKAGE = re.compile(r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]*)\])?\s*"
                          r"(?:(?P<op>===?|>=|<=|~=|!=|>|<)\s*(?P<ver>[^\s;,#\\]+)|@\s*\S+)?" + _TAIL)
# pip/uv install options whose value is the next word (a package name after --no-binary is no install).
_VALUE_OPTIONS = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
                  "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--platform",
                  "--python-version", "--implementation", "--abi", "--src", "--upgrade-strategy", "--progress-bar",
                  "--only-binary", "--no-binary", "-C", "--config-settings", "--global-option", "--report", "--log",
                  "--cache-dir", "--trusted-host", "--proxy", "--timeout", "--retries", "--exists-action", "--cert",
                  "--client-cert", "--python", "-p", "--root-user-action", "--use-feature", "--use-deprecated",
                  "--keyring-provider", "--group", "--torch-backend", "--index-strategy", "--resolution",
                  "--prerelease", "--override", "--exclude-newer", "--extra", "--index"}
_ML_SUBCOMMANDS = {"unload", "del", "rm", "list", "avail", "av", "purge", "spider", "save", "restore", "swap", "sw",
                   "show", "help", "reset", "refresh", "use", "unuse"}
_INDEX_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--torch-backend", "--index"}
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
        self.exact_torch: set[NcclSource] = set()  # the pip-torch sources written torch==X
        self.dependent_pins: dict[NcclSource, str] = {}  # a pip-dependent source -> the torch it pins

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
                unknown = ""
                source = NcclSource("pip-torch", word, loc, scope, versions, detail=detail, via=via)
        if unknown:
            source = NcclSource("pip-torch", word, loc, scope, unknown=unknown, via=via)
        if version_text:
            self.exact_torch.add(source)
        self.sources.append(source)

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
        start = len(self.sources)
        for option, value in _option_values(args, ("-r", "--requirement", "-c", "--constraint")):
            self._requirements(value, scope, depth, index, constraint=option in ("-c", "--constraint"))
        for i, word in enumerate(args):
            if word.startswith("-") or (i and args[i - 1] in _VALUE_OPTIONS):
                continue
            match = _PIP_REQUIREMENT.match(word) or _PIP_PACKAGE.match(word)
            if match:
                self._requirement(match, word, scope, None, via or "", index)
        self._one_resolution(start, no_deps="--no-deps" in args)

    def _requirement(self, match: re.Match, word: str, scope: str, loc, via: str, index: str,
                     constraint: bool = False) -> None:
        op, version = match.group("op"), match.group("ver")
        exact = version if op in ("==", "===") else None
        name = match.group("name").lower()
        if match.re is _PIP_PACKAGE:
            if not constraint:  # a constraint installs nothing
                self._dependent(match, word, scope, loc, via, index, exact)
        elif name == "torch":
            self._add("pip-torch", word, scope, exact, loc=loc, via=via, torch_index=index)
        else:
            self._add("pip-nccl", word, scope, exact, loc=loc, via=via)

    def _dependent(self, match: re.Match, word: str, scope: str, loc, via: str, index: str, exact: str | None) -> None:
        """A package that may pull torch in (data/nccl_versions/torch_dependents.tsv)."""
        if exact and ("$" in exact or "*" in exact):
            exact = None
        extras = frozenset(e.strip() for e in (match.group("extras") or "").split(",") if e.strip())
        pulls, torch, row, rowed = pulled_torch(match.group("name"), exact, extras)
        if not pulls:
            return
        versions, detail, unknown = (), "", ""
        if not exact:
            unknown = f"{word}: no exact version, and {row}: the torch it pulls in is unknown"
        elif not rowed:
            unknown = f"{word}: no row of this release, and {row}: the torch it pulls in is unknown"
        elif not torch:
            unknown = f"{row}: pip installs the newest torch that fits"
        elif index:
            unknown = f"{row}, installed with {index}: not PyPI's torch wheel, whose pin is the one cited"
        else:
            versions, detail, unknown = torch_nccl(torch)
            detail, unknown = (f"{row}; {detail}", "") if versions else ("", f"{row}; {unknown}")
        source = NcclSource("pip-dependent", word, loc or self.locate(word), scope, versions, detail=detail,
                            unknown=unknown, via=via)
        if versions:
            self.dependent_pins[source] = torch
        self.sources.append(source)

    def _one_resolution(self, start: int, no_deps: bool) -> None:
        """The sources of one pip command from ``start`` are one resolution: its own ``torch==X`` is
        the torch it installs (a dependent's pin that disagrees fails it), a dependent's exact pin
        settles an unpinned torch beside it, ``--no-deps`` installs no dependency. The dependents
        come first so that the command's NCCL wheel pin (or a file not read) still wins."""
        read = self.sources[start:]
        dependents = [s for s in read if s.kind == "pip-dependent"]
        pins = {self.dependent_pins[s] for s in dependents if s in self.dependent_pins}
        settled: set[NcclSource] = set()  # an unpinned torch beside a dependent that pins it
        if no_deps or any(s in self.exact_torch for s in read):
            kept = []
        elif len(pins) > 1:
            said = " and ".join(sorted(f"torch=={p}" for p in pins))
            kept = [replace(s, versions=(), detail="", unknown=f"{s.written}: the command's packages require {said}: "
                            "pip cannot install them together") for s in dependents]
        elif pins:
            kept = [s for s in dependents if s in self.dependent_pins]
            settled = {s for s in read if s.kind == "pip-torch"}
        else:
            kept = dependents
        if dependents:
            self.sources[start:] = kept + [s for s in read if s.kind != "pip-dependent" and s not in settled]
        self.exact_torch.clear()
        self.dependent_pins.clear()

    def _requirements(self, path: str, scope: str, depth: int, index: str, constraint: bool = False) -> None:
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
                self._requirements(nested, scope, depth + 1, index, constraint or words[0] in ("-c", "--constraint"))
                continue
            if words[0].split("=", 1)[0] in _INDEX_OPTIONS or words[0].startswith("-i"):
                index = index or (text if "pypi.org" not in text else "")
                continue
            match = _PIP_REQUIREMENT.match(text) or _PIP_PACKAGE.match(text)
            if match:
                written = re.split(r";|\s--|\s\\", text, maxsplit=1)[0].strip()
                self._requirement(match, written, scope, loc_of(number), via, index, constraint)

    def _environment_file(self, path: str, scope: str) -> None:
        opened = self.open_file(path, f"conda env -f {path} at {self.at.path}:{self.at.line}")
        if opened is None:
            self.sources.append(NcclSource("pip-file", f"conda env -f {path}", self.at, scope,
                                           unknown=f"conda env -f {path}: the file is not read here"))
            return
        display, lines, via, loc_of = opened
        start, pip_indent = len(self.sources), None  # the `- pip:` item's indentation, in its section
        for number, text in enumerate(lines, 1):
            item = re.match(r"(\s*)-\s*['\"]?([^'\"#]+?)['\"]?\s*(?:#.*)?$", text)
            if not item:
                continue
            indent, spec = len(item.group(1)), item.group(2).replace(" ", "")
            if pip_indent is not None and indent <= pip_indent:
                pip_indent = None
            if spec == "pip:":
                pip_indent = indent
                continue
            in_pip = pip_indent is not None
            conda = None if in_pip else _CONDA_PACKAGE.match(spec)
            if conda:
                op, version = conda.group(1), conda.group(2)
                self._add("conda", spec, scope, version.split("=", 1)[0] if op in ("=", "==") else None,
                          loc=loc_of(number), via=via)
                continue
            pip = _PIP_REQUIREMENT.match(spec) or (_PIP_PACKAGE.match(spec) if in_pip else None)
            if pip:
                self._requirement(pip, spec, scope, loc_of(number), via, "")
        self._one_resolution(start, no_deps=False)  # the pip section is one pip install


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
