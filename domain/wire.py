"""The wire model (contract v1): one frozen msgspec Struct per answer, the only place its shape is written.

The use cases build these and serialise them with `to_wire` (msgspec, no Python walk); the
published JSON Schema in `contract/v1` is generated from the same classes by tools/gen_schema.py.
Consumers must tolerate fields they do not know (D2), so every class allows extras in the schema.
The envelope, handshake, version and help answers are built as dicts on the start-up path
(domain/contract.py, the handshake verb, the dispatcher: no msgspec import there), held
to the classes below by tests/unit/test_wire.py.
To add a field to every status-bearing answer, add it to `Lifecycle` (and, nullable, to `Row`)
and set it in `Lifecycle.of`: three lines in this one file, the first two checked by mypy
and the third by tests/unit/test_wire.py.

A field added within v1 (D2: additive, no version bump) has a default, so the schema does not
require it and an answer of an older li may lack it; docs/wire-contract.md ("Fields added within
v1") lists each, in which answers and in which shape. The comments here say what a field means.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from lionrun.domain.availability import (
    Availability,
    ConsoleAvailability,
    ManifestAvailability,
    UsageAvailability,
)
from lionrun.domain.evidence import CONCLUSIVE, INCONCLUSIVE
from lionrun.domain.run import DeliveryValue
from lionrun.domain.serialise import Minimum, Open, Wire, to_wire
from lionrun.domain.vocabulary import (
    ARTIFACT_TYPES,
    CONFINEMENTS,
    KEPT_REASONS,
    KILL_ACTIONS,
    PAUSED_REASONS,
    PERMISSION_MODES,
    PROCESSES,
    REAP_WITHHELD,
    ROW_ERROR_KINDS,
    RUN_KINDS,
    SEVERITIES,
    SHELLS,
    SPAWN_STATES,
    STATUSES_SHOWN,
    STORE_KINDS,
    ErrorKindName,
    Outcome,
    RowErrorKind,
)

if TYPE_CHECKING:
    from lionrun.domain.lifecycle import Derivation
    from lionrun.domain.run import Run
    from lionrun.domain.worktree import Changes, LegWorktree, Worktree

__all__ = [
    "AgentOptions", "AgentsAvailability", "ApplyData", "ChangedFile", "ChangesValue", "DiffData",
    "FilesAvailability", "LegDiff", "PatchAvailability", "WorktreeValue", "Artifact", "ArtifactsAvailability", "Availability", "CompletionData", "ConsoleAvailability",
    "DeliveryAvailability", "DeliveryValue", "DependencyValue", "QueueWaiter", "DoctorCheck", "DoctorData", "Envelope", "ErrorBody",
    "HandshakeData", "HelpData", "KillData", "Lifecycle", "ListData", "ListRow", "ManifestAvailability", "OutputData",
    "PruneData", "PruneKept", "RemoveData", "QueueData", "QueueRow", "Row", "RowError", "StatusData", "StoreData",
    "SubmitData", "UsageAvailability", "UsageData", "UsageTotal", "VERBS", "VersionData", "WaitData", "Wire", "to_wire",
]

# --- the open vocabularies -------------------------------------------------------------------------
# Exactly two vocabularies are closed on the wire: `Outcome` and the envelope's `ErrorKindName`.
# Every other one is a string whose schema lists the values in use as `examples` (never `enum`):
# a consumer that validates against the schema accepts a later value (docs/wire-contract.md,
# "Vocabularies"; tests/contract/test_open_vocabularies.py).

StatusText = Annotated[str, Open(STATUSES_SHOWN)]
RunKind = Annotated[str, Open(RUN_KINDS)]
SpawnStateText = Annotated[str, Open(SPAWN_STATES)]
KillActionText = Annotated[str, Open(KILL_ACTIONS)]
RowErrorKindText = Annotated[str, Open(ROW_ERROR_KINDS)]
ArtifactType = Annotated[str, Open(ARTIFACT_TYPES)]
PermissionModeText = Annotated[str, Open(PERMISSION_MODES)]
ConfinementText = Annotated[str, Open(CONFINEMENTS)]
ProcessesText = Annotated[str, Open(PROCESSES)]
Finding = Annotated[str, Open(tuple(sorted(CONCLUSIVE | INCONCLUSIVE)))]
SeverityText = Annotated[str, Open(SEVERITIES)]
KeptReason = Annotated[str, Open(KEPT_REASONS)]
ShellText = Annotated[str, Open(SHELLS)]
StoreKindText = Annotated[str, Open(STORE_KINDS)]
PausedReason = Annotated[str, Open(PAUSED_REASONS)]
ReapWithheld = Annotated[str, Open(REAP_WITHHELD)]


# --- reading a record's free-form parts (run.extra, runner_end, budget, attempts, approvals) ---------


def _text(value: object, bound: int = 200) -> str | None:
    """A string field of a record, cut to `bound` characters; None for anything else."""
    return value[:bound] if isinstance(value, str) else None


def _whole(value: object) -> int | None:
    """An integer field of a record (a bool is none); None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _amount(value: object) -> float | None:
    """A number field of a record as a float (a bool is none); None for anything else."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# --- the envelope (D3) and what every start-up may answer (D2) ------------------------------------


class ErrorBody(Wire, frozen=True, kw_only=True):
    """Why a request was refused. `message` is for a person; `detail` is not contractual."""

    kind: ErrorKindName
    message: str
    detail: dict[str, Any] | None = None


_ONE_OF_DATA_OR_ERROR: dict[str, Any] = {
    "oneOf": [
        {"properties": {"ok": {"const": True}, "data": {"type": "object"}, "error": {"type": "null"}}},
        {"properties": {"ok": {"const": False}, "data": {"type": "null"}, "error": {"type": "object"}}},
    ]
}


class Envelope(Wire, frozen=True, kw_only=True):
    """The one JSON object `li ... --machine` writes to stdout; exactly one of data/error is set."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "allow", "json_schema_extra": _ONE_OF_DATA_OR_ERROR}

    ok: bool
    contract_version: Annotated[int, Minimum(1)]
    data: dict[str, Any] | None
    error: ErrorBody | None



