"""The page's board (`li serve`): every run of the store grouped by what it needs, kept fresh by a cheap poll.

One `Board` per server. `refresh()` lists the store's ids (a folder listing, or one query on
PostgreSQL), observes each run it has not seen end — through the one `Observer`, so the page
agrees with `li job status` — and keeps an ended run's entry without reading it again (an end is
final; only its removal changes it, and the listing sees that). While nothing runs, a refresh is
one listing: the server's CPU stays near zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from msgspec import Struct

from lionrun.application.ports import Clock, RunFiles, RunNotFound, RunQueues, StoreRefused
from lionrun.application.reads import RunReads, error_row, person_fields
from lionrun.domain.approval import open_requests
from lionrun.domain.board import Group, group_of
from lionrun.domain.contract import ContractError
from lionrun.domain.partition import bucket_of
from lionrun.domain.queue import is_paused
from lionrun.domain.run import RecordUnusable
from lionrun.domain.transcript import Transcript
from lionrun.domain.vocabulary import QUEUED
from lionrun.domain.wire import ListRow

LAST_LINE_BYTES: Final = 4096  # the console's tail read for a working run's last line
LAST_LINE_CHARS: Final = 200


class Entry(Struct, frozen=True):
    """One run as the board shows it: its list row (the contract's fields), its group, and extras."""

    run_id: str
    group: Group
    row: dict[str, Any]
    last_line: str | None = None
    queue_position: int | None = None
    age_seconds: float | None = None
    final: bool = False  # ended: never read again
    approvals: tuple[dict[str, Any], ...] = ()  # its open permission requests, oldest first


class Changes(Struct, frozen=True):
    """What one refresh found: entries new or changed, and ids no longer in the store."""

    changed: tuple[Entry, ...] = ()
    removed: tuple[str, ...] = ()


class Board:
    """Every run of the store, grouped (domain/board.py), refreshed on demand."""

    def __init__(self, reads: RunReads, files: RunFiles,
                 queues: Callable[[], RunQueues | None] | None = None, clock: Clock | None = None) -> None:
        self.reads = reads
        self.clock = clock
        self.files = files
        self.queues = queues
        self.entries: dict[str, Entry] = {}

    def refresh(self) -> Changes:
        """Bring every entry up to date; what changed since the last refresh."""
        try:
            ids = list(self.reads.store.run_ids())
        except StoreRefused:
            return Changes()
        paused = self._paused_queues()
        changed: list[Entry] = []
        for run_id in ids:
            known = self.entries.get(run_id)
            if known is not None and known.final:
                continue
            entry = self.entry(run_id, paused)
            if entry is None:
                continue
            if known is None or _differs(known, entry):
                changed.append(entry)
            self.entries[run_id] = entry
        gone = tuple(run_id for run_id in set(self.entries) - set(ids))
        for run_id in gone:
            del self.entries[run_id]
        return Changes(tuple(changed), gone)

    def ordered(self) -> list[Entry]:
        """Every entry, newest first (ids sort by submission time)."""
        return [self.entries[run_id] for run_id in sorted(self.entries, reverse=True)]

    def entry(self, run_id: str, paused: Iterable[str] = ()) -> Entry | None:
        """One run's entry now; None for a folder that is not (or no longer) a run."""
        try:
            observed = self.reads.observer.observe(run_id)
        except RunNotFound:
            return None
        except RecordUnusable as exc:
            row = error_row(run_id, exc.reason_code, exc.detail).to_wire()
            return Entry(run_id=run_id, group=group_of(None, None, None, None), row=row)
        run, d = observed.run, observed.derivation
        row = ListRow.listed(run, d, **person_fields(run)).to_wire()
        group = group_of(d.status, d.terminal, d.outcome, bucket_of(d), run.queue in set(paused))
        working = not d.terminal and d.status not in (QUEUED,)
        return Entry(run_id=run_id, group=group, row=row, age_seconds=round(d.age_seconds, 1),
                     last_line=self.last_line(run_id) if working else None,
                     queue_position=self.reads.queue_position(run, d.status), final=d.terminal,
                     approvals=() if d.terminal else tuple(open_requests(run.approvals)))

    def last_line(self, run_id: str) -> str | None:
        """The console's last non-empty line, as a person reads it (an agent's events rendered)."""
        try:
            _, size = self.files.console_bytes(run_id, 0, 0)
            data, _ = self.files.console_bytes(run_id, max(0, size - LAST_LINE_BYTES), LAST_LINE_BYTES)
        except (OSError, RunNotFound, RecordUnusable, StoreRefused):
            return None
        if size > LAST_LINE_BYTES:
            data = data[data.find(b"\n") + 1:]  # the first line read may be cut
        text = Transcript().feed(data[: data.rfind(b"\n") + 1] or data)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:LAST_LINE_CHARS] if lines else None

    def _paused_queues(self) -> set[str]:
        """The queues paused now (a person's pause, or one until a vendor's reset); none if unreadable."""
        if self.queues is None:
            return set()
        try:
            queues = self.queues()
            if queues is None:
                return set()
            found = set()
            for name in queues.names():
                settings = queues.settings(name)
                if self.clock is not None and is_paused(settings, self.clock.now()):
                    found.add(name)
            return found
        except (StoreRefused, OSError, ContractError):
            return set()


def _differs(before: Entry, after: Entry) -> bool:
    """Whether a person would see a difference (the age grows every look and does not count)."""
    return (before.group, before.row, before.last_line, before.queue_position, before.approvals) != \
        (after.group, after.row, after.last_line, after.queue_position, after.approvals)


def options(entries: Iterable[Entry]) -> Mapping[str, list[str]]:
    """The values each filter can take on this board (label, queue, host, model), sorted."""
    found: dict[str, set[str]] = {"label": set(), "queue": set(), "host": set(), "model": set()}
    for entry in entries:
        for name, values in found.items():
            value = entry.row.get(name)
            if isinstance(value, str) and value:
                values.add(value)
    return {name: sorted(values) for name, values in found.items()}
