"""What Slurm says about a job, read as evidence about a run — never as its outcome.

Pure: the text of `sbatch --parsable`, `scontrol show job -o`, `squeue --format=SQUEUE_FORMAT` and
`sacct --parsable2 --format=SACCT_FIELDS` is parsed here into plain values (`SlurmJob`), and
`judge_job()` maps what the cluster reported about a recorded job to a `Finding`:

- RUNNING, COMPLETING, SUSPENDED (and STOPPED, RESIZING, SIGNALING, STAGE_OUT) → `job_alive`;
- an ended state (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, DEADLINE, BOOT_FAIL) whose
  job id AND submit time are the recorded ones → `job_ended`, the only conclusive finding;
- NODE_FAIL and PREEMPTED (and REVOKED) → `job_state_unreliable`: NODE_FAIL was seen while the
  job's processes still ran;
- a job id neither squeue nor sacct knows → `job_unknown`;
- everything else (queued, a reused job id, an unreadable or unrecorded submit time, a state this
  code does not know, a cluster that could not be asked) is inconclusive too.

A conclusive finding only lets the fenced reap publish what the run's evidence allows
(`indeterminate`, or `cancelled` after a kill request); Slurm's state and exit code go into the
terminal evidence (`job_evidence()`). No Slurm state ever becomes an outcome.

Every byte of the input is hostile (a job name is the submitter's text and may hold spaces,
`Key=Value` words, `|` or newlines): input is bounded, a line with a key twice is unreadable, and
nothing unreadable is ever read as an end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from lionrun.domain.evidence import (
    CLUSTER_UNREACHABLE,
    IDENTITY_NOT_RECORDED,
    IDENTITY_UNREADABLE,
    JOB_ALIVE,
    JOB_ENDED,
    JOB_ID_REUSED,
    JOB_NOT_RECORDED,
    JOB_QUEUED,
    JOB_STATE_UNRECOGNISED,
    JOB_STATE_UNRELIABLE,
    JOB_UNKNOWN,
    Finding,
)

# The formats the executor asks for; the parsers below read exactly these. The job name comes last
# so that a `|` in it cannot shift the other columns.
SQUEUE_FORMAT = "%i|%T|%V|%j"
SACCT_FIELDS = "JobIDRaw,State,Submit,ExitCode,JobName"

MAX_TEXT_CHARS = 1 << 20  # what one parse reads of a command's output
MAX_LINES = 10_000
MAX_LINE_CHARS = 64 << 10
MAX_FIELD_CHARS = 1024

LIVE_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING",
                         "STAGE_OUT"})
QUEUED_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                           "RESV_DEL_HOLD", "SPECIAL_EXIT"})
UNRELIABLE_STATES = frozenset({"NODE_FAIL", "PREEMPTED", "REVOKED"})
ENDED_STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "OUT_OF_MEMORY",
                          "TIMEOUT"})
KNOWN_STATES = LIVE_STATES | QUEUED_STATES | UNRELIABLE_STATES | ENDED_STATES
UNRECOGNISED = "UNRECOGNISED"  # the state of a row whose state word is not a Slurm state word

_JOB_ID = re.compile(r"[0-9]{1,18}(?:[_+][0-9]{1,18})?")
_CLUSTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
_EXIT = re.compile(r"[0-9]{1,3}:[0-9]{1,3}")
_TIME_LIMIT = re.compile(r"(?:[0-9]{1,4}-)?[0-9]{1,4}(?::[0-9]{2}){0,2}|UNLIMITED|Partition_Limit")
_STATE_WORD = re.compile(r"[A-Z][A-Z_]{0,31}")
# A key of `scontrol show job -o`: a word of letters (digits, `/`, `:` inside) right before `=`, at the
# start of the line or after a space. `Key=Value` inside a value (a job name, a command) also matches:
# a key seen twice makes the line unreadable, so no value can stand in for a real field.
_SCONTROL_START = re.compile(r"JobId=([^ ]*)(?: |$)")
_KEY = re.compile(r"(?:^|(?<= ))([A-Za-z][A-Za-z0-9/:_]*)=")


@dataclass(frozen=True)
class SlurmJob:
    """One job as one Slurm command reported it; fields it did not report, or that were unreadable, are None.

    `state` is a Slurm state word (upper case, "CANCELLED by 0" read as CANCELLED), or UNRECOGNISED.
    `submit_time` is Slurm's `YYYY-MM-DDTHH:MM:SS` in the clock zone the command ran with (the
    executor runs Slurm's commands with TZ=UTC so a time is the same from every host).
    """

    job_id: str
    state: str
    submit_time: str | None = None
    exit_code: str | None = None
    name: str | None = None
    reason: str | None = None
    time_limit: str | None = None  # scontrol's `TimeLimit` (e.g. `00:01:00`, `UNLIMITED`)


@dataclass(frozen=True)
class RecordedJob:
    """The job a run record names: its id, and its submit time once read back after sbatch."""

    job_id: str | None
    submit_time: str | None = None


@dataclass(frozen=True)
class BatchStart:
    """What Slurm told the runner it started (read from its environment by adapters/slurm.py):
    the job id ("" when none), the restart count (None when unreadable; its text in
    `restart_text`) and the cluster's name."""

    job_id: str
    restart_count: int | None
    restart_text: str | None = None
    cluster: str | None = None


