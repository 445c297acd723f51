"""The closed vocabularies, defined once: the domain decides with them and the wire model publishes them.

A vocabulary the contract calls closed (outcome, spawn state, error kind, kill action, severity)
is a `Literal` on the wire too; one it calls open (status, reason codes, a row's error kind) is a
plain string on the wire, so a later value is no contract break, while the domain still names
the values it knows here.
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
    "queued",  # issue 29: the runner is alive and waits for its queue's slot (non-terminal)
]
STATUSES_AT_V1: Final[tuple[Status, ...]] = get_args(Status)
QUEUED: Final = "queued"  # a run whose runner is alive and waits for its queue's slot (issue 29)

# Issue 25: closed. What the work of a run was started under: the store out of its reach, or not.
Confinement = Literal["store_hidden", "none"]
CONFINEMENTS: Final[tuple[Confinement, ...]] = get_args(Confinement)
STORE_HIDDEN: Final = "store_hidden"
UNCONFINED: Final = "none"

# Issue 36: closed. Where the work's processes ran: a PID namespace of their own (the run's end is
# the namespace's end; the work cannot reach its supervisor by pid), or the host's, shared.
Processes = Literal["pid_namespace", "shared"]
PROCESSES: Final[tuple[Processes, ...]] = get_args(Processes)
PID_NAMESPACE: Final = "pid_namespace"
SHARED_PIDS: Final = "shared"

# D5: closed. The recorded spawn phase; a record from before the field existed has none.
SpawnState = Literal["preparing", "started", "failed"]
SPAWN_STATES: Final[tuple[SpawnState, ...]] = get_args(SpawnState)
PREPARING: Final = "preparing"
STARTED: Final = "started"
FAILED: Final = "failed"

# D3: closed. A new kind costs a contract version.
ErrorKindName = Literal["not_found", "invalid_input", "conflict", "unavailable", "internal"]

# D6: closed. What `li job kill` did. `requested` is said only on a shared store, of another
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

# Closed: what an agent CLI may do (li agent --permission-mode); each maps to its CLI's own flag.
PermissionMode = Literal["read-only", "edits", "full"]
PERMISSION_MODES: Final[tuple[PermissionMode, ...]] = get_args(PermissionMode)
