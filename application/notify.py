"""D9: the terminal notice, sent once by whoever recorded the end (the runner or the reap winner)."""

from __future__ import annotations

from collections.abc import Callable

from application.ports import NoticeResult, Notifier, RunStore, StoreBusy, StoreRefused
from domain.notify import payload, render
from domain.run import Delivery, Run

Change = Callable[[Run], Run | None]
UNKNOWN_OUTCOME = Delivery(attempted=True, ok=None)
NOT_CONFIGURED = Delivery(attempted=False)


class Notices:
    """Marks the delivery attempted, runs the configured command, records what became of it.

    The order is the contract: the end is already recorded (the caller did that), then the
    attempt is recorded with an unknown outcome, then the command runs, then its outcome is
    recorded. A sender killed mid-delivery therefore leaves `attempted: true, ok: null`.
    Never raises for a store or delivery failure: the notice is a prompt, never the answer.
    """

    def __init__(self, store: RunStore, notifier: Notifier, lock_timeout: float = 10.0) -> None:
        self.store = store
        self.notifier = notifier
        self.lock_timeout = lock_timeout

    def send(self, run: Run) -> None:
        """Deliver the notice for one ended run, at most once per run."""
        marked = self._record(run.run_id, _mark_attempt)
        if marked is None or marked.delivery != UNKNOWN_OUTCOME or not marked.notify:
            return  # nothing configured (now on record), not ended, already sent, or unrecordable
        result = self.notifier.deliver(render(marked.notify, payload(marked)), payload(marked))
        self._record(run.run_id, lambda current: _settle(current, result))

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
    return current.evolve(delivery=Delivery(
        attempted=True, ok=result.ok, exit_code=result.exit_code,
        error=result.error, failure_class=None if result.ok else result.failure_class or "unknown",
    ))