def is_job_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _JOB_ID.fullmatch(value) is not None


def is_submit_time(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _TIME.fullmatch(value) is not None


def parse_sbatch(text: str) -> tuple[str, str | None] | None:
    """`sbatch --parsable`'s answer: (job id, cluster or None), or None when it is not one.

    sbatch prints `ID` or `ID;CLUSTER` on one line; anything else (several lines, a warning on
    stdout, an empty answer) is no job id.
    """
    lines = [line.strip() for line in _lines(text) if line.strip()]
    if len(lines) != 1:
        return None
    job_id, separator, cluster = lines[0].partition(";")
    if not is_job_id(job_id):
        return None
    if not separator:
        return job_id, None
    return (job_id, cluster) if _CLUSTER.fullmatch(cluster) else None


def parse_scontrol(text: str) -> tuple[SlurmJob, ...]:
    """The jobs of `scontrol show job -o`'s output, one line a job, each line starting `JobId=ID `.

    A line that starts like a job's but cannot be read whole (a key twice, no state, a job name
    holding a newline that cut the line) still yields a row for that id, UNRECOGNISED and with no
    submit time, so that it keeps the job from being judged ended. Other lines are left out.
    """
    jobs = []
    for line in _lines(text):
        start = _SCONTROL_START.match(line)
        if start is None or not is_job_id(start.group(1)):
            continue
        fields = scontrol_fields(line)
        job = None if fields is None else _job(
            fields.get("JobId"), fields.get("JobState"), fields.get("SubmitTime"), fields.get("ExitCode"),
            fields.get("JobName"), fields.get("Reason"), fields.get("TimeLimit"))
        if job is None or job.job_id != start.group(1):
            job = SlurmJob(start.group(1), UNRECOGNISED)
        jobs.append(job)
    return tuple(jobs)


def scontrol_fields(line: str) -> dict[str, str] | None:
    """One `scontrol ... -o` line as its `Key=Value` fields, or None when a key occurs twice."""
    found = list(_KEY.finditer(line))
    fields: dict[str, str] = {}
    for index, match in enumerate(found):
        key = match.group(1)
        if key in fields:
            return None
        end = found[index + 1].start() if index + 1 < len(found) else len(line)
        fields[key] = line[match.end():end].rstrip(" ")
    return fields


def parse_squeue(text: str) -> tuple[SlurmJob, ...]:
    """The jobs of `squeue --noheader --format=SQUEUE_FORMAT`'s output; unreadable lines left out."""
    jobs = []
    for line in _lines(text):
        parts = line.split("|", 3)
        if len(parts) != 4:
            continue
        job = _job(parts[0].strip(" "), parts[1], parts[2].strip(" "), None, parts[3], None)
        if job is not None:
            jobs.append(job)
    return tuple(jobs)


def parse_sacct(text: str) -> tuple[SlurmJob, ...]:
    """The jobs of `sacct --noheader --parsable2 --format=SACCT_FIELDS`'s output (job steps left out)."""
    jobs = []
    for line in _lines(text):
        parts = line.split("|", 4)
        if len(parts) != 5:
            continue
        job = _job(parts[0].strip(" "), parts[1], parts[2].strip(" "), parts[3].strip(" "), parts[4], None)
        if job is not None:
            jobs.append(job)
    return tuple(jobs)


def state_of(word: object) -> str:
    """A Slurm state as reported ("CANCELLED by 0", "completed", "RUNNING+") as a state word."""
    if not isinstance(word, str):
        return UNRECOGNISED
    first = word.strip(" ").split(" ", 1)[0].rstrip("+").upper()
    return first if _STATE_WORD.fullmatch(first) and first in KNOWN_STATES else UNRECOGNISED


def judge_job(recorded: RecordedJob | None, seen: Sequence[SlurmJob] | None) -> Finding:
    """Map what the cluster reported about a recorded job to a finding; pure and total.

    `seen` holds every row squeue/scontrol and sacct returned for the recorded job id (rows of other
    ids are ignored), or None when the cluster's tools could not be asked at all. Only when every
    row naming the recorded job id and submit time is in an ended state is the finding conclusive.
    """
    if recorded is None or not is_job_id(recorded.job_id):
        return Finding(JOB_NOT_RECORDED, None)
    if seen is None:
        return Finding(CLUSTER_UNREACHABLE, None)
    rows = [job for job in seen if isinstance(job, SlurmJob) and job.job_id == recorded.job_id]
    if not rows:
        return Finding(JOB_UNKNOWN, None)
    if not is_submit_time(recorded.submit_time):
        return Finding(IDENTITY_NOT_RECORDED, _advisory_alive(rows))
    ours = [job for job in rows if job.submit_time == recorded.submit_time]
    unread = [job for job in rows if not is_submit_time(job.submit_time)]
    states = {job.state for job in ours}
    if states & LIVE_STATES:
        return Finding(JOB_ALIVE, True)
    if unread:  # a row whose submit time could not be read may be ours, in any state
        return Finding(IDENTITY_UNREADABLE, _advisory_alive(unread))
    if not ours:  # the id names only jobs submitted at other times: not the recorded one
        return Finding(JOB_ID_REUSED, None)
    if states & QUEUED_STATES:
        return Finding(JOB_QUEUED, None)
    if states & UNRELIABLE_STATES:
        return Finding(JOB_STATE_UNRELIABLE, None)
    if not states <= ENDED_STATES:
        return Finding(JOB_STATE_UNRECOGNISED, None)
    return Finding(JOB_ENDED, False)


def job_evidence(finding: Finding, recorded: RecordedJob | None, seen: Sequence[SlurmJob] | None,
                 cluster: str | None = None) -> dict[str, Any]:
    """The facts a reap records beside its terminal: Slurm's own state and exit code, attributed."""
    job_id = None if recorded is None else recorded.job_id
    rows = [] if seen is None else [job for job in seen if isinstance(job, SlurmJob) and job.job_id == job_id]
    return {
        "finding": finding.code,
        "recorded": None if recorded is None else {
            "executor": "slurm", "cluster": cluster, "job_id": recorded.job_id,
            "submit_time": recorded.submit_time,
        },
        "observed": None if seen is None else [
            {"job_id": job.job_id, "state": job.state, "submit_time": job.submit_time,
             "exit_code": job.exit_code, "reason": job.reason} for job in rows],
    }


def _advisory_alive(rows: Iterable[SlurmJob]) -> bool | None:
    return True if any(job.state in LIVE_STATES for job in rows) else None


def _job(job_id: str | None, state: str | None, submit: str | None, exit_code: str | None,
         name: str | None, reason: str | None, time_limit: str | None = None) -> SlurmJob | None:
    if not is_job_id(job_id) or state is None:
        return None
    return SlurmJob(
        job_id=job_id,
        state=state_of(state),
        submit_time=submit if is_submit_time(submit) else None,
        exit_code=exit_code if exit_code is not None and _EXIT.fullmatch(exit_code) else None,
        name=_field(name),
        reason=_field(reason),
        time_limit=time_limit if time_limit is not None and _TIME_LIMIT.fullmatch(time_limit) else None,
    )


@dataclass(frozen=True)
class AnnouncedStop:
    """The end a runner records after Slurm's SIGTERM, from what Slurm says of its job then: the
    status (`timed_out` at the job's time limit, else `cancelled`) and Slurm's state as evidence."""

    status: str
    evidence: dict[str, Any]


# Reasons Slurm gives a job it stops for running out of time (`scontrol`'s `Reason=`).
_TIME_REASONS = frozenset({"TimeLimit", "DeadLine"})


def announced_stop(job_id: str, rows: Sequence[SlurmJob] | None) -> AnnouncedStop | None:
    """Why Slurm stopped this runner's own job, read while it stops it: at a time
    limit it reads `Reason=TimeLimit` (TIMEOUT once ended) → `timed_out` with the limit; while Slurm
    ends it for any other cause (an outside `scancel`, a preemption) it reads COMPLETING (then
    CANCELLED, PREEMPTED) → `cancelled`. None when the job still reads RUNNING (a signal only: li's
    own kill is `scancel --signal=TERM`) or the cluster could not be asked: the runner's verdict
    (`cancelled`) stands. Unlike a reader's judgement this is about the runner's own job, asked by
    the runner that received the job's SIGTERM: Slurm's state is kept as the end's evidence."""
    mine = [row for row in rows or () if row.job_id == job_id]
    if not mine:
        return None
    row = mine[0]
    timed = row.state in ("TIMEOUT", "DEADLINE") or row.reason in _TIME_REASONS
    if not timed and row.state not in ("CANCELLED", "PREEMPTED", "COMPLETING"):
        return None
    evidence: dict[str, Any] = {"source": "slurm", "job_id": job_id, "state": row.state, "reason": row.reason,
                                "exit_code": row.exit_code}
    if timed:
        evidence["time_limit"] = row.time_limit
    return AnnouncedStop("timed_out" if timed else "cancelled", evidence)


def _field(value: str | None) -> str | None:
    if value is None or len(value) > MAX_FIELD_CHARS or not value.isprintable():
        return None
    return value


def _lines(text: object) -> list[str]:
    """At most MAX_LINES whole lines of at most MAX_LINE_CHARS each, from the first MAX_TEXT_CHARS.

    Lines end at `\n` only (a `\r` before it is dropped): any other control character stays inside
    its line, where no field accepts it. A line cut by the size bound, or longer than a line may be,
    is left out whole, never read in part.
    """
    if not isinstance(text, str):
        return []
    if len(text) > MAX_TEXT_CHARS:
        head = text[:MAX_TEXT_CHARS]
        text = head[:head.rfind("\n") + 1]  # whole lines only ("" when the head holds none)
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")[:MAX_LINES]]
    return [line for line in lines if len(line) <= MAX_LINE_CHARS]