# --- what every start-up may answer (D2) ------------------------------------------------------


class HandshakeData(Wire, frozen=True, kw_only=True):
    """`li handshake` (D2)."""

    contract_version: Annotated[int, Minimum(1)]
    min_supported_version: Annotated[int, Minimum(1)]
    implementation: str
    implementation_version: str
    module: str


class VersionData(Wire, frozen=True, kw_only=True):
    """`li --version`."""

    version: str
    implementation: str


class HelpData(Wire, frozen=True, kw_only=True):
    """`li ... --help`: the help text is the answer."""

    help: str



# --- D7 availability -----------------------------------------------------------------------------


class Artifact(Wire, frozen=True, kw_only=True):
    """One entry under artifacts/, links never followed. Only a `file` is read, so only it has a digest.

    `type` is open (in use: file, symlink, fifo, socket, device, hardlink, folder, other); a
    symlink's `size` is that of the link itself and `link` is its target, unresolved; a `hardlink`
    is a regular file with more than one name (the other may be outside the store: never read);
    a `folder` is one nested too deep to enter.

    `available` is False, with a D7 `reason_code`, for a file the store lists but cannot give:
    a shared store keeps each artifact's bytes up to a cap (`too_large` above it).
    """

    name: str
    path: str
    size: Annotated[int, Minimum(0)]
    sha256: str | None
    type: ArtifactType = "file"
    link: str | None = None
    available: bool = True
    reason_code: str | None = None


class ArtifactsAvailability(Availability[list[Artifact]], frozen=True, kw_only=True):
    value: list[Artifact] | None

    @classmethod
    def listing(cls, found: Availability[list[dict[str, Any]]]) -> ArtifactsAvailability:
        """The store's listing (one dict per entry) as the wire publishes it."""
        value = None if found.value is None else [Artifact(**entry) for entry in found.value]
        return cls(available=found.available, value=value, reason_code=found.reason_code, detail=found.detail)


class DeliveryAvailability(Availability[DeliveryValue], frozen=True, kw_only=True):
    value: DeliveryValue | None  # the record's own, published as is (D9)


class AgentOptions(Wire, frozen=True, kw_only=True):
    """How one agent CLI was run: its permission mode (null: the CLI's own default) and extra argv."""

    permission_mode: PermissionModeText | None
    provider_args: list[str]


class AgentsAvailability(Availability[dict[str, AgentOptions]], frozen=True, kw_only=True):
    """Each agent CLI's options by provider name, as the run's request.json records them."""

    value: dict[str, AgentOptions] | None


# --- status-bearing shapes (D4) -------------------------------------------------------------------


