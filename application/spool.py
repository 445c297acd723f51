"""Evidence a run left in its host's spool, moved into the shared store by that host.

A runner on the PostgreSQL store spools its console, li log and artifacts on its host and moves
them in as it goes. A runner that gave up waiting for the store (`LI_STORE_OUTAGE`) leaves them
there, and its run is reaped `indeterminate`; without this no other host could ever see why. The
next li call on that host, once the store answers, moves them in: only for a run whose end is
recorded and whose runner is gone (a conclusive finding, as the reaper's fence; a run not yet
reaped is observed here, and so reaped by the one Observer, first), and records on the run where
they were (`evidence_spool`), by the fenced write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from lionrun.application.observe import Observer
from lionrun.application.ports import Clock, RunNotFound, RunRecords, StoreRefused
from lionrun.domain.run import RecordUnusable, Run, iso

EVIDENCE_SPOOL = "evidence_spool"  # the record's `extra` key: {host, path, moved_at}


class SpooledEvidence(Protocol):
    """This host's spool of a shared store."""

    host_id: str

    def spooled_runs(self) -> Sequence[str]:
        """The runs that left something in this host's spool whose runner does not hold it now."""
        ...

    def move_spool_in(self, run_id: str) -> str:
        """Move everything the run left here into the store, then remove it; where it was. Raises
        StoreRefused (the store went away: the rest stays for the next call) or OSError."""
        ...


class SpoolSweep:
    def __init__(self, store: RunRecords, spool: SpooledEvidence, observer: Observer, clock: Clock) -> None:
        self.store = store
        self.spool = spool
        self.observer = observer
        self.clock = clock

    def sweep(self) -> list[str]:
        """Move in what may be moved; the runs moved. Never raises: a store that does not answer
        leaves the rest for the next call."""
        moved = []
        for run_id in self.spool.spooled_runs():
            try:
                if self._move(run_id):
                    moved.append(run_id)
            except StoreRefused:
                break
            except (RunNotFound, RecordUnusable, OSError):
                continue
        return moved

    def _move(self, run_id: str) -> bool:
        observed = self.observer.observe(run_id)  # a run not yet reaped is reaped here when conclusive
        run = observed.run
        if not run.end_recorded or not self.observer.finding(run).conclusive:
            return False  # its runner may still be at work: the spool is still its own
        where = self.spool.move_spool_in(run_id)
        moved_at = iso(self.clock.now())
        told = {"host": self.spool.host_id, "path": where, "moved_at": moved_at}

        def change(current: Run) -> Run | None:
            extra: dict[str, Any] = dict(current.extra) if isinstance(current.extra, dict) else {}
            if EVIDENCE_SPOOL in extra:
                return None
            return current.evolve(extra={**extra, EVIDENCE_SPOOL: told})

        self.store.update(run_id, change)
        return True
