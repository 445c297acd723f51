"""The kill use case: record the request, then signal the run's whole session, never another's (D6)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Final

from lionrun.application.observe import Observer
from lionrun.application.ports import (
    Clock,
    Cluster,
    RunNotFound,
    RunRecords,
    Signaller,
    Stop,
    StoreBusy,
    StoreRefused,
)
from lionrun.application.reads import check_run_id, not_found, observe_or_refuse, unusable
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.evidence import (
    CLUSTER_UNREACHABLE,
    JOB_ALIVE,
    JOB_QUEUED,
    KILL_GRACE,
    may_request,
    may_signal,
)
from lionrun.domain.run import PREPARING, SLURM, Incarnation, RecordUnusable, Run, iso
from lionrun.domain.vocabulary import (
    ALREADY_TERMINAL,
    NO_PROCESS,
    PID_NAMESPACE,
    REQUESTED,
    SIGNALLED,
    STORE_HIDDEN,
    KillAction,
)
from lionrun.domain.wire import KillData

KILL_GRACE_DEFAULT: Final = KILL_GRACE  # the one grace of a run's stops (domain/evidence.py)
# After the grace and the work's SIGKILL, how long the run's own runner may still take to record
# the end before it is SIGKILLed too (a lean run's finisher starts an interpreter for it).
RUNNER_END_SECONDS: Final = 5.0


class Killer:
    """`li job kill`: reports what it did as an ordinary answer; a recorded end is never relabelled.

    A kill that signals nothing writes nothing, so a run that ends on its own is never reaped as
    `cancelled`. Two exceptions record the request without a signal: a `preparing` run has no
    process yet, and the request makes its runner cancel itself when it starts; another host's run
    (a shared store) is never signalled from here, and its runner, watching the store, stops its
    work (`requested`).
    """

    def __init__(
        self,
        store: RunRecords,
        observer: Observer,
        signaller: Signaller,
        clock: Clock,
        grace: float = KILL_GRACE_DEFAULT,
        poll: float = 0.05,
        cluster: Callable[[], Cluster] | None = None,
        runner_end: float = RUNNER_END_SECONDS,
    ) -> None:
        self.store = store
        self.observer = observer
        self.signaller = signaller
        self.clock = clock
        self.grace = grace
        self.poll = poll
        self.runner_end = runner_end
        self.cluster = cluster  # built on first use: only a Slurm run is cancelled through it

    def kill(self, run_id: str) -> dict[str, Any]:
        """Record `kill_requested_at` (unless an end is recorded), signal the session, report the action."""
        check_run_id(run_id)
        action = self._act(run_id)
        d = observe_or_refuse(self.observer, run_id, probe_ended=False).derivation
        return KillData(run_id=run_id, action=action, status=d.status, terminal=d.terminal,
                        outcome=d.outcome).to_wire()

    def _act(self, run_id: str) -> KillAction:
        run = self._read(run_id)
        if run.executor == SLURM and not run.end_recorded and run.job_id is not None:
            return self._kill_job(run)
        if run.spawn_state == PREPARING and not run.end_recorded:
            run = self._request_before_process(run_id)
        if run.end_recorded:
            return ALREADY_TERMINAL
        if run.spawn_state == PREPARING:
            return NO_PROCESS  # the request is recorded: the runner honours it when it starts
        return self._kill_started(run)

    def _request_before_process(self, run_id: str) -> Run:
        """A preparing run has no process yet; the request is recorded while (under the lock) it still has none."""
        return self._record_request(run_id, lambda current: current.spawn_state == PREPARING)[0]

    def _kill_started(self, run: Run) -> KillAction:
        """Record and signal only where a member is proven alive; a signal that reaches nothing takes the record back."""
        judged = run.incarnation
        finding = self.observer.evidence(run)[0]
        if may_request(judged, finding):
            return self._request_of_owner(run.run_id)
        if judged is None or not may_signal(judged, finding):
            return NO_PROCESS  # gone, or not provably ours: nothing to signal or record
        current, stamp = self._record_request(run.run_id, lambda _: True)
        if current.end_recorded:
            return ALREADY_TERMINAL
        if self._signal(run, judged):
            return SIGNALLED
        if stamp is not None:
            self._withdraw(run.run_id, stamp)  # it ended between the look and the signal: not our cancel
        return NO_PROCESS

    def _kill_job(self, run: Run) -> KillAction:
        """A Slurm run, from any host with the cluster's tools: record the request,
        then `scancel --signal=TERM --full` (a job still queued: a plain `scancel`, since Slurm
        refuses to signal a PENDING job), and a plain `scancel` if the job still runs after the
        grace. The answer is the signal request (`signalled`); the run's end is the runner's (or the
        reap's once Slurm reports the job ended), never Slurm's state. Where the cluster cannot be
        asked, the request is recorded for the runner to honour (`requested`), as for another host's
        run on a shared store.
        """
        job_id = run.job_id
        assert job_id is not None
        finding = self.observer.finding(run)
        if finding.code == CLUSTER_UNREACHABLE or self.cluster is None:
            # No Slurm tools here (or the controller does not answer): the request is recorded for
            # the runner, which watches its record (or honours it when it starts); nothing signalled.
            current, _ = self._record_request(run.run_id, lambda _: True)
            if current.end_recorded:
                return ALREADY_TERMINAL
            return NO_PROCESS if current.spawn_state == PREPARING else REQUESTED
        if finding.code not in (JOB_ALIVE, JOB_QUEUED):
            return NO_PROCESS  # ended, unknown or not provably this job: nothing to signal or record
        current, stamp = self._record_request(run.run_id, lambda _: True)
        if current.end_recorded:
            return ALREADY_TERMINAL
        cluster = self.cluster()
        queued = finding.code == JOB_QUEUED
        if not cluster.cancel(job_id, terminate=not queued):
            if queued or not cluster.cancel(job_id, terminate=False):  # it may have been queued a moment ago
                if stamp is not None:
                    self._withdraw(run.run_id, stamp)  # it ended between the look and the cancel
                return NO_PROCESS
            return SIGNALLED
        if not queued:
            deadline = self.clock.monotonic() + self.grace
            while self._job_lives(run) and self.clock.monotonic() < deadline:
                self.clock.sleep(self.poll)
            if self._job_lives(run):
                cluster.cancel(job_id, terminate=False)
        return SIGNALLED

    def _job_lives(self, run: Run) -> bool:
        return self.observer.finding(run).alive is True

    def _request_of_owner(self, run_id: str) -> KillAction:
        """Another host's run: record the request (fenced) for its runner, which watches the store.

        Nothing is signalled from here, and the answer says so. A request already recorded still
        stands; an end recorded meanwhile wins.
        """
        current, _ = self._record_request(run_id, lambda _: True)
        return ALREADY_TERMINAL if current.end_recorded else REQUESTED

    def _read(self, run_id: str) -> Run:
        try:
            return self.store.read(run_id)
        except RunNotFound as exc:
            raise not_found(run_id) from exc
        except RecordUnusable as exc:
            raise unusable(run_id, exc) from exc

    def _record_request(self, run_id: str, still: Callable[[Run], bool]) -> tuple[Run, str | None]:
        """Under the lock: stamp the request on a run with no recorded end, if `still` holds.

        Returns the record as it stands and the stamp when this call wrote it (else None).
        """
        seen: list[Run] = []
        now = iso(self.clock.now())

        def change(current: Run) -> Run | None:
            seen.append(current)
            if current.end_recorded or current.kill_requested_at is not None or not still(current):
                return None
            return current.evolve(kill_requested_at=now)

        written = self._update(run_id, change, "the kill request could not be recorded")
        return (written, now) if written is not None else (seen[-1], None)

    def _withdraw(self, run_id: str, stamp: str) -> None:
        """Fenced undo of this call's own stamp: only while no end is recorded and the stamp is still ours."""

        def change(current: Run) -> Run | None:
            if current.end_recorded or current.kill_requested_at != stamp:
                return None
            return current.evolve(kill_requested_at=None)

        # Best effort: the answer is still what was done (nothing), and a refusal here is no error.
        with contextlib.suppress(RunNotFound, RecordUnusable, StoreBusy, StoreRefused):
            self.store.update(run_id, change)

    def _update(self, run_id: str, change: Callable[[Run], Run | None], failure: str) -> Run | None:
        try:
            return self.store.update(run_id, change)
        except RunNotFound as exc:
            raise not_found(run_id) from exc
        except RecordUnusable as exc:
            raise unusable(run_id, exc) from exc
        except (StoreBusy, StoreRefused) as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, f"{failure}: {exc}", {"run_id": run_id}) from exc

    def _signal(self, run: Run, incarnation: Incarnation) -> bool:
        """SIGTERM every member; after the grace, SIGKILL whatever of the work still lives, and
        the runner (the session's leader) too if it has not ended `runner_end` seconds later;
        False if no member was there.

        The runner is spared the first SIGKILL because it is what records the end the kill asked
        for: a lean run's runner starts a fresh interpreter for that once its work has stopped.
        """
        own = run.processes == PID_NAMESPACE  # its work's processes are its namespace's
        confined = run.confinement == STORE_HIDDEN  # what its broker started for it is another run's

        def stop(how: Stop, spare_leader: bool = False) -> tuple[int, ...]:
            return self.signaller.signal_session(run.run_id, incarnation, how, spare_leader, own, confined)

        if not stop("terminate"):
            return False
        self._wait_while_alive(run, self.grace)
        if self._lives(run):  # re-scanned, re-verified
            stop("kill", spare_leader=True)
            self._wait_while_alive(run, self.runner_end)
            if self._lives(run):
                stop("kill")
        return True

    def _wait_while_alive(self, run: Run, seconds: float) -> None:
        deadline = self.clock.monotonic() + seconds
        while self._lives(run) and self.clock.monotonic() < deadline:
            self.clock.sleep(self.poll)

    def _lives(self, run: Run) -> bool:
        return self.observer.evidence(run)[0].alive is True