class Lifecycle(Wire, frozen=True, kw_only=True):
    """status (open), terminal and outcome (closed, null unless terminal) travel together (D4)."""

    run_id: str
    kind: RunKind
    label: str | None
    status: StatusText
    terminal: bool
    outcome: Outcome | None
    reason_code: str | None
    possibly_orphaned: bool
    spawn_state: SpawnStateText | None
    submitted_at: str
    # The host the run belongs to (its machine id); only that host probes, reaps or signals it. Null
    # for a record that names no host.
    host: str | None = None
    # The queue the run was submitted to; null for a record from before queues.
    queue: str | None = None
    # Why an end this reader found due was not published — `not_store_owner`: li acts on a store
    # only as its owner, who will reap it.
    reap_withheld: ReapWithheld | None = None
    # For an agent run that ended `provider_rate_limited`, when the vendor said the limit resets
    # (ISO-8601 UTC), else null; and the agent CLI's own session / thread id its stream carried
    # (one-leg runs), else null.
    retry_at: str | None = None
    session_id: str | None = None
    # The runner's own end beside a recorded end it did not write (a forgery by work that reached
    # the store, or a wrong reap), on every answer that carries the lifecycle, so a consumer that
    # only lists or waits is told too.
    runner_end: RunnerEnd | None = None

    @staticmethod
    def of(run: Run, d: Derivation) -> Lifecycle:
        """The lifecycle fields of one derivation: the one place they are set."""
        return Lifecycle(
            run_id=run.run_id, kind=run.kind, label=run.label, status=d.status, terminal=d.terminal,
            outcome=d.outcome, reason_code=d.reason_code, possibly_orphaned=d.possibly_orphaned,
            spawn_state=run.spawn_state, submitted_at=run.submitted_at, host=run.host, queue=run.queue,
            reap_withheld=d.reap_withheld,
            retry_at=run.retry_at, session_id=run.session_id, runner_end=RunnerEnd.of(run),
        )

    @staticmethod
    def fields_of(run: Run, d: Derivation) -> dict[str, Any]:
        """The same fields by name, for the answers that carry them beside others (status, rows)."""
        life = Lifecycle.of(run, d)
        return {name: getattr(life, name) for name in Lifecycle.__struct_fields__}


_LIFECYCLE_NULLS: dict[str, Any] = dict.fromkeys(Lifecycle.__struct_fields__)  # a failed row's, built once


# --- per-verb data ------------------------------------------------------------------------------


class SubmitData(Wire, frozen=True, kw_only=True):
    """`li agent|orchestrate ... --detach`: a handle, resolved through status before any outcome (D5)."""

    run_id: str
    pid: int | None
    status: StatusText
    terminal: bool
    outcome: Outcome | None
    log: str
    # True when this handle names the run an earlier submit with the same --idempotency-key started
    # (nothing new was started; status, terminal and outcome are that run's as recorded now); false
    # for a run this submit started.
    replayed: bool = False

    @classmethod
    def handle(cls, run_id: str, pid: int | None, log: str, status: str = "running") -> SubmitData:
        """What submit returns: a handle to resolve through status reads, never a result (D5);
        `queued` for a run that waits for its queue's slot."""
        return cls(run_id=run_id, pid=pid, status=status, terminal=False, outcome=None, log=log)


class BatchJob(Wire, frozen=True, kw_only=True):
    """The batch job a run was submitted as: where to look it up in the scheduler."""

    executor: str  # `slurm`
    cluster: str | None
    job_id: str

    @staticmethod
    def of(run: Run) -> BatchJob | None:
        engine = run.engine
        return None if engine is None else BatchJob(executor=engine.executor, cluster=engine.cluster,
                                                    job_id=engine.job_id)


class EvidenceSpool(Wire, frozen=True, kw_only=True):
    """Where the console, li log and artifacts of a run whose runner was gone (it gave up
    waiting for the shared store) had stayed, the host's spool, and when that host moved them in."""

    host: str  # the host's machine id, as `host` names a run's host
    path: str
    moved_at: str

    @staticmethod
    def of(run: Run) -> EvidenceSpool | None:
        value = run.extra.get("evidence_spool") if isinstance(run.extra, dict) else None
        if not isinstance(value, dict):
            return None
        fields = [value.get(key) for key in ("host", "path", "moved_at")]
        texts = [field for field in fields if isinstance(field, str) and 0 < len(field) <= 4096]
        if len(texts) != 3:
            return None
        return EvidenceSpool(host=texts[0], path=texts[1], moved_at=texts[2])


