"""Queues: a queued run's wait for its slot, the queue verbs, the pause after a rate limit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lionrun.application.busy import retry_busy
from lionrun.application.outage import Outage
from lionrun.application.ports import (
    Clock,
    Held,
    RunNotFound,
    RunQueues,
    RunRecords,
    StoreBusy,
    StoreRefused,
)
from lionrun.domain.queue import (
    BACKOFF_SECONDS,
    QUEUED,
    RATE_LIMITED,
    QueueSettings,
    check_queue_name,
    is_paused,
    pause,
    pause_ends,
    pause_reason,
    rate_limited,
    resume,
    set_budget,
    set_parallel,
    spent,
    window_ends,
    window_spent,
)
from lionrun.domain.run import RecordUnusable, Run, iso

HEAD_POLL = 0.05  # how often the first in line looks for a free slot (seconds)
LINE_POLL = 0.2  # how often a waiter behind others looks whether it is first
LINE_SHOWN = 100  # runs in line `li queue list` names
_BUSY = QueueSettings(name="-")  # a look the store was too busy to answer: no turn yet, nothing taken


@dataclass(frozen=True)
class Turn:
    """How a wait for a slot ended: with what holds the slot (None for a store that holds the
    slot elsewhere, or a queue no longer kept), or stopped (a kill) before any slot was taken."""

    slot: Held | None
    stopped: bool


class QueueService:
    """The use cases of queues: wait for a slot, change a queue, list the queues."""

    def __init__(self, queues: RunQueues, clock: Clock, backoff: float = BACKOFF_SECONDS) -> None:
        self.queues = queues
        self.clock = clock
        self.backoff = backoff

    def wait_turn(self, run_id: str, queue: str, waiting: Held | None, stopped: Callable[[], bool],
                  on_wait: Callable[[str], None] | None = None, on_slot: Callable[[], None] | None = None,
                  outage: Outage | None = None) -> Turn:
        """Wait, first come first served, until the queue is open and a slot is free; take it.

        `stopped` is asked between looks (a SIGTERM, a recorded kill request): then the run
        leaves the line without a slot. A queue whose settings are gone has no limit any more.
        `on_slot` (the start recorded) runs once the slot is held and before the run leaves the
        line, so the next in line cannot be recorded started before this one.

        A store that does not answer for a while (a shared store's server restarting, a statement
        timed out on a loaded machine: StoreUnavailable) or is busy (StoreBusy) is no reason to
        give the run up: each step is retried as `outage` rides out outages (LI_STORE_OUTAGE), and
        a busy look is simply a look that found no turn yet. Only an outage longer than that, or a
        store that refuses, ends the wait (the exception passes).
        """
        ride = outage if outage is not None else Outage(self.clock)
        said: str | None = None
        while True:
            if stopped():
                ride.call("leaving the queue's line", lambda: self.queues.leave(queue, run_id, waiting))
                return Turn(None, stopped=True)
            try:
                settings, slot, first = ride.call("a look at the queue", lambda: self._look(queue, run_id))
            except StoreBusy:
                settings, slot, first = _BUSY, None, False
            if settings is None:
                ride.call("leaving the queue's line", lambda: self.queues.leave(queue, run_id, waiting))
                return Turn(None, stopped=False)
            if slot is not None:
                if on_slot is not None:
                    on_slot()
                ride.call("leaving the queue's line", lambda: self.queues.leave(queue, run_id, waiting))
                return Turn(slot, stopped=False)
            now = self.clock.now()
            if settings is _BUSY:
                why = "the store is busy"
            else:
                why = pause_reason(settings, now) or ("every slot is taken" if first else "runs before it wait")
            if on_wait is not None and why != said:
                on_wait(why)
                said = why
            self.clock.sleep(HEAD_POLL if first else LINE_POLL)

    def _look(self, queue: str, run_id: str) -> tuple[QueueSettings | None, Held | None, bool]:
        """One look: the queue's settings (None: no longer kept), the slot taken (None: not this
        look's turn) and whether the run is first in line. A slot is taken last, so a look that
        fails before it took nothing, and one retried after a failure takes at most one."""
        settings = self.queues.settings(queue)
        if settings is None:
            return None, None, False
        first = self.queues.first_in_line(queue, run_id)
        if first and not is_paused(settings, self.clock.now()):
            return settings, self.queues.take_slot(queue, settings.parallel), True
        return settings, None, first

    def set(self, name: str, parallel: int | None | Unchanged = None,
            budget: tuple[int, float] | None | Unchanged = None) -> dict[str, Any]:
        """A queue's limit and token budget per window: each UNCHANGED unless given."""
        check_queue_name(name, "NAME")

        def change(settings: QueueSettings) -> QueueSettings:
            if not isinstance(parallel, Unchanged):
                settings = set_parallel(settings, parallel)
            if not isinstance(budget, Unchanged):
                settings = set_budget(settings, *(budget or (None, None)))
            return settings

        return self.describe(self.queues.change(name, change))

    def pause(self, name: str) -> dict[str, Any]:
        check_queue_name(name, "NAME")
        return self.describe(self.queues.change(name, pause))

    def resume(self, name: str) -> dict[str, Any]:
        check_queue_name(name, "NAME")
        return self.describe(self.queues.change(name, resume))

    def listing(self) -> list[dict[str, Any]]:
        """Every queue the store keeps: its limit, its running and waiting, paused and why."""
        rows = []
        for name in self.queues.names():
            settings = self.queues.settings(name)
            if settings is not None:
                rows.append(self.describe(settings))
        return rows

    def describe(self, settings: QueueSettings) -> dict[str, Any]:
        now = self.clock.now()
        until = pause_ends(settings, now)
        return {"name": settings.name, "parallel": settings.parallel, "running": self.queues.running(settings.name),
                "waiting": self.queues.waiting(settings.name), "paused": is_paused(settings, now),
                "paused_reason": pause_reason(settings, now), "paused_until": None if until is None else iso(until),
                "paused_by": settings.paused_by if is_paused(settings, now) else None,
                "line": [{"run_id": run_id, "position": index + 1, "priority": priority}
                         for index, (_, run_id, priority) in enumerate(self.queues.places(settings.name)[:LINE_SHOWN])],
                **self.budget_of(settings)}

    def budget_of(self, settings: QueueSettings) -> dict[str, Any]:
        """The queue's token budget per window, what its current window spent, when it rolls."""
        if settings.max_tokens is None:
            return {}
        now = self.clock.now()
        ends = window_ends(settings)
        return {"max_tokens": settings.max_tokens, "per_seconds": settings.per,
                "window_spent_tokens": window_spent(settings, now),
                "window_ends": iso(ends) if ends is not None and now < ends else None}

    def after_end(self, run: Run) -> QueueSettings | None:
        """A run that ended rate limited pauses its queue until the vendor's reset (or a bounded
        backoff); the runs waiting in it stay queued and start once it opens by itself."""
        if not run.queue:
            return None
        now = self.clock.now()
        tokens = run.extra.get("tokens") if isinstance(run.extra, dict) else None
        paused = None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            kept = self.queues.settings(run.queue)
            if kept is not None and kept.max_tokens is not None:  # the window's budget
                paused = self.queues.change(run.queue, lambda s: spent(s, run.run_id, tokens, now))
        if run.reason_code != RATE_LIMITED:
            return paused
        reset = run.retry_at if isinstance(run.retry_at, str) else None
        return self.queues.change(run.queue, lambda s: rate_limited(s, run.run_id, reset, now, self.backoff))


