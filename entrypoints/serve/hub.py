"""The board kept fresh in one thread, its changes fanned out to every page that listens.

Change detection: a cheap poll, every POLL_SECONDS, of the store's ids (a folder listing on the
filesystem store, one query on PostgreSQL) and of the runs not yet ended; between polls the
store's own wake-up (inotify on the run folders, LISTEN/NOTIFY on PostgreSQL: `RunChanges`, the
one `li job wait` uses) cuts the wait short when a pending run's record changes. An ended run is
never read again, so an idle store costs one listing per poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from lionrun.application.board import Board, Changes, Entry

POLL_SECONDS = 0.5


class Hub:
    """One per server: the board, its version (one more per refresh that changed something), listeners."""

    def __init__(self, board: Board, changes: Any = None, poll_seconds: float = POLL_SECONDS) -> None:
        self.board = board
        self.changes = changes  # RunChanges or None
        self.poll_seconds = poll_seconds
        self.version = 0
        self.lock = threading.Lock()
        self.listeners: set[Callable[[Changes], None]] = set()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self._watch: Any = None
        self._watched: frozenset[str] = frozenset()

    def refresh(self) -> Changes:
        with self.lock:
            found = self.board.refresh()
            if found.changed or found.removed:
                self.version += 1
        return found

    def snapshot(self) -> tuple[int, list[Entry]]:
        with self.lock:
            return self.version, self.board.ordered()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Poll in a daemon thread; each change is handed to the listeners on `loop`."""
        def poll() -> None:
            while not self.stopping.is_set():
                try:
                    found = self.refresh()
                except Exception:  # noqa: BLE001 - a store that fails one poll is asked again next poll
                    found = Changes()
                if found.changed or found.removed:
                    with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
                        loop.call_soon_threadsafe(self._publish, found)
                self._sleep()
            self._close_watch()

        self.thread = threading.Thread(target=poll, name="li-serve-poll", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()

    def _publish(self, found: Changes) -> None:
        for listener in list(self.listeners):
            listener(found)

    def _sleep(self) -> None:
        """Until the next poll, or sooner when a pending run's record changes."""
        pending = frozenset(run_id for run_id, entry in self.board.entries.items() if not entry.final)
        if self.changes is None or not pending:
            self._close_watch()
            self.stopping.wait(self.poll_seconds)
            return
        if pending != self._watched:
            self._close_watch()
            try:
                self._watch, self._watched = self.changes.watch(sorted(pending)), pending
            except Exception:  # noqa: BLE001 - no watch: the poll alone finds the change
                self.stopping.wait(self.poll_seconds)
                return
        self._watch.wait(self.poll_seconds)

    def _close_watch(self) -> None:
        if self._watch is not None:
            with contextlib.suppress(Exception):
                self._watch.close()
        self._watch, self._watched = None, frozenset()
