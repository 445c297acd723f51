"""Files under a run, opened the way `openat` servers do: relative to a folder descriptor, no links.

A run's work is untrusted and may replace anything in its run folder by a link to anywhere, a
FIFO, a device or a huge file. Every helper here opens relative to a folder descriptor with
`O_NOFOLLOW` (a link is never followed), files with `O_NONBLOCK` (a FIFO never blocks the
open), checks with `fstat` that it got what it expected before reading a byte, and bounds
what it reads. A folder it creates is 0700 and a file 0600, whatever the umask.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from lionrun.domain.availability import NOT_A_DIRECTORY, NOT_REGULAR_FILE, TOO_LARGE

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC  # a planted tty never becomes ours


class UnsafeEntry(OSError):
    """A name under a run is not what belongs there (a link, a FIFO, a file for a folder, too big)."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(errno.EINVAL, detail)
        self.reason_code = reason_code
        self.detail = detail

    def __str__(self) -> str:
        return self.detail


def kind_of(mode: int) -> str:
    """A word for what an inode is, for a detail a person reads."""
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder"),
             (stat.S_ISREG, "a regular file"))
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def _what_is(name: str, dir_fd: int) -> str:
    try:
        return kind_of(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return "not what belongs there"


def open_folder(name: str, dir_fd: int | None) -> int:
    """A folder descriptor for `name` (relative to `dir_fd`); a link or a non-folder is UnsafeEntry.

    FileNotFoundError passes through: a missing folder is a different fact from a planted one.
    """
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            where = dir_fd if dir_fd is not None else -100
            raise UnsafeEntry(NOT_A_DIRECTORY, f"{name} is {_what_is(name, where)}, not a folder; "
                                               "it is never followed") from None
        raise


def make_folder(name: str, dir_fd: int | None) -> int:
    """Open `name` as a folder, creating it 0700 when missing (an existing one keeps its mode)."""
    try:
        os.mkdir(name, FOLDER_MODE, dir_fd=dir_fd)
    except FileExistsError:
        return open_folder(name, dir_fd)
    fd = open_folder(name, dir_fd)
    os.fchmod(fd, FOLDER_MODE)  # exactly 0700 even under an odd umask
    return fd


def open_file(name: str, dir_fd: int, flags: int = os.O_RDONLY, mode: int = FILE_MODE) -> int:
    """A descriptor of the regular file `name` in `dir_fd`; a link, FIFO, device or folder is UnsafeEntry.

    Opened for reading, a file with more than one hard link is refused too: the other name may
    be outside the store, where the work could not read it itself.
    """
    try:
        fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EWOULDBLOCK):
            raise UnsafeEntry(NOT_REGULAR_FILE, f"{name} is {_what_is(name, dir_fd)}; only a regular "
                                                "file is read, and a link is never followed") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafeEntry(NOT_REGULAR_FILE, f"{name} is {kind_of(info.st_mode)}; only a regular file is read")
    if info.st_nlink > 1 and flags & os.O_ACCMODE == os.O_RDONLY:
        os.close(fd)  # a hard link may name a file outside the store the work could not read itself
        raise UnsafeEntry(NOT_REGULAR_FILE, f"{name} has {info.st_nlink} hard links; only a file with "
                                            "one name, in the store, is read")
    return fd