class RunnerEnd(Wire, frozen=True, kw_only=True):
    """The end the runner saw, beside a recorded end it did not write (`reason_code`
    `end_not_written_by_runner`): the work's real status, outcome and exit code, and what it found."""

    status: str | None
    outcome: str | None
    exit_code: int | None
    reason_code: str | None
    finished_at: str | None
    found_status: str | None = None
    found_terminal_source: str | None = None

    @staticmethod
    def of(run: Run) -> RunnerEnd | None:
        raw = run.runner_end
        if not isinstance(raw, dict):
            return None
        inner = raw.get("found")
        found: dict[str, Any] = inner if isinstance(inner, dict) else {}
        return RunnerEnd(status=_text(raw.get("status")), outcome=_text(raw.get("outcome")),
                         exit_code=_whole(raw.get("exit_code")),
                         reason_code=_text(raw.get("reason_code")), finished_at=_text(raw.get("finished_at")),
                         found_status=_text(found.get("status")),
                         found_terminal_source=_text(found.get("terminal_source")))


class WorktreeValue(Wire, frozen=True, kw_only=True):
    """The run's own git worktree: the repository's top level, the commit it started
    from, its branch `li/<run-id>` and the worktree's path."""

    repository: str
    base_commit: str
    branch: str
    path: str

    @staticmethod
    def of(run: Run) -> WorktreeValue | None:
        return None if run.worktree is None else WorktreeValue.value(run.worktree)

    @staticmethod
    def value(w: Worktree) -> WorktreeValue:
        return WorktreeValue(repository=w.repository, base_commit=w.base_commit, branch=w.branch, path=w.path)


class ChangesValue(Wire, frozen=True, kw_only=True):
    """What li committed of the work's leftovers in its worktree: the commit (null: it left
    nothing), files changed, lines inserted and deleted, and the artifact holding the patch."""

    commit: str | None
    files: Annotated[int, Minimum(0)]
    insertions: Annotated[int, Minimum(0)]
    deletions: Annotated[int, Minimum(0)]
    patch_artifact: str | None

    @staticmethod
    def of(run: Run) -> ChangesValue | None:
        return None if run.changes is None else ChangesValue.value(run.changes)

    @staticmethod
    def value(c: Changes) -> ChangesValue:
        return ChangesValue(commit=c.commit, files=c.files, insertions=c.insertions, deletions=c.deletions,
                            patch_artifact=c.patch_artifact)


class LegWorktreeValue(Wire, frozen=True, kw_only=True):
    """One leg's own worktree in a run of several legs (`li orchestrate --worktree`), and what li
    committed of that leg's work there (null until its end was committed)."""

    leg: str
    worktree: WorktreeValue
    changes: ChangesValue | None

    @staticmethod
    def of(run: Run) -> list[LegWorktreeValue] | None:
        if not run.leg_worktrees:
            return None
        return [LegWorktreeValue(leg=e.leg, worktree=WorktreeValue.value(e.worktree),
                                 changes=None if e.changes is None else ChangesValue.value(e.changes))
                for e in run.leg_worktrees]


class DependencyValue(Wire, frozen=True, kw_only=True):
    """One run a waiting run was submitted `--after`, as observed now: the end it waits
    for (`condition`: ok, fail or any), the run's status, terminal and outcome, its D10 bucket
    (`state`: terminal, pending, stopped_without_end — its runner gone without an end —,
    unresolved_spawn; null when it could not be read) and whether its end matched (null: no end yet)."""

    run_id: str
    condition: str
    status: str | None
    terminal: bool
    outcome: str | None
    state: str | None
    matched: bool | None
class BudgetValue(Wire, frozen=True, kw_only=True):
    """What a run may spend and what it spent, as its CLIs' streams reported it
    (`spent_cost_usd` null where none reported a price); `exceeded` names the limit that stopped
    it (`tokens` or `cost`; the run then ended failed, `budget_exceeded`), else null."""

    max_tokens: int | None
    max_cost_usd: float | None
    spent_tokens: int | None
    spent_cost_usd: float | None
    exceeded: str | None

    @staticmethod
    def of(run: Run) -> BudgetValue | None:
        raw = run.budget
        if not isinstance(raw, dict):
            return None
        exceeded = raw.get("exceeded")
        return BudgetValue(max_tokens=_whole(raw.get("max_tokens")), max_cost_usd=_amount(raw.get("max_cost_usd")),
                           spent_tokens=_whole(raw.get("spent_tokens")), spent_cost_usd=_amount(raw.get("spent_cost_usd")),
                           exceeded=exceeded if exceeded in ("tokens", "cost") else None)


