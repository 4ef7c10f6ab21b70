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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nccl-git")
    parser.add_argument("--cuda-images-git")
    parser.add_argument("--torch-reports", type=Path)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.nccl_git:
        (OUT / "env_reads.tsv").write_text(build_env_reads(args.nccl_git))
    if args.cuda_images_git:
        (OUT / "cuda_images.tsv").write_text(build_cuda_images(args.cuda_images_git))
    if args.torch_reports:
        (OUT / "torch_wheels.tsv").write_text(build_torch_wheels(args.torch_reports))


if __name__ == "__main__":
    main()
