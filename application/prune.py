"""`li job prune`: remove runs that recorded an end, and only those, under each run's lock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from lionrun.application.observe import Observer
from lionrun.application.ports import Clock, RunNotFound, RunRecords, StoreBusy, StoreRefused
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.run import RecordUnusable, Run, parse_iso
from lionrun.domain.vocabulary import RECORD_UNUSABLE
from lionrun.domain.wire import PruneData, PruneKept, RemoveData

SECONDS_PER_DAY = 86400.0
# How long after its end a run whose notice has not settled is kept: far past the notice
# command's timeout (30 s by default), so a sender that died does not pin a run forever.
NOTICE_GRACE_SECONDS = 600.0

# Why a run was kept.
NOT_ENDED = "not_ended"
ENDED_RECENTLY = "ended_recently"
NOTICE_IN_FLIGHT = "notice_in_flight"
NO_RECORD = "no_record"
BUSY = "busy"
REMOVE_FAILED = "remove_failed"
WORKTREE_KEPT = "worktree_kept"  # its worktree holds changes li did not commit, or could not go

# Removes a run's worktree (and its branch when asked): None when done, else why it stays.
WorktreeRemover = Callable[[Run, bool], "str | None"]


def keep(report: PruneData, run_id: str, reason: str, detail: str | None = None) -> None:
    """Say why a run stays."""
    report.kept.append(PruneKept(run_id=run_id, reason=reason, detail=detail))


def ended_at(run: Run) -> datetime | None:
    """When the run's end was recorded; a spawn failure ended at submission."""
    return parse_iso(run.finished_at) or parse_iso(run.submitted_at)


def old_enough(run: Run, now: datetime, older_than_days: float) -> bool:
    """True when the run recorded an end at least `older_than_days` before `now`."""
    end = ended_at(run)
    return end is not None and (now - end).total_seconds() >= older_than_days * SECONDS_PER_DAY


def notice_in_flight(run: Run, now: datetime) -> bool:
    """A configured notice not yet settled, recently enough that its sender may still be running.

    Removing the run then would wake a consumer to a `not_found` (D9: a consumer woken by the
    notice finds the outputs already present).
    """
    settled = run.delivery is not None and (not run.delivery.attempted or run.delivery.ok is not None)
    end = ended_at(run)
    recent = end is not None and (now - end).total_seconds() < NOTICE_GRACE_SECONDS
    return bool(run.notify) and not settled and recent