class AttemptValue(Wire, frozen=True, kw_only=True):
    """One attempt of a run with a retry policy: its number (1: the first), when it began
    and ended, how it ended, and when the next began (null for the last, or while it runs)."""

    attempt: int
    started_at: str | None
    ended_at: str | None
    status: str | None
    reason_code: str | None
    next_at: str | None

    @staticmethod
    def of(run: Run) -> list[AttemptValue] | None:
        if not isinstance(run.attempts, list):
            return None
        return [AttemptValue(attempt=n if (number := _whole(raw.get("attempt"))) is None else number,
                             started_at=_text(raw.get("started_at")), ended_at=_text(raw.get("ended_at")),
                             status=_text(raw.get("status")), reason_code=_text(raw.get("reason_code")),
                             next_at=_text(raw.get("next_at")))
                for n, raw in enumerate(run.attempts[:100], 1) if isinstance(raw, dict)]


class StatusData(Lifecycle, frozen=True, kw_only=True):
    """`li job status RUN_ID` (D4, D6, D7, D9): derivations, advisory liveness, read-derived fields."""

    alive: bool | None
    pid: int | None
    finished_at: str | None
    age_seconds: float
    delivery: DeliveryAvailability
    manifest: ManifestAvailability
    usage: UsageAvailability
    agents: AgentsAvailability | None = None  # each agent CLI's options, as request.json records them
    model: str | None = None  # the model spec(s), comma-separated for several legs
    exit_code: int | None = None
    started_at: str | None = None
    retry_of: str | None = None  # the run this one was retried from (`li job retry`)
    job: BatchJob | None = None  # the Slurm job of a run submitted with --executor slurm
    # 1 for the next of its queue to start, while the run is `queued`; null otherwise, and when the
    # store could not tell
    queue_position: int | None = None
    cost_usd: float | None = None  # what the run cost, where its providers reported it
    # `store_hidden` when the work could not reach the store, `none` when it could
    # (`confinement_detail` says why: `--confine off`, or what the kernel refused); null before the
    # runner decided, and for runs from before confinement
    confinement: ConfinementText | None = None
    confinement_detail: str | None = None
    # `pid_namespace` when the work ran in a PID namespace of its own (no process of it outlives the
    # run; the work cannot signal its supervisor), `shared` when its processes shared the host's
    # (`processes_detail` says why); null before the runner decided
    processes: ProcessesText | None = None
    processes_detail: str | None = None
    # A worktree run whose work could reach the repository's shared `config`, `hooks/` and `info/`
    # (unconfined): the paths under the git common dir the work changed, added or removed (empty:
    # none); null when not compared (read-only to the work)
    repository_changes: list[str] | None = None
    # The code of the liveness finding `alive` comes from (domain.evidence, domain.slurm: `alive`,
    # `session_alive` — the runner gone, work of the run still running —, `pid_absent`,
    # `foreign_host`, `job_alive`, ...); advisory like `alive`; null when nothing was probed (an
    # ended run)
    finding: Finding | None = None
    # The run's own worktree (null: it worked in its cwd), what li committed of its work there
    # (null: nothing committed yet, or no worktree), the run whose conversation it continues, and
    # the chain of replies back to the first run (oldest first).
    worktree: WorktreeValue | None = None
    changes: ChangesValue | None = None
    continues: str | None = None
    chain: list[str] | None = None
    # A run of several legs with --worktree has a worktree per leg (then `worktree` and `changes`
    # are null: they mean the run's one worktree); null otherwise
    leg_worktrees: list[LegWorktreeValue] | None = None
    # The run whose confined work submitted this one through li (its children are the runs that work
    # may read, wait on and kill); null for any other run
    parent: str | None = None
    # The runs this one was submitted --after, each as observed now (null: it waits for none); the
    # one whose end ended it (`reason_code` dependency_failed), else null; and its priority within
    # its queue (null: 0).
    after: list[DependencyValue] | None = None
    failed_dependency: str | None = None
    priority: int | None = None
    # Where what its runner left on its host (console, li log, artifacts) had stayed until that host
    # moved it into the shared store; null otherwise
    evidence_spool: EvidenceSpool | None = None
    # The run's budget (--max-tokens, --max-cost), what it spent and which limit stopped it; null
    # for a run with none (spent 0 until its runner records the end)
    budget: BudgetValue | None = None
    # The attempts of a run submitted with --retry N, in order (the run is terminal only after its
    # last); null for a run with no retry policy
    attempts: list[AttemptValue] | None = None
    # The permission requests of a run under --permission-mode ask, open and answered, in order (the
    # run reads `waiting_approval` while one is open); null for a run that never asked
    approvals: list[ApprovalValue] | None = None


