"""The run record: the lifecycle authority persisted as `record.json`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from itertools import takewhile
from typing import Annotated, Any, ClassVar

from msgspec import Struct, ValidationError, convert, to_builtins
from msgspec import field as msgspec_field
from msgspec.structs import replace

from lionrun.domain.availability import RUN_ID_MISMATCH
from lionrun.domain.serialise import Open
from lionrun.domain.untrusted import RECORD_MAX_BYTES, Untrusted, check_size, parse_json
from lionrun.domain.vocabulary import FAILED as FAILED  # the spawn phases, where records are made
from lionrun.domain.vocabulary import FAILURE_CLASSES, SPAWN_STATES, SpawnState
from lionrun.domain.vocabulary import PREPARING as PREPARING
from lionrun.domain.vocabulary import STARTED as STARTED
from lionrun.domain.worktree import Changes, LegWorktree, Worktree

RECORD_SCHEMA_VERSION = 1
RUN_ID_PATTERN = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")

# The environment variable naming the run in every process of it (runner, legs, their children):
# the kernel keeps a process's environment as it was at exec, so it vouches for membership.
RUN_TAG = "LI_RUN_ID"

# What li's own processes hold in their environment that is never the work's: the
# broker's mark and the run an `li` acts for (adapters/broker.py), and the safe-path switch li's
# own processes start with.
NOT_THE_WORKS = frozenset({"PYTHONSAFEPATH", "LI_BROKER_MARK", "LI_ACTING_FOR"})


def store_credential(name: str) -> bool:
    """li's own way into the shared store, never the work's: its URL (`LI_STORE`, which
    may carry a password) and every libpq variable (`PGPASSWORD`, `PGHOST`, `PGPASSFILE`, ...)."""
    return name == "LI_STORE" or name.startswith("PG")


def the_works_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` less what is li's own: what a run's work sees, and what li's own git (which runs
    what a repository's config names, adapters/git.py) sees too."""
    return {k: v for k, v in environ.items() if not store_credential(k) and k not in NOT_THE_WORKS}


class RecordUnusable(Exception):
    """A record exists but cannot be used: malformed, or of a schema we do not know."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


def is_run_id(value: str) -> bool:
    """True for `YYYYMMDDTHHMMSS-xxxxxx`; nothing else can name a run folder."""
    return isinstance(value, str) and RUN_ID_PATTERN.fullmatch(value) is not None


def require_run_id(value: object) -> str:
    """The value when it is a run id; else an `invalid_input` refusal, before it can name a path."""
    from lionrun.domain.contract import ContractError, ErrorKind

    if not isinstance(value, str) or not is_run_id(value):
        raise ContractError(ErrorKind.INVALID_INPUT,
                            f"{value!r} is not a run id (expected YYYYMMDDTHHMMSS-xxxxxx)", {"run_id": value})
    return value


def make_run_id(now: datetime, suffix: str) -> str:
    """A run id from a UTC instant and six hex digits; ids sort by submission time."""
    if not re.fullmatch(r"[0-9a-f]{6}", suffix):
        raise ValueError("suffix must be six lowercase hex digits")
    return f"{now.strftime('%Y%m%dT%H%M%S')}-{suffix}"


def iso(moment: datetime) -> str:
    """ISO 8601 UTC with microseconds and `+00:00`."""
    return moment.isoformat(timespec="microseconds")


def parse_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


class Incarnation(Struct, frozen=True):
    """Who the run's process is: enough to tell it from a later process with the same pid."""

    host_id: str | None
    boot_id: str | None
    pid: int
    create_time: float | None
    pgid: int | None
    # A runner a batch scheduler started: its job id there and the scheduler's restart
    # count when it attached (Slurm's SLURM_RESTART_COUNT); None for a local runner.
    job_id: str | None = None
    restart_count: int | None = None


# The reason of a `runner_end` — the recorded end is not the one the runner wrote.
END_NOT_WRITTEN_BY_RUNNER = "end_not_written_by_runner"


# The executors a run may be submitted to: `local` (a detached child of the submitter,
# the default) or `slurm` (a batch job the runner is started in).
LOCAL = "local"
SLURM = "slurm"
EXECUTORS = (LOCAL, SLURM)


