#!/usr/bin/env python3
"""Build the derived tables of topolint/data/nccl_versions/ (the NCCL version in force).

Each table is derived from public material, never copied from it; every row says where it came
from. Run from the repository root with the sources you have (each option is optional):

    python scripts/build_nccl_versions.py --nccl-git PATH/nccl.git \\
        --cuda-images-git PATH/cuda-images.git --torch-reports DIR

- ``--nccl-git``: a git directory of github.com/NVIDIA/nccl with its release tags. For every
  ``v2.X.Y-N`` tag (the last build of each version) the names NCCL reads from the environment
  are collected from the C/C++ sources under src/: the second argument of ``NCCL_PARAM(name,
  "X", ...)`` (read as ``NCCL_X``: src/include/param.h), the key of ``DEFINE_NCCL_PARAM`` (the
  2.30 registry, src/include/param/param.h) and every whole string literal ``"NCCL_*"`` (the
  names ``ncclGetEnv``/``getenv``/``ncclGetLevel`` take). A literal that is not an environment
  read makes the table say "read" where NCCL does not: a missed finding, never a false one.
  Writes env_reads.tsv: per name the first and last tag that read it and the tags around them.
- ``--cuda-images-git``: a git directory holding the history of
  gitlab.com/nvidia/container-images/cuda (the ``dist/<cuda>/<os>/{runtime,devel}/Dockerfile``
  files of the nvidia/cuda images). Every NCCL version a tag's Dockerfile ever named (``ENV
  NCCL_VERSION`` or ``NV_LIBNCCL_PACKAGE_VERSION``) over the whole history is kept: NVIDIA
  re-pushes tags with newer NCCL packages, so a tag stands for all of them. Writes
  cuda_images.tsv.
- ``--torch-reports``: a folder of ``pip install --dry-run --no-deps --report torch-X.json
  torch==X`` reports (the wheels' published METADATA, read through PEP 658). Writes
  torch_wheels.tsv: the ``nvidia-nccl-cu*`` pin of each torch release's Linux x86_64 wheel.
- ``--fetch-torch-dependents DIR`` (needs PyPI through pip): writes pip's dry-run report of every
  release pip lists (``pip index versions``) of each package in TORCH_DEPENDENTS, one
  ``NAME==VERSION.json`` per release (``.error`` when pip cannot read it: an sdist whose build
  needs torch already installed, as flash-attn's does); it resumes where it stopped.
  ``--torch-dependents DIR`` then writes torch_dependents.tsv from them: every ``Requires-Dist``
  on torch (or on a listed package that always requires torch) that applies on Linux x86_64
  CPython 3.11, with the extras it needs, and the torch version when the line pins it exactly.
  Reading the markers needs ``packaging`` (a dependency of pip's toolchain; not of topolint).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "topolint" / "data" / "nccl_versions"
CUDA_IMAGES_URL = "https://gitlab.com/nvidia/container-images/cuda/-/blob/{commit}/{path}"

_TAG = re.compile(r"v(2)\.(\d+)\.(\d+)-(\d+)")
_PARAM = re.compile(r'\bNCCL_PARAM\(\s*\w+\s*,\s*"([A-Z0-9_]+)"')
_DEFINE = re.compile(r"\bDEFINE_NCCL_PARAM\(\s*\w+\s*,\s*[^,]+,\s*(NCCL_[A-Z0-9_]+)\s*,")
_LITERAL = re.compile(r'"(NCCL_[A-Z0-9_]+)"')
_SOURCES = ["src/*.cc", "src/*.cu", "src/*.h", "src/*.c", "src/*.cpp", "src/*.hpp", "src/*.cuh"]


def _git(git_dir: str, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], input=stdin, capture_output=True, text=True,
                          check=True).stdout


def release_tags(git_dir: str) -> list[tuple[tuple[int, int, int], str]]:
    """(version, tag) of the last build of every 2.x release, oldest first."""
    builds: dict[tuple[int, int, int], tuple[int, str]] = {}
    for tag in _git(git_dir, "tag").split():
        match = _TAG.fullmatch(tag)
        if match:
            version = (int(match[1]), int(match[2]), int(match[3]))
            build = int(match[4])
            if version not in builds or builds[version][0] < build:
                builds[version] = (build, tag)
    return sorted((version, tag) for version, (_, tag) in builds.items())


def names_read(git_dir: str, tag: str) -> dict[str, str]:
    """Environment names NCCL's sources at ``tag`` read -> the first file that names one."""
    found: dict[str, str] = {}
    text = subprocess.run(["git", "-C", git_dir, "grep", "-I", "-E", "NCCL_", tag, "--", *_SOURCES],
                          capture_output=True, text=True).stdout
    by_file: dict[str, list[str]] = defaultdict(list)
    for line in text.splitlines():
        _, path, rest = line.split(":", 2)
        by_file[path].append(rest)
    for path in sorted(by_file):
        body = "\n".join(by_file[path])
        names = {"NCCL_" + n for n in _PARAM.findall(body)} | set(_DEFINE.findall(body)) | set(_LITERAL.findall(body))
        for name in sorted(names):
            found.setdefault(name, path)
    return found


