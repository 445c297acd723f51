"""Runs that wait for runs: check `--after` at submit, look at a waiting run's
dependencies, wait for them in its runner, and start a waiting run again whose runner is gone.

The wait is kept by the store, not by a process: the record says `waiting` and names what it
waits for. Its runner looks at the dependencies (through the Observer, so a dependency whose
runner died is reaped as any reader would) until the verdict of domain/dependencies.py says
start or end. A runner SIGKILLed meanwhile, or lost to a reboot, leaves the record `waiting`;
the next observer on the run's host (any li call, as the reaper) then starts a new runner for
it under the reaper's fence (`Restarter`): one generation judged, one write, one runner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from lionrun.application.busy import retry_busy
from lionrun.application.ports import (
    Clock,
    NotStoreOwner,
    RunNotFound,
    RunQueues,
    RunRecords,
    StoreBusy,
    StoreRefused,
)
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.dependencies import (
    DEPENDENCY_FAILED,
    FAILED,
    WAIT,
    DependencyState,
    Verdict,
    describe_failure,
    find_cycle,
    judge,
    stuck_line,
)
from lionrun.domain.lifecycle import exit_code_of
from lionrun.domain.partition import bucket_of
from lionrun.domain.queue import QUEUED
from lionrun.domain.run import PREPARING, Dependency, RecordUnusable, Run, iso
from lionrun.domain.vocabulary import WAITING

if TYPE_CHECKING:
    from lionrun.application.observe import Observer

POLL_SECONDS = 0.5  # how often a waiting runner looks at its dependencies
RESTARTS = "runner_restarts"  # extra: how many times an observer started the waiting run's runner again


def refuse(message: str, **detail: object) -> ContractError:
    return ContractError(ErrorKind.INVALID_INPUT, message, {"argument": "--after", **detail})


def check_after(store: RunRecords, after: Sequence[Dependency], new_id: str | None = None) -> None:
    """Refuse (`invalid_input`) a dependency the store does not hold, or one that would make the
    new run wait in a cycle (a path back to it, or a loop among the runs it would wait for)."""
    for dependency in after:
        try:
            store.read(dependency.run_id)
        except RunNotFound:
            raise refuse(f"--after {dependency.run_id}: no such run", run_id=dependency.run_id) from None
        except RecordUnusable as exc:
            raise refuse(f"--after {dependency.run_id}: its record cannot be used ({exc.detail})",
                         run_id=dependency.run_id) from None

    def after_of(run_id: str) -> list[str] | None:
        try:
            run = store.read(run_id)
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return None
        if run.end_recorded or not run.after:
            return None  # an ended run waits for nothing any more
        return [d.run_id for d in run.after]

    cycle = find_cycle(new_id, [d.run_id for d in after], after_of)
    if cycle is not None:
        raise refuse(f"--after would make a cycle: {' -> '.join(cycle)}", cycle=cycle)


def states_of(observer: Observer, run: Run) -> list[DependencyState]:
    """Each dependency of `run` as observed now (a gone runner of one is reaped, as any reader
    would); one that cannot be read counts as having no end yet (bucket None)."""
    states = []
    for dependency in run.after or []:
        try:
            observed = observer.observe(dependency.run_id)
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            states.append(DependencyState(dependency.run_id, dependency.condition, None, False, None, None))
            continue
        d = observed.derivation
        states.append(DependencyState(dependency.run_id, dependency.condition, d.status, d.terminal, d.outcome,
                                      bucket_of(d)))
    return states


class DependencyWait:
    """A waiting run's runner: look at its dependencies until they decide (or a kill comes)."""

    def __init__(self, observer: Observer, clock: Clock, poll: float = POLL_SECONDS) -> None:
        self.observer = observer
        self.clock = clock
        self.poll = poll

    def wait(self, run: Run, stopped: Callable[[], bool], say: Callable[[str], None]) -> Verdict | None:
        """The verdict that ends the wait (`start` or `failed`); None when `stopped` came first."""
        said: str | None = None
        while True:
            if stopped():
                return None
            verdict = judge(states_of(self.observer, run))
            if verdict.action != WAIT:
                return verdict
            line = (f"waiting for {', '.join(d.run_id for d in run.after or [])}"
                    + (f"; no end will come by itself for {stuck_line(verdict.stuck)}" if verdict.stuck else ""))
            if line != said:
                say(line)
                said = line
            self.clock.sleep(self.poll)


