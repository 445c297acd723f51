"""Process-incarnation evidence: `judge()` maps what a probe saw to a finding (ADR-0107).

A run is its runner's whole session (the runner leads it; provider legs run in process groups
of their own inside it), plus every process that left the session but is still the run's — its
runner's descendant or carrying the run's tag (`SessionMember.tagged`; docs/architecture.md). The leader alone never proves the run gone: while any member of the
session lives, the run is alive. Members are told from strangers by session id and start time,
which is sound because Linux never hands out a pid that a live process still uses as its
process-group or session id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeGuard

from msgspec import Struct

from lionrun.domain.run import Incarnation

CREATE_TIME_TOLERANCE = 0.1  # seconds; psutil create times are exact to the clock tick
# Seconds between a stop's SIGTERM and its SIGKILL, for every stop of a run's processes: `li job
# kill` (its default; LI_KILL_GRACE sets another), the timeout, the idle timeout, a cancel and
# what the work left running, in the full runner and the lean supervisor alike.
KILL_GRACE = 3.0

# Conclusive findings: the recorded process is established gone.
PID_ABSENT = "pid_absent"
PID_RECYCLED = "pid_recycled"
HOST_REBOOTED = "host_rebooted"
PROCESS_ZOMBIE = "process_zombie"
# A Slurm job (domain/slurm.py): ended, and the very job recorded (same job id and submit time).
JOB_ENDED = "job_ended"
CONCLUSIVE = frozenset({PID_ABSENT, PID_RECYCLED, HOST_REBOOTED, PROCESS_ZOMBIE, JOB_ENDED})
# Inconclusive findings: nothing may become terminal on these.
ALIVE = "alive"
SESSION_ALIVE = "session_alive"  # the leader is gone, work of its session still runs
SESSION_UNEXAMINED = "session_unexamined"  # the leader is gone; its session is not (or cannot be) scanned
FOREIGN_HOST = "foreign_host"
ACCESS_DENIED = "access_denied"
IDENTITY_NOT_RECORDED = "identity_not_recorded"
IDENTITY_UNREADABLE = "identity_unreadable"
NO_PROCESS_RECORDED = "no_process_recorded"
# Inconclusive findings about a Slurm job (domain/slurm.py). Distinct from ALIVE: that one lets
# kill signal a local process group; a Slurm job is only ever signalled through the cluster.
JOB_ALIVE = "job_alive"  # RUNNING, COMPLETING, SUSPENDED (and the like): its processes may run
JOB_QUEUED = "job_queued"  # PENDING (and the like): not started, may start
JOB_STATE_UNRELIABLE = "job_state_unreliable"  # NODE_FAIL, PREEMPTED: seen while processes still ran
JOB_STATE_UNRECOGNISED = "job_state_unrecognised"  # a state this code does not know
JOB_UNKNOWN = "job_unknown"  # neither squeue nor sacct knows the job id (purged, or no accounting)
JOB_ID_REUSED = "job_id_reused"  # the job id names a job with another submit time
JOB_NOT_RECORDED = "job_not_recorded"  # the record names no job id yet
CLUSTER_UNREACHABLE = "cluster_unreachable"  # the cluster's tools could not be asked
INCONCLUSIVE = frozenset({
    ALIVE, SESSION_ALIVE, SESSION_UNEXAMINED, FOREIGN_HOST, ACCESS_DENIED, IDENTITY_NOT_RECORDED,
    IDENTITY_UNREADABLE, NO_PROCESS_RECORDED,
    JOB_ALIVE, JOB_QUEUED, JOB_STATE_UNRELIABLE, JOB_STATE_UNRECOGNISED, JOB_UNKNOWN, JOB_ID_REUSED,
    JOB_NOT_RECORDED, CLUSTER_UNREACHABLE,
})
# Leader findings that say nothing about the rest of the session: its members must be looked at.
# (A recycled leader pid needs no look: the pid was free, so no process of the session remained.)
LEADER_GONE = frozenset({PID_ABSENT, PROCESS_ZOMBIE})


class HostFacts(Struct, frozen=True):
    """The reader's own host: the boundary of what it may judge."""

    host_id: str | None
    boot_id: str | None