class Engine(Struct, frozen=True):
    """The batch job a run was submitted as: the durable identity of its attempt.

    Written by the submitter on the `preparing` record once the scheduler accepted the job (or by
    the runner when it attaches first). `submit_time` is the scheduler's own (Slurm's SubmitTime,
    read with TZ=UTC), so that a job id reused after a state reset is never taken for this one.
    """

    executor: str
    job_id: str
    cluster: str | None = None
    submit_time: str | None = None
    submitted_at: str | None = None  # when the scheduler's answer came (this host's clock, ISO)


class Dependency(Struct, frozen=True):
    """A run this one waits for (`--after RUN:CONDITION`): `ok` (it succeeded), `fail`
    (it ended any other way) or `any` (it ended). Decided in domain/dependencies.py."""

    run_id: str
    condition: str = "ok"


class DeliveryValue(Struct, frozen=True):
    """What became of the terminal notice (D9); `attempted` with `ok: null` is an unknown outcome."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "allow"}  # recorded, and published as is

    attempted: bool
    ok: bool | None = None
    exit_code: int | None = None
    error: str | None = None
    # open: the values in use are the schema's examples
    failure_class: Annotated[str, Open(FAILURE_CLASSES)] | None = None


class Run(Struct, frozen=True):
    """One run's durable record. Only the lifecycle authority (runner, submitter, reaper) writes it."""

    run_id: str
    kind: str
    status: str
    submitted_at: str
    # The spawn phase is recorded, never inferred (D5): a maker of a record says which it is;
    # None only for a record from before the field existed.
    spawn_state: SpawnState | None
    label: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    finished_at_precision: str | None = None
    pid: int | None = None
    incarnation: Incarnation | None = None
    outcome: str | None = None
    reason_code: str | None = None
    exit_code: int | None = None
    generation: int = 0
    kill_requested_at: str | None = None
    notify: list[str] | None = None
    notify_source: str | None = None
    delivery: DeliveryValue | None = None
    terminal_source: str | None = None
    terminal_evidence: dict[str, Any] | None = None
    model: str | None = None
    cwd: str | None = None
    host_id: str | None = None  # the submitting host (its machine id): whose processes the run's are
    timeout: float | None = None
    extra: dict[str, Any] = msgspec_field(default_factory=dict)
    executor: str | None = None  # `slurm` for a batch job; None (local) for a detached child
    engine: Engine | None = None  # the batch job, once the scheduler accepted it
    queue: str | None = None  # the queue the run waits in for a slot; None: no limited queue
    # The end the runner saw the work reach, recorded beside an end it found already
    # written and did not write (a forgery by work that could reach the store, or a wrong reap):
    # {status, outcome, exit_code, reason_code: END_NOT_WRITTEN_BY_RUNNER, finished_at, found}.
    runner_end: dict[str, Any] | None = None
    retry_at: str | None = None  # an agent run ended rate limited: when the vendor said the limit resets
    session_id: str | None = None  # the agent CLI's own session / thread id its stream carried
    # What confinement the runner started the work under — `store_hidden` (the store
    # out of the work's reach) or `none` (with `confinement_detail` saying why: off, or the
    # kernel's refusal); None until the runner decided it (and for records from before).
    confinement: str | None = None
    confinement_detail: str | None = None
    # Where the work's processes ran — `pid_namespace` (their own) or `shared` (the
    # host's, with `processes_detail` saying why); None until the runner decided it.
    processes: str | None = None
    processes_detail: str | None = None
    # A worktree run whose work could change the repository's shared config, hooks and
    # info (unconfined): the paths under the git common dir it changed (empty: none); None when not
    # compared (the paths were read-only to the work, or no worktree).
    repository_changes: list[str] | None = None
    # The run whose confined work submitted this one (through its broker); None for a
    # run a person or a program submitted.
    parent: str | None = None
    # The run's own git worktree (--worktree), what li committed of its work there, and
    # the run whose conversation this one continues (`li job reply`).
    worktree: Worktree | None = None
    changes: Changes | None = None
    continues: str | None = None
    # A run of several legs (fanout, flow) with --worktree: each leg's own worktree and
    # what li committed there, in the order the legs' worktrees were made. `worktree` and `changes`
    # stay None for such a run (they are a run's one worktree); None for every other run.
    leg_worktrees: list[LegWorktree] | None = None
    # The runs this one waits for before its work starts (None: it waits for none), and
    # its priority within its queue (None: 0; higher starts first).
    after: list[Dependency] | None = None
    priority: int | None = None
    # The run's budget, written by its runner at the end: {max_tokens, max_cost_usd,
    # spent_tokens, spent_cost_usd, exceeded: tokens|cost|null}; None for a run with no budget.
    budget: dict[str, Any] | None = None
    # Each attempt of a run with a retry policy, in order: {attempt, started_at, ended_at,
    # status, reason_code, next_at (when the next begins; None for the last)}; None: no policy.
    attempts: list[dict[str, Any]] | None = None
    # The permission requests of a run under --permission-mode ask, in order:
    # {id, tool, input, tool_use_id, requested_at, behavior (allow|deny; None while open), message,
    # answered_at, answered_by}; None for a run that never asked.
    approvals: list[dict[str, Any]] | None = None

    @property
    def job_id(self) -> str | None:
        """The batch job this run's attempt is (None for a local run, or before the scheduler answered)."""
        return None if self.engine is None else self.engine.job_id

    @property
    def host(self) -> str | None:
        """The host the run belongs to: the one that submitted it, else the one its process ran on."""
        if self.host_id is not None:
            return self.host_id
        return None if self.incarnation is None else self.incarnation.host_id

    @property
    def end_recorded(self) -> bool:
        """A recorded end: `finished_at`, or a producer-written spawn failure (D4)."""
        return self.finished_at is not None or self.spawn_state == FAILED

    def evolve(self, **changes: Any) -> Run:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_builtins(self)
        data["schema_version"] = RECORD_SCHEMA_VERSION
        return data

    @classmethod
    def from_dict(cls, data: object) -> Run:
        """Read a record through the one place that refuses what it does not understand: msgspec
        converts it strictly by the declared types (no coercion; a bool is no int), fields it does
        not know are ignored (D2), and the two rules types cannot say (UTC times, a known executor)
        are checked after."""
        if not isinstance(data, dict):
            raise RecordUnusable("malformed", "record is not a JSON object")
        version = data.get("schema_version", RECORD_SCHEMA_VERSION)
        if type(version) is not int or version != RECORD_SCHEMA_VERSION:
            raise RecordUnusable("unknown_schema", f"record schema_version {version!r} is not known")
        spawn_state = data.get("spawn_state")
        # The spawn phase is recorded, never inferred (D5): a record from before the field
        # existed has none, and D10 judges it by its liveness, never as `preparing`; a phase li
        # never writes is no phase recorded (D5's closed vocabulary), never echoed on the wire.
        if spawn_state is None or (isinstance(spawn_state, str) and spawn_state not in SPAWN_STATES):
            data = {**data, "spawn_state": None}
        try:
            run = convert(data, cls, strict=True)
        except ValidationError as exc:
            raise RecordUnusable("malformed", f"record fields are malformed: {exc}") from None
        _check_rules(run)
        return run


