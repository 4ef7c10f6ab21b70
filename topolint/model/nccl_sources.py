"""Where a job's NCCL comes from: the version sources the config parsers read (package pins,
wheels, modules, base images, a log's version line) and the cited tables that turn a package or
an image into NCCL versions (topolint/data/nccl_versions/*.tsv, one citation per row).

A source is a fact with its file and line. ``versions`` are the NCCL versions it may bring: one
for a pin, several for an image tag NVIDIA re-pushed with newer NCCL packages, none when it
cannot be known (an unpinned install, an NGC tag without a cited release-notes row, an image
nothing is known about); ``unknown`` then says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from topolint.model.facts import Location
from topolint.model.numbers import decimal

DATA = Path(__file__).resolve().parent.parent / "data" / "nccl_versions"

# Kinds and the layer of the job each one fills (nccl_in_force.py decides which layer a job loads).
SYSTEM = "system"  # the distribution's libnccl (apt/dnf, an image's own packages)
LIBRARY_PATH = "library-path"  # LD_LIBRARY_PATH set by an environment module or spack load
ENVIRONMENT = "environment"  # the Python environment's NCCL (pip wheels, conda)
IMAGE = "image"  # a base image: fills the layers it ships
STAGE = "stage"  # FROM <an earlier stage>, COPY --from=<stage> of NCCL files, a compose service's build
RUNNING = "running"  # a log line printed by the NCCL that ran
LAYERS = {"apt": SYSTEM, "dnf": SYSTEM, "module": LIBRARY_PATH, "spack": LIBRARY_PATH,
          "pip-nccl": ENVIRONMENT, "pip-torch": ENVIRONMENT, "conda": ENVIRONMENT, "pip-file": ENVIRONMENT,
          "pip-dependent": ENVIRONMENT,
          "image": IMAGE, "stage": STAGE, "copy-stage": STAGE, "build": STAGE, "log": RUNNING}
KIND_WORDS = {"apt": "apt pin", "dnf": "dnf/yum pin", "module": "module load", "spack": "spack load",
              "pip-nccl": "pip wheel pin", "pip-torch": "pip torch wheel", "conda": "conda pin",
              "pip-file": "requirements file", "pip-dependent": "pip torch dependency",
              "image": "base image", "stage": "stage", "copy-stage": "COPY --from", "build": "build",
              "log": "NCCL version line"}
# What an image brings besides its system NCCL.
NO_FRAMEWORK = "none"  # OS, language and nvidia/cuda images
SYSTEM_LINKED = "system-linked"  # NGC framework containers: their framework loads the system NCCL
UNKNOWN_IMAGE = "unknown"  # anything else: its framework (if any) may load an NCCL of its own


@dataclass(frozen=True, eq=False)  # one object per place read: identity is equality
class NcclSource:
    kind: str  # a key of LAYERS
    written: str  # as written: "libnccl2=2.12.12-1+cuda11.6", "nvidia/cuda:12.2.2-devel-ubuntu22.04"
    loc: Location
    scope: str  # the Dockerfile stage, the shell scope, the container
    versions: tuple[str, ...] = ()  # NCCL versions it may bring, oldest first; () unknown
    detail: str = ""  # the table row (and its citation) that gave ``versions``
    unknown: str = ""  # why ``versions`` is empty
    framework: str = NO_FRAMEWORK  # images only: NO_FRAMEWORK, SYSTEM_LINKED or UNKNOWN_IMAGE
    ref: str = ""  # kind stage / copy-stage: the stage it names; build: "Dockerfile path#target stage"
    via: str = ""  # how it reached this file: "requirements.txt:3 (pip install -r at Dockerfile:5)"
    word: str = ""  # what the label calls it instead of KIND_WORDS: "image nvidia/cuda:12.4.1-devel-ubuntu22.04"

    @property
    def layer(self) -> str:
        return LAYERS[self.kind]

    def where(self) -> str:
        return f"{self.loc.path}:{self.loc.line}"

    def label(self) -> str:
        """``Dockerfile:2 apt pin``, ``deploy.yaml:12 image nvidia/cuda:...`` (what the finding cites
        as the version's origin)."""
        return f"{self.where()} {self.word or KIND_WORDS[self.kind]}"


# ---- versions as packages write them ------------------------------------------------------------
_NUMBERS = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def nccl_version_text(text: str) -> str | None:
    """The NCCL release in a package version: ``2.12.12-1+cuda11.6`` (apt), ``2.21.5.1`` (conda's
    build number), ``2.26.2.post1`` (pip) are 2.12.12, 2.21.5, 2.26.2; None for anything else."""
    match = _NUMBERS.match(text or "")
    if not match or match.group(1) != "2":
        return None
    rest = text[match.end():]
    if rest and not re.fullmatch(r"(?:-\d+(?:\+cuda[\d.]+)?|\.\d+|\.post\d+|\+cuda[\d.]+)(?:\.\*)?", rest):
        return None
    return ".".join(match.groups())


# ---- cited tables -------------------------------------------------------------------------------
def _rows(name: str) -> list[list[str]]:
    rows = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        rows.append(line.split("\t"))
    return rows[1:]  # the header


@lru_cache(maxsize=1)
def torch_wheels() -> dict[str, tuple[str, str, str]]:
    """torch version -> (nvidia-nccl package, NCCL version or "-", citation)."""
    return {row[0]: (row[1], row[2], row[4]) for row in _rows("torch_wheels.tsv")}


@lru_cache(maxsize=1)
def cuda_images() -> dict[tuple[str, str], tuple[tuple[str, ...], str]]:
    """(CUDA version, OS word without dots) -> (NCCL versions, citations)."""
    return {(row[0], row[1]): (tuple(row[2].split(",")), row[3]) for row in _rows("cuda_images.tsv")}


@lru_cache(maxsize=1)
def ngc_containers() -> dict[tuple[str, str], tuple[str, str]]:
    """(framework, YY.MM) -> (NCCL version, citation)."""
    return {(row[0], row[1]): (row[2], row[3]) for row in _rows("ngc_containers.tsv")}


@lru_cache(maxsize=1)
def plain_images() -> dict[str, str]:
    return {row[0]: row[1] for row in _rows("plain_images.tsv")}


def torch_nccl(version: str) -> tuple[tuple[str, ...], str, str]:
    """(NCCL versions, detail, why unknown) of ``torch==version`` installed from PyPI."""
    row = torch_wheels().get(version)
    if row is None:
        return (), "", f"torch {version}: no cited row of its wheel's metadata (data/nccl_versions/torch_wheels.tsv)"
    package, nccl, citation = row
    if nccl == "-":
        return (), "", f"torch {version}'s wheel links NCCL in and its metadata names no version ({citation.split()[0]})"
    return (nccl,), f"torch {version}'s wheel requires {package}=={nccl} ({citation.split()[0]})", ""


@dataclass(frozen=True)
class TorchLine:
    """One Requires-Dist line of a release that pulls torch in (torch_dependents.tsv)."""

    extras: frozenset[str] | None  # the extras that bring it; None: always
    torch: str  # the torch version it pins exactly, "" for a range or a line through another package
    requires: str  # the line as published: "torch==2.4.0", "accelerate>=0.26.0"
    citation: str

    def said(self, package: str, release: str) -> str:
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"{package}{extras} {release} requires {self.requires} ({self.citation.split()[0]})"


def package_name(name: str) -> str:
    """PEP 503's normalized name: ``Nemo_Toolkit`` and ``nemo-toolkit`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _release(version: str) -> str:
    """``2.0`` and ``2.0.0`` are one release (PEP 440)."""
    return re.sub(r"(?:\.0+)+$", "", version.lower().lstrip("v")) or "0"


def _release_order(version: str) -> tuple:
    return tuple((decimal(p), "") if p.isdigit() else (-1, p) for p in re.findall(r"\d+|[a-z]+", version))


@lru_cache(maxsize=1)
def torch_dependents() -> dict[str, dict[str, tuple[str, list[TorchLine]]]]:
    """package -> release (``_release``) -> (the release as published, its lines that pull torch in;
    [] when the release requires neither torch nor a package that does)."""
    found: dict[str, dict[str, tuple[str, list[TorchLine]]]] = {}
    for package, version, extras, torch, via, requires, citation in _rows("torch_dependents.tsv"):
        _, lines = found.setdefault(package, {}).setdefault(_release(version), (version, []))
        if requires != "-":
            lines.append(TorchLine(None if extras == "-" else frozenset(extras.split(",")),
                                   "" if torch == "-" else torch, requires, citation))
    return found


def pulled_torch(name: str, version: str | None, extras: frozenset[str]) -> tuple[bool, str, str, bool]:
    """Whether ``pip install name[extras]==version`` pulls torch in, as torch_dependents.tsv says:
    (pulls, the torch version it pins exactly or "", the rows that say so, whether the release has
    a row). A package not in the table, or a release whose metadata requires no torch for these
    extras, pulls nothing. A release without a row (or no exact version) pulls torch when some
    release of the package does for these extras; the newest such row is named."""
    name = package_name(name)
    releases = torch_dependents().get(name)
    if releases is None:
        return False, "", "", False
    extras = frozenset(package_name(e) for e in extras)

    def applies(line: TorchLine) -> bool:
        return line.extras is None or bool(line.extras & extras)

    row = releases.get(_release(version)) if version else None
    if row is not None:
        published, lines = row
        lines = [line for line in lines if applies(line)]
        pinned = [line for line in lines if line.torch]
        if len({line.torch for line in pinned}) == 1:  # a range beside the pin can only refuse it
            return True, pinned[0].torch, pinned[0].said(name, published), True
        return bool(lines), "", "; ".join(line.said(name, published) for line in lines), True
    pulling = [(published, line) for published, lines in releases.values() for line in lines if applies(line)]
    if not pulling:
        return False, "", "", False
    published, line = max(pulling, key=lambda item: _release_order(item[0]))
    return True, "", line.said(name, published), False


_CUDA_TAG = re.compile(r"(?P<cuda>\d+\.\d+(?:\.\d+)?)-(?:(?P<cudnn>cudnn\d*)-)?(?P<flavor>base|runtime|devel)-(?P<os>[a-z]+[\d.]+)$")
_NGC_TAG = re.compile(r"(?P<release>\d\d\.\d\d)(?:-|$)")


def image_source(reference: str, loc: Location, scope: str, word: str = "") -> NcclSource:
    """What a base image (``FROM``, a container's ``image:``, ``docker run IMAGE``) brings;
    ``word`` names it in labels (``image REF`` for a container's)."""
    found = _image_source(reference, loc, scope)
    return replace(found, word=word) if word else found


def _image_source(reference: str, loc: Location, scope: str) -> NcclSource:
    name, _, tag = reference.rpartition(":") if ":" in reference.rsplit("/", 1)[-1] else (reference, "", "latest")
    name = name.split("@", 1)[0]
    bare = re.sub(r"^(?:docker\.io/)?(?:library/)?", "", name)
    if "$" in reference:
        return NcclSource("image", reference, loc, scope, framework=UNKNOWN_IMAGE,
                          unknown="the image is named by a variable (a build argument or an environment value)")
    if bare in plain_images():
        return NcclSource("image", reference, loc, scope, detail=f"{bare}: {plain_images()[bare]}, no NCCL")
    if bare in ("nvidia/cuda", "nvcr.io/nvidia/cuda"):
        return _cuda_image(reference, tag, loc, scope)
    if bare.startswith("nvcr.io/nvidia/"):
        framework = bare[len("nvcr.io/nvidia/"):]
        match = _NGC_TAG.match(tag)
        row = ngc_containers().get((framework, match.group("release"))) if match else None
        if row:
            return NcclSource("image", reference, loc, scope, (row[0],),
                              detail=f"the {framework} {match.group('release')} release notes list NCCL {row[0]} ({row[1]})",
                              framework=SYSTEM_LINKED)
        return NcclSource("image", reference, loc, scope, framework=SYSTEM_LINKED,
                          unknown=f"NGC {framework}:{tag}: no cited release-notes row (data/nccl_versions/ngc_containers.tsv)")
    return NcclSource("image", reference, loc, scope, framework=UNKNOWN_IMAGE,
                      unknown=f"nothing is known about the NCCL in {reference}")


def _cuda_image(reference: str, tag: str, loc: Location, scope: str) -> NcclSource:
    match = _CUDA_TAG.match(tag)
    if match is None:
        return NcclSource("image", reference, loc, scope, unknown=f"nvidia/cuda tag {tag!r} names no CUDA version, "
                          "flavour and OS", framework=NO_FRAMEWORK)
    if match.group("flavor") == "base":
        return NcclSource("image", reference, loc, scope, detail="nvidia/cuda base images install no NCCL")
    key = (match.group("cuda"), match.group("os").replace(".", ""))
    row = cuda_images().get(key)
    if row is None:
        return NcclSource("image", reference, loc, scope,
                          unknown=f"nvidia/cuda {key[0]} on {match.group('os')}: no row in data/nccl_versions/cuda_images.tsv")
    versions, citations = row
    said = " or ".join(versions)
    return NcclSource("image", reference, loc, scope, versions,
                      detail=f"nvidia/cuda {key[0]} {match.group('os')} images were built with NCCL {said} "
                             f"({citations.split()[0]})")
