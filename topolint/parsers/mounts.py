"""Mount tables into a MountsFile (output-formats.md section 10): ``/proc/mounts`` (``src mnt
type opts 0 0``), ``/proc/self/mountinfo`` (``id parent maj:min root mnt opts [optional...] -
type src superopts``), ``mount`` (``src on mnt type T (opts)``) and ``nfsstat -m`` (``mnt from
srv:/export`` then `` Flags: opts``, which pastes may wrap onto further lines).

Options are split into a dict (``addr=10.0.0.5``, ``hard``); nothing is resolved (no DNS).
The form is decided by the first table line; every other line must have the same form.
"""

from __future__ import annotations

import re

from topolint.inputs.source import InputError, SourceFile
from topolint.model.fabric import Mount, MountsFile
from topolint.model.facts import build
from topolint.parsers._lines import PROMPT, Line, at, malformed, numbered

MOUNT_CMD = re.compile(r"(\S+) on (\S+) type (\S+) \((.*)\)")
PROC_MOUNTS = re.compile(r"(\S+) (\S+) (\S+) (\S+) (\d+) (\d+)")
MOUNTINFO = re.compile(r"\d+ \d+ \d+:\d+ \S+ (\S+) \S+(?: \S+)*? - (\S+) (\S+) (\S+)")
NFSSTAT = re.compile(r"(\S+) from (\S+)")
FLAGS = re.compile(r"Flags:\s*(.*)")
FORMS = {"mount": "'SRC on MNT type TYPE (OPTS)'", "proc-mounts": "'SRC MNT TYPE OPTS 0 0'",
         "mountinfo": "'ID PARENT MAJ:MIN ROOT MNT OPTS ... - TYPE SRC OPTS'", "nfsstat": "'MNT from SRV:/EXPORT'"}


def options(text: str, shared: dict[str, str] | None = None) -> dict[str, str]:
    """``shared``: one string per distinct key and value of a table (rw, vers, the client's
    address are on every line): a string object per option is five times its text (issue 20)."""
    found = {}
    for item in text.split(","):
        key, _, value = item.strip().partition("=")
        if key:
            if shared is not None:
                key, value = shared.setdefault(key, key), shared.setdefault(value, value)
            found[key] = value
    return found


def _shape(text: str) -> tuple[str, tuple] | None:
    """(form, (source, mountpoint, fstype, options)) of one table line, or None."""
    match = MOUNT_CMD.fullmatch(text)
    if match:
        return "mount", match.groups()
    fields = " ".join(text.split())  # mountinfo pastes double a space now and then
    match = MOUNTINFO.fullmatch(fields)
    if match:
        return "mountinfo", (match.group(3), match.group(1), match.group(2), match.group(4))
    match = PROC_MOUNTS.fullmatch(fields)
    if match:
        return "proc-mounts", match.groups()[:4]
    match = NFSSTAT.fullmatch(text)
    if match and ":" in match.group(2):
        return "nfsstat", (match.group(2), match.group(1), "nfs", "")
    return None


def parse_mounts(source: SourceFile) -> MountsFile:
    path = source.path
    result = build(MountsFile, path=path, form="", mounts=[])
    flags: tuple[Mount, list[str]] | None = None  # nfsstat: the mount whose Flags are being read
    shared: dict[str, str] = {}
    for line in numbered(source.text):
        if flags is not None and _flags_line(flags, line, shared):
            continue
        shape = _shape(line.text)
        if shape is None:
            if not result.mounts and PROMPT.match(line.text):
                continue
            raise malformed("mount table", path, line, FORMS.get(result.form) or " or ".join(FORMS.values()))
        form, (src, mountpoint, fstype, opts) = shape
        if result.form and form != result.form:
            raise InputError(path, line.number, f"malformed mount table: a {form} line in a {result.form} listing "
                             f"(expected {FORMS[result.form]})", line.column)
        result.form = form
        mount = build(Mount, source=src, mountpoint=mountpoint, fstype=shared.setdefault(fstype, fstype),
                      options=options(opts, shared),
                      loc=at(path, line))
        result.mounts.append(mount)
        flags = (mount, []) if form == "nfsstat" else None
    return result


def _flags_line(flags: tuple[Mount, list[str]], line: Line, shared: dict[str, str]) -> bool:
    """Read an nfsstat ``Flags:`` line or its wrapped continuation into the mount's options."""
    mount, parts = flags
    match = FLAGS.fullmatch(line.text)
    if match:
        parts.append(match.group(1))
    elif parts and parts[-1].endswith(",") and _shape(line.text) is None:
        parts.append(line.text)
    else:
        return False
    mount.options = options("".join(parts), shared)
    if "vers" in mount.options and mount.options["vers"].startswith("4"):
        mount.fstype = "nfs4"
    return True