def parse_record(raw: bytes, run_id: str) -> Run:
    """The record of `run_id` from untrusted bytes; anything else is `RecordUnusable` with its reason.

    Bounded in size and nesting, UTF-8 JSON, a schema we know, and about this very run: a
    record whose inner `run_id` names another run is never answered under either id.
    """
    try:
        check_size(len(raw), RECORD_MAX_BYTES, "record.json")
        data = parse_json(raw, "record.json")
    except Untrusted as exc:
        raise RecordUnusable(exc.reason_code, exc.detail) from None
    run = Run.from_dict(data)
    if run.run_id != run_id:
        raise RecordUnusable(RUN_ID_MISMATCH, f"record.json names run {run.run_id!r}, not {run_id!r}")
    return run


def _check_rules(run: Run) -> None:
    """What the types do not say: every time carries its UTC offset, the executor is one li knows."""
    for stamp in (run.submitted_at, run.started_at, run.finished_at, run.kill_requested_at, run.retry_at):
        try:
            moment = parse_iso(stamp)
        except ValueError as exc:
            raise RecordUnusable("malformed", f"bad timestamp {stamp!r}: {exc}") from exc
        if moment is not None and moment.tzinfo is None:
            raise RecordUnusable("malformed", f"timestamp {stamp!r} has no UTC offset")
    if run.executor is not None and run.executor not in EXECUTORS:
        raise RecordUnusable("malformed", f"executor {run.executor!r} is not one li knows")
    if run.continues is not None and not is_run_id(run.continues):
        raise RecordUnusable("malformed", "continues must name a run")
    if run.after is not None:
        from lionrun.domain.vocabulary import CONDITIONS

        if not all(is_run_id(d.run_id) and d.condition in CONDITIONS for d in run.after):
            raise RecordUnusable("malformed", "after must name runs, each with ok, fail or any")


