"""The store's own lock: one `store.lock` at the store's root that serialises what changes the
store as a whole (`li job prune`, `li job rm`, `li store copy`, `li doctor --fix`).

filelock, because the file is li's alone: nothing a run's work can reach is locked through it (a
run folder keeps its descriptor-relative `fcntl.flock` on `record.lock`, adapters/fs_store.py;
docs/architecture.md says why). Imported only by the handlers that take it, never by a read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

from lionrun.application.ports import StoreBusy, StoreRefused

LOCK_NAME = "store.lock"
# How long a second prune (copy, fix) waits for the first before it says the store is busy.
WAIT_SECONDS = 30.0


def lock_path(home: str) -> str:
    return os.path.join(home, LOCK_NAME)


def hold(home: str, timeout: float = WAIT_SECONDS, reads_only: bool = False) -> Callable[[], None]:
    """Take `home/store.lock` (0600, created if missing); return what releases it.

    A store folder that does not exist yet holds nothing to guard: nothing is taken (the lock
    never creates the store). Another user's store (root's reads included) is locked by nobody
    but its owner: a call that only reads it (`reads_only`: a dry run, a copy's source) takes no
    lock, one that would change it is refused (NotStoreOwner, a StoreRefused). A `store.lock` that is a link or not a regular file is refused
    (StoreRefused), never followed; a lock held past `timeout` seconds is StoreBusy, naming it.
    """
    if not os.path.isdir(home):
        return _nothing
    from lionrun.adapters.fs_store import require_owner
    from lionrun.application.ports import NotStoreOwner

    try:
        require_owner(home)
    except NotStoreOwner:
        if reads_only:
            return _nothing  # a read of another user's store leaves no lock file of this uid behind
        raise
    path = lock_path(home)
    _refuse_a_planted_lock(path)
    from filelock import FileLock, Timeout

    lock = FileLock(path, timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        raise StoreBusy(f"another li holds the store lock {path} (a prune, store copy or doctor --fix); "
                        "try again when it ends") from None
    except OSError as exc:
        if exc.errno == errno.EROFS:
            return _nothing  # a read-only store (a copy's source) is changed by no li either
        raise StoreRefused(f"the store lock {path} cannot be taken: {exc.strerror or exc}") from None
    from lionrun.adapters.faults import pause

    pause("store_locked")  # the fault suite's hold, only when LI_FAULT_PAUSE names it
    return lambda: lock.release(force=True)


def _nothing() -> None:
    return None


def _refuse_a_planted_lock(path: str) -> None:
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreRefused(f"the store lock {path} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(found.st_mode):
        kind = "a link" if stat.S_ISLNK(found.st_mode) else "not a regular file"
        raise StoreRefused(f"the store lock {path} is {kind}, which li never follows; remove it")