class OutputData(Wire, frozen=True, kw_only=True):
    """`li job output RUN_ID`: every read-derived field under the availability wrapper (D7)."""

    run_id: str
    console: ConsoleAvailability
    artifacts: ArtifactsAvailability
    manifest: ManifestAvailability
    # li's own lines about the run (the runner's and its supervisor's: queued, stopping leftover
    # processes, the end it recorded, ...), kept apart from `console`, which is exactly what the
    # work wrote; its tail as long as the console's (`tail_chars`). Unavailable (`missing`) for a
    # run whose runner has not started, or from before it existed.
    li_log: ConsoleAvailability | None = None


class RowError(Wire, frozen=True, kw_only=True):
    """Why one id or row could not be observed; the other ids and rows are unaffected.

    `kind` is open: in use are not_found, invalid_input, record_unusable (list and wait) and
    not_observed (a wait interrupted before its first look at the id).
    """

    kind: RowErrorKindText
    message: str
    reason_code: str | None = None

    @classmethod
    def of(cls, kind: RowErrorKind, message: str, reason_code: str | None = None) -> RowError:
        return cls(kind=kind, message=message, reason_code=reason_code)


class Row(Wire, frozen=True, kw_only=True):
    """A list row or wait entry: the lifecycle fields, all null when `error` says it could not be read."""

    run_id: str
    kind: RunKind | None
    label: str | None
    status: StatusText | None
    terminal: bool | None
    outcome: Outcome | None
    reason_code: str | None
    possibly_orphaned: bool | None
    spawn_state: SpawnStateText | None
    submitted_at: str | None
    # As on Lifecycle (null on an error row):
    host: str | None = None
    queue: str | None = None
    reap_withheld: ReapWithheld | None = None
    retry_at: str | None = None
    session_id: str | None = None
    runner_end: RunnerEnd | None = None
    error: RowError | None

    @classmethod
    def observed(cls, run: Run, d: Derivation) -> Row:
        return cls(**Lifecycle.fields_of(run, d), error=None)

    @classmethod
    def failed(cls, run_id: str, error: RowError) -> Row:
        """A row that says why it could not be read, every lifecycle field null."""
        return cls(**{**_LIFECYCLE_NULLS, "run_id": run_id, "error": error})


class ListRow(Row, frozen=True, kw_only=True):
    """A list row: the lifecycle fields plus what a person's table shows (all null on an error row).

    `exit_code` is the work's own exit status once the runner recorded one; `command` the first line
    of the prompt (or flow spec) as submit recorded it, bounded, control characters shown as `?`.
    """

    model: str | None = None
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    command: str | None = None
    cost_usd: float | None = None  # what the run cost, where its providers reported it
    changes: ChangesValue | None = None  # null for a run without a worktree
    # each leg's worktree and changes, for a run of several legs with --worktree (as on
    # `li job status`); null otherwise
    leg_worktrees: list[LegWorktreeValue] | None = None
    priority: int | None = None  # its priority within its queue (null: 0)

    @classmethod
    def listed(cls, run: Run, d: Derivation, **person: Any) -> ListRow:
        return cls(**Lifecycle.fields_of(run, d), error=None, **person)

    @classmethod
    def unlisted(cls, run_id: str, error: RowError) -> ListRow:
        """A row that says why it could not be read: every other field null."""
        nulls: dict[str, Any] = dict.fromkeys(cls.__struct_fields__)
        return cls(**{**nulls, "run_id": run_id, "error": error})


class ListData(Wire, frozen=True, kw_only=True):
    """`li job list`: newest first, bounded by `limit`, and says when truncated (D6)."""

    runs: list[ListRow]
    truncated: bool
    limit: int


class KillData(Wire, frozen=True, kw_only=True):
    """`li job kill RUN_ID`: what was done, never process death or terminality (D6)."""

    run_id: str
    action: KillActionText
    status: StatusText
    terminal: bool
    outcome: Outcome | None


class WaitData(Wire, frozen=True, kw_only=True):
    """`li job wait RUN_ID...`: entries plus the four-way partition and the echoed bounds (D10)."""

    runs: list[Row]
    all_terminal: bool
    timed_out: bool
    pending: list[str]
    stopped_without_end: list[str]
    unresolved_spawn: list[str]
    unresolved_spawn_after: float
    max_wait: float
    poll_interval: float
    requested_max_wait: Any
    requested_poll_interval: Any