# --- what a person sees of a run's work in a listing ------------------------------------------------

COMMAND_SUMMARY_MAX = 200


def command_summary(text: str) -> str:
    """The first non-blank line of a prompt or spec, bounded, control characters made visible."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return printable(line[:COMMAND_SUMMARY_MAX])


def printable(text: str) -> str:
    """`text` with every control character (an escape sequence the work planted) shown as `?`."""
    return "".join("?" if ord(ch) < 32 or 127 <= ord(ch) < 160 else ch for ch in text)


def recorded_command(run: Run) -> str | None:
    """The summary submit recorded (a hostile record may hold anything: only a bounded string counts)."""
    value = run.extra.get("command") if isinstance(run.extra, dict) else None
    return printable(value[:COMMAND_SUMMARY_MAX]) if isinstance(value, str) else None


# --- `--since`: a duration back from now, or a moment ----------------------------------------------

_SPAN = re.compile(r"^([0-9]{1,7})([smhd])$")
_SPAN_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: datetime) -> datetime:
    """`30m`, `2h`, `7d` (back from `now`) or an ISO 8601 moment (UTC when it names no offset)."""
    from datetime import UTC, timedelta

    from lionrun.domain.contract import ContractError, ErrorKind

    value = text.strip()
    span = _SPAN.fullmatch(value)
    if span is not None:
        return now - timedelta(seconds=int(span.group(1)) * _SPAN_SECONDS[span.group(2)])
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ContractError(ErrorKind.INVALID_INPUT, f"--since must be a duration (30m, 2h, 7d) or an ISO 8601 "
                            f"time, not {text!r}", {"argument": "--since", "value": text[:200]}) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def status_filter(text: str | None, flag: str = "--status") -> str | None:
    """A `--status` filter: a status this version produces (or `preparing`), else refused with the
    known ones and the closest (`--status runing` printed an empty table)."""
    from lionrun.domain.vocabulary import PREPARING, STATUSES_AT_V1

    if text is None:
        return None
    known = (*STATUSES_AT_V1, PREPARING)
    if text in known:
        return text
    from lionrun.domain.contract import ContractError, ErrorKind
    from lionrun.domain.suggest import did_you_mean

    raise ContractError(ErrorKind.INVALID_INPUT, f"{flag} {text!r} is no status{did_you_mean(text, known)} "
                        f"(known: {', '.join(known)})", {"argument": flag, "value": text[:200]})


def older_than_days(text: str, now: datetime) -> float:
    """`--older-than`: days (a number >= 0, fractions allowed), or what `--since` takes — a
    duration back (`30m`, `2h`, `7d`) or an ISO 8601 time — as days before `now`."""
    import math

    from lionrun.domain.contract import ContractError, ErrorKind

    def refused() -> ContractError:
        return ContractError(ErrorKind.INVALID_INPUT, "--older-than must be a number of days >= 0, a duration "
                             f"(30m, 2h, 7d) or an ISO 8601 time, not {text!r}", {"older_than": text[:200]})

    try:
        days = float(text)
    except ValueError:
        days = math.nan
        if text.strip().lower() in ("nan", "inf", "-inf", "infinity", "+inf"):
            raise refused() from None
        try:
            days = (now - parse_since(text, now)).total_seconds() / 86400
        except Exception:  # noqa: BLE001 - parse_since's own refusal names --since
            raise refused() from None
    if not math.isfinite(days) or days < 0:
        raise refused()
    return days


def submitted_second(run_id: str) -> datetime | None:
    """The UTC second a run id names (ids sort by it); None for anything else.

    `datetime.strptime(run_id[:15], "%Y%m%dT%H%M%S")`, read by position when the text is eight
    ASCII digits, T and six (each field then has its fixed width, as strptime would split it):
    strptime's first call imports _strptime and calendar and builds its regexes, a few ms of
    every `li job list`. Anything else still goes through strptime.
    """
    from datetime import UTC

    stamp = run_id[:15]
    try:
        if len(stamp) == 15 and stamp.isascii() and stamp[:8].isdigit() and stamp[8] == "T" and stamp[9:].isdigit():
            return datetime(int(stamp[:4]), int(stamp[4:6]), int(stamp[6:8]), int(stamp[9:11]), int(stamp[11:13]),
                            int(stamp[13:15]), tzinfo=UTC)
        return datetime.strptime(stamp, "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def model_matches(recorded: str | None, wanted: str) -> bool:
    """`--model claude` matches claude and claude/opus; `claude/opus` only itself (any leg of a run)."""
    if not recorded:
        return False
    return any(m == wanted or m.split("/", 1)[0] == wanted for m in recorded.split(","))


# --- short forms a person may type (human mode only; --machine takes exact ids) ---------------------

LAST = "@last"
SHORT_ID_PATTERN = re.compile(r"^[0-9a-f]{4,6}$")
CANDIDATES_SHOWN = 8


def is_short_form(value: str) -> bool:
    """`@last`, or 4 to 6 hex digits that end a run id's hex part."""
    return value == LAST or SHORT_ID_PATTERN.fullmatch(value) is not None


