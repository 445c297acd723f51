"""Whether a runner that waits before its work (for its queue's slot, for other runs' ends) is
asked to stop: a SIGTERM it noted, or a kill request recorded on the run."""

from __future__ import annotations

from collections.abc import Callable

from lionrun.application.ports import Clock, RunNotFound, RunRecords, StoreBusy, StoreRefused
from lionrun.domain.run import RecordUnusable

RECORD_LOOK_SECONDS = 0.5  # the record is read for a kill request at most this often


def kill_asker(store: RunRecords, clock: Clock, run_id: str, term_seen: Callable[[], bool]) -> Callable[[], bool]:
    """`stopped()` for a waiting runner: `term_seen()` (its SIGTERM), or the record says a kill was
    asked (read at most every RECORD_LOOK_SECONDS; a record that cannot be read asks nothing)."""
    looked = [0.0]

    def stopped() -> bool:
        if term_seen():
            return True
        now = clock.monotonic()
        if now - looked[0] < RECORD_LOOK_SECONDS:
            return False
        looked[0] = now
        try:
            return store.read(run_id).kill_requested_at is not None
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return False

    return stopped