class DoctorCheck(Wire, frozen=True, kw_only=True):
    """One finding; `severity` is how much it matters when `ok` is false, `fix` what to do."""

    name: str
    ok: bool
    severity: SeverityText
    detail: str | None
    fix: str | None


class DoctorData(Wire, frozen=True, kw_only=True):
    """`li doctor`: what a run needs here, check by check; `ok` is false when an error-check fails."""

    ok: bool
    checks: list[DoctorCheck]


class PruneKept(Wire, frozen=True, kw_only=True):
    run_id: str
    reason: KeptReason
    detail: str | None


class PruneData(Wire, frozen=True, kw_only=True):
    """`li job prune`: only runs that recorded an end are ever removed; every kept run says why."""

    removed: list[str]
    kept: list[PruneKept]
    dry_run: bool


class RemoveData(Wire, frozen=True, kw_only=True):
    """`li job rm RUN...`: the named runs removed (each had recorded an end); one whose record
    changed while it was being removed is kept, saying why."""

    removed: list[str]
    kept: list[PruneKept]


class CompletionData(Wire, frozen=True, kw_only=True):
    """`li completion bash|zsh|fish`."""

    shell: ShellText
    script: str


class StoreData(Wire, frozen=True, kw_only=True):
    """`li store init`: which store this li uses and the schema it now holds (null: none needed)."""

    store: StoreKindText
    location: str
    schema_version: int | None


class StoreCopySkipped(Wire, frozen=True, kw_only=True):
    run_id: str
    reason_code: str
    detail: str


class StoreCopyData(Wire, frozen=True, kw_only=True):
    """`li store copy`: runs copied, already in the target, and skipped (at most 100 named; the
    count is whole). A skipped run is one not ended (`not_ended`) or one the source cannot read."""

    source: str
    target: str
    copied: int
    already_there: int
    skipped: int
    skipped_runs: list[StoreCopySkipped]


class QueueRow(Wire, frozen=True, kw_only=True):
    """One queue: its limit (null: none), how many run and wait, paused and why.

    `paused_reason` is `paused` (a person's `li queue pause`, until `li queue resume`) or
    `provider_rate_limited` (a run of it ended rate limited: until `paused_until`, then the queue
    opens by itself); `paused_by` names that run.
    """

    name: str
    parallel: int | None
    running: int
    waiting: int
    paused: bool
    paused_reason: PausedReason | None
    paused_until: str | None
    paused_by: str | None
    # The runs in line, in the order they start (a higher priority first, equal ones in submission
    # order), at most 100
    line: list[QueueWaiter] | None = None
    # A token budget per window (`li queue set NAME --max-tokens N --per 24h`): the budget, the
    # window's length, what its current window spent (counted as each run ends) and when that window
    # rolls; null for a queue with none. A window spent pauses the queue (`paused_reason`
    # `budget_exceeded`) until `window_ends`, then it opens by itself.
    max_tokens: int | None = None
    per_seconds: float | None = None
    window_spent_tokens: int | None = None
    window_ends: str | None = None


class QueueWaiter(Wire, frozen=True, kw_only=True):
    """One run in a queue's line: its place (1: next to start) and priority."""

    run_id: str
    position: int
    priority: int


class QueueData(Wire, frozen=True, kw_only=True):
    """`li queue list|set|pause|resume`: the queues the store keeps (after the change, for a change)."""

    queues: list[QueueRow]


class UsageTotal(Wire, frozen=True, kw_only=True):
    """What one group of ended runs spent. Each total is over the runs that reported
    it; `*_unreported` counts the runs that did not (never added in as 0); a total no run reported
    is null. `tokens` sums each token class every reporting run gave."""

    key: str
    runs: int
    wall_seconds: float | None
    wall_unreported: int
    tokens: dict[str, int | float] | None
    tokens_unreported: int
    cost_usd: float | None
    cost_unreported: int


class UsageData(Wire, frozen=True, kw_only=True):
    """`li usage [--since T] [--by model|label|queue]`: ended runs' spending; runs not ended and
    records that could not be read are counted, not totalled."""

    since: str | None
    by: str | None
    groups: list[UsageTotal]
    total: UsageTotal
    not_ended: int
    unreadable: int


class ChangedFile(Wire, frozen=True, kw_only=True):
    """One file of a run's changes: its path and lines inserted and deleted (null: a binary file)."""

    path: str
    insertions: int | None
    deletions: int | None


class FilesAvailability(Availability[list[ChangedFile]], frozen=True, kw_only=True):
    value: list[ChangedFile] | None