def wait_for_slot(store: RunRecords, queues: RunQueues | None, clock: Clock, run_id: str, waiting: Held | None,
                  stopped: Callable[[], bool], say: Callable[[str], None], outage: Outage) -> Turn | None:
    """A `queued` run's runner waits here, alive, until its queue gives it a slot: the
    Turn that ended the wait (`stopped` when a kill came first), or None when the run is not one
    queued in a kept queue (the runner then lets go of `waiting`, the place it was handed).
    `waiting` None: a store whose runner takes its own place (PostgreSQL), or one started by hand."""
    try:
        run = store.read(run_id)
    except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
        run = None  # the work's own start meets the same fault and records it
    if run is None or run.status != QUEUED or not run.queue or queues is None:
        return None
    queue = run.queue
    if waiting is None:
        try:
            waiting = queues.claim(queue, run_id, run.priority or 0).place
        except (StoreRefused, OSError) as exc:
            say(f"no place in the queue {queue}: {exc}; the work starts now")
            return Turn(None, stopped=False)

    def record_start() -> None:
        started = iso(clock.now())

        def change(current: Run) -> Run | None:
            return None if current.end_recorded else current.evolve(status="running", started_at=started)

        try:
            retry_busy(lambda: store.update(run_id, change), clock.sleep)
        except (StoreBusy, RunNotFound, RecordUnusable, StoreRefused, OSError):
            return  # the work's own start records it

    turn = QueueService(queues, clock).wait_turn(run_id, queue, waiting, stopped,
                                                 lambda why: say(f"queued in {queue}: {why}"), record_start, outage)
    if not turn.stopped:
        say(f"{queue} gave a slot; the work starts")
    return turn


def after_end_in_queue(queues: RunQueues | None, clock: Clock, ended: Run | None, say: Callable[[str], None]) -> None:
    """A run that ended rate limited pauses its queue until the vendor's reset; one that
    spent tokens counts them in its queue's budget."""
    if ended is None or not _touches_its_queue(ended) or queues is None:
        return
    try:
        paused = QueueService(queues, clock).after_end(ended)
    except (StoreRefused, OSError) as exc:
        say(f"the queue could not be paused after the rate limit, or its budget counted: {exc}")
        return
    limited = ended.reason_code == RATE_LIMITED
    if paused is not None and paused.paused_until and (limited or paused.paused_by == ended.run_id):
        why = "rate limited" if limited else "its token budget for the window is spent"
        say(f"queue {paused.name} paused until {paused.paused_until} ({why})")


def _touches_its_queue(ended: Run) -> bool:
    """Whether an end changes its queue: a rate limit pauses it, spent tokens count in its budget."""
    spent_tokens = isinstance(ended.extra, dict) and bool(ended.extra.get("tokens"))
    return bool(ended.queue) and (ended.reason_code == RATE_LIMITED or spent_tokens)


class Unchanged:
    """A setting `li queue set` was not given: the queue keeps its own."""


UNCHANGED = Unchanged()
