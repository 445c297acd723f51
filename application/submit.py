"""Submit (D5): validate, reserve an id, write the instruction and a `preparing` record, spawn, attach."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from lionrun.application.busy import retry_busy
from lionrun.application.ports import (
    BatchRequest,
    Clock,
    Cluster,
    Held,
    IdempotencyKeys,
    KeyTaken,
    ProcessProber,
    Provider,
    RunFiles,
    RunNotFound,
    RunQueues,
    RunRecords,
    Signaller,
    Spawner,
    SpawnFailed,
    SpawnRequest,
    StoreBusy,
    StoreRefused,
    Waiting,
)
from lionrun.domain.budget import Spend, budget_value
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.dependencies import Order
from lionrun.domain.idempotency import fingerprint
from lionrun.domain.lifecycle import classify
from lionrun.domain.queue import DEFAULT_QUEUE, QUEUE_FD, QUEUED
from lionrun.domain.request import RunRequest, check_prompt, invalid, refuse_cwd_in_store
from lionrun.domain.run import (
    FAILED,
    PREPARING,
    RUN_TAG,
    SLURM,
    STARTED,
    Engine,
    Incarnation,
    Run,
    command_summary,
    is_run_id,
    iso,
)
from lionrun.domain.vocabulary import WAITING
from lionrun.domain.wire import SubmitData

SPAWN_FAILED = "spawn_failed"
SPAWN_ERROR = "spawn_error"
ATTACH_FAILED = "attach_failed"


Handle = SubmitData  # what submit returns: a handle to resolve through status reads, never a result (D5)


# Seconds the submit may wait for Slurm to say the new job's submit time (its identity): longer than
# a reader's bound, since without it the run's end could never be read from Slurm.
SUBMIT_TIME_READ = 20.0

class SubmitService:
    """Turns a validated request into a detached run whose spawn phase is always recorded."""

    def __init__(self, store: RunRecords, files: RunFiles, spawner: Spawner, prober: ProcessProber,
                 signaller: Signaller, clock: Clock, providers: Mapping[str, Provider],
                 runner_command: Sequence[str], env: Mapping[str, str],
                 cluster: Callable[[], Cluster] | None = None,
                 queues: Callable[[], RunQueues | None] | None = None,
                 keys: IdempotencyKeys | None = None,
                 home: str | None = None, real_path: Callable[[str], str] | None = None) -> None:
        self.store = store
        self.files = files
        self.spawner = spawner
        self.prober = prober
        self.signaller = signaller
        self.clock = clock
        self.providers = providers
        self.runner_command = list(runner_command)
        self.env = dict(env)
        self.cluster = cluster  # built on first use: only a Slurm submit needs it
        self.queues = queues  # built on first use; None, or one that gives None: no queues
        self.keys = keys  # the store's idempotency keys (None: a store that keeps none)
        self.home = home  # the store's folder: no run works at or below it; None: not checked
        self.real_path = real_path  # a path with every link resolved (os.path.realpath)

    def validate(self, request: RunRequest) -> None:
        """Everything that can be refused is refused here, before anything touches disk."""
        check_prompt(request.instruction, "instruction")
        if not request.legs:
            raise invalid("the run has no work to do")
        if self.home is not None and self.real_path is not None:
            refuse_cwd_in_store(self.real_path(request.cwd), self.real_path(self.home))
        if request.executor == SLURM:
            problems = ["no Slurm adapter is configured"] if self.cluster is None else self.cluster().health()
            if problems:
                raise ContractError(ErrorKind.UNAVAILABLE, f"the Slurm executor cannot be used: {problems[0]}",
                                    {"executor": SLURM, "reason_code": "executor_unavailable"})
        if request.budget is not None:
            from lionrun.domain.budget import refusal

            refused = refusal(request.budget, request.providers)
            if refused is not None:
                raise refused
        for name in sorted(request.providers):
            provider = self.providers.get(name)
            if provider is None:
                raise invalid(f"unknown model provider {name!r}", provider=name)
            if not provider.available():
                raise ContractError(ErrorKind.UNAVAILABLE,
                                    f"the {name} executable is not installed or not on PATH",
                                    {"provider": name})

    def submit(self, request: RunRequest, order: Order | None = None, idempotency_key: str | None = None) -> Handle:
        """Validate, allocate, spawn; a spawn that fails leaves a terminal failed record and raises.

        A run of a queue the store keeps is recorded `queued` and takes its ticket and
        place in line (by its `order.priority`) before its runner starts: the runner
        inherits the place and waits in it. A run submitted `--after` other runs is
        recorded `waiting` and takes no place yet: its runner enters the line once they ended.
        With an idempotency key a key that already names a run in the store answers
        that run's handle and starts nothing (`conflict` when its request was another).
        """
        self.validate(request)
        order = order or Order()
        if order.after:
            from lionrun.application.dependencies import check_after

            check_after(self.store, order.after)
        if idempotency_key is not None:
            return self._submit_once(request, order, idempotency_key)
        return self._submit(request, order)

    # -- one run per idempotency key ---------------------------------------------------

    def _submit_once(self, request: RunRequest, order: Order, key: str) -> Handle:
        """Under the key's turn: the run the key names, else a new run bound to the key right
        after its id is reserved (before anything is written or started)."""
        if self.keys is None:
            raise ContractError(ErrorKind.UNAVAILABLE, "this store keeps no idempotency keys",
                                {"reason_code": "idempotency_unsupported"})
        keys, mine = self.keys, fingerprint(request)
        try:
            with keys.holding_key(key):
                found = keys.run_of_key(key)
                if found is not None:
                    return self._replay(found, mine)
                try:
                    return self._submit(request, order, lambda run_id: keys.bind_key(key, run_id, mine))
                except KeyTaken:  # the turn was lost (a dropped connection): the binding decides
                    found = keys.run_of_key(key)
                    if found is None:
                        raise
                    return self._replay(found, mine)
        except (StoreBusy, StoreRefused) as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the idempotency key cannot be used: {exc}",
                                {"reason_code": "store_refused"}) from exc

    def _replay(self, found: tuple[str, str], mine: str) -> Handle:
        """The handle of the run a key names, as its record says now; `conflict` when the run
        was submitted with another request."""
        run_id, theirs = found
        if theirs != mine:
            raise ContractError(ErrorKind.CONFLICT,
                                f"the idempotency key already names run {run_id}, submitted with a different "
                                "request; use a new key for a new request",
                                {"run_id": run_id, "reason_code": "idempotency_key_reused"})
        run = self._recorded(run_id)
        return SubmitData(run_id=run_id, pid=run.pid, status=run.status, terminal=run.end_recorded,
                          outcome=run.outcome if run.end_recorded else None,  # type: ignore[arg-type]
                          log=self.log_path(run_id), replayed=True)

    def _recorded(self, run_id: str, patience: float = 10.0) -> Run:
        """The record of a run a key names; one whose submit is still writing it is waited for."""
        deadline = self.clock.monotonic() + patience
        while True:
            try:
                return self.store.read(run_id)
            except RunNotFound:
                if self.clock.monotonic() >= deadline:
                    raise ContractError(ErrorKind.UNAVAILABLE,
                                        f"the idempotency key names run {run_id}, whose record was never written "
                                        "(its submit was interrupted before anything started)",
                                        {"run_id": run_id, "reason_code": "not_recorded"}) from None
                self.clock.sleep(0.05)

    # -- the submit itself -------------------------------------------------------------------------

    def _submit(self, request: RunRequest, order: Order, bind: Callable[[str], None] | None = None) -> Handle:
        queue, queues = self._queue_of(request)
        run_id, waiting = self._allocate(request, queue, None if order.after else queues, order, bind)
        if order.after:
            from msgspec.structs import replace

            return replace(self._launch(run_id, request), status=WAITING)
        if queues is None or waiting is None:
            return self._launch(run_id, request)
        try:
            return self._launch(run_id, request, waiting)
        finally:
            queues.let_go(waiting)  # the runner holds the place now (or the run ended)

    def _queue_of(self, request: RunRequest) -> tuple[str | None, RunQueues | None]:
        """The run's queue, and the queues when that one is kept (limited or paused); a Slurm
        run keeps Slurm's own queue (an explicit --queue was refused before)."""
        if request.executor == SLURM:
            return None, None
        queue = request.queue or DEFAULT_QUEUE
        queues = self.queues() if self.queues is not None else None
        if queues is None:
            return queue, None
        try:
            kept = queues.settings(queue)
        except (StoreRefused, OSError) as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the queue {queue} cannot be read: {exc}",
                                {"queue": queue, "reason_code": "store_refused"}) from exc
        return queue, (queues if kept is not None else None)

    def log_path(self, run_id: str) -> str:
        return self.files.console_location(run_id)

    def _allocate(self, request: RunRequest, queue: str | None = None, queues: RunQueues | None = None,
                  order: Order | None = None,
                  bind: Callable[[str], None] | None = None) -> tuple[str, Waiting | None]:
        """Reserve the id, write the request and the `preparing` record; a run of a kept queue
        takes its ticket and place in line first, and its record says `queued` with the ticket.
        `bind` names the reserved id by an idempotency key before anything else is written."""
        now = self.clock.now()
        try:
            run_id = self.store.reserve(now)
        except StoreRefused as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, str(exc), {"reason_code": "store_refused"}) from exc
        waiting: Waiting | None = None
        try:
            if bind is not None:
                bind(run_id)
            self.files.write_text(run_id, "instruction.txt", request.instruction)
            self.files.write_text(run_id, "request.json", json.dumps(request.to_dict(), indent=1))
            run = self._preparing(run_id, request, iso(now)).evolve(queue=queue)
            if order is not None:
                run = run.evolve(after=list(order.after) or None, priority=order.priority or None,
                                 status=WAITING if order.after else run.status)
            if queues is not None:
                waiting = queues.enqueue(queue or DEFAULT_QUEUE, run_id, order.priority if order else 0)
                run = run.evolve(status=QUEUED, extra={**run.extra, "queue_ticket": waiting.ticket})
            self.store.create(run)
        except BaseException as exc:
            if queues is not None and waiting is not None:
                queues.let_go(waiting)  # a place nobody holds is passed over by the next in line
            self.store.discard(run_id)  # no record survives, so nothing dangles
            if isinstance(exc, (StoreRefused, OSError)):
                raise ContractError(ErrorKind.UNAVAILABLE, f"the run could not be written: {exc}",
                                    {"reason_code": "store_refused"}) from exc
            raise
        return run_id, waiting

    def _preparing(self, run_id: str, request: RunRequest, now: str) -> Run:
        return Run(
            run_id=run_id, kind=request.kind, status="running", submitted_at=now, label=request.label,
            spawn_state=PREPARING, notify=list(request.notify) if request.notify is not None else None,
            notify_source=request.notify_source, model=request.model_text, cwd=request.cwd,
            timeout=request.timeout, extra=self._extra(request), host_id=self._host_id(),
            executor=SLURM if request.executor == SLURM else None, continues=_continues(request),
            budget=None if request.budget is None else budget_value(request.budget, Spend(), None),
        )

    def _host_id(self) -> str | None:
        """This host's identity for the record; a host that cannot tell is named by none (never fatal)."""
        try:
            return self.prober.host().host_id
        except OSError:
            return None

    @staticmethod
    def _extra(request: RunRequest) -> dict[str, Any]:
        """What the record carries beyond its fields: legs, the command a listing shows, what it retries."""
        extra: dict[str, Any] = {"legs": len(request.legs), "command": command_summary(request.instruction)}
        retry_of = request.extra.get("retry_of")
        if isinstance(retry_of, str) and is_run_id(retry_of):
            extra["retry_of"] = retry_of
        return extra

    def _launch(self, run_id: str, request: RunRequest, waiting: Waiting | None = None) -> Handle:
        if request.executor == SLURM:
            return self._launch_batch(run_id, request)
        with self._spawn_refusals(run_id, "the run could not be started", "the spawn"):
            pid = self._spawn(run_id, request, waiting)
        try:
            self._attach(run_id, pid)
        except BaseException as exc:
            self.signaller.signal_group(pid, "kill")  # an unattached child would run unrecorded
            error = self._refuse(run_id, ATTACH_FAILED, f"the started run could not be recorded: {exc}")
            if isinstance(exc, Exception):
                raise error from exc
            raise
        status = QUEUED if waiting is not None else "running"
        return SubmitData.handle(run_id, pid, self.log_path(run_id), status)

    def relaunch(self, run: Run) -> int:
        """A new runner for a waiting run whose runner is gone, started and attached as
        a submit's is; a spawn that fails is recorded as the run's end (spawn_failed) and raises."""
        run_id = run.run_id
        with self._spawn_refusals(run_id, "the run's runner could not be started again", "the spawn"):
            pid = self._spawn_in(run_id, run.cwd or "/")
        try:
            self._attach(run_id, pid)
        except BaseException as exc:
            self.signaller.signal_group(pid, "kill")
            error = self._refuse(run_id, ATTACH_FAILED, f"the restarted runner could not be recorded: {exc}")
            if isinstance(exc, Exception):
                raise error from exc
            raise
        return pid

    @contextmanager
    def _spawn_refusals(self, run_id: str, failed: str, attempt: str) -> Iterator[None]:
        """The one way a start that did not happen is recorded: a refusal of the engine is a
        `spawn_failed`, anything else it raises a `spawn_error` (a BaseException is re-raised)."""
        try:
            yield
        except (SpawnFailed, StoreRefused) as exc:
            raise self._refuse(run_id, SPAWN_FAILED, f"{failed}: {exc}") from exc
        except BaseException as exc:
            error = self._refuse(run_id, SPAWN_ERROR, f"{attempt} raised {type(exc).__name__}: {exc}")
            if isinstance(exc, Exception):
                raise error from exc
            raise

    def _launch_batch(self, run_id: str, request: RunRequest) -> Handle:
        """Submit the runner as a Slurm job and record the job on the `preparing` record.

        The job id (with Slurm's submit time, when it can be read) is the attempt's durable
        identity; the runner attaches its own incarnation when Slurm starts it. `sbatch` failing
        is a spawn failure this producer records; a job whose id cannot be recorded is cancelled.
        """
        assert self.cluster is not None  # validate() refused a submit without one
        cluster = self.cluster()
        batch = BatchRequest(run_id=run_id, argv=[*self.runner_command, run_id], cwd=request.cwd,
                             env={**self.env, RUN_TAG: run_id}, partition=request.partition,
                             options=tuple(request.slurm_args))
        with self._spawn_refusals(run_id, "the run could not be submitted to Slurm", "the submit"):
            handle = cluster.submit(batch)
        job_id = handle.job_id or ""
        accepted = iso(self.clock.now())
        rows = cluster.jobs(job_id, SUBMIT_TIME_READ) or ()
        submit_time = next((row.submit_time for row in rows if row.job_id == job_id and row.submit_time), None)
        engine = Engine(SLURM, job_id, cluster=handle.cluster, submit_time=submit_time, submitted_at=accepted)
        try:
            self._update(run_id, lambda current: _with_engine(current, engine))
        except BaseException as exc:
            cluster.cancel(job_id, terminate=False)  # a job no record names would run unrecorded
            error = self._refuse(run_id, ATTACH_FAILED, f"the submitted job could not be recorded: {exc}")
            if isinstance(exc, Exception):
                raise error from exc
            raise
        return SubmitData.handle(run_id, None, self.log_path(run_id))

    def _spawn(self, run_id: str, request: RunRequest, waiting: Waiting | None = None) -> int:
        return self._spawn_in(run_id, request.cwd, waiting)

    def _spawn_in(self, run_id: str, cwd: str, waiting: Waiting | None = None) -> int:
        """Start the runner with its output on the console the store opened (never through a link);
        a queued run's runner inherits its place in line (QUEUE_FD names it to the runner)."""
        with self.files.console_sink(run_id) as console:
            # LI_RUN_ID in the runner's own environment is how a kill later tells the run's
            # processes from any a rewritten record might name (the kernel keeps it; the work
            # cannot put it into a process it does not own).
            env = {**self.env, RUN_TAG: run_id}
            keeps: tuple[Held, ...] = ()
            if waiting is not None and waiting.place is not None:
                env[QUEUE_FD] = str(waiting.place)
                keeps = (waiting.place,)
            spawn = SpawnRequest([*self.runner_command, run_id], cwd, env,
                                 self.log_path(run_id), console=console, keeps=keeps)
            return self.spawner.spawn(spawn)

    def _attach(self, run_id: str, pid: int) -> None:
        """The write that attaches the pid carries `started` and the process incarnation."""
        host = self.prober.host()
        seen = self.prober.observe(pid)
        incarnation = Incarnation(host.host_id, host.boot_id, pid,
                                  seen.create_time if seen.exists else None, pid)
        now = iso(self.clock.now())

        def change(current: Run) -> Run:
            state = STARTED if current.spawn_state == PREPARING else current.spawn_state
            # a queued run's start is when its work starts: the runner records it with the slot
            started = current.started_at or (None if current.status in (QUEUED, WAITING) else now)
            return current.evolve(spawn_state=state, pid=pid, incarnation=incarnation, started_at=started)

        self._update(run_id, change)

    def _refuse(self, run_id: str, reason: str, message: str) -> ContractError:
        """Record the terminal spawn failure, then describe it for an `ok: false` envelope."""
        now = iso(self.clock.now())

        def change(current: Run) -> Run | None:
            if current.end_recorded:
                return None
            return current.evolve(spawn_state=FAILED, status="failed", outcome=classify("failed"),
                                  reason_code=reason, finished_at=now, terminal_source="submit",
                                  extra={**current.extra, "spawn_error": message})

        try:
            self._update(run_id, change)
            recorded = True
        except Exception:  # noqa: BLE001 - the disk that refused the spawn may refuse this too
            recorded = False
        return ContractError(ErrorKind.UNAVAILABLE, message,
                             {"run_id": run_id, "reason_code": reason, "failure_recorded": recorded})

    def _update(self, run_id: str, change: Callable[[Run], Run | None]) -> None:
        """A fenced write, tried again while the store is busy (application/busy.py); a store that
        stays busy passes its StoreBusy."""
        retry_busy(lambda: self.store.update(run_id, change), self.clock.sleep)


def _with_engine(current: Run, engine: Engine) -> Run | None:
    """The record naming the job: merged with what the runner wrote if it attached first; nothing
    over a record that names another job."""
    known = current.engine
    if known is None:
        return current.evolve(engine=engine)
    if known.job_id != engine.job_id:
        return None
    return current.evolve(engine=Engine(
        known.executor, known.job_id, cluster=known.cluster or engine.cluster,
        submit_time=known.submit_time or engine.submit_time, submitted_at=known.submitted_at or engine.submitted_at))


def _continues(request: RunRequest) -> str | None:
    """The run a reply continues (`li job reply`), as its request names it."""
    value = request.extra.get("continues")
    return value if isinstance(value, str) and is_run_id(value) else None
