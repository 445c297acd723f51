"""Ports: what the use cases need from the world, as `typing.Protocol`s named by role."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NewType, Protocol

from msgspec import Struct
from msgspec import field as msgspec_field

from lionrun.domain.availability import Availability, ConsoleAvailability
from lionrun.domain.evidence import HostFacts, ProcessObservation, SessionMember
from lionrun.domain.run import Incarnation, Run

if TYPE_CHECKING:
    from lionrun.domain.queue import QueueSettings
    from lionrun.domain.slurm import SlurmJob  # only the Slurm paths load it


Stop = Literal["terminate", "kill"]
"""What a use case asks of processes it stops: `terminate` lets them end on their own terms (the
grace a kill gives), `kill` ends them now. The signaller alone knows the signals (SIGTERM, SIGKILL)."""

Held = NewType("Held", int)
"""Something an adapter holds open for this process (the run's console sink, a queued run's place in
its queue's line, its slot, a leg's script): the adapter makes it and lets go of it; a use case only
hands it on, to a process it starts that then holds it too. A NewType: nothing made up passes for one."""


class RunNotFound(Exception):
    """No run folder with this id exists."""


class StoreBusy(Exception):
    """The run's lock could not be taken in time; nothing was written."""


class StoreRefused(Exception):
    """The store refused a write (read-only, full disk, permissions); nothing was published."""


class NotStoreOwner(StoreRefused):
    """The store is another user's: li acts on a store only as its owner, so a reader
    whose effective uid is not the owner's (root included) only reads: nothing is written, no
    end is reaped, no notice is delivered. `owner` and `euid` name both sides."""

    def __init__(self, home: str, owner: int, euid: int) -> None:
        super().__init__(f"the store {home} belongs to uid {owner}, not to this uid {euid}: li acts on a "
                         f"store only as its owner, so nothing is written")
        self.owner = owner
        self.euid = euid


class Confiner(Protocol):
    """Hides the store from the work: how the legs of a run are started so that they
    cannot reach `$LI_HOME` but their own artifacts folder (`adapters/confinement.py`)."""

    def refusal(self) -> str | None:
        """None when the kernel confines a work here; else why not, in one line."""
        ...

    def pids_refusal(self) -> str | None:
        """None when a confined work runs in a PID namespace of its own here; else why
        not, in one line (its processes then share the host's, as before)."""
        ...

    def engage(self, artifacts: str | None, run_id: str, protect: Sequence[str] = ()) -> Mapping[str, str]:
        """From now on every leg this process starts is confined, and what the legs ask of the
        store through `li` is answered for them (`adapters/broker.py`); returns what a lean
        supervisor needs to do the same in this process's place (it imports nothing of lionrun).
        `protect`: paths outside the store the legs see read-only (a folder's ends with `/`; one
        missing is made first), the person's repository's shared config, hooks and info."""
        ...


class StoreUnavailable(StoreRefused):
    """The store did not answer: its server is down or restarting, the connection dropped, a
    statement or lock timeout ran out. Nothing was published, and a later attempt may succeed
    (a plain StoreRefused will not). A StoreRefused, so every caller that answers `unavailable`
    on a refusal keeps doing so; only a writer that can wait (the runner) retries it."""


class RunRecords(Protocol):
    """Durable runs, role one: the records. `record.json` (or its row) is the lifecycle authority.

    Every use case that reads or changes a run's lifecycle depends on this port; none of its
    methods says where a run lives.
    """

    def reserve(self, now: datetime) -> str:
        """Atomically allocate a fresh run id (and the place its files will live)."""
        ...

    def discard(self, run_id: str) -> None:
        """Remove a reserved run that never had a record (validation undo)."""
        ...

    def create(self, run: Run) -> Run:
        """Write the first record of a reserved run (generation 1)."""
        ...

    def read(self, run_id: str) -> Run:
        """Read the record without a lock; raises RunNotFound or RecordUnusable."""
        ...

    def update(
        self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0
    ) -> Run | None:
        """Read-modify-write under the run's lock; `change` returning None writes nothing.

        Raises StoreBusy when the lock cannot be had, StoreRefused when the write fails
        (StoreUnavailable when the store did not answer and a later attempt may succeed).
        """
        ...

    def run_ids(self) -> Iterator[str]:
        """Every run id, newest first (ids sort by submission time)."""
        ...

    def remove(self, run_id: str) -> None:
        """Take a run out of the store atomically (readers see it whole or RunNotFound); a missing run is a no-op."""
        ...

    def sweep(self) -> None:
        """Finish the removals an interrupted remover left behind (never a run a reader can see)."""
        ...