def mark_started(store: RunRecords, run_id: str, status: str, started_at: str | None,
                 sleep: Callable[[float], None]) -> Run | None:
    """The fenced step out of `waiting`: to `queued` (a kept queue's line is next) or `running`.
    Nothing is written over a record that ended or is no longer waiting; a store that stays busy
    leaves it to the work's own start."""

    def change(current: Run) -> Run | None:
        if current.end_recorded or current.status != WAITING:
            return None
        return current.evolve(status=status, started_at=started_at if status != "queued" else None)

    try:
        return retry_busy(lambda: store.update(run_id, change), sleep)
    except StoreBusy:
        return None


EndUnstarted = Callable[[str, Mapping[str, Any] | None], Run | None]  # reason code, noted -> the ended record


class StartAfter:
    """A `waiting` run's runner: wait until the runs it was submitted --after end, then
    let its work start (the record says `queued` when a kept queue's line is next, else
    `running`), or, when one ended otherwise than asked, or a kill came first, end the run
    `cancelled` without its work ever starting. A runner killed here leaves the record `waiting`:
    the next observer on this host starts a new one (`Restarter`)."""

    def __init__(self, store: RunRecords, observer: Observer, clock: Clock, queues: RunQueues | None,
                 say: Callable[[str], None]) -> None:
        self.store = store
        self.observer = observer
        self.clock = clock
        self.queues = queues
        self.say = say

    def wait(self, run_id: str, stopped: Callable[[], bool], end_unstarted: EndUnstarted) -> int | None:
        """None when the work may go on (or this is no waiting run); else the runner's exit status
        for the run it ended unstarted (70 when that end could not be written)."""
        try:
            run = self.store.read(run_id)
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return None  # the work's own start meets the same fault and records it
        if run.status != WAITING or not run.after:
            return None
        verdict = DependencyWait(self.observer, self.clock).wait(run, stopped, self.say)
        if verdict is None:
            self.say("killed while it waited for other runs; the work never started")
            return _exit_of(end_unstarted("cancelled", None))
        failed = verdict.failed_by
        if verdict.action == FAILED and failed is not None:
            self.say(f"not starting the work: {describe_failure(failed)}")
            return _exit_of(end_unstarted(DEPENDENCY_FAILED, {"failed_dependency": {
                "run_id": failed.run_id, "condition": failed.condition, "status": failed.status,
                "outcome": failed.outcome}}))
        kept = self._queue_kept(run)
        mark_started(self.store, run_id, QUEUED if kept else "running", iso(self.clock.now()), self.clock.sleep)
        self.say(f"the runs it waited for ended as asked; "
                 f"{'it enters the queue ' + str(run.queue) if kept else 'the work starts'}")
        return None

    def _queue_kept(self, run: Run) -> bool:
        """Whether the run's queue is one the store keeps (then its line is next)."""
        if self.queues is None or not run.queue:
            return False
        try:
            return self.queues.settings(run.queue) is not None
        except (StoreRefused, OSError):
            return False


def _exit_of(ended: Run | None) -> int:
    return exit_code_of(ended.status) if ended is not None else 70


class Restarter:
    """Start a new runner for a waiting run whose runner is gone, once, under the reaper's fence."""

    def __init__(self, store: RunRecords, launch: Callable[[Run], object], clock: Clock) -> None:
        self.store = store
        self.launch = launch  # spawns the runner and attaches it (SubmitService.relaunch)
        self.clock = clock

    def restart(self, judged: Run) -> Run | None:
        """The record after a new runner was started for it, or None when this observer did not
        start one (the record moved on since it was judged, ended, or the store would not let it)."""
        def change(current: Run) -> Run | None:
            if (current.generation != judged.generation or current.end_recorded or current.status != WAITING
                    or current.kill_requested_at is not None):
                return None
            restarts = current.extra.get(RESTARTS)
            count = (restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0) + 1
            return current.evolve(spawn_state=PREPARING, pid=None, incarnation=None,
                                  extra={**current.extra, RESTARTS: count})

        try:
            claimed = self.store.update(judged.run_id, change, 5.0)
        except (NotStoreOwner, StoreBusy, StoreRefused, RunNotFound, RecordUnusable, OSError):
            return None
        if claimed is None:
            return None
        with suppress(ContractError):  # a spawn that failed is recorded as the run's end (spawn_failed)
            self.launch(claimed)
        try:
            return self.store.read(judged.run_id)
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return claimed

