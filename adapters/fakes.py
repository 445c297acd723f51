"""Fakes shipped in the package so other programs' tests can swap adapters through the container."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lionrun.application.ports import NoticeResult, SpawnFailed, SpawnRequest, Stop
from lionrun.domain.evidence import HostFacts, ProcessObservation, SessionMember, members
from lionrun.domain.run import Incarnation


class ScriptedProber:
    """Liveness as scripted: pids not listed are absent; each process leads its own session unless told.

    `scans` counts session scans (the costly probe); `table_readable = False` makes them fail.
    """

    def __init__(self, host_id: str = "host-a", boot_id: str = "boot-1") -> None:
        self.facts = HostFacts(host_id, boot_id)
        self.processes: dict[int, ProcessObservation] = {}
        self.sessions: dict[int, int] = {}  # pid -> session id
        self.tags: dict[int, str] = {}  # pid -> the run id its environment carries (LI_RUN_ID)
        self.scans = 0
        self.scanned_confined: list[bool] = []  # each scan's `confined`: were the broker's children spared
        self.table_readable = True

    def host(self) -> HostFacts:
        return self.facts

    def observe(self, pid: int) -> ProcessObservation:
        return self.processes.get(pid, ProcessObservation(pid, exists=False))

    def session(self, sid: int, run_id: str | None = None,
                confined: bool = False) -> tuple[SessionMember, ...] | None:
        self.scans += 1
        self.scanned_confined.append(confined)
        if not self.table_readable:
            return None
        return tuple(SessionMember(pid, self.sessions.get(pid, pid), seen.create_time, seen.zombie,
                                   tagged=run_id is not None and self.tags.get(pid) == run_id
                                   and self.sessions.get(pid, pid) != sid)
                     for pid, seen in sorted(self.processes.items())
                     if self.sessions.get(pid, pid) == sid or pid == sid
                     or (run_id is not None and self.tags.get(pid) == run_id))

    def start(self, pid: int, create_time: float = 1000.0, session: int | None = None,
              run_id: str | None = None) -> None:
        """A live process; it leads a session of its own unless `session` names the one it joins;
        `run_id` is the run its environment names (an agent's tool that left the run's session)."""
        self.processes[pid] = ProcessObservation(pid, True, create_time)
        self.sessions[pid] = pid if session is None else session
        if run_id is not None:
            self.tags[pid] = run_id

    def kill(self, pid: int) -> None:
        self.processes.pop(pid, None)
        self.sessions.pop(pid, None)
        self.tags.pop(pid, None)

    def zombify(self, pid: int) -> None:
        seen = self.processes[pid]
        self.processes[pid] = ProcessObservation(pid, True, seen.create_time, zombie=True)

    def deny(self, pid: int) -> None:
        self.processes[pid] = ProcessObservation(pid, True, access_denied=True)


class RecordingNotifier:
    """Remembers every notice; answers with a scripted result."""

    def __init__(self, result: NoticeResult | None = None) -> None:
        self.sent: list[tuple[list[str], dict[str, Any]]] = []
        self.result = result or NoticeResult(ok=True, exit_code=0)

    def deliver(self, argv: Sequence[str], payload: Mapping[str, Any]) -> NoticeResult:
        self.sent.append((list(argv), dict(payload)))
        return self.result


class RecordingSignaller:
    """Remembers every (pid or group, stop) it sent; the stops in `fatal` end what they reach.

    A session is signalled member by member, as the domain tells members from strangers in the
    scripted prober's session scan.
    """

    def __init__(self, prober: ScriptedProber | None = None, fatal: tuple[Stop, ...] = ()) -> None:
        self.signals: list[tuple[int, Stop]] = []
        self.prober = prober
        self.fatal = fatal

    def signal_group(self, pgid: int, stop: Stop) -> bool:
        self.signals.append((pgid, stop))
        return self.prober is None or pgid in self.prober.processes

    def signal_session(self, run_id: str, incarnation: Incarnation, stop: Stop,
                       spare_leader: bool = False, own_pids: bool = False,
                       confined: bool = False) -> tuple[int, ...]:
        if self.prober is None:
            return ()
        reached = tuple(m.pid for m in members(incarnation, self.prober.session(incarnation.pid, run_id) or ())
                        if not (spare_leader and m.pid == incarnation.pid))
        for pid in reached:
            self.signals.append((pid, stop))
            if stop in self.fatal:
                self.prober.kill(pid)
        return reached


class ScriptedSpawner:
    """Hands out pids without starting anything; can be told to fail."""

    def __init__(self, prober: ScriptedProber | None = None, first_pid: int = 40000) -> None:
        self.prober = prober
        self.next_pid = first_pid
        self.fail_with: str | None = None
        self.spawned: list[SpawnRequest] = []

    def spawn(self, request: SpawnRequest) -> int:
        if self.fail_with is not None:
            raise SpawnFailed(self.fail_with)
        self.spawned.append(request)
        self.next_pid += 1
        if self.prober is not None:
            self.prober.start(self.next_pid)
        return self.next_pid


class ScriptedCluster:
    """A Slurm cluster as scripted: `submit` hands out job ids 1, 2, …; each job's state is
    set with `state(job_id, STATE)`; `reachable = False` makes every question unanswerable.

    `submitted` keeps each BatchRequest, `cancels` each (job id, terminate) asked for.
    """

    SUBMIT_TIME = "2026-01-01T00:00:00"

    def __init__(self, name: str = "testcluster") -> None:
        from lionrun.domain.slurm import SlurmJob

        self._job = SlurmJob
        self.cluster_name = name
        self.rows: dict[str, Any] = {}
        self.submitted: list[Any] = []
        self.cancels: list[tuple[str, bool]] = []
        self.refuse_submit: str | None = None
        self.reachable = True
        self.problems: list[str] = []
        self.on_cancel: Any = None  # called with (job id, terminate) before the state changes
        self.asked: list[tuple[str, str | None, float | None]] = []  # each question: (what, job id, timeout)

    def submit(self, request: Any) -> Any:
        from lionrun.application.ports import EngineHandle

        if self.refuse_submit is not None:
            raise SpawnFailed(self.refuse_submit)
        self.submitted.append(request)
        job_id = str(len(self.submitted))
        self.rows[job_id] = self._job(job_id, "PENDING", self.SUBMIT_TIME, None, request.run_id)
        return EngineHandle("slurm", job_id=job_id, cluster=None)

    def state(self, job_id: str, state: str, exit_code: str | None = None) -> None:
        from dataclasses import replace

        self.rows[job_id] = replace(self.rows[job_id], state=state, exit_code=exit_code)

    def purge(self, job_id: str) -> None:
        self.rows.pop(job_id, None)

    def jobs(self, job_id: str, timeout: float | None = None) -> Sequence[Any] | None:
        self.asked.append(("jobs", job_id, timeout))
        if not self.reachable:
            return None
        row = self.rows.get(job_id)
        return () if row is None else (row,)

    def all_jobs(self, timeout: float | None = None) -> Any:
        self.asked.append(("all_jobs", None, timeout))
        if not self.reachable:
            return None
        return {job_id: (row,) for job_id, row in self.rows.items()}

    def cancel(self, job_id: str, terminate: bool) -> bool:
        self.cancels.append((job_id, terminate))
        row = self.rows.get(job_id)
        if not self.reachable or row is None:
            return False
        if self.on_cancel is not None:
            self.on_cancel(job_id, terminate)
            return True
        if terminate and row.state == "PENDING":
            return False  # Slurm refuses to signal a queued job
        if row.state in ("PENDING", "RUNNING"):
            self.state(job_id, "FAILED" if terminate else "CANCELLED", "0:15")
        return True

    def name(self) -> str | None:
        return self.cluster_name if self.reachable else None

    def health(self) -> list[str]:
        return list(self.problems)