def _dotted(version: tuple[int, int, int]) -> str:
    return ".".join(map(str, version))


def build_env_reads(git_dir: str) -> str:
    tags = release_tags(git_dir)
    reads = {version: names_read(git_dir, tag) for version, tag in tags}
    commits = {version: _git(git_dir, "rev-list", "-n1", tag).strip() for version, tag in tags}
    rows = []
    for name in sorted(set().union(*reads.values())):
        present = [name in reads[v] for v, _ in tags]
        start = 0
        while start < len(tags):  # one row per run of consecutive tags that read the name
            if not present[start]:
                start += 1
                continue
            end = start
            while end + 1 < len(tags) and present[end + 1]:
                end += 1
            first, last = tags[start][0], tags[end][0]
            before = _dotted(tags[start - 1][0]) if start else "-"
            after = _dotted(tags[end + 1][0]) if end + 1 < len(tags) else "-"
            rows.append("\t".join([name, _dotted(first), _dotted(last), before, after, reads[first][name],
                                   f"{tags[start][1]} ({commits[first][:12]})"]))
            start = end + 1
    return _table(f"""Names NCCL reads from the environment, per run of consecutive release tags of NVIDIA/nccl
(tags v{_dotted(tags[0][0])} to v{_dotted(tags[-1][0])}, the last build of each version), derived by
scripts/build_nccl_versions.py from NCCL_PARAM/DEFINE_NCCL_PARAM and "NCCL_*" literals in src/.
before: the newest tag before `first` that does not read the name ("-": `first` is the oldest tag);
after: the oldest tag after `last` that does not ("-": still read at the newest tag).""",
                  "name first last before after source tag", rows)


def _table(comment: str, columns: str, rows: list[str]) -> str:
    head = ["# " + line for line in comment.splitlines()] + ["\t".join(columns.split())]
    return "\n".join(head + rows) + "\n"


_DIST = re.compile(r"^dist/(\d+\.\d+(?:\.\d+)?)/([^/]+)/(runtime|devel)/Dockerfile$")
_NCCL_ENV = re.compile(r'^ENV NCCL_VERSION[ =]"?(\d+\.\d+\.\d+)', re.M)
_NCCL_PACKAGE = re.compile(r'NV_LIBNCCL_PACKAGE_VERSION[ =]"?(\d+\.\d+\.\d+)')


def _os_key(folder: str) -> str:
    """The tag's OS word from a dist folder: ubuntu22.04, ubuntu2204 and ubuntu22.04-x86_64 are one."""
    return folder.split("-")[0].replace(".", "")


def build_cuda_images(git_dir: str) -> str:
    seen: dict[tuple[str, str], dict[str, tuple[str, str]]] = defaultdict(dict)  # (cuda, os) -> nccl -> (commit, path)
    for commit in reversed(_git(git_dir, "rev-list", "--all").split()):  # oldest first
        files = [f for f in _git(git_dir, "ls-tree", "-r", "--name-only", commit, "dist").splitlines()
                 if _DIST.match(f)]
        if not files:
            continue
        out = _git(git_dir, "cat-file", "--batch", stdin="".join(f"{commit}:{f}\n" for f in files))
        bodies = re.split(r"^[0-9a-f]{40} blob \d+\n", out, flags=re.M)[1:]
        for path, body in zip(files, bodies):
            match = _NCCL_ENV.search(body) or _NCCL_PACKAGE.search(body)
            if match:
                cuda, folder, _ = _DIST.match(path).groups()
                seen[(cuda, _os_key(folder))].setdefault(match.group(1), (commit, path))
    rows = []
    for (cuda, os_key), versions in sorted(seen.items(), key=lambda kv: ([int(x) for x in kv[0][0].split(".")], kv[0][1])):
        ordered = sorted(versions, key=lambda v: [int(x) for x in v.split(".")])
        cites = " ".join(CUDA_IMAGES_URL.format(commit=versions[v][0], path=versions[v][1]) for v in ordered)
        rows.append("\t".join([cuda, os_key, ",".join(ordered), cites]))
    return _table("""nvidia/cuda:<cuda>-{runtime,devel,cudnn*}-<os> images: every NCCL version their Dockerfile named over
the history of gitlab.com/nvidia/container-images/cuda (a tag is re-pushed with newer NCCL packages, so
it stands for each of them). Derived by scripts/build_nccl_versions.py; each citation is the Dockerfile
at the commit that first named that version. base images carry no NCCL.""", "cuda os nccl citation", rows)