class WorkFolderRefused(StoreRefused):
    """The work's artifacts folder could not be made; `where` is still what the work is told to use."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


class IdempotencyKeys(Protocol):
    """The runs submitted under an idempotency key, one run per key for as long as that
    run is in the store. Submits of one key take turns (`holding_key`: a lock the kernel or the
    server lets go of when its holder dies); the binding itself is unique per key (an O_EXCL link
    under the store, a PostgreSQL primary key), so two submits can never both bind one key."""

    def holding_key(self, key: str) -> AbstractContextManager[None]:
        """Hold the key's turn: no other submit of this key looks at or binds it meanwhile
        (StoreBusy when the turn does not come within the store's bound)."""
        ...

    def run_of_key(self, key: str) -> tuple[str, str] | None:
        """(run id, request fingerprint) the key names while that run is in the store; else None."""
        ...

    def bind_key(self, key: str, run_id: str, fingerprint: str) -> None:
        """Name the reserved `run_id` by `key`; KeyTaken when the key names a run still in the store."""
        ...


class KeyTaken(Exception):
    """The idempotency key already names a run that is in the store (`run_id`)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"the key names run {run_id}")
        self.run_id = run_id


class RunFiles(Protocol):
    """Durable runs, role two: the files beside a record, every byte of them untrusted.

    Small run files (instruction, request, manifest, a leg's answer under `artifacts/`), the
    console and the artifacts listing. Nothing here hands out where a file lives for the caller
    to open: the one folder given out is the one the work itself writes into.
    """

    def write_text(self, run_id: str, name: str, text: str) -> None:
        """Write a run file (instruction, request, manifest, `artifacts/<answer>`) atomically."""
        ...

    def read_text(self, run_id: str, name: str) -> str:
        """Read a run file; raises OSError when it is missing or unreadable."""
        ...

    def work_artifacts_dir(self, run_id: str) -> str:
        """Make the run's artifacts folder (private) and return it for the work to write into.

        The only path this port gives out: the child process needs a directory
        (`LI_ARTIFACTS_DIR`). Raises WorkFolderRefused (naming the folder) when it cannot be made.
        """
        ...

    def seal_artifacts(self, run_id: str) -> None:
        """The work has ended: make what it left in its artifacts folder part of the store.

        Nothing to do where that folder is the store's own (the filesystem and memory stores); a
        shared store copies the confined listing and the files' bytes in. Raises OSError or
        StoreRefused when that cannot be done (the runner records the artifacts unavailable).
        """
        ...

    def console_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """What appends to the run's console, for the child's stdout and stderr."""
        ...

    def li_log_sink(self, run_id: str) -> AbstractContextManager[Held]:
        """What appends to the run's li log, for the runner's stderr: li's own lines (`li runner: …`)
        kept apart from the console, so that the console is exactly what the work wrote."""
        ...

    def forward_console(self, run_id: str) -> AbstractContextManager[None]:
        """In the runner, around the work: move what the console and li log sinks get into the store
        as it comes. Nothing to do where the sinks are the store's own files (filesystem, memory)."""
        ...

    def console_location(self, run_id: str) -> str:
        """Where a person finds the console, as the submit handle's `log` shows it (never opened by callers)."""
        ...

    def console_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        """Up to `limit` console bytes from `offset` and the console's size (the follow loop's read).

        Raises OSError when the console is missing, not a regular file or unreadable.
        """
        ...

    def console(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        """The last `tail_chars` characters of the console log, read from the end."""
        ...

    def li_log_bytes(self, run_id: str, offset: int, limit: int) -> tuple[bytes, int]:
        """Up to `limit` bytes of the li log from `offset` and its size (`console_bytes`' twin).

        Raises OSError when the li log is missing (a run from before it existed, or whose runner
        has not started yet), not a regular file or unreadable.
        """
        ...

    def li_log(self, run_id: str, tail_chars: int) -> ConsoleAvailability:
        """The last `tail_chars` characters of the li log, read from the end (`console`'s twin)."""
        ...

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        """The artifacts listing: every entry under artifacts/, links never followed.

        Each entry has name, path, type (file, symlink, fifo, ...), size, link and sha256 (a
        digest only for regular files).
        """
        ...

    def manifest(self, run_id: str) -> Availability[dict[str, Any]]:
        """The run manifest written by the runner before its end."""
        ...


class StoreAdmin(Protocol):
    """The store as a whole: what it is, and making it ready (`li store init`, `li doctor`)."""

    def describe(self) -> tuple[str, str]:
        """(kind, location): `filesystem` and its folder, or `postgresql` and its URL without a password."""
        ...

    def init_schema(self) -> int | None:
        """Make the store ready (idempotent); the schema version it now holds, None where there is none.

        Raises StoreRefused when it cannot be made ready.
        """
        ...

    def health(self) -> list[str]:
        """What stops this store being used for runs (empty when nothing does); never raises."""
        ...


class ImportedArtifact(Struct, frozen=True):
    """One artifacts-listing entry as the store shows it, with the bytes to keep (None: listed only)."""

    entry: Mapping[str, Any]
    body: bytes | None


class ArtifactBytes(Protocol):
    """An artifact's bytes from a store that keeps them as files (the source of `li store copy`)."""

    def artifact_bytes(self, run_id: str, name: str, limit: int) -> bytes:
        """The regular file `name` (as the listing names it) under the run's artifacts, at most
        `limit` bytes, confined (no link followed, no FIFO opened). Raises OSError otherwise."""
        ...


class RunImport(Protocol):
    """A store that takes in one whole run of another store (`li store copy`)."""

    artifact_body_max: int  # an artifact larger than this is listed with `available: false` (too_large)

    def import_run(self, run: Run, files: Mapping[str, str], console: Iterable[bytes] | None,
                   artifacts: Sequence[ImportedArtifact] | None, li_log: Iterable[bytes] | None = None) -> bool:
        """Write the record as is (generation and host kept), its run files, console and li log
        (their bytes in order, a chunk at a time) and artifacts listing in one transaction: all of
        it or nothing (an exception from `console` or `li_log` undoes it and passes through).
        False when the store already holds the run.

        Raises StoreRefused when the store cannot take it.
        """
        ...


class ProcessProber(Protocol):
    """Advisory liveness: what a pid looks like now, the processes of a session, and this host."""

    def observe(self, pid: int) -> ProcessObservation:
        ...

    def session(self, sid: int, run_id: str | None = None,
                confined: bool = False) -> tuple[SessionMember, ...] | None:
        """Every process whose session id is `sid`, plus whatever holds pid `sid`; None if unreadable.
        With `run_id`, also every process that left the session but is still that run's (its
        runner's descendant, or carrying its LI_RUN_ID tag), marked `tagged`. `confined`: what
        the run's broker started for its work is another run's and not counted, as every stop
        spares it.

        A scan of the whole process table: asked for only when a run's leader is gone.
        """
        ...

    def host(self) -> HostFacts:
        ...


class Signaller(Protocol):
    """Stops a fresh child's group, or the verified members of a run's session (`Stop`: how)."""

    def signal_group(self, pgid: int, stop: Stop) -> bool:
        """Stop a group this process just started; whether anything was there to signal."""
        ...

    def signal_session(self, run_id: str, incarnation: Incarnation, stop: Stop,
                       spare_leader: bool = False, own_pids: bool = False,
                       confined: bool = False) -> tuple[int, ...]:
        """Signal every live member of run `run_id`'s session (but its leader, the runner, when
        `spare_leader`); the pids signalled.

        Each process is pinned first and re-verified as a member (`domain.evidence.is_member`)
        before the signal, so a pid reused meanwhile is never signalled; members forked during
        the sweep are signalled too. The record naming the session is untrusted (the work can
        rewrite it): a process is signalled only when the kernel vouches that it is this run's,
        i.e. it (or the session's live leader) carries `LI_RUN_ID=<run_id>` in its environment.
        """
        ...


class SpawnRequest(Struct, frozen=True):
    argv: Sequence[str]
    cwd: str
    env: Mapping[str, str]
    log_path: str  # opened for appending when `console` is not given (the notice sender's /dev/null)
    console: Held | None = None  # the console sink the store opened, for the child's output
    keeps: Sequence[Held] = ()  # what the child keeps open (a queued run's place in its queue's line)


class SpawnFailed(Exception):
    """The child could not be started (exec, cwd, descriptor limits)."""


class Spawner(Protocol):
    """Starts a fully detached child (own session, stdin closed) and returns its pid."""

    def spawn(self, request: SpawnRequest) -> int:
        ...


class BatchRequest(Struct, frozen=True):
    """A runner to start as a batch job: its argv (run without a shell), where, with what environment."""

    run_id: str  # the job's name
    argv: Sequence[str]
    cwd: str
    env: Mapping[str, str]
    partition: str | None = None
    options: Sequence[str] = ()  # the person's own scheduler options (validated: none li sets)


class EngineHandle(Struct, frozen=True):
    """What an executor says it started: a local pid, or a batch job."""

    executor: str  # `local` or `slurm`
    job_id: str | None = None
    cluster: str | None = None
    pid: int | None = None


class Cluster(Protocol):
    """A batch scheduler (Slurm): submit a runner as a job, say what it knows of a job, cancel one.

    Its answers are evidence about a run, never its outcome. Every call is bounded in time; a
    cluster whose tools are missing or do not answer is `unavailable`, never an exception a
    reader sees (`jobs` answers None then).
    """

    def submit(self, request: BatchRequest) -> EngineHandle:
        """Submit the job (never requeued); raises SpawnFailed when the scheduler did not accept it."""
        ...

    def jobs(self, job_id: str, timeout: float | None = None) -> Sequence[SlurmJob] | None:
        """Every row the scheduler has for this job id (none when it does not know it); None when it
        could not be asked within `timeout` seconds (None: the adapter's own read bound)."""
        ...

    def all_jobs(self, timeout: float | None = None) -> Mapping[str, Sequence[SlurmJob]] | None:
        """Every job the scheduler knows now, by job id, in one question; None when it could not be
        asked within `timeout` seconds (None: the adapter's own read bound)."""
        ...

    def cancel(self, job_id: str, terminate: bool) -> bool:
        """`terminate`: SIGTERM to the job's every process (`scancel --signal=TERM --full`); else end the
        job (plain `scancel`, which also removes a queued job). Whether the scheduler accepted it."""
        ...

    def name(self) -> str | None:
        """The cluster's name (`ClusterName`), None when it cannot be read."""
        ...

    def health(self) -> list[str]:
        """What stops runs being submitted to this cluster (empty when nothing does); never raises."""
        ...


class Clock(Protocol):
    """Wall time for records, monotonic time and sleep for windows."""

    def now(self) -> datetime:
        ...

    def monotonic(self) -> float:
        ...

    def sleep(self, seconds: float) -> None:
        ...


class RunWatch(Protocol):
    """Changes to the records of the runs a `RunChanges.watch` was given, noticed since it began."""

    def wait(self, timeout: float) -> bool:
        """Block until one of the watched runs' records may have changed, or `timeout` seconds pass.

        True when woken by a (possible) change, False when the time ran out. A spurious True is
        allowed (the caller only observes again); a missed change is not, so a watch that cannot
        tell sleeps the whole timeout and leaves the change to the next poll.
        """
        ...

    def close(self) -> None:
        """Stop watching; idempotent."""
        ...


class RunChanges(Protocol):
    """Wake-ups when run records change, so a wait learns of an end without waiting for its next
    poll. Store-neutral: run ids in, never paths (inotify on the run folders, LISTEN/NOTIFY, ...)."""

    def watch(self, run_ids: Sequence[str]) -> RunWatch:
        """Start noticing changes to these runs' records; called before they are observed, so a
        change made between an observation and the next `wait` still wakes it. Ids that name no
        run (or are not ids) are ignored."""
        ...


class NoticeResult(Struct, frozen=True):
    ok: bool
    exit_code: int | None = None
    error: str | None = None
    failure_class: str | None = None


class Notifier(Protocol):
    """Delivers a terminal notice: argv (already rendered) with the JSON payload on stdin."""

    def deliver(self, argv: Sequence[str], payload: Mapping[str, Any]) -> NoticeResult:
        ...


class ProviderResult(Struct):
    exit_code: int
    answer: str | None = None
    is_error: bool = False
    timed_out: bool = False
    usage: dict[str, Any] = msgspec_field(default_factory=dict)
    reason_code: str | None = None  # why it failed, as its CLI's stream and exit say (domain.transcript)
    retry_at: str | None = None  # ISO-8601 UTC: when the vendor said its rate limit resets
    retry_after: float | None = None  # seconds from the end, when the vendor named only a delay
    session_id: str | None = None  # the agent CLI's own session / thread id, from its stream


class LegLaunch(Struct, frozen=True):
    """What starting one leg's process takes: its argv, the text for its stdin (else /dev/null)
    and what it keeps open as its argv names it (the launcher's to let go of once it started)."""

    argv: tuple[str, ...]
    stdin_text: str | None = None
    keeps: tuple[Held, ...] = ()


class LaunchableProvider(Protocol):
    """A provider whose leg another process can start and whose result it can conclude from the
    leg's stdout lines afterwards (the lean supervisor's path; `run` does both in-process)."""

    name: str

    def launch(self, instruction: str, model: str | None, env: Mapping[str, str],
               extra: Sequence[str] = ()) -> LegLaunch:
        ...

    def conclude(self, lines: Sequence[str], exit_code: int, timed_out: bool, idle: bool = False) -> ProviderResult:
        """`idle`: the idle watchdog stopped it (reason `idle_timeout`)."""
        ...


class Provider(Protocol):
    """Does the work of one agent leg: runs a CLI (or shell) and returns its answer."""

    name: str

    def available(self) -> bool:
        """True when the provider's executable can be found."""
        ...

    def run(
        self, instruction: str, model: str | None, cwd: str, env: Mapping[str, str],
        console: Any, timeout: float | None, extra: Sequence[str] = (), idle_timeout: float | None = None,
    ) -> ProviderResult:
        """Run the leg; `extra` is argv the CLI gets after its own flags (permission flag, provider args)."""
        ...


# --- queues -------------------------------------------------------------------------


class QueueBroken(StoreRefused):
    """A queue's settings exist but cannot be used (malformed, unreadable): never read as none."""

    def __init__(self, queue: str, detail: str) -> None:
        super().__init__(f"the queue {queue}: {detail}")
        self.queue = queue
        self.detail = detail


class Waiting(Struct, frozen=True):
    """A run's place in its queue's line: its ticket, and what holds the place (a lock the kernel
    lets go of with its last holder; None for a store whose place is held elsewhere, e.g. a
    database session)."""

    queue: str
    ticket: int
    place: Held | None


class RunQueues(Protocol):
    """Queues with parallel limits: their settings, the waiting line, the slots. A place in line
    and a slot are held by something the kernel (or the database) lets go of when the holder
    dies, never by a count a dead runner leaves behind."""

    def settings(self, name: str) -> QueueSettings | None:
        """The queue's settings; None when the store keeps none (no limit, never paused)."""
        ...

    def change(self, name: str, change: Callable[[QueueSettings], QueueSettings]) -> QueueSettings:
        """Apply `change` to the queue's settings under its lock (a fresh queue's when none)."""
        ...

    def names(self) -> list[str]:
        """Every queue the store keeps settings of."""
        ...

    def enqueue(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        """Take a ticket and a place in line for `run_id` (the submitter, before it starts the
        runner); a higher `priority` is before every lower one in line."""
        ...

    def places(self, name: str) -> list[tuple[int, str, int]]:
        """The line's (ticket, run id, priority), in the order it starts."""
        ...

    def claim(self, name: str, run_id: str, priority: int = 0) -> Waiting:
        """The runner takes its run's place in line (a store whose submitter cannot hand it over),
        or a new one at the end when the run has none."""
        ...

    def let_go(self, waiting: Waiting) -> None:
        """This process's hold on a place let go (the runner it started inherited its own)."""
        ...

    def line(self, name: str) -> list[tuple[int, str]]:
        """(ticket, run id) of every entry in line, first come first (a gone waiter may remain)."""
        ...

    def waiting(self, name: str) -> int:
        """How many live waiters the line holds."""
        ...

    def first_in_line(self, name: str, run_id: str) -> bool:
        """Whether no live waiter is before `run_id` (gone ones are taken out on the way)."""
        ...

    def leave(self, name: str, run_id: str, waiting: Held | None) -> None:
        """Take `run_id` out of the line and let go of its place."""
        ...

    def running(self, name: str) -> int:
        """How many slots of the queue are held now."""
        ...

    def take_slot(self, name: str, limit: int | None) -> Held | None:
        """A slot held for this process (what holds it), when fewer than `limit` are held; else None."""
# --- git worktrees ---------------------------------------------------------------------


class GitRefused(Exception):
    """git refused or failed: `reason` is one line a person can act on."""

    def __init__(self, reason: str, conflict: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.conflict = conflict


class Repository(Struct, frozen=True):
    """A git repository a path is in: its top level (the worktree holding the path) and the common
    git dir every worktree of it shares."""

    toplevel: str
    common_dir: str


class Committed(Struct, frozen=True):
    """What committing a worktree's leftovers gave: the commit (None when nothing was left), the
    numstat of it against the base and the patch (binary-safe, for `git apply`)."""

    commit: str | None
    numstat: str
    patch: str


class GitWorktrees(Protocol):
    """The git a run's worktree needs: every write serialised per repository, so concurrent runs
    never race git's own locks."""

    def locate(self, path: str) -> Repository | None:
        """The repository `path` is inside (None when it is in none)."""
        ...

    def resolve(self, repository: str, ref: str) -> str:
        """The commit `ref` names in `repository` (GitRefused when none)."""
        ...

    def add(self, repository: str, path: str, branch: str, base: str) -> None:
        """`git worktree add -b BRANCH PATH BASE`."""
        ...

    def head(self, worktree: str) -> str:
        """The commit a worktree's HEAD is at."""
        ...

    def copy_included(self, repository: str, worktree: str) -> list[str]:
        """Copy into the worktree the ignored files `.worktreeinclude` names; the paths copied."""
        ...

    def run_setup(self, worktree: str, command: str, env: Mapping[str, str], console: Any,
                  stopped: Callable[[], bool] | None = None, confined: bool = True) -> int:
        """Run the setup command with `sh -c` in the worktree, its output to `console`; its exit status.
        `stopped` is asked while it runs: once it says so (a kill, the run's time run out), the setup
        is stopped. `confined`: with the store hidden from it where the kernel can; False
        only for a run whose work is not confined either (`--confine off`)."""
        ...

    def ensure_own(self, worktree: str, repository: str, branch: str) -> None:
        """GitRefused(why) unless `worktree` is still the one li made for `repository` on `branch`
        (its real path, its git dir, its branch); nothing is done to it."""
        ...

    def commit_all(self, worktree: str, base: str, message: str) -> Committed:
        """Commit everything the work left (author li) and diff the branch against `base`."""
        ...

    def diff(self, worktree_or_repo: str, base: str, commit: str) -> Committed:
        """The numstat and patch of `commit` against `base`."""
        ...

    def status(self, worktree: str) -> str:
        """`git status --porcelain` of a worktree (what is not yet committed)."""
        ...

    def apply(self, target: str, patch: str) -> None:
        """Apply a patch to the working tree at `target` without committing; GitRefused(conflict=True)
        when it does not apply or touches a file with uncommitted changes there."""
        ...

    def remove(self, repository: str, worktree: str, branch: str | None) -> None:
        """`git worktree remove` (and `git branch -D BRANCH` when given)."""
        ...

    def listed(self, repository: str) -> list[str]:
        """The paths of every worktree of `repository` (`git worktree list`)."""
        ...

    def shared_fingerprint(self, common_dir: str) -> dict[str, str]:
        """A fingerprint of what every worktree of the repository shares: its config,
        hooks and info (domain.worktree: FINGERPRINT_* says its form and bounds); links are never
        followed. A path that cannot be read is fingerprinted as such, never an error."""
        ...
