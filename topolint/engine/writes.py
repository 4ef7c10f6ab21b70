"""The one write path of ``--fix``, ``--unsafe-fixes`` and ``--add-noqa``: which files a run may
write, and how a file is written without losing or misplacing a byte.

- **Only the checked paths.** A run writes the files named on its command line or found by
  walking the folders named there (``CheckedPaths``). A file it read only because a checked file
  points at it (a shell ``source``, a compose ``env_file``, ``docker run --env-file``) is context:
  its findings stay, marked "not fixed: outside the checked paths".
- **Only what was checked.** Just before writing, the file's bytes are compared with the bytes
  the check read, and right before the replace its inode, size and modification time with what
  they were when the write began; a file that changed since (a job appending to it, an editor
  saving it) is left alone, and the run says so: the edits were computed for other bytes.
- **Nothing else changes.** The new bytes go to a temporary file in the same folder, which gets
  the file's mode, owner (``os.fchown`` where permitted) and extended attributes (POSIX ACLs
  among them, best effort) and then replaces it (``os.replace``): a reader sees the old file or
  the new one, never half of one. A file with several hard links is written in place instead
  (replacing it would split it from its other names), and so is a file whose owner cannot be
  kept or whose folder cannot hold a temporary file. A symbolic link is followed: its target is
  written and the link stays. The edits keep line endings and the byte-order mark
  (engine/fixes.py).
- **A file that cannot be written stops nothing.** It is reported (TL006 fix-not-written), the
  other files are still written, and the run exits 2 at the end.

``before_write`` is a test hook: called with the file's path just before it is compared and
written, it lets a test change the file between the check and the write without a race.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

OUTSIDE, CHANGED, UNWRITABLE = "outside", "changed", "unwritable"  # why a file was not written

# Tests only: runs just before a file is compared with what was checked and written.
before_write: Callable[[str], None] | None = None


@dataclass(frozen=True)
class NotWritten:
    """A file whose fixes (or directives) were not written, where the first of them was, and why."""

    path: str  # as reports show it
    line: int
    column: int
    why: str  # OUTSIDE, CHANGED or UNWRITABLE
    detail: str = ""  # the operating system's reason, for UNWRITABLE
    count: int = 1  # edits or directives not written
    node: str = "-"

    def reason(self) -> str:
        if self.why == OUTSIDE:
            return "not fixed: outside the checked paths (the run read it only because a checked file points at it)"
        if self.why == CHANGED:
            return "not fixed: the file changed after it was checked (run again to fix the file as it is now)"
        return f"not fixed: the file cannot be written ({self.detail})"


class CheckedPaths:
    """The files a run named or found by walking its paths: the only files it writes. Resolved
    (symbolic links followed) only when asked, so a run that writes nothing pays nothing."""

    def __init__(self, files: Iterable[str]):
        self._files = list(files)
        self._real: set[str] | None = None

    def __contains__(self, real_path: object) -> bool:
        if self._real is None:
            self._real = {os.path.realpath(f) for f in self._files}
        return isinstance(real_path, (str, Path)) and os.path.realpath(real_path) in self._real


def checked_bytes(source) -> bytes:
    """The bytes a check read, from its SourceFile: decoding dropped only the byte-order mark."""
    return (b"\xef\xbb\xbf" if source.bom else b"") + source.text.encode("utf-8")


def write_checked(real_path: str | Path, checked: bytes, new: bytes) -> tuple[str, str] | None:
    """Write ``new`` to the file at ``real_path`` if it still holds ``checked``; None when written,
    else (CHANGED or UNWRITABLE, why). Never raises OSError."""
    target = os.path.realpath(real_path)  # a symbolic link: its target is the file
    try:
        info = os.stat(target)
    except OSError as exc:
        return UNWRITABLE, _why(exc)
    if not stat.S_ISREG(info.st_mode):
        return UNWRITABLE, "not a regular file"
    if not info.st_mode & 0o222 or not os.access(target, os.W_OK):
        return UNWRITABLE, f"read-only (mode {stat.S_IMODE(info.st_mode):04o})"
    if before_write is not None:
        before_write(target)
    try:
        if info.st_nlink > 1:  # replacing the inode would split the file from its other names
            return _in_place(target, checked, new)
        return _replace(target, info, checked, new)
    except OSError as exc:
        return UNWRITABLE, _why(exc)


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _holds(path: str, checked: bytes) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(checked) + 1) == checked


def _in_place(target: str, checked: bytes, new: bytes) -> tuple[str, str] | None:
    with open(target, "r+b") as handle:
        if handle.read(len(checked) + 1) != checked:
            return CHANGED, "changed since it was checked"
        handle.seek(0)
        handle.write(new)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
    return None


def _replace(target: str, info: os.stat_result, checked: bytes, new: bytes) -> tuple[str, str] | None:
    folder, name = os.path.split(target)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".topolint", dir=folder)
    except OSError:  # the folder cannot hold a new file, the file itself may still be writable
        return _in_place(target, checked, new)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new)
            handle.flush()
            os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            if not _same_owner(handle.fileno(), info):
                os.unlink(temporary)
                return _in_place(target, checked, new)
            _copy_xattrs(target, handle.fileno())
            os.fsync(handle.fileno())
        # As late as possible: the bytes, then (cheaper, so last) that it is the same inode with
        # the size and modification time it had when this write began: a change while the
        # bytes were read, or just after, leaves the file alone too.
        if not _holds(target, checked) or not _unchanged(target, info):
            os.unlink(temporary)
            return CHANGED, "changed since it was checked"
        os.replace(temporary, target)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    return None


def _unchanged(target: str, info: os.stat_result) -> bool:
    now = os.stat(target)
    return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == \
        (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _copy_xattrs(target: str, fd: int) -> None:
    """Give the temporary file the file's extended attributes (Linux; POSIX ACLs are
    ``system.posix_acl_access``), best effort: one the system does not let this user set
    (``security.*``, ``trusted.*``) is left, as the owner is where it cannot be kept."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(target)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(target, name))
        except OSError:
            pass


def _same_owner(fd: int, info: os.stat_result) -> bool:
    """Give the temporary file the file's owner and group; False where that is not permitted."""
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (info.st_uid, info.st_gid):
        return True
    try:
        os.fchown(fd, info.st_uid, info.st_gid)
    except OSError:
        return False
    return True
