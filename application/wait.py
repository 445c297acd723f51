"""D10 bounded observation: observe ids, partition them, pace by the floor, answer within the window."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msgspec import Struct, field

from lionrun.application.observe import Observed, Observer
from lionrun.application.ports import Clock, RunChanges, RunNotFound, RunWatch, StoreUnavailable
from lionrun.domain.availability import UNREADABLE
from lionrun.domain.lifecycle import Derivation
from lionrun.domain.observation import (
    MAX_WAIT_BOUNDS,
    MAX_WAIT_DEFAULT,
    POLL_BOUNDS,
    POLL_DEFAULT,
    Clamped,
    clamp,
    next_sleep,
    timed_out,
)
from lionrun.domain.partition import TERMINAL, Partition, bucket_of, partition
from lionrun.domain.run import RecordUnusable, is_run_id
from lionrun.domain.vocabulary import INVALID_INPUT, NOT_FOUND, NOT_OBSERVED, RECORD_UNUSABLE
from lionrun.domain.wire import Row, RowError, WaitData


class WaitInterrupted(Exception):
    """Raised out of a sleep when the caller stops the wait; the answer so far is still given."""


class StopFlag:
    """Set from a signal handler: a sleep in progress is cut short, an observation pass never is."""

    def __init__(self) -> None:
        self.requested = False
        self.sleeping = False

    def request(self) -> None:
        """Ask the wait to answer now with what it has observed."""
        self.requested = True
        if self.sleeping:
            raise WaitInterrupted


class Seen(Struct, frozen=True):
    """One id's latest observation, or the reason it has none."""

    run_id: str
    observed: Observed | None = None
    error: RowError | None = None

    @property
    def bucket(self) -> str | None:
        return None if self.observed is None else bucket_of(self.observed.derivation)

    def entry(self) -> Row:
        """The wire entry: the common lifecycle fields, or nulls beside a per-id error."""
        if self.observed is not None:
            return Row.observed(self.observed.run, self.observed.derivation)
        assert self.error is not None  # a Seen is built with one of the two
        return Row.failed(self.run_id, self.error)


class WaitResult(Struct, frozen=True):
    """What a wait learned: entries in input order, the partition, and the window it used."""

    requested_ids: tuple[str, ...]
    seen: dict[str, Seen]
    partition: Partition
    max_wait: Clamped
    poll_interval: Clamped
    unresolved_spawn_after: float
    waited: bool = False
    interrupted: bool = False
    passes: int = 1

    @property
    def entries(self) -> list[Seen]:
        """One per requested position, duplicates included, in input order."""
        return [self.seen[run_id] for run_id in self.requested_ids]

    def to_data(self) -> dict[str, Any]:
        """The D10 wire shape."""
        part = self.partition
        return WaitData(
            runs=[seen.entry() for seen in self.entries],
            all_terminal=part.all_terminal,
            timed_out=timed_out(part),
            pending=list(part.pending),
            stopped_without_end=list(part.stopped_without_end),
            unresolved_spawn=list(part.unresolved_spawn),
            unresolved_spawn_after=self.unresolved_spawn_after,
            max_wait=self.max_wait.effective,
            poll_interval=self.poll_interval.effective,
            requested_max_wait=self.max_wait.requested,
            requested_poll_interval=self.poll_interval.requested,
        ).to_wire()


PassHook = Callable[[WaitResult], None]


class _Progress(Struct):
    seen: dict[str, Seen] = field(default_factory=dict)
    passes: int = 0
    waited: bool = False


# Pauses between tries while the store does not answer (its connection lost, its server away):
# from the first to the last, doubling; each within what is left of the window.
RETRY_FIRST = 0.1
RETRY_MOST = 2.0