def read_file(name: str, dir_fd: int, limit: int) -> bytes:
    """The whole of a regular file of at most `limit` bytes; a larger one is UnsafeEntry(too_large)."""
    fd = open_file(name, dir_fd)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise UnsafeEntry(TOO_LARGE, f"{name} is {size} bytes; at most {limit} are read")
        data = read_span(fd, 0, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew between fstat and read
        raise UnsafeEntry(TOO_LARGE, f"{name} is larger than {limit} bytes; at most {limit} are read")
    return data


def read_span(fd: int, offset: int, count: int) -> bytes:
    """Up to `count` bytes from `offset`; shorter only at the end of the file."""
    parts, got = [], 0
    while got < count:
        chunk = os.pread(fd, min(count - got, 1 << 20), offset + got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def write_atomic(dir_fd: int, name: str, data: bytes) -> None:
    """Temp file 0600 in the same folder, fsync, rename over `name`; the temp is removed in `finally`.

    The rename replaces whatever `name` was (a planted link is replaced, never written through).
    """
    tmp = f".tmp-{name}-{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, FILE_MODE, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)


def same_folder(fd: int, name: str, dir_fd: int) -> bool:
    """True when `name` in `dir_fd` is still the folder `fd` was opened on (not renamed away, not a link)."""
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return stat.S_ISDIR(now.st_mode) and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


@contextmanager
def closing(fd: int) -> Iterator[int]:
    """Close a descriptor when the block ends."""
    try:
        yield fd
    finally:
        os.close(fd)


# -- a listing of a folder the work wrote (its artifacts) ----------------------------------------

TREE_ENTRIES_MAX = 10_000  # a listing of more is UnsafeEntry(too_large), never cut silently
TREE_DEPTH_MAX = 32  # folders nested deeper are listed as folders, not entered


def list_tree(root: int, shown: str) -> list[dict[str, Any]]:
    """Every entry under the artifacts folder, links never followed, walked by descriptor.

    Only a regular file with one name is read (for its digest); a link is listed with its
    target, a FIFO, socket or device with its type, so that none of them hides, hangs or fails
    the listing. More than TREE_ENTRIES_MAX entries is UnsafeEntry(too_large).
    """
    entries: list[dict[str, Any]] = []
    pending: list[tuple[int, str, int]] = [(os.dup(root), "", 1)]
    try:
        while pending:
            fd, prefix, depth = pending.pop()
            with closing(fd):
                for entry in sorted(os.scandir(fd), key=lambda e: e.name):
                    rel = prefix + entry.name
                    found = _entry(fd, entry.name, depth >= TREE_DEPTH_MAX)
                    if isinstance(found, int):
                        pending.append((found, rel + "/", depth + 1))
                        continue
                    entries.append({"name": rel, "path": os.path.join(shown, rel), **found})
                    if len(entries) > TREE_ENTRIES_MAX:
                        raise UnsafeEntry(TOO_LARGE, f"more than {TREE_ENTRIES_MAX} entries; "
                                                     "the listing is not cut silently")
    finally:
        for fd, _, _ in pending:
            os.close(fd)
    return entries


def _entry(folder: int, name: str, too_deep: bool) -> dict[str, Any] | int:
    """What `name` is: an open descriptor for a folder to enter, else its listing entry."""
    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode) and not too_deep:
        try:
            return open_folder(name, folder)
        except UnsafeEntry:  # swapped for a link since the stat
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        return {"size": info.st_size, "sha256": None, "type": "symlink", "link": _readlink(name, folder)}
    if not stat.S_ISREG(info.st_mode):
        return _other(info)
    try:
        fd = open_file(name, folder)
    except UnsafeEntry:  # swapped since the stat, or hard-linked: listed, never read
        now = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISLNK(now.st_mode):
            return {"size": now.st_size, "sha256": None, "type": "symlink", "link": _readlink(name, folder)}
        if stat.S_ISREG(now.st_mode):  # a second name of a file that may live outside the store
            return {"size": now.st_size, "sha256": None, "type": "hardlink", "link": None}
        return _other(now)
    with closing(fd):
        size, digest = _digest(fd)
    return {"size": size, "sha256": digest, "type": "file", "link": None}


def _readlink(name: str, folder: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError:
        return None


def _other(info: os.stat_result) -> dict[str, Any]:
    """A folder too deep to enter, a fifo, socket or device: named with its type, never opened."""
    kinds = ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"),
             (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"))
    kind = next((word for test, word in kinds if test(info.st_mode)), "other")
    return {"size": 0, "sha256": None, "type": kind, "link": None}


def _digest(fd: int) -> tuple[int, str]:
    """The size and sha256 of the same bytes, read once (a file still growing stays consistent)."""
    import hashlib

    digest, size = hashlib.sha256(), 0
    while block := os.read(fd, 1 << 20):
        digest.update(block)
        size += len(block)
    return size, digest.hexdigest()


def read_below(root: int, rel: str, limit: int) -> bytes:
    """A regular file `rel` (slash-separated, as `list_tree` names it) below `root`, confined and bounded.

    A name from outside (a page's URL) may hold `..`, `.` or an empty part: refused, never followed
    up out of `root`."""
    *folders, leaf = rel.split("/")
    if any(part in ("", ".", "..") for part in (*folders, leaf)):
        raise OSError(errno.EINVAL, f"{rel!r} does not name a file below its folder")
    opened: list[int] = []
    try:
        here = root
        for part in folders:
            here = open_folder(part, here)
            opened.append(here)
        return read_file(leaf, here, limit)
    finally:
        for fd in opened:
            os.close(fd)