class SessionMember(Struct, frozen=True):
    """One process a scan of a session saw: its pid, its session id, when it started, whether a zombie."""

    pid: int
    session: int
    create_time: float | None
    zombie: bool = False
    tagged: bool = False  # outside the session, yet the run's: its runner's descendant, or it carries the run's tag


class ProcessObservation(Struct, frozen=True):
    """What a probe of one pid saw at one moment, and (once looked at) the processes of its session.

    `session` is None until the session is scanned; a scan lists every process whose session id
    is the pid, plus whatever process now holds the pid itself.
    """

    pid: int
    exists: bool
    create_time: float | None = None
    zombie: bool = False
    access_denied: bool = False
    error: str | None = None
    session: tuple[SessionMember, ...] | None = None


class Finding(Struct, frozen=True):
    """A judgement about a recorded process; only `conclusive` ones may end a run.

    `local` is False when this reader is not entitled to judge the record at all
    (another host, or a reader that cannot tell its own host): such a record is
    never reaped and never called stopped from here.
    """

    code: str
    alive: bool | None
    local: bool = True
    # A process is there but the record cannot say it is the run's (no host id, no create time):
    # `alive` is then null, and still no evidence the run stopped.
    present: bool = False

    @property
    def conclusive(self) -> bool:
        return self.local and self.code in CONCLUSIVE

    def evidence(
        self, incarnation: Incarnation | None, seen: ProcessObservation | None,
        here: HostFacts | None = None,
    ) -> dict[str, Any]:
        """The facts a reap records beside its terminal, so the outcome is attributable."""
        return {
            "finding": self.code,
            "recorded": None if incarnation is None else {
                "host_id": incarnation.host_id, "boot_id": incarnation.boot_id,
                "pid": incarnation.pid, "create_time": incarnation.create_time,
                "pgid": incarnation.pgid,
            },
            "observed": None if seen is None else {
                "exists": seen.exists, "create_time": seen.create_time, "zombie": seen.zombie,
                "session_members": None if seen.session is None or incarnation is None else [
                    {"pid": m.pid, "create_time": m.create_time} for m in members(incarnation, seen.session)],
            },
            "observer": None if here is None else {"host_id": here.host_id, "boot_id": here.boot_id},
        }


def is_own_host(incarnation: Incarnation | None, here: HostFacts) -> bool | None:
    """True/False when the record's host is known and ours/not ours; None when it cannot be told."""
    if incarnation is None or incarnation.host_id is None or here.host_id is None:
        return None
    return incarnation.host_id == here.host_id


def worth_probing(incarnation: Incarnation | None, pid: int | None, here: HostFacts) -> bool:
    """A pid means something only on the record's own host and boot; never probe another's."""
    if not _is_pid(pid):
        return False
    if incarnation is None or incarnation.host_id is None:
        return True  # a record from before identity existed: the probe is advisory only
    return is_own_host(incarnation, here) is True and not _rebooted(incarnation, here)


def judge(
    incarnation: Incarnation | None,
    pid: int | None,
    seen: ProcessObservation | None,
    here: HostFacts,
) -> Finding:
    """Map an observation of a recorded process to a finding; pure and total."""
    if incarnation is None or incarnation.host_id is None:
        if pid is None:
            return Finding(NO_PROCESS_RECORDED, None)
        return _unattributable(IDENTITY_NOT_RECORDED, seen)
    if here.host_id is None:
        return Finding(IDENTITY_UNREADABLE, None, local=False)  # cannot tell ours from another's
    if incarnation.host_id != here.host_id:
        return Finding(FOREIGN_HOST, None, local=False)
    if _rebooted(incarnation, here):
        return Finding(HOST_REBOOTED, False)
    return _judge_local(incarnation, seen)


def _rebooted(incarnation: Incarnation, here: HostFacts) -> bool:
    return bool(incarnation.boot_id and here.boot_id and incarnation.boot_id != here.boot_id)


