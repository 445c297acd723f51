"""D4/D6: the producer's derivations. The only place a record becomes an answer."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from msgspec import Struct

from lionrun.domain.evidence import CONCLUSIVE, JOB_ENDED, JOB_UNKNOWN, Finding
from lionrun.domain.run import SLURM, Run, iso, parse_iso
from lionrun.domain.vocabulary import OUTCOMES, PREPARING, STARTED, WAITING, Outcome

PREPARING_THRESHOLD_SECONDS: Final = 600.0

_OUTCOME_OF: Final[dict[str, Outcome]] = {
    "completed": "succeeded",
    "completed_empty": "failed",
    "failed": "failed",
    "timed_out": "failed",
    "killed": "failed",
    "cancelled": "cancelled",
    "aborted": "cancelled",
}

REAP_REASONS: Final = {
    "pid_absent": "process_gone_without_outcome",
    "pid_recycled": "process_gone_pid_recycled",
    "host_rebooted": "process_gone_host_rebooted",
    "process_zombie": "process_gone_zombie",
    "job_ended": "job_ended_without_outcome",  # Slurm says the very job recorded has ended
}
JOB_ENDED_BEFORE_START: Final = "job_ended_before_start"  # ... before its runner attached


# Human-mode exit codes of an ended run (design §3, like the reference); anything else ended is 1.
EXIT_CODES: Final = {
    "completed": 0, "completed_empty": 1, "failed": 1, "timed_out": 124, "aborted": 130, "cancelled": 143,
}


def exit_code_of(status: str) -> int:
    """The exit code a person's shell sees for a run that ended with `status`."""
    return EXIT_CODES.get(status, 1)


def classify(status: str) -> Outcome:
    """The producer's classification of an ended run's status; anything unknown is indeterminate."""
    return _OUTCOME_OF.get(status, "indeterminate")


class Derivation(Struct, frozen=True, kw_only=True):
    """Everything a status-bearing answer says about one run at one moment."""

    status: str
    terminal: bool
    outcome: Outcome | None
    reason_code: str | None
    alive: bool | None
    possibly_orphaned: bool
    stopped: bool
    aged_preparing: bool
    age_seconds: float
    # Why an end this look found due was not published: `not_store_owner` when the
    # reader is not the store's owner, who alone reaps. None when nothing was held back.
    reap_withheld: str | None = None


def age_of(run: Run, now: datetime) -> float:
    submitted = parse_iso(run.submitted_at)
    return 0.0 if submitted is None else (now - submitted).total_seconds()


def derive(
    run: Run,
    finding: Finding | None,
    now: datetime,
    preparing_threshold: float = PREPARING_THRESHOLD_SECONDS,
) -> Derivation:
    """Turn a record and an advisory liveness finding into status/terminal/outcome and flags."""
    age = age_of(run, now)
    alive = finding.alive if finding is not None else None
    if run.end_recorded:
        return Derivation(status=run.status, terminal=True, outcome=recorded_outcome(run),
                          reason_code=run.reason_code, alive=alive, possibly_orphaned=False, stopped=False,
                          aged_preparing=False, age_seconds=age)
    if run.spawn_state == PREPARING:
        # A batch job the scheduler accepted may wait in its queue for hours: only a record that
        # names no job yet — or a job the scheduler no longer knows at all — can be an unresolved
        # spawn. Flagged, never terminal.
        aged = age >= preparing_threshold and (
            run.job_id is None or (finding is not None and finding.code == JOB_UNKNOWN))
        return Derivation(status=run.status, terminal=False, outcome=None, reason_code=None, alive=alive,
                          possibly_orphaned=aged, stopped=False, aged_preparing=aged, age_seconds=age)
    stopped = finding is not None and finding.local and finding.alive is not True and not finding.present
    if run.executor == SLURM and (finding is None or finding.code != JOB_ENDED):
        stopped = False  # a job queued, unknown or unreachable is no evidence its runner stopped
    # "exited" only where the process is established not alive; denied or unreadable stays verbatim.
    status = "exited" if stopped and alive is False else run.status
    return Derivation(status=status, terminal=False, outcome=None, reason_code=None, alive=alive,
                      possibly_orphaned=stopped, stopped=stopped, aged_preparing=False, age_seconds=age)