def short_id(run_id: str) -> str:
    """The short form a person is shown for a run: the last 6 hex digits of a run id (else the id)."""
    return run_id[-6:] if is_run_id(run_id) else run_id


def short_id_matches(value: str, run_ids: Iterable[str],
                     submitted: Callable[[str], str | None] | None = None) -> list[str]:
    """Every run id (newest first, as given) that `value` names: `@last` the newest (`last_of`),
    a suffix each it ends."""
    if value == LAST:
        newest = last_of(run_ids, submitted)
        return [] if newest is None else [newest]
    if SHORT_ID_PATTERN.fullmatch(value) is None:
        return []
    return [run_id for run_id in run_ids if is_run_id(run_id) and run_id.endswith(value)]


def last_of(run_ids: Iterable[str], submitted: Callable[[str], str | None] | None = None) -> str | None:
    """`@last`: the newest of `run_ids` (newest first). Ids count seconds and end in random digits,
    so of the ids made in the newest one second the newest is the one `submitted` (its record's
    `submitted_at`, to the microsecond) says came last; one it cannot say counts as the oldest."""
    ids = iter(run_ids)
    newest = next(ids, None)
    if newest is None or submitted is None:
        return newest
    second = newest.partition("-")[0]
    tied = [newest, *takewhile(lambda run_id: run_id.partition("-")[0] == second, ids)]
    if len(tied) == 1:
        return newest
    return max(tied, key=lambda run_id: (submitted(run_id) or "", run_id))


def resolve_short_id(value: str, run_ids: Iterable[str], submitted: Callable[[str], str | None] | None = None) -> str:
    """The one run a person's short form names; none is `not_found`, several are refused by name."""
    from lionrun.domain.contract import ContractError, ErrorKind

    matches = short_id_matches(value, run_ids, submitted)
    if not matches:
        what = "there are no runs" if value == LAST else f"no run id ends in {value}"
        raise ContractError(ErrorKind.NOT_FOUND, what, {"run_id": value})
    if len(matches) > 1:
        shown = ", ".join(matches[:CANDIDATES_SHOWN]) + (", …" if len(matches) > CANDIDATES_SHOWN else "")
        raise ContractError(ErrorKind.INVALID_INPUT,
                            f"{value} names {len(matches)} runs: {shown}; give more digits or the whole id",
                            {"run_id": value, "candidates": matches[:CANDIDATES_SHOWN]})
    return matches[0]
