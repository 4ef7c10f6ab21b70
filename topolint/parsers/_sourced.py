"""Where a shell ``source FILE`` / ``. FILE`` points, without running anything.

A path is followed when it names a regular file inside the checked tree (below the working
directory or the sourcing script's folder). Relative paths are taken from the sourcing file's
folder, and so are the usual script-folder expressions: ``$(dirname "$0")``,
``$(dirname "${BASH_SOURCE[0]}")``, ``$(cd "$(dirname "$0")" && pwd)``, ``${BASH_SOURCE%/*}``,
``${0%/*}``, ``$(dirname "$(readlink -f "$0")")``, and a variable assigned one of them earlier
(``DIR=...; source "$DIR/common.sh"``). A ``# shellcheck source=PATH`` hint on the comment lines
above wins (``SCRIPTDIR/`` is the script's folder, other relative paths are tried from the
script's folder, then from the working directory; ``/dev/null`` means "do not follow"). Anything
else is computed at run time: not followed, and said so with ``--verbose``.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

MAX_DEPTH = 8  # nested source commands followed; a cycle stops at once

_SELF = r'"?(?:\$0|\$\{0\}|\$BASH_SOURCE|\$\{BASH_SOURCE(?:\[0\])?\})"?'
_RESOLVED = rf'(?:{_SELF}|"?\$\((?:readlink\s+-[fe]|realpath)\s+{_SELF}\)"?)'
_DIRNAME = rf'"?\$\(dirname\s+(?:--\s+)?{_RESOLVED}\)"?'
_CD_PWD = rf'\$\(cd\s+(?:-P\s+)?(?:--\s+)?{_DIRNAME}(?:\s+[0-9]*>&?[\w/.-]*)*\s*&&\s*pwd(?:\s+-P)?\)'
_STRIP = r'\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}'
_SCRIPT_DIR = re.compile(rf'(?:{_CD_PWD}|{_DIRNAME}|{_STRIP})')


def script_dir(value: str, variables: dict[str, str] | None = None) -> tuple[str, str] | None:
    """(the rest of ``value`` after a script-folder expression, whose folder) or None when
    ``value`` does not start with one. The folder is "script" for ``$0`` (the script bash
    runs, even inside a sourced file) and "file" for ``BASH_SOURCE`` (the file being read)."""
    match = _SCRIPT_DIR.match(value)
    if match:
        return value[match.end():].lstrip("/"), "file" if "BASH_SOURCE" in match.group() else "script"
    variable = re.match(r'\$(?:\{(\w+)\}|(\w+))', value)
    name = variable and (variable.group(1) or variable.group(2))
    if name and name in (variables or {}):
        return value[variable.end():].lstrip("/"), variables[name]
    return None


def resolve(argument: str, hint: str | None, files: list[tuple[str, str | None]],
            variables: dict[str, str]) -> tuple[str, str] | str:
    """(real path, display path) of the sourced file, or why it is not followed. ``files`` are
    (display, real) of the script and the files it is sourcing now, innermost last (``real``
    None for stdin)."""
    display, real = files[-1]
    if real is None or files[0][1] is None:
        return "the sourcing file is not on disk (stdin): not followed"
    folder = os.path.dirname(os.path.realpath(real))
    shown_folder = os.path.dirname(display)
    if hint is not None:
        if hint == "/dev/null":
            return "a shellcheck source=/dev/null hint: not followed"
        if hint.startswith("SCRIPTDIR/"):
            candidates = [(folder, shown_folder, hint[len("SCRIPTDIR/"):])]
        else:
            candidates = [(folder, shown_folder, hint), (os.getcwd(), "", hint)]
    else:
        found = script_dir(argument, variables)
        if found is None and ("$" in argument or "`" in argument):
            return "the path is computed at run time: not followed (a `# shellcheck source=PATH` hint names it)"
        if found is None:
            candidates = [(folder, shown_folder, argument)]
        elif found[1] == "script":  # $0 names the script bash runs, not the file sourcing
            script_display, script_real = files[0]
            candidates = [(os.path.dirname(os.path.realpath(script_real)), os.path.dirname(script_display), found[0])]
        else:
            candidates = [(folder, shown_folder, found[0])]
    for base, shown_base, relative in candidates:
        target = os.path.realpath(os.path.join(base, relative))
        if _regular(target):
            if not _inside(target, [os.getcwd(), folder]):
                return f"{target} is outside the checked tree: not followed"
            shown = relative if os.path.isabs(relative) else os.path.normpath(os.path.join(shown_base, relative))
            return target, Path(shown).as_posix()
    return "no such file in the checked tree: not followed"


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(os.path.realpath(root).rstrip(os.sep) + os.sep) for root in roots)


def inside_tree(path: str, folder: str) -> bool:
    """``path`` is below the working directory or ``folder`` (a file that points at it may be
    followed; anything else is outside what was given to check)."""
    return _inside(path, [os.getcwd(), folder])
