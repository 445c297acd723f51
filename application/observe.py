"""One authority for every status-bearing answer: read, probe, judge, reap if conclusive, derive."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from msgspec import Struct
from msgspec.structs import replace

from lionrun.application.ports import (
    Clock,
    Cluster,
    NotStoreOwner,
    ProcessProber,
    RunNotFound,
    RunRecords,
    StoreBusy,
    StoreRefused,
)
from lionrun.domain.evidence import (
    Finding,
    HostFacts,
    ProcessObservation,
    judge,
    wants_session,
    worth_probing,
)
from lionrun.domain.lifecycle import (
    NOT_STORE_OWNER,
    PREPARING_THRESHOLD_SECONDS,
    Derivation,
    Resolution,
    fenced_reap,
    resolve,
)
from lionrun.domain.run import SLURM, RecordUnusable, Run
from lionrun.domain.vocabulary import STORE_HIDDEN, WAITING

if TYPE_CHECKING:
    from lionrun.domain.slurm import SlurmJob

ReapHook = Callable[[Run], None]
RestartHook = Callable[[Run], "Run | None"]  # a waiting run whose runner is gone (application/dependencies.py)


class JobSeen(Struct, frozen=True):
    """What the cluster said about a run's Slurm job (None: it could not be asked)."""

    rows: Sequence[SlurmJob] | None


class Observed(Struct, frozen=True):
    """A record as read, what the probe found, and the derivation every verb reports."""

    run: Run
    finding: Finding | None
    derivation: Derivation