class PatchAvailability(Availability[str], frozen=True, kw_only=True):
    """The patch (`git diff --binary` of the run's commit against its base), or why it cannot be
    read; an empty patch only when the work left nothing (D7: never for "could not read")."""

    value: str | None


class LegDiff(Wire, frozen=True, kw_only=True):
    """One leg's (a fanout's leg, a flow's step) change in a run of several legs with --worktree:
    the leg's own worktree (branch `li/<run-id>.<leg>`), what li committed there (null: nothing
    committed yet), its files and patch under D7 wrappers, and whether li committed it only now."""

    leg: str
    worktree: WorktreeValue
    changes: ChangesValue | None
    files: FilesAvailability
    patch: PatchAvailability
    recovered: bool

    @staticmethod
    def of(entry: LegWorktree, files: FilesAvailability, patch: PatchAvailability, recovered: bool) -> LegDiff:
        w, c = entry.worktree, entry.changes
        return LegDiff(leg=entry.leg, worktree=WorktreeValue(repository=w.repository, base_commit=w.base_commit,
                                                             branch=w.branch, path=w.path),
                       changes=None if c is None else ChangesValue(commit=c.commit, files=c.files,
                                                                   insertions=c.insertions, deletions=c.deletions,
                                                                   patch_artifact=c.patch_artifact),
                       files=files, patch=patch, recovered=recovered)


class DiffData(Wire, frozen=True, kw_only=True):
    """`li job diff RUN_ID`: the run's changes against its base, under D7 wrappers.
    `recovered` is true when li committed them only now (the runner could not: it was killed).

    A run of several legs with --worktree (each leg in its own worktree): `legs` holds each leg's
    change, and the run's own `worktree` and `changes` are null, its `files` and `patch`
    unavailable (`several_legs`: no one patch is the run's). With `--leg LEG`, that one leg's
    change in this same shape, `leg` naming it."""

    run_id: str
    worktree: WorktreeValue | None
    changes: ChangesValue | None
    files: FilesAvailability
    patch: PatchAvailability
    recovered: bool
    # The leg `--leg` named (null: the whole run), and each leg's change of a run of several legs
    # (null for a run of one worktree, and with --leg)
    leg: str | None = None
    legs: list[LegDiff] | None = None


class ApplyData(Wire, frozen=True, kw_only=True):
    """`li job apply RUN_ID`: the run's changes applied to the working tree at `target`, not committed."""

    run_id: str
    target: str
    applied: bool
    files: list[ChangedFile]
    leg: str | None = None  # the leg whose change was applied (`--leg`)


class ApprovalValue(Wire, frozen=True, kw_only=True):
    """One permission request of a run under --permission-mode ask: the tool the agent
    wants to use and its input, when it asked, and the answer (`behavior` `allow` or `deny`, null
    while open; `answered_by` a person's `li`, or `approval_timeout` when nobody answered in time)."""

    run_id: str
    id: str
    tool: str
    input: Any
    requested_at: str | None
    behavior: str | None
    message: str | None
    answered_at: str | None
    answered_by: str | None

    @staticmethod
    def of(raw: dict[str, Any]) -> ApprovalValue:
        texts = {key: _text(raw.get(key), 2000)
                 for key in ("requested_at", "behavior", "message", "answered_at", "answered_by")}
        return ApprovalValue(run_id=str(raw.get("run_id")), id=str(raw.get("id")), tool=str(raw.get("tool"))[:200],
                             input=raw.get("input"), **texts)


class ApprovalsData(Wire, frozen=True, kw_only=True):
    """`li job approvals` (the open requests across runs), `li job approve|deny RUN [REQUEST]`
    (the requests answered)."""

    approvals: list[ApprovalValue]


# The verb table of the published schema: file stem -> data class.
VERBS: dict[str, type[Wire]] = {
    "handshake": HandshakeData,
    "version": VersionData,
    "help": HelpData,
    "submit": SubmitData,
    "status": StatusData,
    "output": OutputData,
    "list": ListData,
    "kill": KillData,
    "wait": WaitData,
    "doctor": DoctorData,
    "prune": PruneData,
    "rm": RemoveData,
    "completion": CompletionData,
    "store": StoreData,
    "store-copy": StoreCopyData,
    "queue": QueueData,
    "usage": UsageData,
    "diff": DiffData,
    "apply": ApplyData,
    "approvals": ApprovalsData,
    "approve": ApprovalsData,
    "deny": ApprovalsData,
}
