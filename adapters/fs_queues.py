"""Queues on the filesystem store: settings in the store, slots held by `flock`.

    $LI_HOME/queues/<name>/settings.json   the queue's settings (atomic replace)
    $LI_HOME/queues/<name>/queue.lock      taken (flock) to change the settings or take a ticket
    $LI_HOME/queues/<name>/ticket          the last ticket given
    $LI_HOME/queues/<name>/line/<ticket>-<run id>   one per waiter, flocked by its runner
    $LI_HOME/queues/<name>/slots/<n>       slot n, flocked by the runner whose work holds it

Nothing here is a counter a dead process leaves behind: a waiter's entry and a slot are held by
an open file's `flock`, which the kernel releases when the last descriptor of it closes (the
runner exits, or is SIGKILLed). A waiter whose entry lock is free is gone and its entry is
removed by whoever notices; a slot whose lock is free is free. Every name is opened relative to
a folder descriptor, never through a link, folders 0700 and files 0600 (adapters/safe_open.py);
the store's home is kept from the work, so the work cannot reach these files.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from lionrun.adapters.fs_store import require_owner
from lionrun.adapters.safe_open import (
    UnsafeEntry,
    closing,
    make_folder,
    open_file,
    open_folder,
    read_file,
    write_atomic,
)
from lionrun.application.ports import Held, QueueBroken, StoreBusy, StoreRefused, Waiting
from lionrun.domain.queue import (
    QueueSettings,
    ahead_of,
    check_queue_name,
    entry_name,
    next_ticket,
    parse_entry,
    places_of,
    settings_of,
)

QUEUES = "queues"
SETTINGS = "settings.json"
LOCK = "queue.lock"
TICKET = "ticket"
LINE = "line"
SLOTS = "slots"
SETTINGS_MAX_BYTES = 64 * 1024
NEW = ".new-"  # an entry being made: never a waiter's name, so no reader counts it
LOCK_TIMEOUT = 10.0


class FsQueues:
    """The `RunQueues` port on the filesystem store under `home`."""

    def __init__(self, home: str) -> None:
        self.home = os.path.abspath(home)

    # -- folders ------------------------------------------------------------------------------

    def _owned(self) -> bool:
        """Whether this process may tidy the store's queues (remove a gone waiter's entry): only
        the store's owner changes it."""
        try:
            require_owner(self.home)
        except StoreRefused:
            return False
        return True

    @contextmanager
    def _queue(self, name: str, create: bool) -> Iterator[int | None]:
        """The queue's folder descriptor; None when it does not exist (and `create` is off)."""
        check_queue_name(name)
        if create:
            require_owner(self.home)  # another user's store (root's reads included) is changed by none
        try:
            if create:
                os.makedirs(self.home, mode=0o700, exist_ok=True)
            home = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            yield None
            return
        except OSError as exc:
            raise StoreRefused(f"the store {self.home} cannot be used: {exc.strerror or exc}") from exc
        try:
            with closing(home):
                queues = make_folder(QUEUES, home) if create else open_folder(QUEUES, home)
                with closing(queues):
                    folder = make_folder(name, queues) if create else open_folder(name, queues)
                    with closing(folder):
                        yield folder
        except FileNotFoundError:
            yield None
        except UnsafeEntry as exc:
            raise StoreRefused(f"the queue {name}: {exc.detail}") from None
        except OSError as exc:
            raise StoreRefused(f"the queue {name} cannot be used: {exc.strerror or exc}") from exc

    @contextmanager
    def _locked(self, folder: int) -> Iterator[None]:
        lock = open_file(LOCK, folder, os.O_RDWR | os.O_CREAT)
        with closing(lock):
            _acquire(lock, LOCK_TIMEOUT)
            yield

    # -- settings -----------------------------------------------------------------------------

    def settings(self, name: str) -> QueueSettings | None:
        """The queue's settings; None when the store has no such queue (no limit, never paused)."""
        with self._queue(name, create=False) as folder:
            return None if folder is None else _read_settings(folder, name)

    def change(self, name: str, change: Callable[[QueueSettings], QueueSettings]) -> QueueSettings:
        """Apply `change` to the queue's settings (a fresh queue's when none) under its lock."""
        with self._queue(name, create=True) as folder:
            assert folder is not None
            with self._locked(folder):
                current = _read_settings(folder, name) or QueueSettings(name=name)
                changed = change(current)
                write_atomic(folder, SETTINGS, json.dumps(changed.to_dict(), indent=1, sort_keys=True).encode())
                for sub in (LINE, SLOTS):
                    os.close(make_folder(sub, folder))
                return changed

    def names(self) -> list[str]:
        """Every queue the store keeps settings of, by name."""
        try:
            home = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreRefused(f"the store {self.home} cannot be used: {exc.strerror or exc}") from exc
        with closing(home):
            try:
                queues = open_folder(QUEUES, home)
            except FileNotFoundError:
                return []
            except OSError as exc:
                raise StoreRefused(f"{QUEUES}/ cannot be read: {exc}") from exc
            with closing(queues):
                found = []
                for entry in sorted(os.listdir(queues)):
                    with suppress(Exception):  # a stray name is no queue
                        found.append(check_queue_name(entry))
                return found

    # -- the waiting line ---------------------------------------------------------------------

    def enqueue(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        """A ticket for `run_id` and its entry in the line, locked by the descriptor returned
        (inheritable: the runner the submitter starts keeps it, and with it its place); its
        priority is in the entry's name."""
        with self._queue(name, create=True) as folder:
            assert folder is not None
            # The ticket and the entry are one step under the queue's lock: were the entry made
            # after the lock is let go, a later ticket's entry could be in line first, and its run
            # take a slot before this one (first come, first served by ticket).
            with self._locked(folder):
                ticket = next_ticket(_last_ticket(folder))
                line = make_folder(LINE, folder)
                with closing(line):
                    made = f"{NEW}{run_id}"
                    fd = open_file(made, line, os.O_RDWR | os.O_CREAT | os.O_EXCL)
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # locked before any reader can see it
                        os.rename(made, entry_name(ticket, run_id, priority), src_dir_fd=line, dst_dir_fd=line)
                        _write_ticket(folder, ticket)  # given only once its entry is in line
                    except BaseException:
                        os.close(fd)
                        with suppress(OSError):
                            os.unlink(made, dir_fd=line)
                        with suppress(OSError):
                            os.unlink(entry_name(ticket, run_id, priority), dir_fd=line)
                        raise
        os.set_inheritable(fd, True)
        return Waiting(queue=name, ticket=ticket, place=Held(fd))

    def claim(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        """A place for a runner started without the one its submitter hands over (by hand): a new
        one at the end of the line (a place nobody holds is passed over)."""
        return self.enqueue(name, run_id, priority)

    def let_go(self, waiting: Waiting) -> None:
        """This process's descriptor of the place closed (a child that inherited it still holds it)."""
        if waiting.place is not None:
            with suppress(OSError):
                os.close(waiting.place)

    def line(self, name: str) -> list[tuple[int, str]]:
        """The line as its entries say (a gone waiter not yet noticed included), in the order it starts."""
        return [(ticket, run_id) for ticket, run_id, _ in self.places(name)]

    def places(self, name: str) -> list[tuple[int, str, int]]:
        """The line's (ticket, run id, priority), in the order it starts."""
        with self._queue(name, create=False) as folder:
            if folder is None:
                return []
            return places_of(_names(folder, LINE))

    def waiting(self, name: str) -> int:
        """How many live waiters the line holds (the gone ones met are taken out)."""
        with self._queue(name, create=False) as folder:
            if folder is None:
                return 0
            try:
                line = open_folder(LINE, folder)
            except FileNotFoundError:
                return 0
            with closing(line):
                tidy = self._owned()
                return sum(_held(line, entry_name(t, r, p), remove_if_free=tidy) for t, r, p in places_of(os.listdir(line)))

    def first_in_line(self, name: str, run_id: str) -> bool:
        """Whether no live waiter is before `run_id`; the gone ones met on the way are removed."""
        with self._queue(name, create=False) as folder:
            if folder is None:
                return True
            line = open_folder(LINE, folder)
            with closing(line):
                tidy = self._owned()
                places = places_of(os.listdir(line))
                priorities = {(ticket, other): priority for ticket, other, priority in places}
                for ticket, other in ahead_of([(t, r) for t, r, _ in places], run_id):
                    if _held(line, entry_name(ticket, other, priorities[(ticket, other)]), remove_if_free=tidy):
                        return False
            return True

    def leave(self, name: str, run_id: str, waiting: Held | None) -> None:
        """Take `run_id`'s entry out of the line, and let go of its lock."""
        with self._queue(name, create=False) as folder:
            if folder is not None:
                line = open_folder(LINE, folder)
                with closing(line):
                    for entry in os.listdir(line):
                        parsed = parse_entry(entry)
                        if parsed is not None and parsed[1] == run_id:
                            with suppress(FileNotFoundError):
                                os.unlink(entry, dir_fd=line)
        if waiting is not None:
            with suppress(OSError):
                os.close(waiting)

    # -- slots --------------------------------------------------------------------------------

    def running(self, name: str) -> int:
        """How many slots of the queue are held now."""
        with self._queue(name, create=False) as folder:
            if folder is None:
                return 0
            try:
                slots = open_folder(SLOTS, folder)  # a count makes nothing: no slots/ is none held
            except FileNotFoundError:
                return 0
            with closing(slots):
                return sum(_held(slots, entry) for entry in os.listdir(slots) if entry.isdigit())

    def take_slot(self, name: str, limit: int | None) -> Held | None:
        """A free slot's descriptor, locked (inheritable: held across the exec into the lean
        supervisor and the finisher), when fewer than `limit` are held; else None. With no
        limit, a slot is still taken, so `li queue list` can count the running."""
        with self._queue(name, create=True) as folder:
            assert folder is not None
            slots = make_folder(SLOTS, folder)
            with closing(slots):
                present = sorted(int(e) for e in os.listdir(slots) if e.isdigit() and len(e) < 7)
                held = 0
                taken: int | None = None
                for index in sorted(set(present) | set(range(limit or 0))) or [0]:
                    fd = open_file(str(index), slots, os.O_RDWR | os.O_CREAT)
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        os.close(fd)
                        held += 1
                        continue
                    if taken is None and (limit is None or index < limit):
                        taken = fd
                    else:
                        os.close(fd)
                if taken is None and limit is None:  # every slot held: a new one
                    taken = _new_slot(slots, (max(present) + 1) if present else 1)
                if taken is not None and limit is not None and held >= limit:
                    os.close(taken)
                    return None
                if taken is None:
                    return None
                os.set_inheritable(taken, True)
                return Held(taken)


def _new_slot(slots: int, start: int) -> int | None:
    for index in range(start, start + 1000):
        fd = open_file(str(index), slots, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
    return None


def _names(folder: int, sub: str) -> list[str]:
    try:
        fd = open_folder(sub, folder)
    except FileNotFoundError:
        return []
    with closing(fd):
        return os.listdir(fd)


def _held(folder: int, name: str, remove_if_free: bool = False) -> bool:
    """Whether someone holds `name`'s lock; a free entry is removed (its holder is gone) when asked."""
    try:
        fd = open_file(name, folder, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # not judged gone on what cannot be looked at
    with closing(fd):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        if remove_if_free:
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
        return False


def _read_settings(folder: int, name: str) -> QueueSettings | None:
    try:
        raw = read_file(SETTINGS, folder, SETTINGS_MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise QueueBroken(name, f"{SETTINGS} cannot be read: {exc}") from exc
    try:
        return settings_of(name, raw)
    except ValueError as exc:
        raise QueueBroken(name, f"{SETTINGS} {'is ' if str(exc).startswith('malformed') else ''}{exc}") from exc


def _last_ticket(folder: int) -> int | None:
    try:
        raw = read_file(TICKET, folder, 64)
    except FileNotFoundError:
        return None
    text = raw.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _write_ticket(folder: int, ticket: int) -> None:
    """The last ticket, replaced under the queue's lock (not fsynced: a ticket lost to a power
    cut only lets a later submit share a number, ordered then by run id)."""
    fd = open_file(TICKET, folder, os.O_RDWR | os.O_CREAT)
    with closing(fd):
        data = str(ticket).encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))


def _acquire(lock: int, timeout: float) -> None:
    """The queue's lock within `timeout` seconds (the store's one polling flock); StoreRefused when
    it stays taken."""
    from lionrun.adapters.fs_store import flock_within

    try:
        flock_within(lock, timeout, "a queue")
    except StoreBusy as exc:
        raise StoreRefused(str(exc)) from None