NOT_STORE_OWNER: Final = "not_store_owner"  # a reap withheld: the reader does not own the store


def recorded_outcome(run: Run) -> Outcome | None:
    """The outcome of a recorded end (the writer's, else the classification); None with no end."""
    if not run.end_recorded:
        return None
    if run.outcome is None:
        return classify(run.status)
    # A writer that recorded something other than the vocabulary did not record a success (D4).
    return next((known for known in OUTCOMES if known == run.outcome), "indeterminate")


def reapable(run: Run, finding: Finding) -> bool:
    """The per-phase eligibility predicate: a started run, no end, a conclusive local finding.

    A `preparing` record has no child whose absence could be proven, so it is never eligible —
    unless it names a batch job, the attempt's durable identity: a job Slurm reports
    ended (same job id and submit time) will never start its runner. A record of another host
    is never judged conclusive here (`Finding.conclusive`).
    """
    if run.end_recorded or not finding.local or finding.code not in CONCLUSIVE:
        return False
    if run.status == WAITING and run.kill_requested_at is None and run.executor is None:
        return False  # its runner is started again (domain/dependencies.restartable), never reaped
    if run.spawn_state == PREPARING:
        return finding.code == JOB_ENDED and run.job_id is not None
    return run.spawn_state == STARTED


def reap(run: Run, finding: Finding, now: datetime, evidence: dict[str, object]) -> Run | None:
    """The terminal a fenced reap would publish, or None when this run is not eligible."""
    if not reapable(run, finding):
        return None
    cancelled = run.kill_requested_at is not None
    return run.evolve(
        status="cancelled" if cancelled else "exited",
        outcome="cancelled" if cancelled else "indeterminate",
        reason_code=JOB_ENDED_BEFORE_START if run.spawn_state == PREPARING else REAP_REASONS[finding.code],
        finished_at=iso(now),
        finished_at_precision="upper_bound",
        terminal_source="reaper",
        terminal_evidence=dict(evidence),
    )


class Resolution(Struct, frozen=True, kw_only=True):
    """What one look at a run comes to: the answer, and the end a reader must publish first.

    `reap` is the terminal record a fenced write publishes (None when the run is not eligible);
    `derivation` is what li answers once it is published (of `reap` when there is one, else of
    the record as read); `as_read` is what li answers when the publish could not be made (the
    store busy or refusing) — the record as read, never an end that was not written.
    """

    derivation: Derivation
    reap: Run | None
    as_read: Derivation


def resolve(
    run: Run,
    finding: Finding | None,
    now: datetime,
    *,
    evidence: dict[str, object] | None = None,
    preparing_threshold: float = PREPARING_THRESHOLD_SECONDS,
) -> Resolution:
    """The one pure step from a record and a liveness finding to li's answer (D4, D6).

    `finding` is None when the run was not probed (an ended run needs no probe). `evidence` is
    recorded with a reap as `terminal_evidence`.
    """
    as_read = derive(run, finding, now, preparing_threshold)
    reaped = None if finding is None else reap(run, finding, now, evidence or {})
    if reaped is None:
        return Resolution(derivation=as_read, reap=None, as_read=as_read)
    return Resolution(derivation=derive(reaped, finding, now, preparing_threshold), reap=reaped, as_read=as_read)


def fenced_reap(judged: Run, current: Run, finding: Finding, now: datetime,
                evidence: dict[str, object]) -> Run | None:
    """The fence of a reap (R-rules), the one place it is decided: what a reap writes over the
    record as the store holds it under the run's lock. Nothing when the record moved on since it
    was judged (another generation: a runner wrote, another reaper won), else the reap of
    `current` (None when it is not eligible any more: an end recorded, a phase changed). The store
    then publishes it one generation on (`next_generation`)."""
    if current.generation != judged.generation:
        return None
    return reap(current, finding, now, evidence)


def next_generation(current: Run, new: Run) -> Run:
    """The record a fenced write publishes over `current`: `new`, one generation on. Every store's
    `update` writes this and nothing else, so the generation a reap was judged at fences it."""
    return new.evolve(generation=current.generation + 1)
