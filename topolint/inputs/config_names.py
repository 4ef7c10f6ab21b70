"""Config formats (infra files), recognised by name, shebang or syntax first, then content.

Machine outputs are recognised by content only (sniff.py); config files have telling names
(``Dockerfile``, ``*.sbatch``, ``.env``, ``nccl.conf``), so names come first here.
"""

from __future__ import annotations

import fnmatch
import re

SHELL = "shell"
DOCKERFILE = "dockerfile"
YAML = "config-yaml"  # Kubernetes, docker-compose (or a Helm template, skipped)
ENVFILE = "envfile"
NCCL_CONF = "nccl-conf"
DEEPSPEED_ENV = "deepspeed-env"
PYTHON = "python"
GITHUB_ACTIONS = "github-actions"  # workflows and composite actions (also found by content in config-yaml)
CONFIG_FORMATS = {SHELL, DOCKERFILE, YAML, ENVFILE, NCCL_CONF, DEEPSPEED_ENV, PYTHON, GITHUB_ACTIONS}

# (glob on the file name, format); the first match wins.
_NAMES = [
    ("Dockerfile", DOCKERFILE), ("Containerfile", DOCKERFILE), ("Dockerfile.*", DOCKERFILE),
    ("*.Dockerfile", DOCKERFILE), ("*.dockerfile", DOCKERFILE), ("*.containerfile", DOCKERFILE),
    ("*.yaml", YAML), ("*.yml", YAML),
    (".deepspeed_env", DEEPSPEED_ENV),
    ("nccl.conf", NCCL_CONF), (".nccl.conf", NCCL_CONF), ("*.nccl.conf", NCCL_CONF), ("nccl-*.conf", NCCL_CONF),
    (".env", ENVFILE), (".env.*", ENVFILE), ("*.env", ENVFILE),
    ("*.sh", SHELL), ("*.bash", SHELL), ("*.zsh", SHELL), ("*.ksh", SHELL), ("*.sbatch", SHELL),
    ("*.slurm", SHELL), (".envrc", SHELL),
    ("*.py", PYTHON),
]
# Dot files a folder walk reads (other dot files are skipped).
DOT_FILES = {".env", ".deepspeed_env", ".nccl.conf", ".envrc"}
# Dot folders a folder walk enters: GitHub's (workflows and composite actions). Every other one
# (.git, .venv, caches, editor settings) is skipped and listed with --verbose.
DOT_FOLDERS = {".github"}


# One regex with a named group per glob: a folder walk asks about every file.
_NAME_REGEX = re.compile("|".join(f"(?P<g{i}>{fnmatch.translate(glob)})" for i, (glob, _) in enumerate(_NAMES)))


def by_name(name: str) -> str | None:
    posix = name.replace("\\", "/")
    if ("/.github/workflows/" in f"/{posix}" and posix.endswith((".yml", ".yaml"))) \
            or posix.rsplit("/", 1)[-1] in ("action.yml", "action.yaml"):
        return GITHUB_ACTIONS
    base = posix.rsplit("/", 1)[-1]
    match = _NAME_REGEX.match(base)
    return _NAMES[int(match.lastgroup[1:])][1] if match else None


def walk_dot_file(name: str) -> bool:
    return name in DOT_FILES or name.startswith(".env.")


def walk_dot_folder(name: str) -> bool:
    return name in DOT_FOLDERS


_SHEBANG = re.compile(r"#!\s*\S*?(?:/env\s+(?:-S\s+)?)?(?:/?\S*/)?(bash|sh|zsh|ksh|dash|python[0-9.]*)\b")


def shebang(text: str) -> str | None:
    if not text.startswith("#!"):
        return None
    match = _SHEBANG.match(text.split("\n", 1)[0])
    if not match:
        return None
    return PYTHON if match.group(1).startswith("python") else SHELL


def slurm_script(text: str) -> str | None:
    return SHELL if re.search(r"^#SBATCH\s+-", text, re.M) else None


def kubernetes_yaml(text: str) -> str | None:
    if re.search(r"^apiVersion:\s*\S", text, re.M) and re.search(r"^kind:\s*[A-Z]\w*", text, re.M):
        return YAML
    return None


def dockerfile(text: str) -> str | None:
    for line in text.splitlines()[:50]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return DOCKERFILE if re.match(r"(?i)(FROM\s+\S+|ARG\s+\w+)", stripped) and re.search(r"(?im)^FROM\s+\S+", text) else None
    return None


_ASSIGN_LINE = re.compile(r"[ \t]*(export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*=")


def export_file(text: str) -> str | None:
    """A file of ``export NAME=value`` lines (a ``.conf`` or ``.txt`` a script sources), with an
    NCCL variable among them: shell, whatever its name."""
    exported = nccl = False
    for line in text.splitlines()[:400]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ASSIGN_LINE.match(line)
        if not match:
            return None
        exported = exported or bool(match.group(1))
        nccl = nccl or "NCCL_" in line[:match.end()]
    return SHELL if exported and nccl else None


# NCCL itself reads these names as nccl.conf (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf);
# other nccl-*.conf names are a site's and may be shell files that scripts source.
NCCL_READS_AS_CONF = {"nccl.conf", ".nccl.conf"}


def refine(fmt: str | None, name: str, text: str) -> str | None:
    """The format a name gave, corrected by the content where the name is only a convention."""
    if fmt == NCCL_CONF and name.replace("\\", "/").rsplit("/", 1)[-1] not in NCCL_READS_AS_CONF and export_file(text):
        return SHELL
    return fmt


# Content detectors appended to sniff.DETECTORS (after the machine-output detectors).
CONFIG_DETECTORS = [shebang, slurm_script, kubernetes_yaml, dockerfile, export_file]
