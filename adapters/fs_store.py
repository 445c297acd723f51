"""The filesystem run store: one folder per run under `$LI_HOME/runs`, atomic fenced writes.

A run's work is untrusted and can replace anything in and beside its run folder. So every access
goes through descriptors: `$LI_HOME` (the user's own setting, the only path ever followed), then
`runs/` and the run folder opened with `O_DIRECTORY|O_NOFOLLOW`, then each file relative to the
folder's descriptor with `O_NOFOLLOW|O_NONBLOCK`, checked by `fstat` and read with a size bound
(`adapters/safe_open.py`). Nothing outside the store is read, written or locked because of what is
inside it. Folders are created 0700 and files 0600, whatever the umask.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lionrun.adapters.safe_open import (
    FOLDER_MODE,
    UnsafeEntry,
    closing,
    list_tree,
    make_folder,
    open_file,
    open_folder,
    read_below,
    read_file,
    read_span,
    same_folder,
    write_atomic,
)
from lionrun.application.ports import (
    Held,
    KeyTaken,
    NotStoreOwner,
    RunNotFound,
    StoreBusy,
    StoreRefused,
    StoreUnavailable,
    WorkFolderRefused,
)
from lionrun.domain.availability import (
    MALFORMED,
    MISSING,
    UNREADABLE,
    Availability,
    ConsoleAvailability,
)
from lionrun.domain.lifecycle import next_generation
from lionrun.domain.run import RecordUnusable, Run, is_run_id, make_run_id, parse_record
from lionrun.domain.untrusted import (
    MANIFEST_MAX_BYTES,
    RECORD_MAX_BYTES,
    TEXT_MAX_BYTES,
    Untrusted,
    parse_json,
)

RECORD = "record.json"
LOCK = "record.lock"
CONSOLE = "console.log"
LI_LOG = "li.log"  # li's own lines (the runner's, the lean supervisor's), apart from the work's console
ARTIFACTS = "artifacts"
MANIFEST = "manifest.json"
# A removed run's folder is first renamed to `runs/.trash-<run_id>-<hex>` (never a run id, so no
# reader lists it) and deleted after its lock is released; a leftover from a crash is swept later.
TRASH = ".trash-"
# In a run's confined work `$LI_HOME` is an empty tmpfs holding this one file: an `li`
# the work runs answers that the store is hidden from it, never that it holds no runs.
HIDDEN = ".li-store-hidden"
HIDDEN_SAID = ("the store is hidden from this run's work: an li inside a confined run cannot "
               "reach it; submit the run with --confine off if its work must")
LOCK_POLL_MAX = 0.05
# Idempotency keys: `$LI_HOME/keys/<sha256 of the key>.json` names the run an idempotency key started
# (created O_EXCL: one run per key); `<sha256>.lock` is the key's turn (flock, let go by the
# kernel when its holder dies). A key whose run folder is gone names nothing.
KEYS = "keys"
KEY_TURN_SECONDS = 30.0
KEY_MAX_BYTES = 4096


def require_owner(home: str) -> None:
    """NotStoreOwner unless this process's effective uid owns `home` (a store not made yet is the
    maker's): every write to a store goes through here first, so a reader of another user's store
    (root included) never leaves a file, a reap, a lock or a notice behind."""
    try:
        owner = os.stat(home).st_uid
    except OSError:
        return  # no store yet (or none to reach): the write itself says what is wrong
    euid = os.geteuid()
    if owner != euid:
        raise NotStoreOwner(home, owner, euid)


class FsRunStore:
    """Both run ports on a real filesystem: `RunRecords` (record.json) and `RunFiles` (the rest).

    Readers never need the lock to see a whole record.
    """

    def __init__(self, home: str, reads: Callable[[str], None] | None = None) -> None:
        self.home = os.path.abspath(home)
        self.runs = os.path.join(self.home, "runs")
        self._on_read = reads  # a hook for tests and benchmarks that count record reads
        self._held: dict[str, int] = {}  # run id -> how many of its locks this store holds
        self._retired: dict[str, list[str]] = {}  # run id -> its renamed-away folder, deleted on release
        # `$LI_HOME`, opened (close-on-exec) and found not hidden once per store: a read of many
        # ids opens runs/ and each run folder through it, not the home again per id
        self._home_fd: int | None = None

    # -- the folders: $LI_HOME, runs/, runs/<id>/ -------------------------------------------------

    def _require_owner(self) -> None:
        require_owner(self.home)

    def _runs_fd(self, create: bool = False) -> int:
        """A descriptor of `runs/`; FileNotFoundError when there is no store yet (and `create` is off).

        Anything else that stops it being opened is StoreRefused: an environment fault, never
        "no such run".
        """
        if create:
            self._require_owner()
        try:
            if not create:
                return open_folder("runs", self._home())
            os.makedirs(os.path.dirname(self.home), exist_ok=True)
            home = make_folder(self.home, None) if not os.path.isdir(self.home) else _open_home(self.home)
            try:
                if _hidden(home):
                    raise StoreRefused(HIDDEN_SAID)
                return make_folder("runs", home)
            finally:
                os.close(home)
        except FileNotFoundError:
            if create:
                raise StoreRefused(f"the store {self.home} cannot be created") from None
            raise
        except OSError as exc:
            raise StoreRefused(f"the store {self.runs} cannot be used: {_why(exc)}") from exc

    def _home(self) -> int:
        """The descriptor of `$LI_HOME` this store keeps open; FileNotFoundError while there is none,
        StoreRefused where it is the cover a confined run's work sees."""
        if self._home_fd is None:
            home = _open_home(self.home)
            if _hidden(home):
                os.close(home)
                raise StoreRefused(HIDDEN_SAID)
            self._home_fd = home
        return self._home_fd

    @contextmanager
    def _run(self, run_id: str) -> Iterator[tuple[int, int]]:
        """(runs/ descriptor, run folder descriptor); RunNotFound, or RecordUnusable for a planted folder."""
        runs, folder = self._open_run(run_id)
        try:
            yield runs, folder
        finally:
            os.close(folder)
            os.close(runs)

    def _open_run(self, run_id: str) -> tuple[int, int]:
        """`_run`'s two descriptors, open; the caller closes both (a read of many ids pays no
        context manager per id)."""
        _checked(run_id)
        try:
            runs = self._runs_fd()
        except FileNotFoundError:
            raise RunNotFound(run_id) from None
        try:
            return runs, open_folder(run_id, runs)
        except FileNotFoundError:
            os.close(runs)
            raise RunNotFound(run_id) from None
        except UnsafeEntry as exc:  # the run folder was replaced by a link or a file
            os.close(runs)
            raise RecordUnusable(exc.reason_code, f"the run folder: {exc.detail}") from None
        except OSError as exc:
            os.close(runs)
            raise RecordUnusable(UNREADABLE, f"the run folder: {_why(exc)}") from None

    def run_dir(self, run_id: str) -> str:
        """Where the run's folder is, for a person and for tests that plant files in it.

        On neither port: no use case learns a run's path (the work's own artifacts folder aside,
        `work_artifacts_dir`), and nothing here ever opens this path.
        """
        return os.path.join(self.runs, _checked(run_id))

    def describe(self) -> tuple[str, str]:
        return "filesystem", self.home

    def init_schema(self) -> int | None:
        """Make `$LI_HOME/runs` (0700); a folder has no schema."""
        os.close(self._runs_fd(create=True))
        return None

    def health(self) -> list[str]:
        """Nothing beyond what doctor's own store checks (writable, private) find."""
        return []

    def reserve(self, now: datetime) -> str:
        with closing(self._runs_fd(create=True)) as runs:
            while True:
                run_id = make_run_id(now, os.urandom(3).hex())
                try:
                    os.mkdir(run_id, FOLDER_MODE, dir_fd=runs)  # atomic: the id is ours or taken
                    with closing(open_folder(run_id, runs)) as fd:
                        os.fchmod(fd, FOLDER_MODE)  # exactly 0700 even under an odd umask
                    return run_id
                except FileExistsError:
                    continue
                except OSError as exc:
                    raise StoreRefused(f"cannot allocate a run under {self.runs}: {_why(exc)}") from exc

    def discard(self, run_id: str) -> None:
        try:
            self._require_owner()
            runs = self._runs_fd()
        except (FileNotFoundError, StoreRefused):
            return
        with closing(runs):
            _delete(runs, [_checked(run_id)])

    # -- the record --------------------------------------------------------------------------------

    def create(self, run: Run) -> Run:
        first = run.evolve(generation=1)
        self._require_owner()
        try:
            with self._locked(run.run_id, 10.0) as folder:
                _write_record(folder, first)
        except RunNotFound as exc:
            raise StoreRefused(f"the reserved folder of {run.run_id} is gone") from exc
        except OSError as exc:
            raise StoreRefused(f"cannot write the record: {_why(exc)}") from exc
        return first

    def read(self, run_id: str) -> Run:
        if self._on_read is not None:
            self._on_read(run_id)
        runs, folder = self._open_run(run_id)
        os.close(runs)
        try:
            return _read_record(folder, run_id)
        finally:
            os.close(folder)

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        self._require_owner()
        try:
            with self._locked(run_id, lock_timeout) as folder:
                current = _read_record(folder, run_id)
                new = change(current)
                if new is None:
                    return None
                new = next_generation(current, new)
                _write_record(folder, new)
                return new
        except OSError as exc:
            raise _refusal(f"cannot write the record: {_why(exc)}", exc) from exc

    @contextmanager
    def _locked(self, run_id: str, timeout: float) -> Iterator[int]:
        """The run's lock (flock on `record.lock`, a regular file in the run folder); yields the folder.

        The folder was opened before the wait, so one renamed away meanwhile (a prune) is noticed
        by comparing it with what `runs/<id>` is now: RunNotFound, and nothing is written.
        """
        with self._run(run_id) as (runs, folder):
            lock = _open_lock(folder)
            with closing(lock):
                flock_within(lock, timeout, run_id)
                if not same_folder(folder, run_id, runs):
                    raise RunNotFound(run_id)
                self._held[run_id] = self._held.get(run_id, 0) + 1
                try:
                    yield folder
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
                    self._released(run_id)

    def _released(self, run_id: str) -> None:
        """After a lock is let go: the last release deletes what `remove` renamed away meanwhile."""
        left = self._held.get(run_id, 1) - 1
        if left > 0:
            self._held[run_id] = left
            return
        self._held.pop(run_id, None)
        retired = self._retired.pop(run_id, [])
        if retired:
            self._delete_names(retired)

    def run_ids(self) -> Iterator[str]:
        try:
            runs = self._runs_fd()
        except FileNotFoundError:
            return iter(())
        with closing(runs):
            try:
                names = os.listdir(runs)
            except OSError as exc:
                raise StoreRefused(f"cannot list the runs under {self.runs}: {_why(exc)}") from exc
        return iter(sorted((n for n in names if is_run_id(n)), reverse=True))

    # -- the run's other files (RunFiles) -----------------------------------------------------------

    def write_text(self, run_id: str, name: str, text: str) -> None:
        """Write `name` (one optional subfolder, e.g. `artifacts/x.md`) atomically, confined to the run."""
        *folders, leaf = _parts(name)
        self._require_owner()
        try:
            with self._run(run_id) as (_, folder), _descend(folder, folders, create=True) as inner:
                write_atomic(inner, leaf, text.encode("utf-8", "surrogateescape"))
        except (OSError, RecordUnusable) as exc:
            raise _refusal(f"cannot write {name}: {_why(exc)}", exc) from exc

    def read_text(self, run_id: str, name: str) -> str:
        """A run file's text; OSError (UnsafeEntry for a link, FIFO or an oversized file) when unusable."""
        *folders, leaf = _parts(name)
        with self._run(run_id) as (_, folder), _descend(folder, folders, create=False) as inner:
            return read_file(leaf, inner, TEXT_MAX_BYTES).decode("utf-8", "surrogateescape")

    def work_artifacts_dir(self, run_id: str) -> str:
        """Make the run's `artifacts/` (0700) and return its path for the work's environment."""
        where = os.path.join(self.run_dir(run_id), ARTIFACTS)
        try:
            self._require_owner()
            with self._run(run_id) as (_, folder):
                os.close(make_folder(ARTIFACTS, folder))
        except (OSError, RecordUnusable, StoreRefused) as exc:
            raise WorkFolderRefused(f"cannot make {ARTIFACTS}/: {_why(exc)}", where) from exc
        return where

    def seal_artifacts(self, run_id: str) -> None:
        """Nothing to do: the work's artifacts folder is already the store's."""

    def watch_folder(self, run_id: str) -> int:
        """A descriptor of the run's folder (opened never through a link) for the lean supervisor,
        which looks at record.json through it for a kill request; the caller closes it."""
        try:
            with self._run(run_id) as (_, folder):
                return os.dup(folder)
        except (OSError, RunNotFound, RecordUnusable) as exc:
            raise StoreRefused(f"the run folder cannot be opened: {_why(exc)}") from exc

    def forward_console(self, run_id: str) -> AbstractContextManager[None]:
        """Nothing to move: the console sink writes the store's own console."""
        return nullcontext()

    def console_location(self, run_id: str) -> str:
        """The console's absolute path, shown to people (the handle's `log`); never opened by path."""
        return os.path.join(self.run_dir(run_id), CONSOLE)

    def console_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """A descriptor appending to the run's console (0600, never through a link), for the runner."""
        return self._sink(run_id, CONSOLE)

    def li_log_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """A descriptor appending to the run's `li.log` (0600, never through a link), the runner's stderr."""
        return self._sink(run_id, LI_LOG)

    def console(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        return self._tail(run_id, CONSOLE, tail_chars)

    def li_log(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        return self._tail(run_id, LI_LOG, tail_chars)

    def console_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        """Up to `limit` console bytes from `offset`, and the console's size now (for follow loops).

        Raises OSError (UnsafeEntry for a planted link or FIFO) when there is no console to read.
        """
        return self._bytes(run_id, CONSOLE, offset, limit)

    def li_log_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        """`console_bytes` of the run's `li.log`."""
        return self._bytes(run_id, LI_LOG, offset, limit)

    # The console and the li log are kept alike: appended through a descriptor, read by span.

    @contextmanager
    def _sink(self, run_id: str, name: str) -> Iterator[Held]:
        self._require_owner()
        try:
            with self._run(run_id) as (_, folder):
                fd = open_file(name, folder, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except (OSError, RecordUnusable) as exc:
            raise StoreRefused(f"cannot open {name}: {_why(exc)}") from exc
        with closing(fd):
            os.set_blocking(fd, True)
            yield Held(fd)

    def _tail(self, run_id: str, name: str, tail_chars: int) -> ConsoleAvailability:
        tail_chars = max(tail_chars, 0)
        try:
            raw, size, start = self._tail_bytes(run_id, name, tail_chars * 4)
        except (OSError, RunNotFound, RecordUnusable) as exc:
            return ConsoleAvailability.unavailable(*_not_read(name, exc))
        text = raw.decode("utf-8", errors="replace")
        if start > 0 and text:
            text = text[1:] if text[0] == "\ufffd" else text  # a cut multibyte character
        tail = text[-tail_chars:] if tail_chars > 0 else ""
        return ConsoleAvailability.tail(tail, start > 0 or len(tail) < len(text))

    def _tail_bytes(self, run_id: str, name: str, span: int) -> tuple[bytes, int, int]:
        with self._run(run_id) as (_, folder), closing(open_file(name, folder)) as fd:
            size = os.fstat(fd).st_size
            start = max(0, size - span)
            return read_span(fd, start, size - start), size, start

    def _bytes(self, run_id: str, name: str, offset: int, limit: int) -> tuple[bytes, int]:
        try:
            with self._run(run_id) as (_, folder), closing(open_file(name, folder)) as fd:
                size = os.fstat(fd).st_size
                return (read_span(fd, offset, min(limit, size - offset)) if offset < size else b""), size
        except (RunNotFound, RecordUnusable) as exc:
            raise FileNotFoundError(errno.ENOENT, f"no run folder to read {name} from: {exc}") from None

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        try:
            with self._run(run_id) as (_, folder), closing(open_folder(ARTIFACTS, folder)) as root:
                entries = list_tree(root, os.path.join(self.run_dir(run_id), ARTIFACTS))
        except (OSError, RunNotFound, RecordUnusable) as exc:
            return Availability.unavailable(*_not_read(f"{ARTIFACTS}/", exc))
        return Availability.of(sorted(entries, key=lambda a: str(a["name"])))

    def artifact_bytes(self, run_id: str, name: str, limit: int) -> bytes:
        """A regular file under the run's artifacts, confined and bounded (for `li store copy`)."""
        try:
            with self._run(run_id) as (_, folder), closing(open_folder(ARTIFACTS, folder)) as root:
                return read_below(root, name, limit)
        except (RecordUnusable, RunNotFound) as exc:
            raise OSError(errno.ENOENT, f"{ARTIFACTS}/{name}: {exc}") from None

    def manifest(self, run_id: str) -> Availability[dict[str, Any]]:
        try:
            with self._run(run_id) as (_, folder):
                data = parse_json(read_file(MANIFEST, folder, MANIFEST_MAX_BYTES), MANIFEST)
        except (OSError, RunNotFound, RecordUnusable, Untrusted) as exc:
            return Availability.unavailable(*_not_read(MANIFEST, exc, "does not exist (yet)"))
        if not isinstance(data, dict):
            return Availability.unavailable(MALFORMED, f"{MANIFEST} is not a JSON object")
        return Availability.of(data)

    # -- idempotency keys ---------------------------------------------------------------

    @contextmanager
    def holding_key(self, key: str) -> Iterator[None]:
        """The key's turn: a flock on `keys/<name>.lock` (0600), held until the submit is done."""
        self._require_owner()
        try:
            with closing(self._keys_fd(create=True)) as keys:
                lock = _open_key_lock(keys, f"{key_name(key)}.lock")
        except OSError as exc:
            raise StoreRefused(f"the idempotency keys under {self.home} cannot be used: {_why(exc)}") from exc
        with closing(lock):
            flock_within(lock, KEY_TURN_SECONDS, "the idempotency key")
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def run_of_key(self, key: str) -> tuple[str, str] | None:
        try:
            keys = self._keys_fd()
        except FileNotFoundError:
            return None
        with closing(keys):
            return self._bound(keys, key_name(key))

    def bind_key(self, key: str, run_id: str, fingerprint: str) -> None:
        """Create `keys/<name>.json` O_EXCL; one that names a run no longer in the store is replaced."""
        payload = json.dumps({"run_id": _checked(run_id), "fingerprint": fingerprint}).encode("utf-8")
        name = key_name(key)
        self._require_owner()
        try:
            with closing(self._keys_fd(create=True)) as keys:
                for _ in range(2):
                    try:
                        fd = os.open(f"{name}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                     | os.O_CLOEXEC, 0o600, dir_fd=keys)
                    except FileExistsError:
                        found = self._bound(keys, name)
                        if found is not None:
                            raise KeyTaken(found[0]) from None
                        os.unlink(f"{name}.json", dir_fd=keys)  # names nothing: its run is gone
                        continue
                    with closing(fd):
                        os.fchmod(fd, 0o600)
                        os.write(fd, payload)
                        os.fsync(fd)
                    return
        except OSError as exc:
            raise _refusal(f"cannot bind the idempotency key: {_why(exc)}", exc) from exc
        raise KeyTaken(run_id)  # pragma: no cover - replaced twice under the key's turn

    def _keys_fd(self, create: bool = False) -> int:
        """`$LI_HOME/keys/` (0700); FileNotFoundError while there is none (and `create` is off)."""
        if create:
            with closing(self._runs_fd(create=True)):
                pass  # the store itself, made as a submit makes it
            return make_folder(KEYS, self._home())
        try:
            return open_folder(KEYS, self._home())
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise StoreRefused(f"the idempotency keys under {self.home} cannot be read: {_why(exc)}") from exc

    def _bound(self, keys: int, name: str) -> tuple[str, str] | None:
        """(run id, fingerprint) of `keys/<name>.json` while its run folder exists; None for no
        file, a torn one (its submit died before anything ran) or a run removed since."""
        try:
            data = json.loads(read_file(f"{name}.json", keys, KEY_MAX_BYTES))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None
        run_id, fingerprint = (data.get("run_id"), data.get("fingerprint")) if isinstance(data, dict) else (None, None)
        if not isinstance(run_id, str) or not is_run_id(run_id) or not isinstance(fingerprint, str):
            return None
        try:
            with closing(self._runs_fd()) as runs, closing(open_folder(run_id, runs)):
                return run_id, fingerprint
        except FileNotFoundError:
            return None
        except OSError:
            return run_id, fingerprint  # there, though not usable: the key still names it

    # -- removal -----------------------------------------------------------------------------------

    def remove(self, run_id: str) -> None:
        """One rename takes the whole run out of `runs/`; the bytes are deleted outside its lock.

        A reader sees the run whole or not at all. Called under the run's lock (prune's update),
        the deletion waits for the release, so the lock file is never deleted while the run
        exists; it also sweeps what an interrupted removal left behind. A missing run is a no-op.
        A run folder the work replaced by a link is renamed away like any other: the link goes,
        its target is never touched.
        """
        name = _checked(run_id)
        trash = f"{TRASH}{run_id}-{os.urandom(4).hex()}"
        self._require_owner()
        try:
            with closing(self._runs_fd()) as runs:
                os.rename(name, trash, src_dir_fd=runs, dst_dir_fd=runs)
        except (FileNotFoundError, StoreRefused):
            return
        if self._held.get(run_id):
            self._retired.setdefault(run_id, []).append(trash)
        else:
            self._delete_names([trash])
        self.sweep()

    def sweep(self) -> None:
        """Delete the trash of removals that were interrupted (a prune killed before it deleted)."""
        mine = {name for names in self._retired.values() for name in names}
        try:
            self._require_owner()
            with closing(self._runs_fd()) as runs:
                names = os.listdir(runs)
                _delete(runs, [n for n in names if n.startswith(TRASH) and n not in mine])
        except (OSError, StoreRefused):
            return

    def _delete_names(self, names: list[str]) -> None:
        try:
            with closing(self._runs_fd()) as runs:
                _delete(runs, names)
        except (OSError, StoreRefused):
            return


def _hidden(home: int) -> bool:
    """Whether `$LI_HOME` is the cover a confined run's work sees (one stat, never a read)."""
    try:
        os.stat(HIDDEN, dir_fd=home, follow_symlinks=False)
    except OSError:
        return False
    return True


def _refusal(message: str, exc: BaseException) -> StoreRefused:
    """A write the store refused: a full disk or quota (ENOSPC, EDQUOT) is an outage that may pass
    (StoreUnavailable: the runner waits it out, keeping the end in memory); else a refusal."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreUnavailable(f"{message} (the disk is full)")
    return StoreRefused(message)


def _checked(run_id: str) -> str:
    """The run id itself, the only name a run folder can have (no path can climb out of runs/)."""
    if not is_run_id(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    return run_id


def _open_home(home: str) -> int:
    """`$LI_HOME` itself: the user's setting, so a link to it is followed; anything but a folder is refused."""
    return os.open(home, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))


def _not_read(label: str, exc: BaseException, missing: str = "does not exist") -> tuple[str, str]:
    """Why `label` could not be read, as (reason code, detail): absent, refused (a planted link or FIFO,
    an unusable record, untrusted bytes) with its own reason, or else unreadable."""
    if isinstance(exc, FileNotFoundError):
        return MISSING, f"{label} {missing}"
    if isinstance(exc, UnsafeEntry | RecordUnusable | Untrusted):
        return exc.reason_code, f"{label}: {exc.detail}"
    return UNREADABLE, f"{label}: {_why(exc)}"


def _why(exc: BaseException) -> str:
    if isinstance(exc, UnsafeEntry | RecordUnusable):
        return exc.detail
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _read_record(folder: int, run_id: str) -> Run:
    try:
        raw = read_file(RECORD, folder, RECORD_MAX_BYTES)
    except FileNotFoundError:
        raise RunNotFound(run_id) from None
    except UnsafeEntry as exc:
        raise RecordUnusable(exc.reason_code, f"{RECORD}: {exc.detail}") from None
    except OSError as exc:
        raise RecordUnusable(UNREADABLE, f"{RECORD}: {_why(exc)}") from None
    return parse_record(raw, run_id)


def _open_lock(folder: int) -> int:
    """The run's `record.lock`, a regular file; anything planted in its place (a link, a FIFO, an
    empty folder) is taken away first: the name is the store's, and its target is never touched."""
    try:
        return open_file(LOCK, folder, os.O_RDWR | os.O_CREAT)
    except UnsafeEntry:
        with suppress(OSError):  # unlinkat never follows a link
            os.unlink(LOCK, dir_fd=folder)
        with suppress(OSError):  # an empty folder planted there
            os.rmdir(LOCK, dir_fd=folder)
    except OSError as exc:
        raise StoreRefused(f"{LOCK} cannot be used: {_why(exc)}; nothing is written") from exc
    try:
        return open_file(LOCK, folder, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise StoreRefused(f"{LOCK} cannot be used: {_why(exc)}; nothing is written") from exc


def _open_key_lock(keys: int, name: str) -> int:
    """A key's lock file (a regular file; anything planted in its place is taken away first)."""
    try:
        return open_file(name, keys, os.O_RDWR | os.O_CREAT)
    except UnsafeEntry:
        with suppress(OSError):
            os.unlink(name, dir_fd=keys)
        return open_file(name, keys, os.O_RDWR | os.O_CREAT)


def _write_record(folder: int, run: Run) -> None:
    write_atomic(folder, RECORD, json.dumps(run.to_dict(), indent=1, sort_keys=True).encode("utf-8"))


def flock_within(lock: int, timeout: float, what: str) -> None:
    """flock the descriptor within `timeout` seconds, polling; StoreBusy naming `what`'s lock when
    it stays taken."""
    import time

    deadline = time.monotonic() + max(timeout, 0.0)
    pause = 0.001
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreBusy(f"the lock of {what} was not free within {timeout}s") from None
            time.sleep(min(pause, left))
            pause = min(pause * 2, LOCK_POLL_MAX)


def _parts(name: str) -> list[str]:
    """A run-relative name split into parts; nothing may climb out or be empty."""
    parts = name.split("/")
    if not parts or any(p in ("", ".", "..") for p in parts) or len(parts) > 2:
        raise ValueError(f"not a run file name: {name!r}")
    return parts


@contextmanager
def _descend(folder: int, names: list[str], create: bool) -> Iterator[int]:
    """The descriptor of a subfolder of the run (never a link); the run folder itself for none."""
    if not names:
        yield folder
        return
    fd = make_folder(names[0], folder) if create else open_folder(names[0], folder)
    with closing(fd):
        yield fd


def _delete(runs: int, names: list[str]) -> None:
    """Remove entries of `runs/` without following links (a linked folder loses the link only)."""
    import shutil

    for name in names:
        try:
            info = os.stat(name, dir_fd=runs, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(name, dir_fd=runs, ignore_errors=True)
            else:
                os.unlink(name, dir_fd=runs)
        except OSError:
            continue


if TYPE_CHECKING:
    from lionrun.application.ports import ArtifactBytes, RunFiles, RunRecords

    def _keeps_both_ports(store: FsRunStore) -> tuple[RunRecords, RunFiles, ArtifactBytes]:
        """mypy holds this store to both run ports: a method that drifts from its port fails the check."""
        return store, store, store


def key_name(key: str) -> str:
    """domain.idempotency's name of a key, imported on first use (a read never pays for hashlib)."""
    from lionrun.domain.idempotency import key_name as name

    return name(key)
