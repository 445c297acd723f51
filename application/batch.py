"""A runner Slurm started attaches itself to its run: the fenced `preparing` → `started` write.

The submitter recorded the job (`engine`) on the `preparing` record; the runner, on whatever node
Slurm chose, adds its own incarnation (host, boot, pid, start time, process group, job id, restart
count) in one fenced write that is made only while the record is still `preparing` and names this
job (or none yet). A runner that finds anything else — an end recorded (a spawn failure written
after `sbatch` seemed to fail), another job's record, an attach already made, or a job Slurm
restarted (`SLURM_RESTART_COUNT > 0`) — exits without running the work: a run never runs twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from lionrun.application.busy import retry_busy
from lionrun.application.ports import (
    Clock,
    ProcessProber,
    RunNotFound,
    RunRecords,
    StoreBusy,
    StoreRefused,
)
from lionrun.domain.run import (
    PREPARING,
    SLURM,
    STARTED,
    Engine,
    Incarnation,
    RecordUnusable,
    Run,
    iso,
)
from lionrun.domain.slurm import BatchStart, is_job_id


@dataclass(frozen=True)
class Attach:
    """What a runner learned before its work: whether the run is a batch job's, and why not to run."""

    batch: bool
    refused: str | None = None


class BatchAttach:
    def __init__(self, store: RunRecords, prober: ProcessProber, clock: Clock) -> None:
        self.store = store
        self.prober = prober
        self.clock = clock

    def is_batch(self, run_id: str) -> bool:
        """Whether the run was submitted to Slurm (a record that cannot be read says no: the work
        service then records why the run cannot go on)."""
        try:
            return self.store.read(run_id).executor == SLURM
        except (RunNotFound, RecordUnusable, StoreRefused, OSError):
            return False

    def attach(self, run_id: str, started: BatchStart, pid: int, pgid: int) -> Attach:
        """Attach this runner (`pid`, its group `pgid`, what Slurm said it `started`) to the run."""
        if not self.is_batch(run_id):
            return Attach(batch=False)
        restarts = started.restart_count
        if restarts is None or restarts > 0:
            return Attach(True, f"Slurm restarted this job (SLURM_RESTART_COUNT={started.restart_text!r}):"
                                " a run's runner never runs twice")
        job_id = started.job_id
        if not is_job_id(job_id):
            return Attach(True, "the runner of a Slurm run was not started by Slurm (no SLURM_JOB_ID)")
        host = self.prober.host()
        seen = self.prober.observe(pid)
        incarnation = Incarnation(host.host_id, host.boot_id, pid, seen.create_time if seen.exists else None,
                                  pgid, job_id=job_id, restart_count=restarts)
        cluster = started.cluster
        now = iso(self.clock.now())
        why: list[str] = []

        def change(current: Run) -> Run | None:
            known = current.engine
            if current.end_recorded or current.spawn_state != PREPARING:
                why.append(f"the run is no longer preparing (spawn_state {current.spawn_state}, "
                           f"end recorded: {current.end_recorded})")
                return None
            if known is not None and known.job_id != job_id:
                why.append(f"the run names Slurm job {known.job_id}, not this job {job_id}")
                return None
            engine = Engine(SLURM, job_id, cluster=cluster) if known is None else Engine(
                known.executor, known.job_id, cluster=known.cluster or cluster, submit_time=known.submit_time,
                submitted_at=known.submitted_at)
            return current.evolve(spawn_state=STARTED, pid=pid, incarnation=incarnation, engine=engine,
                                  started_at=current.started_at or now)

        def write() -> Run | None:
            why.clear()
            return self.store.update(run_id, change)

        try:
            written = retry_busy(write, self.clock.sleep)
        except StoreBusy:
            return Attach(True, "the runner could not attach to the run: the record stayed locked")
        except (RunNotFound, RecordUnusable, StoreRefused, OSError) as exc:
            return Attach(True, f"the runner could not attach to the run: {exc}")
        return Attach(True, why[-1] if written is None and why else None)

