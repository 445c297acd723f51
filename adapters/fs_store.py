"""The filesystem run store: one folder per run under `$LI_HOME/runs`, atomic fenced writes."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from application.ports import RunNotFound, StoreBusy, StoreRefused
from domain.availability import MALFORMED, MISSING, UNREADABLE, Availability, ConsoleText
from domain.run import RecordUnusable, Run, is_run_id, make_run_id

RECORD = "record.json"
LOCK = "record.lock"
# A removed run's folder is first renamed to `runs/.trash-<run_id>-<hex>` (never a run id, so no
# reader lists it) and deleted after its lock is released; a leftover from a crash is swept later.
TRASH = ".trash-"


def atomic_write(path: str, data: bytes) -> None:
    """Temp file in the same folder, fsync, `os.replace`; the temp is removed in `finally`."""
    import tempfile

    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class FsRunStore:
    """`RunStore` on a real filesystem. Readers never need the lock to see a whole record."""

    def __init__(self, home: str, reads: Callable[[str], None] | None = None) -> None:
        self.home = os.path.abspath(home)
        self.runs = os.path.join(self.home, "runs")
        self._on_read = reads  # a hook for tests and benchmarks that count record reads
        self._held: dict[str, int] = {}  # run id -> how many of its locks this store holds
        self._retired: dict[str, list[str]] = {}  # run id -> its renamed-away folder, deleted on release

    def run_dir(self, run_id: str) -> str:
        if not is_run_id(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        return os.path.join(self.runs, run_id)

    def reserve(self, now: datetime) -> str:
        try:
            os.makedirs(self.runs, exist_ok=True)
            while True:
                run_id = make_run_id(now, os.urandom(3).hex())
                try:
                    os.mkdir(os.path.join(self.runs, run_id))
                    return run_id
                except FileExistsError:
                    continue
        except OSError as exc:
            raise StoreRefused(f"cannot allocate a run under {self.runs}: {exc.strerror}") from exc

    def discard(self, run_id: str) -> None:
        import shutil

        shutil.rmtree(self.run_dir(run_id), ignore_errors=True)

    def create(self, run: Run) -> Run:
        first = run.evolve(generation=1)
        try:
            with self._lock(run.run_id, 10.0):
                self._write(first)
        except RunNotFound as exc:
            raise StoreRefused(f"the reserved folder of {run.run_id} is gone") from exc
        except OSError as exc:
            raise StoreRefused(f"cannot write the record: {exc.strerror or exc}") from exc
        return first

    def read(self, run_id: str) -> Run:
        path = os.path.join(self.run_dir(run_id), RECORD)
        if self._on_read is not None:
            self._on_read(run_id)
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError as exc:
            raise RunNotFound(run_id) from exc
        except NotADirectoryError as exc:
            raise RunNotFound(run_id) from exc
        except OSError as exc:
            raise RecordUnusable(UNREADABLE, f"record.json: {exc.strerror or exc}") from exc
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise RecordUnusable(MALFORMED, f"record.json is not valid JSON: {exc}") from exc
        return Run.from_dict(data)

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        try:
            with self._lock(run_id, lock_timeout):
                current = self.read(run_id)
                new = change(current)
                if new is None:
                    return None
                new = new.evolve(generation=current.generation + 1)
                self._write(new)
                return new
        except OSError as exc:
            raise StoreRefused(f"cannot write the record: {exc.strerror or exc}") from exc

    def _lock(self, run_id: str, timeout: float) -> _Held:
        """The run's lock; a run whose folder is gone is RunNotFound, and no folder is made for it.

        filelock creates a missing parent folder when it starts to acquire, so the folder must
        exist before, and still be the same folder after: one removed in between leaves only
        the ghost filelock made, which is taken away again before RunNotFound is raised.
        """
        from filelock import FileLock, Timeout

        folder = self.run_dir(run_id)
        try:  # held open, the folder's inode cannot be reused by a ghost made meanwhile
            pinned = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise RunNotFound(run_id) from exc
        lock = FileLock(os.path.join(folder, LOCK), timeout=timeout)
        try:
            lock.acquire()
            before = os.fstat(pinned)
        except Timeout as exc:
            raise StoreBusy(f"the lock of {run_id} was not free within {timeout}s") from exc
        except FileNotFoundError as exc:  # the folder was renamed away while we waited
            raise RunNotFound(run_id) from exc
        finally:
            os.close(pinned)
        if _identity(folder) != (before.st_dev, before.st_ino):
            _bury_ghost(folder)  # still under the lock, so no other writer is inside it
            lock.release()
            raise RunNotFound(run_id)
        self._held[run_id] = self._held.get(run_id, 0) + 1
        return _Held(lock, lambda: self._released(run_id))

    def _released(self, run_id: str) -> None:
        """After a lock is let go: the last release deletes what `remove` renamed away meanwhile."""
        left = self._held.get(run_id, 1) - 1
        if left > 0:
            self._held[run_id] = left
            return
        self._held.pop(run_id, None)
        _delete(self._retired.pop(run_id, []))

    def _write(self, run: Run) -> None:
        body = json.dumps(run.to_dict(), indent=1, sort_keys=True).encode("utf-8")
        atomic_write(os.path.join(self.run_dir(run.run_id), RECORD), body)

    def run_ids(self) -> Iterator[str]:
        try:
            names = os.listdir(self.runs)
        except FileNotFoundError:
            return iter(())
        except OSError as exc:  # LI_HOME is a file, or unreadable: the store cannot be listed
            raise StoreRefused(f"cannot list the runs under {self.runs}: {exc.strerror or exc}") from exc
        return iter(sorted((n for n in names if is_run_id(n)), reverse=True))

    def write_text(self, run_id: str, name: str, text: str) -> None:
        try:
            atomic_write(os.path.join(self.run_dir(run_id), name), text.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            raise StoreRefused(f"cannot write {name}: {exc.strerror or exc}") from exc

    def read_text(self, run_id: str, name: str) -> str:
        with open(os.path.join(self.run_dir(run_id), name), encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()

    def console(self, run_id: str, tail_chars: int) -> ConsoleText:
        path = os.path.join(self.run_dir(run_id), "console.log")
        try:
            with open(path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                span = min(size, max(tail_chars, 0) * 4)
                handle.seek(size - span)
                raw = handle.read(span)
        except FileNotFoundError:
            return ConsoleText(Availability.unavailable(MISSING, "console.log does not exist"), None)
        except OSError as exc:
            return ConsoleText(Availability.unavailable(UNREADABLE, f"console.log: {exc.strerror}"), None)
        text = raw.decode("utf-8", errors="replace")
        if span < size and text:
            text = text[1:] if text[0] == "\ufffd" else text  # a cut multibyte character
        tail = text[-tail_chars:] if tail_chars > 0 else ""
        return ConsoleText(Availability.of(tail), span < size or len(tail) < len(text))

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        root = os.path.join(self.run_dir(run_id), "artifacts")
        if not os.path.isdir(root):
            if os.path.lexists(root):
                return Availability.unavailable(MALFORMED, "artifacts is not a directory")
            return Availability.unavailable(MISSING, "artifacts/ does not exist")
        try:
            return Availability.of(sorted(_listing(root), key=lambda a: str(a["name"])))
        except OSError as exc:
            return Availability.unavailable(UNREADABLE, f"artifacts/: {exc.strerror or exc}")

    def manifest(self, run_id: str) -> Availability[dict[str, Any]]:
        path = os.path.join(self.run_dir(run_id), "manifest.json")
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            return Availability.unavailable(MISSING, "manifest.json does not exist (yet)")
        except OSError as exc:
            return Availability.unavailable(UNREADABLE, f"manifest.json: {exc.strerror}")
        except (UnicodeDecodeError, ValueError) as exc:
            return Availability.unavailable(MALFORMED, f"manifest.json: {exc}")
        if not isinstance(data, dict):
            return Availability.unavailable(MALFORMED, "manifest.json is not a JSON object")
        return Availability.of(data)

    def remove(self, run_id: str) -> None:
        """One rename takes the whole run out of `runs/`; the bytes are deleted outside its lock.

        A reader sees the run whole or not at all. Called under the run's lock (prune's update),
        the deletion waits for the release, so the lock file is never deleted while the run
        exists; it also sweeps what an interrupted removal left behind. A missing run is a no-op.
        """
        trash = os.path.join(self.runs, f"{TRASH}{run_id}-{os.urandom(4).hex()}")
        try:
            os.rename(self.run_dir(run_id), trash)
        except FileNotFoundError:
            return
        if self._held.get(run_id):
            self._retired.setdefault(run_id, []).append(trash)
        else:
            _delete([trash])
        self.sweep()

    def sweep(self) -> None:
        """Delete the trash of removals that were interrupted (a prune killed before it deleted)."""
        mine = {path for paths in self._retired.values() for path in paths}
        try:
            names = os.listdir(self.runs)
        except OSError:
            return
        _delete([p for p in (os.path.join(self.runs, n) for n in names if n.startswith(TRASH)) if p not in mine])


class _Held:
    def __init__(self, lock: Any, after: Callable[[], None]) -> None:
        self.lock = lock
        self.after = after

    def __enter__(self) -> _Held:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.lock.release()
        finally:
            self.after()


def _identity(folder: str) -> tuple[int, int] | None:
    """Which folder is at this path now (device and inode), or None when there is none."""
    try:
        info = os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


def _bury_ghost(folder: str) -> None:
    """Take away a folder filelock made for a run that is gone: its lock file, then the folder."""
    try:
        os.unlink(os.path.join(folder, LOCK))
        os.rmdir(folder)  # fails, and keeps the folder, if anything else is in it
    except OSError:
        pass


def _delete(paths: list[str]) -> None:
    import shutil

    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def _listing(root: str) -> Iterator[dict[str, Any]]:
    """Every entry under `root`, links never followed: a folder is walked, anything else is an entry.

    Only a regular file is read (for its digest); a symlink is listed with its target, and a
    fifo, socket or device with its type, so that neither one hides, hangs or fails the listing.
    """
    for folder, dirs, files in os.walk(root, onerror=_raise, followlinks=False):
        for name in dirs + files:
            path = os.path.join(folder, name)
            entry = _entry(path)
            if entry is not None:
                yield {"name": os.path.relpath(path, root), "path": path, **entry}


def _entry(path: str) -> dict[str, Any] | None:
    """What is at `path` (None for a real folder, which the walk enters); OSError if it is unreadable."""
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        return None
    if stat.S_ISLNK(info.st_mode):
        return {"size": info.st_size, "sha256": None, "type": "symlink", "link": os.readlink(path)}
    if not stat.S_ISREG(info.st_mode):
        return _other(info)
    try:  # O_NOFOLLOW and O_NONBLOCK: swapped for a link or a fifo since lstat, it is not read
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it became a link since lstat: list it as one
            return {"size": os.lstat(path).st_size, "sha256": None, "type": "symlink", "link": os.readlink(path)}
        raise
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return _other(opened)
        size, digest = _digest(handle)
    return {"size": size, "sha256": digest, "type": "file", "link": None}


def _other(info: os.stat_result) -> dict[str, Any]:
    """A fifo, socket or device: named with its type, never opened."""
    kinds = ((stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"))
    kind = next((name for test, name in kinds if test(info.st_mode)), "other")
    return {"size": 0, "sha256": None, "type": kind, "link": None}


def _raise(error: OSError) -> None:
    raise error


def _digest(handle: Any) -> tuple[int, str]:
    """The size and sha256 of the same bytes, read once (a file still growing stays consistent)."""
    import hashlib

    digest, size = hashlib.sha256(), 0
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
        size += len(block)
    return size, digest.hexdigest()
