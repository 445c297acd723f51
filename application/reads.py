"""Read use cases: status, output and list, each resolved through the one Observer (D4, D6, D7)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from lionrun.application.observe import Observed, Observer
from lionrun.application.ports import RunFiles, RunNotFound, RunQueues, RunRecords, StoreRefused
from lionrun.domain.availability import (
    MALFORMED,
    MISSING,
    NOT_RECORDED,
    NOT_YET_WRITTEN,
    UNREADABLE,
    Availability,
    ManifestAvailability,
    UsageAvailability,
)
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.run import (
    DeliveryValue,
    RecordUnusable,
    Run,
    is_run_id,
    model_matches,
    parse_iso,
    recorded_command,
    require_run_id,
    submitted_second,
)
from lionrun.domain.untrusted import TEXT_MAX_BYTES, Untrusted, check_size, parse_json
from lionrun.domain.vocabulary import CONFINEMENTS, PROCESSES, QUEUED, RECORD_UNUSABLE, Confinement
from lionrun.domain.wire import (
    AgentOptions,
    AgentsAvailability,
    ApprovalValue,
    ArtifactsAvailability,
    AttemptValue,
    BatchJob,
    BudgetValue,
    ChangesValue,
    DeliveryAvailability,
    EvidenceSpool,
    LegWorktreeValue,
    ListData,
    ListRow,
    OutputData,
    RowError,
    StatusData,
    WorktreeValue,
)

if TYPE_CHECKING:
    from lionrun.domain.request import RunRequest

TAIL_CHARS_DEFAULT: Final = 20_000
TAIL_CHARS_MAX: Final = 1_000_000
LIMIT_DEFAULT: Final = 50
LIMIT_MAX: Final = 1000
USAGE_KEYS: Final = ("metering", "usage")  # where a manifest carries the run's meter

_DIGITS = re.compile(r"[0-9]+")


def check_run_id(run_id: str) -> str:
    """Refuse anything not of the run-id form before it can name a path (invalid_input)."""
    return require_run_id(run_id)


def bounded_count(raw: str | None, name: str, default: int, maximum: int, minimum: int = 0) -> int:
    """A non-negative decimal count; `None` is the default, above `maximum` clamps, anything else refuses."""
    if raw is None:
        return default
    text = str(raw).strip()
    if not _DIGITS.fullmatch(text):
        raise ContractError(ErrorKind.INVALID_INPUT, f"{name} must be an integer >= {minimum}, not {raw!r}",
                            {"argument": name, "value": str(raw)[:200]})
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(maximum)):  # huge: clamp without converting thousands of digits
        return maximum
    if int(digits) < minimum:
        raise ContractError(ErrorKind.INVALID_INPUT, f"{name} must be an integer >= {minimum}, not {raw!r}",
                            {"argument": name, "value": text})
    return min(int(digits), maximum)


def pid_of(run: Run) -> int | None:
    return run.pid if run.pid is not None else (run.incarnation.pid if run.incarnation else None)


def delivery_of(run: Run, terminal: bool) -> DeliveryAvailability:
    """The notice's recorded outcome (D9) under D7: no notice configured is a fact, not a failure."""
    if run.delivery is not None:
        if not isinstance(run.delivery.attempted, bool):
            return DeliveryAvailability.unavailable(MALFORMED, "the recorded delivery has no boolean `attempted`")
        return DeliveryAvailability.of(run.delivery)
    if not run.notify:
        return DeliveryAvailability.of(DeliveryValue(attempted=False))
    if not terminal:
        return DeliveryAvailability.unavailable(NOT_YET_WRITTEN,
                                                "a notice is configured; it is sent when the run ends")
    return DeliveryAvailability.unavailable(NOT_RECORDED,
                                            "a notice was configured but no delivery attempt is recorded")


def usage_of(manifest: Availability[dict[str, Any]]) -> UsageAvailability:
    """The meter as the manifest recorded it; an absent or unreadable meter is unavailable, never zero."""
    if not manifest.available or manifest.value is None:
        detail = f"the manifest that carries the meter is unavailable: {manifest.detail}"
        return UsageAvailability.unavailable(manifest.reason_code or NOT_RECORDED, detail)
    for key in USAGE_KEYS:
        if key in manifest.value:
            meter = manifest.value[key]
            if not isinstance(meter, dict):
                return UsageAvailability.unavailable(MALFORMED, f"manifest `{key}` is not an object")
            return UsageAvailability.of(dict(meter))
    return UsageAvailability.unavailable(NOT_RECORDED, "the manifest records no usage")


