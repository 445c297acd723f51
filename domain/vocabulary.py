"""The vocabularies, defined once: the domain decides with them and the wire model publishes them.

Exactly two are closed on the wire (docs/wire-contract.md "Vocabularies"): `outcome`
and the envelope's `error.kind` — a `Literal` there, a new value costs a contract version.
Every other one is open: a plain string on the wire whose schema lists the values in use as
`examples` (domain.serialise.Open), so a later value is no contract break, while the domain
still names (and, for its inputs, refuses outside) the values it knows here.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# D4: closed. The only four outcomes a terminal answer can carry.
Outcome = Literal["succeeded", "failed", "cancelled", "indeterminate"]
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)

# D4: open on the wire; the statuses this version produces.
Status = Literal[
    "running", "completed", "completed_empty", "failed", "timed_out",
    "aborted", "cancelled", "killed", "exited", "unknown",
    "queued",  # the runner is alive and waits for its queue's slot (non-terminal)
    "waiting",  # the run waits for the runs it was submitted --after (non-terminal)
    "waiting_approval",  # the agent waits for a person to answer a permission request (non-terminal)
]
STATUSES_AT_V1: Final[tuple[Status, ...]] = get_args(Status)
QUEUED: Final = "queued"  # a run whose runner is alive and waits for its queue's slot
WAITING: Final = "waiting"  # a run that waits for other runs to end (domain/dependencies.py)

# Closed. The end a run submitted `--after RUN:CONDITION` waits for (domain/dependencies.py).
DependencyCondition = Literal["ok", "fail", "any"]
CONDITIONS: Final[tuple[DependencyCondition, ...]] = get_args(DependencyCondition)

# Open on the wire. What the work of a run was started under: the store out of its reach, or not.
Confinement = Literal["store_hidden", "none"]
CONFINEMENTS: Final[tuple[Confinement, ...]] = get_args(Confinement)
STORE_HIDDEN: Final = "store_hidden"
UNCONFINED: Final = "none"

# Open on the wire. Where the work's processes ran: a PID namespace of their own (the run's end is
# the namespace's end; the work cannot reach its supervisor by pid), or the host's, shared.
Processes = Literal["pid_namespace", "shared"]
PROCESSES: Final[tuple[Processes, ...]] = get_args(Processes)
PID_NAMESPACE: Final = "pid_namespace"
SHARED_PIDS: Final = "shared"

# D5: open on the wire (a record li never wrote is read as none). The recorded spawn phase; a record from before the field existed has none.
SpawnState = Literal["preparing", "started", "failed"]
SPAWN_STATES: Final[tuple[SpawnState, ...]] = get_args(SpawnState)
PREPARING: Final = "preparing"
STARTED: Final = "started"
FAILED: Final = "failed"

# D3: closed. A new kind costs a contract version.
ErrorKindName = Literal["not_found", "invalid_input", "conflict", "unavailable", "internal"]

# D6: open on the wire (`requested` came after v1). What `li job kill` did. `requested` is said only on a shared store, of another
# host's run: the request is recorded and that host's runner acts on it; nothing was signalled here.
KillAction = Literal["signalled", "requested", "already_terminal", "no_process"]
SIGNALLED: Final = "signalled"
REQUESTED: Final = "requested"
ALREADY_TERMINAL: Final = "already_terminal"
NO_PROCESS: Final = "no_process"

# Open on the wire: why one id of a list or wait could not be observed.
RowErrorKind = Literal["not_found", "invalid_input", "record_unusable", "not_observed"]
NOT_FOUND: Final = "not_found"
INVALID_INPUT: Final = "invalid_input"
RECORD_UNUSABLE: Final = "record_unusable"  # a record that exists but cannot be used
NOT_OBSERVED: Final = "not_observed"

# Doctor: how much a failed check matters.
Severity = Literal["error", "warning", "info"]

# `li store`: where runs are kept — this host's folder, or one PostgreSQL database for many hosts.
StoreKind = Literal["filesystem", "postgresql"]

# `li completion`.
Shell = Literal["bash", "zsh", "fish"]

# Closed as input (li refuses others), open on the wire (a later li may record another): what an agent CLI may do (li agent --permission-mode); each maps to its CLI's own flag.
# `ask`: each tool use the CLI would ask about is put to a person through li (Claude Code only).
PermissionMode = Literal["read-only", "edits", "full", "ask"]
PERMISSION_MODES: Final[tuple[PermissionMode, ...]] = get_args(PermissionMode)
KILL_ACTIONS: Final[tuple[KillAction, ...]] = get_args(KillAction)
SEVERITIES: Final[tuple[Severity, ...]] = get_args(Severity)
STORE_KINDS: Final[tuple[StoreKind, ...]] = get_args(StoreKind)
SHELLS: Final[tuple[Shell, ...]] = get_args(Shell)
ROW_ERROR_KINDS: Final[tuple[RowErrorKind, ...]] = get_args(RowErrorKind)

# The values in use of the other open vocabularies, published as the schema's `examples`.
# Every `status` li shows: the recorded ones, and `preparing` (a record before its spawn).
STATUSES_SHOWN: Final[tuple[str, ...]] = (*STATUSES_AT_V1, PREPARING)
RUN_KINDS: Final = ("agent", "flow", "fanout")
# A terminal notice's failed delivery (domain/notify.py, adapters/notifier.py).
FailureClass = Literal["command_not_found", "permission_denied", "timeout", "nonzero_exit", "signalled", "unknown"]
FAILURE_CLASSES: Final[tuple[FailureClass, ...]] = get_args(FailureClass)
# Why `li job prune` / `li job rm` kept a run (application/prune.py names each).
KEPT_REASONS: Final = ("not_ended", "ended_recently", "notice_in_flight", "record_unusable", "no_record",
                       "busy", "remove_failed", "worktree_kept")
# One entry of a run's artifacts listing (adapters/safe_open.py).
ARTIFACT_TYPES: Final = ("file", "symlink", "fifo", "socket", "device", "hardlink", "folder", "other")
# Why a queue starts no run.
PAUSED_REASONS: Final = ("paused", "provider_rate_limited")
# Why an end a reader found due was not recorded.
REAP_WITHHELD: Final = ("not_store_owner",)