class Pruner:
    """Resolves every run through the Observer, then deletes only ended ones under their lock."""

    def __init__(self, store: RunRecords, observer: Observer, clock: Clock, lock_timeout: float = 5.0,
                 worktrees: WorktreeRemover | None = None) -> None:
        self.store = store
        self.observer = observer
        self.clock = clock
        self.lock_timeout = lock_timeout
        self.worktrees = worktrees
        self.branches = False
        self._users: dict[str, set[str]] | None = None

    def prune(self, older_than_days: float = 0.0, dry_run: bool = False) -> PruneData:
        report = PruneData(removed=[], kept=[], dry_run=dry_run)
        try:
            run_ids = list(self.store.run_ids())
        except StoreRefused as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, str(exc), {"reason_code": "store_unreadable"}) from exc
        for run_id in run_ids:
            self._consider(run_id, older_than_days, report)
        if not dry_run:
            self.store.sweep()  # what a killed prune renamed away but never deleted, even when nothing else goes
        return report

    def _consider(self, run_id: str, older_than_days: float, report: PruneData) -> None:
        try:
            observed = self.observer.observe(run_id)  # may reap a conclusive orphan to its end
        except RunNotFound:
            return keep(report, run_id, NO_RECORD, "the run folder has no record (yet)")
        except RecordUnusable as exc:
            return keep(report, run_id, RECORD_UNUSABLE, f"{exc.reason_code}: {exc.detail}")
        if not observed.derivation.terminal:
            return keep(report, run_id, NOT_ENDED, f"status {observed.derivation.status}")
        if not old_enough(observed.run, self.clock.now(), older_than_days):
            return keep(report, run_id, ENDED_RECENTLY, f"ended at {ended_at(observed.run)}")
        if notice_in_flight(observed.run, self.clock.now()):
            return keep(report, run_id, NOTICE_IN_FLIGHT, "its terminal notice is still being delivered")
        if report.dry_run:
            return report.removed.append(run_id)
        self._remove(run_id, older_than_days, report)

    def remove_named(self, run_ids: list[str], force: bool = False) -> RemoveData:
        """`li job rm RUN...`: every named run must exist and have recorded an end, or nothing is
        removed (not_found / conflict, naming the run; a live one gets the kill hint, `force` or
        not). `force` removes an ended run whose terminal notice is still being delivered."""
        now = self.clock.now()
        wanted = list(dict.fromkeys(run_ids))
        for run_id in wanted:
            try:
                observed = self.observer.observe(run_id)  # may reap a conclusive orphan to its end
            except RunNotFound:
                raise ContractError(ErrorKind.NOT_FOUND, f"no run {run_id}", {"run_id": run_id}) from None
            except RecordUnusable as exc:
                raise ContractError(ErrorKind.CONFLICT, f"the record of {run_id} cannot be used "
                                    f"({exc.reason_code}: {exc.detail}); li job prune says what it keeps",
                                    {"run_id": run_id, "reason_code": RECORD_UNUSABLE}) from None
            if not observed.derivation.terminal:
                raise ContractError(ErrorKind.CONFLICT, f"{run_id} has not ended (status "
                                    f"{observed.derivation.status}); only ended runs are removed — stop it "
                                    f"first: li job kill {run_id}",
                                    {"run_id": run_id, "reason_code": NOT_ENDED, "status": observed.derivation.status})
            if not force and notice_in_flight(observed.run, now):
                raise ContractError(ErrorKind.CONFLICT, f"the terminal notice of {run_id} is still being "
                                    "delivered; try again shortly, or give --force",
                                    {"run_id": run_id, "reason_code": NOTICE_IN_FLIGHT})
        report = PruneData(removed=[], kept=[], dry_run=False)
        for run_id in wanted:
            self._remove(run_id, 0.0, report, force)
        self.store.sweep()
        return RemoveData(removed=report.removed, kept=report.kept)

    def _remove(self, run_id: str, older_than_days: float, report: PruneData, force: bool = False) -> None:
        """Delete inside the run's read-modify-write, so no writer holds the lock meanwhile; a
        run's own worktree first, and never one with changes li did not commit."""
        why = self._remove_worktree(run_id)
        if why is not None:
            return keep(report, run_id, WORKTREE_KEPT, why)
        removed: list[str] = []
        now = self.clock.now()

        def delete_if_still_ended(current: Run) -> None:
            if current.end_recorded and old_enough(current, now, older_than_days) \
                    and (force or not notice_in_flight(current, now)):
                self.store.remove(run_id)
                removed.append(run_id)
            return None  # nothing is written back: the record is gone, or stays as it was

        try:
            self.store.update(run_id, delete_if_still_ended, self.lock_timeout)
        except RunNotFound:
            return None  # removed by someone else meanwhile
        except StoreBusy as exc:
            return keep(report, run_id, BUSY, str(exc))
        except (StoreRefused, RecordUnusable) as exc:
            return keep(report, run_id, REMOVE_FAILED, str(exc))
        if removed:
            report.removed.append(run_id)
        else:
            keep(report, run_id, NOT_ENDED, "its record changed while it was being removed")

    def _remove_worktree(self, run_id: str) -> str | None:
        """Remove the run's worktree unless another run still works there (a reply's chain shares
        one: it goes with the last of them), or every leg's of a run of several legs; why it
        stays, when it does."""
        if self.worktrees is None:
            return None
        try:
            run = self.store.read(run_id)
        except (RunNotFound, RecordUnusable, StoreRefused, StoreBusy, OSError):
            return None  # the removal below says what became of the run
        if run.worktree is None and not run.leg_worktrees:
            return None
        if run.worktree is not None:
            users = self._worktree_users().get(run.worktree.path, set())
            users.discard(run_id)
            if users:
                return None  # the worktree stays for the other runs of its conversation
        return self.worktrees(run, self.branches)  # its one worktree, or every leg's (never shared)

    def _worktree_users(self) -> dict[str, set[str]]:
        if self._users is None:
            self._users = {}
            for other in self.store.run_ids():
                try:
                    found = self.store.read(other).worktree
                except Exception:  # noqa: BLE001 - a run that cannot be read names no worktree here
                    continue
                if found is not None:
                    self._users.setdefault(found.path, set()).add(other)
        return self._users