def agents_of(files: RunFiles, run_id: str) -> AgentsAvailability:
    """Each agent CLI's permission mode and provider args as the run's request.json records them (D7)."""
    # Only a status reads a request: list and wait do not load its parsers (start-up).
    from lionrun.domain.agent_options import agents_in

    try:
        agents = agents_in(files.read_text(run_id, "request.json").encode("utf-8", "surrogateescape"))
    except FileNotFoundError:
        return AgentsAvailability.unavailable(MISSING, "request.json does not exist")
    except Untrusted as exc:
        return AgentsAvailability.unavailable(exc.reason_code, exc.detail)
    except (OSError, RunNotFound, RecordUnusable) as exc:
        return AgentsAvailability.unavailable(getattr(exc, "reason_code", None) or UNREADABLE, f"request.json: {exc}")
    return AgentsAvailability.of({name: AgentOptions(permission_mode=options.permission_mode,
                                                     provider_args=list(options.provider_args))
                                  for name, options in sorted(agents.items())})


def error_row(run_id: str, reason_code: str, message: str) -> ListRow:
    """A list row for a record that could not be read: it says so, with null lifecycle fields."""
    return ListRow.unlisted(run_id, RowError.of(RECORD_UNUSABLE, message, reason_code))


def repository_changes_of(run: Run) -> list[str] | None:
    """The shared git paths the run's work changed, bounded as the record's writer bounds them."""
    from lionrun.domain.worktree import REPOSITORY_CHANGES_MAX

    if run.repository_changes is None:
        return None
    return [path[:4096] for path in run.repository_changes[:REPOSITORY_CHANGES_MAX]]


def confinement_of(run: Run) -> Confinement | None:
    """The recorded confinement when it is one li writes (a record may hold anything)."""
    return next((known for known in CONFINEMENTS if known == run.confinement), None)