class Observer:
    """Status, list and wait all resolve runs here, so no two verbs can disagree about one run."""

    def __init__(
        self,
        store: RunRecords,
        prober: ProcessProber,
        clock: Clock,
        on_reaped: ReapHook | None = None,
        preparing_threshold: float = PREPARING_THRESHOLD_SECONDS,
        reap_lock_timeout: float = 5.0,
        cluster: Callable[[], Cluster] | None = None,
        restart: RestartHook | None = None,
    ) -> None:
        self.store = store
        self.prober = prober
        self.clock = clock
        self.on_reaped = on_reaped
        self.preparing_threshold = preparing_threshold
        self.reap_lock_timeout = reap_lock_timeout
        self.cluster = cluster  # built on first use: only a Slurm run's observation asks the cluster
        self.restart = restart  # starts a new runner for a waiting run whose runner is gone
        # While a listing runs: the cluster's one answer for all its rows (None inside: not asked yet)
        self._table: list[Mapping[str, Sequence[SlurmJob]] | None] | None = None

    @contextmanager
    def one_cluster_question(self) -> Iterator[None]:
        """Within the block the cluster is asked at most once (every job it knows, in one call) and
        every Slurm run is judged by that answer (a listing of many runs never waits for a
        silent controller once a row)."""
        self._table = []
        try:
            yield
        finally:
            self._table = None

    def observe(self, run_id: str, probe_ended: bool = False, deadline: float | None = None) -> Observed:
        """Observe one run; raises RunNotFound or RecordUnusable when it cannot be read.

        A reap lost to a moved generation (another reader's reap, the runner's own end) is
        followed by one fresh observation, so a loser reports what the winner published.
        `deadline` (the clock's monotonic time) bounds a question to the cluster: what is left
        of a wait's window.
        """
        here = self.prober.host()
        withheld: str | None = None
        for _attempt in range(2):
            run = self.store.read(run_id)
            finding, seen = self._probe(run, here, probe_ended, deadline)
            if run.status == WAITING and finding is not None and self._restarted(run, finding):
                run = self.store.read(run_id)  # a new runner waits for it now: observed afresh
                finding, seen = self._probe(run, here, probe_ended, deadline)
            if finding is None or self._resolve(run, finding).reap is None:
                break
            try:
                published, moved = self._try_reap(run, finding, seen, here)
            except NotStoreOwner:
                withheld = NOT_STORE_OWNER  # only the store's owner reaps: said, not done
                break
            run = published or run
            if not moved:
                break
        # The record as it now stands: ended by the reap just published, or as read when no reap
        # was due or it could not be published (an end that was not written is never reported).
        derivation = self._resolve(run, finding).as_read
        if withheld is not None:
            derivation = replace(derivation, reap_withheld=withheld)
        return Observed(run, finding, derivation)

    def _restarted(self, run: Run, finding: Finding) -> bool:
        """A waiting run whose runner is proven gone here is not reaped: a new runner is
        started for it, under the reaper's fence (one generation judged, one write)."""
        if self.restart is None or run.executor == SLURM:
            return False
        from lionrun.domain.dependencies import restartable

        return restartable(run, finding) and self.restart(run) is not None

    def _resolve(self, run: Run, finding: Finding | None, evidence: dict[str, object] | None = None) -> Resolution:
        return resolve(run, finding, self.clock.now(), evidence=evidence,
                       preparing_threshold=self.preparing_threshold)

    def _probe(
        self, run: Run, here: HostFacts, probe_ended: bool, deadline: float | None = None,
    ) -> tuple[Finding | None, ProcessObservation | JobSeen | None]:
        if run.end_recorded and (not probe_ended or run.executor == SLURM):
            return None, None  # a recorded end is the answer: the cluster is not asked
        if run.executor == SLURM:
            return self.job_evidence(run, deadline)
        return self.evidence(run, here)

    def job_evidence(self, run: Run, deadline: float | None = None) -> tuple[Finding, JobSeen | None]:
        """A Slurm run: what the cluster says about its recorded job, judged by
        `domain.slurm.judge_job`. Any host with the cluster's tools may judge it: the cluster is the
        boundary. No job recorded yet (a `preparing` record sbatch has not answered for) is not probed.
        A cluster that does not answer within `deadline` (or its own read bound) is
        `cluster_unreachable`: inconclusive, the run stays as recorded."""
        from lionrun.domain.slurm import RecordedJob, judge_job

        engine = run.engine
        if engine is None:
            return judge_job(None, None), None
        recorded = RecordedJob(engine.job_id, engine.submit_time)
        rows = self._rows(engine.job_id, deadline)
        return judge_job(recorded, rows), JobSeen(rows)

    def _rows(self, job_id: str, deadline: float | None) -> Sequence[SlurmJob] | None:
        if self.cluster is None:
            return None
        timeout = None if deadline is None else max(deadline - self.clock.monotonic(), 0.0)
        if self._table is None:
            return self.cluster().jobs(job_id, timeout)
        if not self._table:
            self._table.append(self.cluster().all_jobs(timeout))
        table = self._table[0]
        return None if table is None else table.get(job_id, ())

    def finding(self, run: Run, deadline: float | None = None) -> Finding:
        """The finding kill and follow judge by: the process evidence, or the Slurm job's."""
        if run.executor == SLURM:
            return self.job_evidence(run, deadline)[0]
        return self.evidence(run)[0]

    def evidence(self, run: Run, here: HostFacts | None = None) -> tuple[Finding, ProcessObservation | None]:
        """Probe the run's leader and, only when the leader is gone, scan its session; then judge.

        A live leader settles it without a scan, so listing many healthy runs reads no process table.
        """
        here = self.prober.host() if here is None else here
        pid = run.incarnation.pid if run.incarnation is not None else run.pid
        # Another host's pid (or a pid from before a reboot) names nothing here: never probe it.
        seen = self.prober.observe(pid) if pid is not None and worth_probing(run.incarnation, pid, here) else None
        finding = judge(run.incarnation, pid, seen, here)
        if seen is not None and pid is not None and wants_session(finding):
            confined = run.confinement == STORE_HIDDEN  # its broker's children are other runs
            seen = replace(seen, session=self.prober.session(pid, run.run_id, confined))
            finding = judge(run.incarnation, pid, seen, here)
        return finding, seen

    def _try_reap(
        self, judged: Run, finding: Finding, seen: ProcessObservation | JobSeen | None, here: HostFacts,
    ) -> tuple[Run | None, bool]:
        """The fenced compare-and-set: publish only over the generation that was judged.

        Under the run's lock the store re-reads the record; a moved generation, a recorded end
        or a changed phase writes nothing. Only the one caller whose write published calls
        `on_reaped` (the terminal notice), so losers and refused writes send nothing.
        Returns the published record (or None) and whether the record had moved on.
        """
        evidence = self._evidence_of(judged, finding, seen, here)
        evidence["judged_generation"] = judged.generation
        now = self.clock.now()

        moved = False

        def change(current: Run) -> Run | None:
            nonlocal moved
            moved = current.generation != judged.generation
            return fenced_reap(judged, current, finding, now, evidence)

        try:
            published = self.store.update(judged.run_id, change, self.reap_lock_timeout)
        except NotStoreOwner:
            raise
        except (StoreBusy, StoreRefused):
            return None, False  # untouched; the next observation retries
        if published is not None and self.on_reaped is not None:
            self.on_reaped(published)
            published = self._latest(published)  # the hook records its claim; report that too
        return published, moved

    @staticmethod
    def _evidence_of(judged: Run, finding: Finding, seen: ProcessObservation | JobSeen | None,
                     here: HostFacts) -> dict[str, Any]:
        if isinstance(seen, JobSeen) or judged.executor == SLURM:
            from lionrun.domain.slurm import RecordedJob, job_evidence

            engine = judged.engine
            recorded = None if engine is None else RecordedJob(engine.job_id, engine.submit_time)
            facts = job_evidence(finding, recorded, seen.rows if isinstance(seen, JobSeen) else None,
                                 None if engine is None else engine.cluster)
            facts["observer"] = {"host_id": here.host_id, "boot_id": here.boot_id}
            return facts
        return finding.evidence(judged.incarnation, seen if isinstance(seen, ProcessObservation) else None, here)

    def _latest(self, published: Run) -> Run:
        try:
            return self.store.read(published.run_id)
        except (RunNotFound, RecordUnusable, OSError):
            return published
