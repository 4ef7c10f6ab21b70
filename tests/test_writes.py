"""The one write path of --fix, --unsafe-fixes and --add-noqa (engine/writes.py, issue 20 item 4):
only the checked paths are written; a file that changed since it was checked is left alone and
nothing in it is lost; mode, owner, hard links and symbolic links are kept; a file that cannot be
written is TL006 and exit 2 while the other files are still written; a rename that would make a
duplicate key or a second assignment that changes meaning is not offered."""

from __future__ import annotations

import json
import os
import stat

import pytest
from conftest import run_cli

from topolint.engine import writes

TYPO = b"export NCCL_SOCKET_IFNAM=eth0\n"  # ENV001, an unsafe rename fix to NCCL_SOCKET_IFNAME
FIXED = b"export NCCL_SOCKET_IFNAME=eth0\n"


def _check(cwd, *args):
    result = run_cli("check", *args, "--isolated", "--no-cache", "--format", "json", cwd=cwd)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result


def _findings(result, code=None):
    return [f for f in json.loads(result.stdout)["findings"] if code is None or f["code"] == code]


def _sourcing_project(tmp_path):
    """proj/train.sh sources ../other/env.sh, which has a fixable finding."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "proj" / "train.sh").write_text('#!/bin/bash\nsource "$(dirname "$0")/../other/env.sh"\ntorchrun t.py\n')
    env = tmp_path / "other" / "env.sh"
    env.write_bytes(TYPO)
    return env


def test_a_sourced_file_outside_the_checked_paths_is_not_written(tmp_path):
    env = _sourcing_project(tmp_path)
    result = _check(tmp_path, "proj/train.sh", "--fix", "--unsafe-fixes")
    assert env.read_bytes() == TYPO  # the old code took everything below the working directory as the tree
    assert result.exit_code == 2
    (kept,) = _findings(result, "ENV001")
    assert kept["path"] == "other/env.sh" and kept["autofix"] is None
    assert any("not fixed: outside the checked paths" in line for line in kept["evidence"])
    (tl006,) = _findings(result, "TL006")
    assert (tl006["path"], tl006["line"], tl006["severity"]) == ("other/env.sh", 1, "error")
    assert "outside the checked paths" in tl006["message"]
    assert "other/env.sh: not fixed: outside the checked paths" in result.stderr
    # Named on the command line (or found by walking a named folder), the same file is written.
    fixed = _check(tmp_path, "proj", "other", "--fix", "--unsafe-fixes")
    assert env.read_bytes() == FIXED and fixed.exit_code == 0


def test_diff_shows_no_edit_for_a_file_outside_the_checked_paths(tmp_path):
    env = _sourcing_project(tmp_path)
    result = run_cli("check", "proj/train.sh", "--isolated", "--no-cache", "--diff", "--unsafe-fixes", cwd=tmp_path)
    assert result.stdout == "" and env.read_bytes() == TYPO
    assert "other/env.sh: not fixed: outside the checked paths" in result.stderr


def test_add_noqa_writes_no_directive_outside_the_checked_paths(tmp_path):
    env = _sourcing_project(tmp_path)
    result = run_cli("check", "proj/train.sh", "--isolated", "--no-cache", "--add-noqa", cwd=tmp_path)
    assert env.read_bytes() == TYPO
    assert result.exit_code == 2
    assert "topolint: error: other/env.sh:1: TL006 1 edit not written: not fixed: outside the checked paths" \
        in result.stderr


def test_a_file_changed_between_the_check_and_the_write_loses_nothing(tmp_path, monkeypatch):
    script = tmp_path / "run.sh"
    script.write_bytes(TYPO)
    appended = b"".join(b"echo line %d\n" % n for n in range(500))  # what a job writes meanwhile

    def append(path):
        with open(path, "ab") as handle:
            handle.write(appended)

    monkeypatch.setattr(writes, "before_write", append)
    result = _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert script.read_bytes() == TYPO + appended  # the old code rewrote the file it had read: 500 lines lost
    assert result.exit_code == 2
    (tl006,) = _findings(result, "TL006")
    assert tl006["path"] == "run.sh" and "changed after it was checked" in tl006["message"]
    monkeypatch.setattr(writes, "before_write", None)
    again = _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert script.read_bytes() == FIXED + appended and again.exit_code == 0


def test_add_noqa_leaves_a_changed_file_alone(tmp_path, monkeypatch):
    script = tmp_path / "run.sh"
    script.write_bytes(TYPO)
    def append(path):
        with open(path, "ab") as handle:
            handle.write(b"export NCCL_DEBUG=INFO\n")

    monkeypatch.setattr(writes, "before_write", append)
    result = run_cli("check", "run.sh", "--isolated", "--no-cache", "--add-noqa", cwd=tmp_path)
    assert script.read_bytes() == TYPO + b"export NCCL_DEBUG=INFO\n"
    assert result.exit_code == 2 and "TL006" in result.stderr and "changed after it was checked" in result.stderr


def test_a_read_only_file_is_tl006_and_the_other_files_are_still_written(tmp_path):
    locked, open_file = tmp_path / "a.sh", tmp_path / "b.sh"
    locked.write_bytes(TYPO)
    open_file.write_bytes(TYPO)
    locked.chmod(0o444)
    result = _check(tmp_path, "a.sh", "b.sh", "--fix", "--unsafe-fixes")
    assert locked.read_bytes() == TYPO and open_file.read_bytes() == FIXED
    assert result.exit_code == 2
    (tl006,) = _findings(result, "TL006")
    assert tl006["path"] == "a.sh" and "cannot be written (read-only (mode 0444))" in tl006["message"]
    assert "fixed 1 findings in 1 files" in result.stderr


def test_tl006_sets_the_exit_code_whatever_the_selection(tmp_path):
    locked = tmp_path / "a.sh"
    locked.write_bytes(TYPO)
    locked.chmod(0o444)
    result = _check(tmp_path, "a.sh", "--select", "ENV001", "--fix", "--unsafe-fixes")
    assert result.exit_code == 2 and not _findings(result, "TL006")
    assert "topolint: error: a.sh:1: TL006 1 edit not written: not fixed: the file cannot be written" in result.stderr


def test_a_write_the_system_refuses_keeps_the_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "run.sh"
    target.write_bytes(TYPO)

    def no_space(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    assert writes.write_checked(target, TYPO, FIXED) == (writes.UNWRITABLE, "No space left on device")
    assert target.read_bytes() == TYPO and sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


def test_mode_and_owner_are_kept(tmp_path):
    target = tmp_path / "run.sh"
    target.write_bytes(TYPO)
    target.chmod(0o751)
    owner = (1234, 2345) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if os.geteuid() == 0:
        os.chown(target, *owner)
    assert writes.write_checked(target, TYPO, FIXED) is None
    info = target.stat()
    assert target.read_bytes() == FIXED
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o751, *owner)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]  # no temporary file left


def test_an_owner_that_cannot_be_kept_is_written_in_place(tmp_path, monkeypatch):
    """Where the temporary file cannot get the file's owner (no CAP_CHOWN), the file is written in
    place: the same inode, so its owner and group stay, and no temporary file is left."""
    target = tmp_path / "run.sh"
    target.write_bytes(TYPO)
    if os.geteuid() == 0:
        os.chown(target, 1234, 2345)
    before = target.stat()
    made = []

    def refused(fd, uid, gid):
        made.append((uid, gid))
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", refused)
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result((0,) * 4 + (before.st_uid + 1, before.st_gid + 1)
                                                               + (0,) * 4))
    assert writes.write_checked(target, TYPO, FIXED) is None
    after = target.stat()
    assert made == [(before.st_uid, before.st_gid)]  # it tried to keep the owner, and was refused
    assert target.read_bytes() == FIXED
    assert (after.st_ino, after.st_uid, after.st_gid) == (before.st_ino, before.st_uid, before.st_gid)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


def test_hard_links_stay_one_file(tmp_path):
    first, second = tmp_path / "a.sh", tmp_path / "b.sh"
    first.write_bytes(TYPO)
    os.link(first, second)
    inode = first.stat().st_ino
    _check(tmp_path, "a.sh", "--fix", "--unsafe-fixes")
    assert first.read_bytes() == FIXED and second.read_bytes() == FIXED
    assert first.stat().st_ino == inode == second.stat().st_ino and first.stat().st_nlink == 2


def test_a_symbolic_link_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "run.sh"
    target.write_bytes(TYPO)
    (tmp_path / "link.sh").symlink_to("real/run.sh")
    _check(tmp_path, "link.sh", "--fix", "--unsafe-fixes")
    assert (tmp_path / "link.sh").is_symlink() and target.read_bytes() == FIXED


def test_crlf_and_byte_order_mark_are_kept(tmp_path):
    target = tmp_path / "run.sh"
    target.write_bytes(b"\xef\xbb\xbf#!/bin/bash\r\n" + TYPO.replace(b"\n", b"\r\n"))
    _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert target.read_bytes() == b"\xef\xbb\xbf#!/bin/bash\r\n" + FIXED.replace(b"\n", b"\r\n")


def test_a_changed_file_is_never_written(tmp_path):
    target = tmp_path / "run.sh"
    target.write_bytes(TYPO + b"# more\n")
    assert writes.write_checked(target, TYPO, FIXED) == (writes.CHANGED, "changed since it was checked")
    os.link(target, tmp_path / "other.sh")  # the in-place path compares too
    assert writes.write_checked(target, TYPO, FIXED) == (writes.CHANGED, "changed since it was checked")
    assert target.read_bytes() == TYPO + b"# more\n"


# --- renames that would change more than a name ---------------------------------------------

COMPOSE = ("services:\n  train:\n    image: nvcr.io/nvidia/pytorch:24.05-py3\n    environment:\n"
           "      NCCL_SOCKET_IFNAM: eth0\n      NCCL_SOCKET_IFNAME: {value}\n")
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n    - name: c\n      image: x\n"
       "      env:\n        - {{name: NCCL_SOCKET_IFNAME, value: {value}}}\n        - {{name: NCCL_SOCKET_IFNAM, value: eth0}}\n")
SCRIPT = "#!/bin/bash\nexport NCCL_SOCKET_IFNAME={value}\nexport NCCL_SOCKET_IFNAM=eth0\ntorchrun t.py\n"


@pytest.mark.parametrize(("name", "template", "value", "why"), [
    ("docker-compose.yml", COMPOSE, "eth0", "the rename would make a duplicate key"),  # compose refuses the file
    ("pod.yaml", POD, "eth0", "the rename would make a duplicate key"),  # env lists: one entry hides the other
    ("run.sh", SCRIPT, "ib0", "second assignment that changes what NCCL reads"),
], ids=["compose", "kubernetes", "shell"])
def test_a_rename_that_would_duplicate_a_key_is_not_offered(tmp_path, name, template, value, why):
    target = tmp_path / name
    target.write_text(template.format(value=value))
    result = run_cli("check", name, "--isolated", "--no-cache", "--format", "json", "--verbose", cwd=tmp_path)
    (finding,) = _findings(result, "ENV001")
    assert finding["autofix"] is None
    notes = [line for line in result.stderr.splitlines() if "no rename of NCCL_SOCKET_IFNAM" in line]
    assert len(notes) == 1 and why in notes[0], result.stderr
    before = target.read_bytes()
    _check(tmp_path, name, "--fix", "--unsafe-fixes")
    assert target.read_bytes() == before


def test_a_rename_to_the_same_setting_in_a_script_is_offered(tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT.format(value="eth0"))  # the same value twice changes nothing
    _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert (tmp_path / "run.sh").read_text() == SCRIPT.format(value="eth0").replace("IFNAM=", "IFNAME=")


def test_a_compose_env_file_is_written_only_when_it_is_a_checked_path(tmp_path):
    """(A ``docker run --env-file`` file is read only when it is itself a checked path.)"""
    consumer = "docker-compose.yml"
    (tmp_path / consumer).write_text("services:\n  train:\n    image: nvcr.io/nvidia/pytorch:24.05-py3\n"
                                     "    env_file: env/nccl.env\n")
    (tmp_path / "env").mkdir()
    env = tmp_path / "env" / "nccl.env"
    env.write_bytes(b"NCCL_SOCKET_IFNAM=eth0\n")
    alone = _check(tmp_path, consumer, "--fix", "--unsafe-fixes")
    assert env.read_bytes() == b"NCCL_SOCKET_IFNAM=eth0\n"
    assert alone.exit_code == 2 and [f["path"] for f in _findings(alone, "TL006")] == ["env/nccl.env"]
    walked = _check(tmp_path, ".", "--fix", "--unsafe-fixes")
    assert env.read_bytes() == b"NCCL_SOCKET_IFNAME=eth0\n" and walked.exit_code == 0


def test_extended_attributes_are_kept(tmp_path):
    """A user.* attribute (as POSIX ACLs in system.posix_acl_access) stays on the fixed file:
    the temporary file that replaces it gets them."""
    script = tmp_path / "run.sh"
    script.write_bytes(TYPO)
    if not hasattr(os, "setxattr"):
        pytest.skip("no extended attributes on this platform")
    try:
        os.setxattr(script, "user.topolint", b"kept")
    except OSError as exc:
        pytest.skip(f"the filesystem of tmp_path takes no user.* attributes ({exc.strerror})")
    result = _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0 and script.read_bytes() == FIXED
    assert os.getxattr(script, "user.topolint") == b"kept"


def test_a_change_just_after_the_bytes_were_compared_loses_nothing(tmp_path, monkeypatch):
    """The file changes right after its bytes were found as checked: the stat taken just before
    the replace sees it (size, modification time, inode), and the appended line stays."""
    script = tmp_path / "run.sh"
    script.write_bytes(TYPO)
    compared = writes._holds

    def holds_then_append(path, checked):
        same = compared(path, checked)
        with open(path, "ab") as handle:
            handle.write(b"echo appended\n")
        return same

    monkeypatch.setattr(writes, "_holds", holds_then_append)
    result = _check(tmp_path, "run.sh", "--fix", "--unsafe-fixes")
    assert script.read_bytes() == TYPO + b"echo appended\n"
    assert result.exit_code == 2 and "changed after it was checked" in _findings(result, "TL006")[0]["message"]