class RunReads:
    """`li job status|output|list`: read-only answers; a reader never rewrites a record it cannot use."""

    def __init__(self, store: RunRecords, observer: Observer, files: RunFiles,
                 queues: Callable[[], RunQueues | None] | None = None) -> None:
        self.store = store
        self.observer = observer
        self.files = files
        self.queues = queues  # built only for a queued run's position

    def observe(self, run_id: str, probe_ended: bool = True) -> Observed:
        """One observation, with a missing run `not_found` and an unusable record `unavailable`."""
        return observe_or_refuse(self.observer, run_id, probe_ended)

    def status(self, run_id: str) -> dict[str, Any]:
        """The D4 answer plus advisory liveness and every read-derived field under D7."""
        observed = self.observe(run_id)
        run, d = observed.run, observed.derivation
        manifest = ManifestAvailability.recast(self.files.manifest(run_id))
        return StatusData(
            **StatusData.fields_of(run, d),
            alive=d.alive, pid=pid_of(run), finished_at=run.finished_at, age_seconds=round(d.age_seconds, 3),
            delivery=delivery_of(run, d.terminal), manifest=manifest, usage=usage_of(manifest),
            agents=agents_of(self.files, run_id),
            **{k: v for k, v in person_fields(run).items() if k in ("model", "exit_code", "started_at", "cost_usd")},
            retry_of=retry_of(run), job=BatchJob.of(run), queue_position=self.queue_position(run, d.status),
            confinement=confinement_of(run), finding=None if observed.finding is None else observed.finding.code,
            confinement_detail=run.confinement_detail[:500] if run.confinement_detail else None,
            processes=next((known for known in PROCESSES if known == run.processes), None),
            processes_detail=run.processes_detail[:500] if run.processes_detail else None,
            repository_changes=repository_changes_of(run),
            worktree=WorktreeValue.of(run), changes=ChangesValue.of(run), continues=run.continues,
            leg_worktrees=LegWorktreeValue.of(run), budget=BudgetValue.of(run),
            attempts=AttemptValue.of(run),
            approvals=None if run.approvals is None else [ApprovalValue.of({**a, "run_id": run.run_id})
                                                          for a in run.approvals if isinstance(a, dict)],
            chain=self.chain(run) if run.continues else None,
            parent=run.parent if run.parent and is_run_id(run.parent) else None,
            after=self.dependencies(run), failed_dependency=failed_dependency(run),
            priority=person_fields(run)["priority"],
            evidence_spool=EvidenceSpool.of(run),
        ).to_wire()

    def dependencies(self, run: Run) -> list[Any] | None:
        """The runs `run` was submitted --after, each as observed now; None: none."""
        if not run.after:
            return None
        from lionrun.application.dependencies import states_of  # only a run that waits loads them
        from lionrun.domain.wire import DependencyValue

        return [DependencyValue(run_id=s.run_id, condition=s.condition, status=s.status, terminal=s.terminal,
                                outcome=s.outcome, state=s.bucket, matched=s.matched)
                for s in states_of(self.observer, run)]

    def queue_position(self, run: Run, status: str) -> int | None:
        """1 for the next of its queue to start, while the run is `queued`; None otherwise and when
        the queue cannot be read (advisory: a gone waiter not yet noticed may still count ahead)."""
        if status != QUEUED or not run.queue or self.queues is None:
            return None
        from lionrun.domain.queue import position  # only a queued run's status loads the queues

        try:
            queues = self.queues()
            return None if queues is None else position(queues.line(run.queue), run.run_id)
        except (StoreRefused, OSError, ContractError):
            return None

    def chain(self, run: Run) -> list[str]:
        """The runs a reply continues, oldest first, ending with this one (at most CHAIN_MAX back;
        a record that cannot be read ends the walk)."""
        found = [run.run_id]
        current: Run | None = run
        while current is not None and current.continues and len(found) < CHAIN_MAX:
            found.append(current.continues)
            try:
                current = self.store.read(current.continues)
            except Exception:  # noqa: BLE001 - a missing or unreadable link ends the chain there
                current = None
        return found[::-1]

    def recorded_request(self, run_id: str) -> RunRequest:
        """The request a run was submitted with (`li job retry`), read back from its folder.

        A missing run is `not_found`; a request that cannot be read or parsed (the folder is
        hostile input) is `unavailable`, never a crash and never a guess.
        """
        from lionrun.domain.request import RunRequest

        self.observe(run_id, probe_ended=False)
        try:
            instruction = self.files.read_text(run_id, "instruction.txt")
            text = self.files.read_text(run_id, "request.json")
            check_size(len(text.encode("utf-8", "surrogateescape")), TEXT_MAX_BYTES, "request.json")
            data = parse_json(text.encode("utf-8", "surrogateescape"), "request.json")
            if not isinstance(data, dict):
                raise Untrusted(MALFORMED, "request.json is not a JSON object")
            return RunRequest.from_dict(data, instruction)
        except Untrusted as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the request of {run_id} cannot be used: {exc.detail}",
                                {"run_id": run_id, "reason_code": exc.reason_code}) from exc
        except ContractError as exc:  # from_dict: malformed fields
            raise ContractError(ErrorKind.UNAVAILABLE, f"the request of {run_id} cannot be used: {exc.message}",
                                {"run_id": run_id, "reason_code": MALFORMED}) from exc
        except (OSError, StoreRefused, RecordUnusable) as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the request of {run_id} cannot be read: {exc}",
                                {"run_id": run_id, "reason_code": "unreadable"}) from exc

    def output(self, run_id: str, tail_chars: int = TAIL_CHARS_DEFAULT) -> dict[str, Any]:
        """The console tail, the artifacts listing, the manifest and the li log's tail (li's own lines,
        apart from the console), each saying whether it could be read."""
        check_run_id(run_id)
        try:
            self.store.read(run_id)
        except RunNotFound as exc:
            raise not_found(run_id) from exc
        except RecordUnusable as exc:
            raise unusable(run_id, exc) from exc
        return OutputData(
            run_id=run_id,
            console=self.files.console(run_id, tail_chars),
            artifacts=ArtifactsAvailability.listing(self.files.artifacts(run_id)),
            manifest=ManifestAvailability.recast(self.files.manifest(run_id)),
            li_log=self.files.li_log(run_id, tail_chars),
        ).to_wire()

    def listing(self, limit: int = LIMIT_DEFAULT, status: str | None = None, label: str | None = None,
                model: str | None = None, since: datetime | None = None, parent: str | None = None) -> dict[str, Any]:
        """Newest first; reads only as many records as the limit needs (ids sort by time).

        `status`, `label` are exact; `model` matches a provider or a whole model spec; `since` keeps
        runs submitted at or after it; `parent` the runs whose confined work that run submitted
       . A row that could not be read matches only the status filter.
        """
        rows: list[ListRow] = []
        truncated = False
        with self.observer.one_cluster_question():
            truncated = self._fill(rows, limit, status, label, model, since, parent)
        return ListData(runs=rows, truncated=truncated, limit=limit).to_wire()

    def _fill(self, rows: list[ListRow], limit: int, status: str | None, label: str | None, model: str | None,
              since: datetime | None, parent: str | None) -> bool:
        """Rows into `rows`, newest first; whether more matched than the limit."""
        for run_id in _listable(self.store):
            second = submitted_second(run_id)
            if since is not None and second is not None and second < since.replace(microsecond=0):
                break  # every later id is older still
            row = self._row(run_id, parent)
            if row is None or not _matches(row, status, label, model, since, parent):
                continue
            if len(rows) >= limit:
                return True
            rows.append(row)
        return False

    def select(self, status: str | None = None, label: str | None = None) -> list[str]:
        """The ids of the runs (newest first, at most LIMIT_MAX) a `--status`/`--label` selection names."""
        rows = self.listing(LIMIT_MAX, status, label)["runs"]
        return [row["run_id"] for row in rows if row["error"] is None]

    def _row(self, run_id: str, parent: str | None = None) -> ListRow | None:
        """One list row; None for a folder that is not (or no longer) a run, e.g. a reservation,
        and for a run whose parent is not `parent` (when given)."""
        try:
            observed = self.observer.observe(run_id)
        except RunNotFound:
            return None
        except RecordUnusable as exc:
            return error_row(run_id, exc.reason_code, exc.detail)
        if parent is not None and observed.run.parent != parent:
            return None
        return ListRow.listed(observed.run, observed.derivation, **person_fields(observed.run))