_PIN = re.compile(r"^(nvidia-nccl-cu\d+)\s*\(?==\s*([0-9.]+(?:\.post\d+)?)\)?\s*(?:;\s*(.*))?$")


def build_torch_wheels(folder: Path) -> str:
    rows = []
    for report in folder.glob("*.json"):
        item = json.loads(report.read_text())["install"][0]
        metadata, url = item["metadata"], item["download_info"]["url"]
        if "+" in metadata["version"]:
            continue  # local versions (+cpu) are not the PyPI CUDA wheel
        pins = [_PIN.match(d) for d in metadata.get("requires_dist", []) if d.startswith("nvidia-nccl-cu")]
        pins = [p for p in pins if p]
        package, nccl, marker = (pins[0].group(1), pins[0].group(2), pins[0].group(3) or "") if pins \
            else ("-", "-", "no nvidia-nccl requirement: NCCL is linked into the wheel")
        rows.append((metadata["version"], package, nccl, marker,
                     f"https://pypi.org/project/torch/{metadata['version']}/ {url}.metadata"))
    rows.sort(key=lambda r: [int(x) for x in re.findall(r"\d+", r[0])])
    return _table("""torch wheels on PyPI and the NCCL wheel each pins (Requires-Dist of the Linux x86_64 wheel's METADATA,
read through PEP 658 by scripts/build_nccl_versions.py --torch-reports). nccl "-": the wheel names no
nvidia-nccl package (NCCL is linked in; its version is not published there).""",
                  "torch package nccl marker citation", ["\t".join(r) for r in rows])


# Packages that commonly bring torch into an image through ``pip install``: the ones the issue's
# users install over a CUDA image (serving, training, fine-tuning frameworks and torch's own
# domain libraries). A package not listed is never taken to pull torch (docs/nccl-version.md).
TORCH_DEPENDENTS = ("torchvision", "torchaudio", "torchtext", "vllm", "xformers", "torch-tensorrt", "deepspeed",
                    "accelerate", "lightning", "pytorch-lightning", "flash-attn", "nemo-toolkit", "megatron-core",
                    "transformers", "peft", "trl", "bitsandbytes", "timm", "sentence-transformers", "torchmetrics",
                    "fairscale", "sglang")
# Linux x86_64 CPython 3.11: the wheels read (as torch_wheels.tsv's) and the markers evaluated.
MARKER_ENVIRONMENT = {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux",
                      "os_name": "posix", "python_version": "3.11", "python_full_version": "3.11.7",
                      "implementation_name": "cpython", "platform_python_implementation": "CPython",
                      "platform_release": "", "platform_version": "", "implementation_version": "3.11.7"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def fetch_torch_dependents(folder: Path, packages: list[str], newest: int | None = None, pip: str = "pip") -> None:
    """pip's dry-run reports (the published METADATA of the wheel pip picks for this machine, or
    the metadata pip builds from an sdist) of every release of ``packages``."""
    folder.mkdir(parents=True, exist_ok=True)
    # PyPI itself, whatever the site's pip configuration says (mirrors, local wheels, version caps):
    # the citations are PyPI's files
    pypi = ["--isolated", "--index-url", "https://pypi.org/simple"]
    for package in packages:
        listed = subprocess.run([pip, "index", "versions", *pypi, package], capture_output=True, text=True).stdout
        found = re.search(r"^Available versions: (.*)$", listed, re.M)
        versions = found.group(1).split(", ") if found else []
        for version in versions[:newest]:
            report = folder / f"{package}=={version}.json"
            failed = report.with_suffix(".error")
            if report.exists() or failed.exists():
                continue
            run = subprocess.run([pip, "install", *pypi, "--dry-run", "--no-deps", "--ignore-installed",
                                  "--no-cache-dir", "--prefer-binary", "--quiet", "--report", str(report),
                                  f"{package}=={version}"], capture_output=True, text=True)
            if run.returncode or not report.exists():
                failed.write_text(run.stderr[-4000:])
                report.unlink(missing_ok=True)
            print(package, version, "error" if failed.exists() else "ok", flush=True)


def _release_key(version: str) -> list:
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.findall(r"\d+|[a-z]+", version)]


