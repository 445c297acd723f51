"""`RunChanges` on the filesystem store: inotify on the run folders (Linux), a plain sleep elsewhere.

A record is only ever published by renaming a temp file onto `record.json` inside the run folder
(adapters/safe_open.py), so one `IN_MOVED_TO` named `record.json` on a watched run folder is the
whole signal; the console's appends (`IN_MODIFY`) are not subscribed to, and a rename of another
file (the manifest, an artifact's temp) wakes nobody. A run folder renamed away or deleted (a
prune) wakes the waiter too, as does a lost event queue (`IN_Q_OVERFLOW`).

The kernel interface is reached through ctypes (`inotify_init1`, `inotify_add_watch`) and read
with `os.read`; ctypes is imported only when a wait has to sleep, so a snapshot (`--max-wait 0`)
or a wait on runs that already ended never pays for it. Where inotify is unavailable (not Linux,
no libc symbol, the per-user watch limit reached) the watch degrades to the caller's poll: a
change is then seen at the next poll, never missed.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from lionrun.domain.run import is_run_id

RECORD = b"record.json"

IN_MOVED_TO = 0x00000080
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_CLOEXEC = 0o2000000
IN_NONBLOCK = 0o4000

WATCH_MASK = IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
WAKING = IN_DELETE_SELF | IN_MOVE_SELF | IN_Q_OVERFLOW | IN_IGNORED
# struct inotify_event: int wd, uint32 mask, cookie and len, in the host's byte order, then len
# bytes of name (read with int.from_bytes: a wait that never pauses imports no struct module)
EVENT_SIZE = 16
READ_SIZE = 64 * 1024


class FsRunChanges:
    """Watches `<home>/runs/<id>/` for a new `record.json`; ids are turned into folders here only."""

    def __init__(self, home: str) -> None:
        self.runs = os.path.join(os.path.abspath(home), "runs")

    def watch(self, run_ids: Sequence[str]) -> SleepingWatch | InotifyWatch:
        folders = [os.path.join(self.runs, run_id) for run_id in dict.fromkeys(run_ids)
                   if isinstance(run_id, str) and is_run_id(run_id)]
        fd = _inotify_fd()
        if fd is None:
            return SleepingWatch()
        watch = InotifyWatch(fd)
        for folder in folders:
            watch.add(folder)
        return watch


class SleepingWatch:
    """No change notification here: the wait sleeps its whole pause and the next poll sees the change."""

    def wait(self, timeout: float) -> bool:
        if timeout > 0:
            time.sleep(timeout)
        return False

    def close(self) -> None:
        pass


class InotifyWatch:
    """One inotify instance over the run folders of one wait."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.watched = 0
        self.unwatched = 0  # folders that could not be watched (gone, not a folder, the watch limit)
        import select  # only a wait that pauses watches: a snapshot never loads it

        self._poller = select.poll()
        self._poller.register(fd, select.POLLIN)

    def add(self, folder: str) -> None:
        path = os.fsencode(folder)
        if _LIBC.inotify_add_watch(self.fd, path, WATCH_MASK) < 0:
            self.unwatched += 1  # that id is then seen by the poll alone, as before
        else:
            self.watched += 1

    def wait(self, timeout: float) -> bool:
        """True as soon as a record was renamed into a watched folder (or a folder went away)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not self._poller.poll(max(1, int(left * 1000 + 0.999))):
                continue  # the poll timed out; the loop sees the deadline passed
            if self._drain():
                return True

    def _drain(self) -> bool:
        """Read every queued event; True if one of them is a record change."""
        woken = False
        while True:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                return woken
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return True  # a descriptor that cannot be read: observe again rather than miss
            if not data:
                return woken
            woken = _has_change(data) or woken

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def _has_change(data: bytes) -> bool:
    offset = 0
    while offset + EVENT_SIZE <= len(data):
        mask = int.from_bytes(data[offset + 4: offset + 8], sys.byteorder)
        length = int.from_bytes(data[offset + 12: offset + 16], sys.byteorder)
        name = data[offset + EVENT_SIZE: offset + EVENT_SIZE + length].rstrip(b"\0")
        offset += EVENT_SIZE + length
        if mask & WAKING or (mask & IN_MOVED_TO and name == RECORD):
            return True
    return False


_LIBC: Any = None


def _inotify_fd() -> int | None:
    """A fresh non-blocking inotify descriptor, or None where the kernel interface is not there."""
    global _LIBC
    if not sys.platform.startswith("linux"):
        return None  # no inotify to look for
    try:
        if _LIBC is None:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            _LIBC = libc
        fd = int(_LIBC.inotify_init1(IN_CLOEXEC | IN_NONBLOCK))
    except (ImportError, OSError, AttributeError):
        return None
    return fd if fd >= 0 else None