def _matches(row: ListRow, status: str | None, label: str | None, model: str | None,
             since: datetime | None, parent: str | None = None) -> bool:
    if row.error is not None:
        return label is None and model is None and since is None and parent is None
    if status is not None and row.status != status:
        return False
    if label is not None and row.label != label:
        return False
    if model is not None and not model_matches(row.model, model):
        return False
    submitted = parse_iso_or_none(row.submitted_at)
    return since is None or (submitted is not None and submitted >= since)


def parse_iso_or_none(text: str | None) -> datetime | None:
    try:
        moment: datetime | None = parse_iso(text)
        return moment
    except (TypeError, ValueError):
        return None


CHAIN_MAX = 100


def retry_of(run: Run) -> str | None:
    """The run this one retries, as submit recorded it (only a well-formed run id counts)."""
    value = run.extra.get("retry_of") if isinstance(run.extra, dict) else None
    return value if isinstance(value, str) and is_run_id(value) else None


def person_fields(run: Run) -> dict[str, Any]:
    """What a list row adds for a person's table: model, the work's exit code, times, the command."""
    model = run.model if isinstance(run.model, str) else None
    code = run.exit_code if isinstance(run.exit_code, int) and not isinstance(run.exit_code, bool) else None
    return {"model": model, "exit_code": code, "started_at": run.started_at, "finished_at": run.finished_at,
            "command": recorded_command(run), "cost_usd": recorded_cost(run),
            "changes": ChangesValue.of(run), "leg_worktrees": LegWorktreeValue.of(run),
            "priority": run.priority if isinstance(run.priority, int) and run.priority else None}


def failed_dependency(run: Run) -> str | None:
    """The run whose end ended this one without its work (`dependency_failed`), as the
    runner recorded it; None for any other run."""
    noted = run.extra.get("failed_dependency") if isinstance(run.extra, dict) else None
    found = noted.get("run_id") if isinstance(noted, dict) else None
    return found if isinstance(found, str) and is_run_id(found) else None


def recorded_cost(run: Run) -> float | None:
    """The cost the runner recorded with the end, when its providers reported one."""
    value = run.extra.get("cost_usd") if isinstance(run.extra, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        return None
    return float(value)


def unusable(run_id: str, exc: RecordUnusable) -> ContractError:
    """A record that exists but cannot be used: `unavailable`, with the reason in detail."""
    return ContractError(ErrorKind.UNAVAILABLE, f"the record of {run_id} cannot be used: {exc.detail}",
                         {"run_id": run_id, "reason_code": exc.reason_code})


def not_found(run_id: str) -> ContractError:
    return ContractError(ErrorKind.NOT_FOUND, f"no run with id {run_id}", {"run_id": run_id})


def observe_or_refuse(observer: Observer, run_id: str, probe_ended: bool = True) -> Observed:
    """Observe one run through the single authority, refusing a bad id, a missing run or an unusable record."""
    check_run_id(run_id)
    try:
        return observer.observe(run_id, probe_ended=probe_ended)
    except RunNotFound as exc:
        raise not_found(run_id) from exc
    except RecordUnusable as exc:
        raise unusable(run_id, exc) from exc


def _listable(store: RunRecords) -> Iterator[str]:
    """The store's run ids; a store that cannot be listed at all is `unavailable`, not a crash."""
    try:
        return store.run_ids()
    except StoreRefused as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, str(exc), {"reason_code": "store_unreadable"}) from exc