def _is_pid(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_time(value: object) -> TypeGuard[float]:
    """A usable create time: a finite number (records are JSON; trust nothing)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _unattributable(code: str, seen: ProcessObservation | None) -> Finding:
    alive = _advisory_alive(seen)
    return Finding(code, alive, present=alive is None and seen is not None)


def _advisory_alive(seen: ProcessObservation | None) -> bool | None:
    """Liveness where the record cannot tell the run's process from a stranger (no host id, no
    create time): a pid absent is not alive; a process there may be anyone's, so null, never
    true."""
    if seen is None or seen.error is not None or seen.access_denied:
        return None
    return None if seen.exists and not seen.zombie else False


def _judge_local(incarnation: Incarnation, seen: ProcessObservation | None) -> Finding:
    """Same host, same boot: the leader decides, unless it is gone; then its session's members do."""
    leader = _judge_leader(incarnation, seen)
    if leader.code not in LEADER_GONE or not _is_time(incarnation.create_time):
        return leader  # without a recorded start time no process can be told to be the run's
    if seen is None or seen.session is None:
        return Finding(SESSION_UNEXAMINED, None)
    return Finding(SESSION_ALIVE, True) if members(incarnation, seen.session) else leader


def wants_session(finding: Finding) -> bool:
    """True when only a scan of the leader's session can settle the finding (the leader is gone)."""
    return finding.code == SESSION_UNEXAMINED


def members(incarnation: Incarnation, session: Sequence[SessionMember]) -> tuple[SessionMember, ...]:
    """The run's live members among what a scan of its session saw, oldest first.

    A member has the leader's pid as its session id, started no earlier than the leader, and is
    not a zombie. If the leader's pid now names another process, the pid was free at some point,
    so the session that uses it now is a newcomer's: nothing in it is the run's.
    """
    sid, born = incarnation.pid, incarnation.create_time
    if not _is_pid(sid) or sid == 1 or not _is_time(born):
        return ()
    if any(m.pid == sid and not _same_start(m.create_time, born) for m in session):
        return ()
    found = [m for m in session if is_member(incarnation, m)]
    return tuple(sorted(found, key=lambda m: (m.create_time or 0.0, m.pid)))


def is_member(incarnation: Incarnation, process: SessionMember) -> bool:
    """One process, judged alone: in the leader's session (or shown the run's by its ancestry or
    tag: `tagged`), started since the leader, not a zombie, not init."""
    born = incarnation.create_time
    return (_is_pid(process.pid) and process.pid > 1 and (process.session == incarnation.pid or process.tagged)
            and not process.zombie and _is_time(process.create_time) and _is_time(born)
            and process.create_time >= born - CREATE_TIME_TOLERANCE)


def may_signal(incarnation: Incarnation | None, finding: Finding) -> bool:
    """Kill acts only where a member of a local run is proven alive and the run leads its own group."""
    if incarnation is None or not finding.local or finding.code not in (ALIVE, SESSION_ALIVE):
        return False
    group = incarnation.pid if incarnation.pgid is None else incarnation.pgid
    return group == incarnation.pid and _is_pid(group) and group > 1


def may_request(incarnation: Incarnation | None, finding: Finding) -> bool:
    """Kill may only ask (record the request for the owning runner) when the run is another host's.

    Nothing here is signalled or judged: the host boundary holds; the runner on the run's own
    host, watching the shared store, stops its work.
    """
    return incarnation is not None and finding.code == FOREIGN_HOST


def _same_start(seen: float | None, recorded: float) -> bool:
    return _is_time(seen) and abs(seen - recorded) <= CREATE_TIME_TOLERANCE


def _judge_leader(incarnation: Incarnation, seen: ProcessObservation | None) -> Finding:
    """Same host, same boot: the pid and its create time decide."""
    if seen is None or seen.error is not None:
        return Finding(IDENTITY_UNREADABLE, None)
    if not seen.exists:
        return Finding(PID_ABSENT, False)
    if seen.access_denied:
        return Finding(ACCESS_DENIED, None)
    if not _is_time(incarnation.create_time):
        return _unattributable(IDENTITY_NOT_RECORDED, seen)
    if not _is_time(seen.create_time):
        return _unattributable(IDENTITY_UNREADABLE, seen)
    if abs(seen.create_time - incarnation.create_time) > CREATE_TIME_TOLERANCE:
        return Finding(PID_RECYCLED, False)
    if seen.zombie:
        return Finding(PROCESS_ZOMBIE, False)  # ours, exited, not yet collected by its parent
    return Finding(ALIVE, True)
