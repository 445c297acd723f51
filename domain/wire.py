"""The published wire schema (contract v1): pydantic models of the envelope and every verb's data.

Never imported by `li` itself (start-up time is a feature); only `tools/gen_schema.py` and the
tests use it. Consumers must tolerate fields they do not know (D2), so every model allows extras;
the models still describe every field we emit, which the contract tests check strictly.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ErrorKindName = Literal["not_found", "invalid_input", "conflict", "unavailable", "internal"]
Outcome = Literal["succeeded", "failed", "cancelled", "indeterminate"]
SpawnState = Literal["preparing", "started", "failed"]
KillAction = Literal["signalled", "already_terminal", "no_process"]


class Wire(BaseModel):
    """Base of every wire model: unknown fields are allowed, as D2 requires of consumers."""

    model_config = ConfigDict(extra="allow")


# --- the envelope (D3) -------------------------------------------------------------------------


class ErrorBody(Wire):
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


class Envelope(Wire):
    """The one JSON object `li ... --machine` writes to stdout; exactly one of data/error is set."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_ONE_OF_DATA_OR_ERROR)

    ok: bool
    contract_version: int = Field(ge=1)
    data: dict[str, Any] | None
    error: ErrorBody | None


# --- D7 availability -----------------------------------------------------------------------------


class Availability(Wire):
    """`available: false` means the value could not be established — never "none"."""

    available: bool
    value: Any
    reason_code: str | None
    detail: str | None


class ConsoleAvailability(Availability):
    """The console tail; `truncated` says whether the tail is the whole log (null when unavailable)."""

    value: str | None
    truncated: bool | None


class Artifact(Wire):
    """One entry under artifacts/, links never followed. Only a `file` is read, so only it has a digest.

    `type` is open (in use: file, symlink, fifo, socket, device, hardlink, folder, other); a
    symlink's `size` is that of the link itself and `link` is its target, unresolved; a `hardlink`
    is a regular file with more than one name (the other may be outside the store: never read);
    a `folder` is one nested too deep to enter.
    """

    name: str
    path: str
    size: int = Field(ge=0)
    sha256: str | None
    type: str = "file"
    link: str | None = None


class ArtifactsAvailability(Availability):
    value: list[Artifact] | None


class ManifestAvailability(Availability):
    value: dict[str, Any] | None


class DeliveryValue(Wire):
    """What became of the terminal notice (D9); `attempted` with `ok: null` is an unknown outcome."""

    attempted: bool
    ok: bool | None = None
    exit_code: int | None = None
    error: str | None = None
    failure_class: str | None = None


class DeliveryAvailability(Availability):
    value: DeliveryValue | None


class UsageAvailability(Availability):
    """Metering (deferred in the ADR, shaped by D7): an unreadable meter is unavailable, never zero."""

    value: dict[str, Any] | None


# --- status-bearing shapes (D4) -------------------------------------------------------------------


class Lifecycle(Wire):
    """status (open), terminal and outcome (closed, null unless terminal) travel together (D4)."""

    run_id: str
    kind: str
    label: str | None
    status: str
    terminal: bool
    outcome: Outcome | None
    reason_code: str | None
    possibly_orphaned: bool
    spawn_state: SpawnState | None
    submitted_at: str


# --- per-verb data ------------------------------------------------------------------------------


class HandshakeData(Wire):
    """`li handshake` (D2)."""

    contract_version: int = Field(ge=1)
    min_supported_version: int = Field(ge=1)
    implementation: str
    implementation_version: str
    module: str


class VersionData(Wire):
    """`li --version`."""

    version: str
    implementation: str


class HelpData(Wire):
    """`li ... --help`: the help text is the answer."""

    help: str


class SubmitData(Wire):
    """`li agent|orchestrate ... --detach`: a handle, resolved through status before any outcome (D5)."""

    run_id: str
    pid: int | None
    status: str
    terminal: bool
    outcome: Outcome | None
    log: str


class StatusData(Lifecycle):
    """`li job status RUN_ID` (D4, D6, D7, D9): derivations, advisory liveness, read-derived fields."""

    alive: bool | None
    pid: int | None
    finished_at: str | None
    age_seconds: float
    delivery: DeliveryAvailability
    manifest: ManifestAvailability
    usage: UsageAvailability


class OutputData(Wire):
    """`li job output RUN_ID`: every read-derived field under the availability wrapper (D7)."""

    run_id: str
    console: ConsoleAvailability
    artifacts: ArtifactsAvailability
    manifest: ManifestAvailability


class RowError(Wire):
    """Why one id or row could not be observed; the other ids and rows are unaffected.

    `kind` is open: in use are not_found, invalid_input, record_unusable (list and wait) and
    not_observed (a wait interrupted before its first look at the id).
    """

    kind: str
    message: str
    reason_code: str | None = None


class Row(Wire):
    """A list row or wait entry: the lifecycle fields, all null when `error` says it could not be read."""

    run_id: str
    kind: str | None
    label: str | None
    status: str | None
    terminal: bool | None
    outcome: Outcome | None
    reason_code: str | None
    possibly_orphaned: bool | None
    spawn_state: SpawnState | None
    submitted_at: str | None
    error: RowError | None


class ListData(Wire):
    """`li job list`: newest first, bounded by `limit`, and says when truncated (D6)."""

    runs: list[Row]
    truncated: bool
    limit: int


class KillData(Wire):
    """`li job kill RUN_ID`: what was done, never process death or terminality (D6)."""

    run_id: str
    action: KillAction
    status: str
    terminal: bool
    outcome: Outcome | None


class WaitData(Wire):
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


class DoctorCheck(Wire):
    """One finding; `severity` is how much it matters when `ok` is false, `fix` what to do."""

    name: str
    ok: bool
    severity: Literal["error", "warning", "info"]
    detail: str | None
    fix: str | None


class DoctorData(Wire):
    """`li doctor`: what a run needs here, check by check; `ok` is false when an error-check fails."""

    ok: bool
    checks: list[DoctorCheck]


class PruneKept(Wire):
    run_id: str
    reason: str
    detail: str | None


class PruneData(Wire):
    """`li job prune`: only runs that recorded an end are ever removed; every kept run says why."""

    removed: list[str]
    kept: list[PruneKept]
    dry_run: bool


class CompletionData(Wire):
    """`li completion bash|zsh|fish`."""

    shell: Literal["bash", "zsh", "fish"]
    script: str


# The verb table of the published schema: file stem -> data model.
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
    "completion": CompletionData,
}

SCHEMA_BASE = "https://lionrun.invalid/contract/v1/"


def schema_of(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The JSON Schema of one model, with a stable `$id` and title."""
    schema = model.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE}{name}.json", **schema}


def all_schemas() -> dict[str, dict[str, Any]]:
    """Every published schema by file stem: the envelope and one per verb's data."""
    schemas = {"envelope": schema_of(Envelope, "envelope")}
    schemas.update({name: schema_of(model, name) for name, model in VERBS.items()})
    return schemas


def render(schema: dict[str, Any]) -> str:
    """The committed text of one schema: stable key order, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
