"""Process-incarnation evidence: `judge()` maps what a probe saw to a finding (ADR-0107)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.run import Incarnation

CREATE_TIME_TOLERANCE = 0.1  # seconds; psutil create times are exact to the clock tick

# Conclusive findings: the recorded process is established gone.
PID_ABSENT = "pid_absent"
PID_RECYCLED = "pid_recycled"
HOST_REBOOTED = "host_rebooted"
PROCESS_ZOMBIE = "process_zombie"
CONCLUSIVE = frozenset({PID_ABSENT, PID_RECYCLED, HOST_REBOOTED, PROCESS_ZOMBIE})
# Inconclusive findings: nothing may become terminal on these.
ALIVE = "alive"
FOREIGN_HOST = "foreign_host"
ACCESS_DENIED = "access_denied"
IDENTITY_NOT_RECORDED = "identity_not_recorded"
IDENTITY_UNREADABLE = "identity_unreadable"
NO_PROCESS_RECORDED = "no_process_recorded"


@dataclass(frozen=True)
class HostFacts:
    """The reader's own host: the boundary of what it may judge."""

    host_id: str | None
    boot_id: str | None


@dataclass(frozen=True)
class ProcessObservation:
    """What a probe of one pid saw at one moment."""

    pid: int
    exists: bool
    create_time: float | None = None
    zombie: bool = False
    access_denied: bool = False
    error: str | None = None


@dataclass(frozen=True)
class Finding:
    """A judgement about a recorded process; only `conclusive` ones may end a run."""

    code: str
    alive: bool | None
    local: bool = True

    @property
    def conclusive(self) -> bool:
        return self.code in CONCLUSIVE

    def evidence(self, incarnation: Incarnation | None, seen: ProcessObservation | None) -> dict[str, Any]:
        """The facts a reap records beside its terminal, so the outcome is attributable."""
        return {
            "finding": self.code,
            "recorded": None if incarnation is None else {
                "host_id": incarnation.host_id, "boot_id": incarnation.boot_id,
                "pid": incarnation.pid, "create_time": incarnation.create_time,
            },
            "observed": None if seen is None else {
                "exists": seen.exists, "create_time": seen.create_time, "zombie": seen.zombie,
            },
        }


def judge(
    incarnation: Incarnation | None,
    pid: int | None,
    seen: ProcessObservation | None,
    here: HostFacts,
) -> Finding:
    """Map an observation of a recorded process to a finding; pure and total."""
    if incarnation is None:
        if pid is None:
            return Finding(NO_PROCESS_RECORDED, None)
        alive = None if seen is None or seen.access_denied or seen.error else seen.exists and not seen.zombie
        return Finding(IDENTITY_NOT_RECORDED, alive)
    if incarnation.host_id is None or here.host_id is None:
        return Finding(IDENTITY_NOT_RECORDED, None)
    if incarnation.host_id != here.host_id:
        return Finding(FOREIGN_HOST, None, local=False)
    if incarnation.boot_id and here.boot_id and incarnation.boot_id != here.boot_id:
        return Finding(HOST_REBOOTED, False)
    return _judge_local(incarnation, seen)


def _judge_local(incarnation: Incarnation, seen: ProcessObservation | None) -> Finding:
    if seen is None or seen.error is not None:
        return Finding(IDENTITY_UNREADABLE, None)
    if not seen.exists:
        return Finding(PID_ABSENT, False)
    if seen.access_denied:
        return Finding(ACCESS_DENIED, None)
    if incarnation.create_time is None:
        return Finding(IDENTITY_NOT_RECORDED, None)
    if seen.create_time is None:
        return Finding(IDENTITY_UNREADABLE, None)
    if abs(seen.create_time - incarnation.create_time) > CREATE_TIME_TOLERANCE:
        return Finding(PID_RECYCLED, False)
    if seen.zombie:
        return Finding(PROCESS_ZOMBIE, False)
    return Finding(ALIVE, True)