def build_torch_dependents(folder: Path) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    def extras_needed(requirement: Requirement, extras: list[str]) -> str | None:
        """"-" when the line applies without extras, the extras that bring it, or None."""
        if requirement.marker is None:
            return "-"
        if requirement.marker.evaluate({**MARKER_ENVIRONMENT, "extra": ""}):
            return "-"
        needed = [e for e in extras if requirement.marker.evaluate({**MARKER_ENVIRONMENT, "extra": e})]
        return ",".join(needed) or None

    releases: dict[str, list[tuple[str, list[tuple[str, Requirement]], list[str], str]]] = defaultdict(list)
    for report in sorted(folder.glob("*.json")):
        item = json.loads(report.read_text())["install"][0]
        metadata, url = item["metadata"], item["download_info"]["url"]
        name, version = _normalized(metadata["name"]), metadata["version"]
        lines = []
        for line in metadata.get("requires_dist", []):
            try:
                lines.append((line, Requirement(line)))
            except InvalidRequirement:
                continue
        extras = sorted({_normalized(e) for e in metadata.get("provides_extra", [])})
        how = "METADATA" if url.endswith(".whl") else "metadata pip builds from the sdist"
        releases[name].append((version, lines, extras, f"https://pypi.org/project/{name}/{version}/ {url} ({how})"))
    # a package every release of which requires torch, whatever the extras: one level of "via"
    always = {name for name, found in releases.items() if all(
        any(_normalized(r.name) == "torch" and extras_needed(r, extras) == "-" for _, r in lines)
        for _, lines, extras, _ in found)}
    rows = []
    for name in sorted(releases):
        for version, lines, extras, citation in sorted(releases[name], key=lambda r: _release_key(r[0])):
            found: dict[tuple[str, str, str], list[str]] = {}  # (torch, via, line before its marker) -> extras
            for line, requirement in lines:
                target = _normalized(requirement.name)
                if target != "torch" and (target not in always or target == name):
                    continue
                needed = extras_needed(requirement, extras)
                if needed is None:
                    continue  # not on Linux x86_64 CPython 3.11
                pins = [s.version for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version]
                exact = pins[0] if target == "torch" and len(pins) == 1 and "+" not in pins[0] else "-"
                key = (exact, "-" if target == "torch" else target, line.split(";", 1)[0].strip())
                found.setdefault(key, []).extend(needed.split(","))
            merged = [("-" if "-" in needed else ",".join(sorted(set(needed))), *key) for key, needed in found.items()]
            if any(needed == "-" for needed, *_ in merged):  # a line that always applies: the others add
                merged = [m for m in merged if m[0] == "-" or m[1] != "-"]  # only a pin of their own
            direct = {e for needed, _, via, _ in merged if via == "-" for e in needed.split(",")}
            merged = [m for m in merged if m[2] == "-" or not set(m[0].split(",")) <= direct]  # via: only where
            for needed, exact, via, line in merged or [("-", "-", "-", "-")]:
                rows.append("\t".join([name, version, needed, exact, via, line, citation]))
    return _table("""Releases on PyPI of packages that pull torch in (scripts/build_nccl_versions.py --torch-dependents):
every Requires-Dist line of each release's METADATA (of the Linux x86_64 CPython 3.11 wheel pip picks, or
the metadata pip builds from an sdist) on torch, or on a listed package every release of which requires
torch ("via"), whose marker holds on Linux x86_64 CPython 3.11. extras: "-" always, else the extras that
bring the line. Lines that differ only in their extras are one row; beside a line that always applies,
only a line with a pin of its own is kept; a "via" line only for extras no torch line covers.
torch: the version the line pins exactly ("-": a range). requires: the line before its marker; "-": the
release requires neither. A package not in this table is never taken to pull torch.""",
                  "package version extras torch via requires citation", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nccl-git")
    parser.add_argument("--cuda-images-git")
    parser.add_argument("--torch-reports", type=Path)
    parser.add_argument("--fetch-torch-dependents", type=Path, metavar="DIR")
    parser.add_argument("--newest", type=int, help="with --fetch-torch-dependents: only the newest N releases")
    parser.add_argument("--package", action="append", help="with --fetch-torch-dependents: only these packages")
    parser.add_argument("--torch-dependents", type=Path, metavar="DIR")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.nccl_git:
        (OUT / "env_reads.tsv").write_text(build_env_reads(args.nccl_git))
    if args.cuda_images_git:
        (OUT / "cuda_images.tsv").write_text(build_cuda_images(args.cuda_images_git))
    if args.torch_reports:
        (OUT / "torch_wheels.tsv").write_text(build_torch_wheels(args.torch_reports))
    if args.fetch_torch_dependents:
        fetch_torch_dependents(args.fetch_torch_dependents, args.package or list(TORCH_DEPENDENTS), args.newest)
    if args.torch_dependents:
        (OUT / "torch_dependents.tsv").write_text(build_torch_dependents(args.torch_dependents))


if __name__ == "__main__":
    main()