class Waiter:
    """Bounded observation over the one Observer: it reads, it never changes a run except by a fenced reap."""

    def __init__(self, observer: Observer, clock: Clock, changes: RunChanges | None = None) -> None:
        self.observer = observer
        self.clock = clock
        self.changes = changes  # None: every pause is a plain clock sleep (the poll alone)

    def wait(
        self,
        run_ids: Sequence[str],
        max_wait: object = None,
        poll_interval: object = None,
        stop: StopFlag | None = None,
        on_pass: PassHook | None = None,
    ) -> WaitResult:
        """Observe every id until none is pending, the window closes, or `stop` is requested."""
        window = clamp(max_wait, MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT)
        poll = clamp(poll_interval, POLL_BOUNDS, POLL_DEFAULT)
        flag = stop or StopFlag()
        deadline = self.clock.monotonic() + window.effective
        progress = _Progress()
        watch: RunWatch | None = None
        retry = RETRY_FIRST
        try:
            while True:
                try:
                    self._observe_pass(run_ids, progress, deadline)
                except StoreUnavailable:
                    # The store stopped answering after this wait had learned something (a dropped
                    # connection is made again on the next call): what it learned stays, and it
                    # tries again within its window; only a store still away when the window closes
                    # makes the call unavailable. A store away from the first look is said at once.
                    left = deadline - self.clock.monotonic()
                    if left <= 0 or flag.requested or not progress.seen:
                        raise
                    self._sleep(min(retry, left), flag, None)
                    retry = min(retry * 2, RETRY_MOST)
                    progress.waited = True
                    continue
                retry = RETRY_FIRST
                result = self._snapshot(run_ids, progress, window, poll, interrupted=False)
                if on_pass is not None:
                    on_pass(result)
                if flag.requested:
                    break
                pause = next_sleep(result.partition, progress.waited,
                                   deadline - self.clock.monotonic(), poll.effective)
                if pause is None:
                    return result
                if watch is None and self.changes is not None:
                    # Watched from the first pause on, so a snapshot or a wait on ended runs never
                    # sets a watch up. A change made during the pass just done would be missed by a
                    # watch begun after it: observe the ids still open once more, now watched.
                    watch = self.changes.watch([s.run_id for s in progress.seen.values()
                                                if s.bucket != TERMINAL and not _refused(s)])
                    continue
                self._sleep(pause, flag, watch)
                progress.waited = True
        except WaitInterrupted:
            pass
        finally:
            if watch is not None:
                watch.close()
        return self._snapshot(run_ids, progress, window, poll, interrupted=True)

    def _sleep(self, seconds: float, flag: StopFlag, watch: RunWatch | None) -> None:
        """Pause until the poll is due, or sooner when a watched run's record changes."""
        flag.sleeping = True
        try:
            if flag.requested:
                raise WaitInterrupted
            if watch is None:
                self.clock.sleep(seconds)
            else:
                watch.wait(seconds)
        finally:
            flag.sleeping = False

    def _observe_pass(self, run_ids: Sequence[str], progress: _Progress, deadline: float | None = None) -> None:
        """Look at every distinct id once; a terminal answer is durable, so it is not read again.
        A question to the cluster takes at most what is left of the window."""
        for run_id in dict.fromkeys(run_ids):
            known = progress.seen.get(run_id)
            if known is not None and (known.bucket == TERMINAL or _refused(known)):
                continue
            progress.seen[run_id] = self.look(run_id, deadline)
        progress.passes += 1

    def look(self, run_id: str, deadline: float | None = None) -> Seen:
        """Observe one id through the Observer; anything that keeps it from being read is a per-id error."""
        if not isinstance(run_id, str) or not is_run_id(run_id):
            return Seen(run_id, error=RowError.of(INVALID_INPUT, f"{run_id!r} is not a run id "
                                                              "(expected YYYYMMDDTHHMMSS-xxxxxx)"))
        try:
            return Seen(run_id, self.observer.observe(run_id, deadline=deadline))
        except RunNotFound:
            return Seen(run_id, error=RowError.of(NOT_FOUND, f"no run with id {run_id}"))
        except RecordUnusable as exc:
            return Seen(run_id, error=RowError.of(RECORD_UNUSABLE, f"record of {run_id} is unusable "
                                                               f"({exc.reason_code}): {exc.detail}",
                                              exc.reason_code))
        except OSError as exc:
            return Seen(run_id, error=RowError.of(RECORD_UNUSABLE, f"record of {run_id} is unreadable: {exc}",
                                              UNREADABLE))

    def _snapshot(
        self, run_ids: Sequence[str], progress: _Progress, window: Clamped, poll: Clamped,
        interrupted: bool,
    ) -> WaitResult:
        seen = {run_id: progress.seen.get(run_id) or _unobserved(run_id) for run_id in run_ids}
        observed = [(run_id, _derivation(seen[run_id])) for run_id in run_ids]
        return WaitResult(
            tuple(run_ids), seen, partition(observed), window, poll,
            self.observer.preparing_threshold, progress.waited, interrupted, progress.passes,
        )


def _derivation(seen: Seen) -> Derivation | None:
    return None if seen.observed is None else seen.observed.derivation


def _unobserved(run_id: str) -> Seen:
    """Only reachable when a wait is stopped before its first pass finished."""
    return Seen(run_id, error=RowError.of(NOT_OBSERVED, f"{run_id} was not observed before the wait stopped"))


def _refused(seen: Seen) -> bool:
    """A malformed id can never name a run, so it is not looked at again."""
    return seen.error is not None and seen.error.kind == INVALID_INPUT
