"""D9: the terminal notice, sent once by whoever recorded the end (the runner or the reap winner)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from lionrun.application.ports import (
    NoticeResult,
    Notifier,
    RunNotFound,
    RunRecords,
    Spawner,
    SpawnFailed,
    SpawnRequest,
    StoreBusy,
    StoreRefused,
)
from lionrun.domain.notify import payload, render
from lionrun.domain.run import DeliveryValue, RecordUnusable, Run

Change = Callable[[Run], Run | None]
UNKNOWN_OUTCOME = DeliveryValue(attempted=True, ok=None)
NOT_CONFIGURED = DeliveryValue(attempted=False)


class Notices:
    """Marks the delivery attempted, runs the configured command, records what became of it.

    The order is the contract: the end is already recorded (the caller did that), then the
    attempt is recorded with an unknown outcome, then the command runs, then its outcome is
    recorded. A sender killed mid-delivery therefore leaves `attempted: true, ok: null`.
    Never raises for a store or delivery failure: the notice is a prompt, never the answer.
    """

    def __init__(self, store: RunRecords, notifier: Notifier, lock_timeout: float = 10.0) -> None:
        self.store = store
        self.notifier = notifier
        self.lock_timeout = lock_timeout

    def send(self, run: Run) -> None:
        """Deliver the notice for one ended run, at most once per run."""
        marked = self.claim(run)
        if marked is not None:
            self.deliver(marked)

    def claim(self, run: Run) -> Run | None:
        """Record the one delivery of an ended run as attempted (outcome unknown).

        Returns the marked record when a command must now be run; None when nothing is
        configured (now on record), the run has not ended, it was already claimed, or the
        claim could not be written.
        """
        marked = self._record(run.run_id, _mark_attempt)
        if marked is None or marked.delivery != UNKNOWN_OUTCOME or not marked.notify:
            return None
        return marked

    def deliver(self, marked: Run) -> None:
        """Run the configured command for a claimed delivery and record what became of it."""
        assert marked.notify is not None
        result = self.notifier.deliver(render(marked.notify, payload(marked)), payload(marked))
        self.settle(marked.run_id, result)

    def settle(self, run_id: str, result: NoticeResult) -> None:
        """Record a delivery's outcome over the unknown one its claim wrote."""
        self._record(run_id, lambda current: _settle(current, result))

    def deliver_claimed(self, run_id: str) -> None:
        """The detached sender's half: deliver a claim whose outcome is still unknown.

        The record is read under the run's lock, the one way that refuses a reader who is not the
        store's owner: a notice is only ever delivered with the owner's rights."""
        held: list[Run] = []

        def look(current: Run) -> None:
            held.append(current)

        try:
            self.store.update(run_id, look, self.lock_timeout)
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return
        run = held[-1] if held else None
        if run is not None and run.delivery == UNKNOWN_OUTCOME and run.notify:
            self.deliver(run)

    def _record(self, run_id: str, change: Change) -> Run | None:
        try:
            return self.store.update(run_id, change, self.lock_timeout)
        except (StoreBusy, StoreRefused, OSError):
            return None  # the record keeps what it had; status reports exactly that


def _mark_attempt(current: Run) -> Run | None:
    """Claim the one delivery of an ended run; None when there is nothing to claim."""
    if not current.end_recorded or current.delivery is not None:
        return None
    return current.evolve(delivery=UNKNOWN_OUTCOME if current.notify else NOT_CONFIGURED)


def _settle(current: Run, result: NoticeResult) -> Run | None:
    """Record the delivery's outcome over the unknown one this sender wrote."""
    if current.delivery != UNKNOWN_OUTCOME:
        return None
    return current.evolve(delivery=DeliveryValue(
        attempted=True, ok=result.ok, exit_code=result.exit_code,
        error=result.error, failure_class=None if result.ok else result.failure_class or "unknown",
    ))



class DetachedNotices:
    """The reap winner's notice: claimed in the reader, delivered by a detached sender.

    A reader (`li job status`, `wait`, `list`) that wins a reap must answer at once; the
    configured command may take up to its timeout. So the claim (one fast write) happens
    here and the command runs in a detached `notice` process started through the Spawner,
    which delivers the claim and records its outcome. A sender that never starts leaves a
    recorded failure; one that dies leaves `attempted: true, ok: null`, as a runner would.
    """

    def __init__(self, notices: Notices, spawner: Spawner, command: Sequence[str],
                 env: Mapping[str, str], cwd: str, log_path: str) -> None:
        self.notices = notices
        self.spawner = spawner
        self.command = list(command)
        self.env = env
        self.cwd = cwd
        self.log_path = log_path

    def send(self, run: Run) -> None:
        marked = self.notices.claim(run)
        if marked is None:
            return
        request = SpawnRequest([*self.command, run.run_id], self.cwd, self.env, self.log_path)
        try:
            self.spawner.spawn(request)
        except SpawnFailed as exc:
            self.notices.settle(run.run_id, NoticeResult(
                ok=False, error=f"the notice sender could not start: {exc}", failure_class="unknown"))
