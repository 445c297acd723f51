"""One way to lay a run down in a test: `a_run(store, now, state=RunState.RUNNING, **overrides)`.

Every run state a test or a feature names is a member of `RunState`; its value is the name the
features use, listed with its meaning in the glossary of `features/README.md`. A misspelt member
fails when the module naming it is imported (or at once under mypy); a misspelt name in a feature
matches no step (the steps match `STATE_PATTERN`, the names themselves), and
tests/contract/test_traceability.py checks every name the features use against `RunState` and the
glossary against `RunState`, without running a scenario.

`a_run` writes the record through the store's ordinary `reserve`/`create` (generation 1) and, when
given the fake `prober`, scripts the process the state speaks of (alive, gone, a zombie, ...). Real
processes (tests/e2e, tests/integration) pass their own `pid` and `incarnation` as overrides.

The other helpers here lay down what a runner or a producer would have left: an end (`end`), run
files (`write_file`, `manifest_with`), corrupt bytes (`corrupt`), and real detached processes for
the tests that need them (`Sleeper`, `kill_session`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.run import (
    FAILED,
    PREPARING,
    STARTED,
    DeliveryValue,
    Dependency,
    Incarnation,
    Run,
    iso,
)
from tests.support import REPO, li_bin

# The identity a scripted prober reports for this host (adapters.fakes.ScriptedProber's defaults).
HOST, BOOT, PID, CREATED = "host-a", "boot-1", 4242, 1000.0
DEPENDENCY = "20260101T000000-dddddd"  # the run a waiting state waits for: none such in the store
# How long ago an "aged preparing" record was submitted: past the 600 s preparing threshold.
AGED_SECONDS = 700.0
# A recycled pid's process was created at this time, not at CREATED.
REUSED_CREATED = 7777.0


class RunState(Enum):
    """The named run states (the glossary of features/README.md, in the same order)."""

    STARTED = "started"
    RUNNING = "running"
    NOTED_DONE_ELSEWHERE = "running, noted done by another surface"
    GONE = "gone"
    GONE_NO_IDENTITY = "gone, identity unrecorded"
    ALIVE_NO_IDENTITY = "alive, identity unrecorded"
    PRE_PHASE_ALIVE = "written before the spawn phase existed, alive"
    PRE_PHASE_GONE = "written before the spawn phase existed, gone"
    ZOMBIE = "a zombie"
    NOT_INSPECTABLE = "not inspectable"
    PID_REUSED = "gone, its pid reused"
    BEFORE_REBOOT = "recorded before a reboot"
    ELSEWHERE = "started on another host"
    WORK_OUTLIVES_RUNNER = "gone, its work still running"
    KILL_REQUESTED_GONE = "gone after a kill request"
    QUEUED = "queued, waiting for a slot"
    QUEUED_GONE = "queued, its runner gone"
    WAITING = "waiting for another run"  # submitted --after a run that has not ended
    WAITING_GONE = "waiting for another run, its runner gone"
    DEPENDENCY_FAILED = "ended unstarted, its dependency failed"
    WAITING_APPROVAL = "waiting for a person's approval"
    WAITING_APPROVAL_GONE = "waiting for approval, its runner gone"
    PREPARING = "preparing"
    AGED_PREPARING = "aged preparing"
    SPAWN_FAILED = "spawn failed"
    COMPLETED = "completed"
    COMPLETED_EMPTY = "completed_empty"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    VANISHED = "vanished"


# The ended states: status recorded with finished_at; the outcome is left to classification.
ENDED = {RunState.COMPLETED, RunState.COMPLETED_EMPTY, RunState.FAILED, RunState.TIMED_OUT,
         RunState.CANCELLED, RunState.VANISHED}
# States whose record carries no incarnation (a record from before identities were kept).
NO_IDENTITY = {RunState.GONE_NO_IDENTITY, RunState.ALIVE_NO_IDENTITY, RunState.PRE_PHASE_ALIVE,
               RunState.PRE_PHASE_GONE}
# States whose recorded process the prober shows alive (pid, created at CREATED); an ended run's is gone.
ALIVE = {RunState.RUNNING, RunState.NOTED_DONE_ELSEWHERE, RunState.ALIVE_NO_IDENTITY, RunState.PRE_PHASE_ALIVE, RunState.ZOMBIE,
         RunState.BEFORE_REBOOT, RunState.QUEUED, RunState.WAITING, RunState.WAITING_APPROVAL}


# A regular expression matching exactly the state names, longest first (for step patterns).
STATE_PATTERN = "|".join(re.escape(s.value) for s in sorted(RunState, key=lambda s: -len(s.value)))


def state_named(name: str) -> RunState:
    """The state a feature names; an unknown name fails with the list of known ones."""
    try:
        return RunState(name)
    except ValueError:
        known = ", ".join(repr(s.value) for s in RunState)
        raise AssertionError(f"no run state named {name!r}; the glossary has {known}") from None


def a_run(store: Any, now: datetime, state: RunState | str = RunState.RUNNING, *, prober: Any = None,
          **overrides: Any) -> Run:
    """Reserve and create one run record in `state` (generation 1); overrides replace any field.

    With `prober` (a ScriptedProber) the state's process is scripted too; without it only the record
    is written, and the caller owns the process (a real one, or none). `PRE_PHASE_*` records are
    written raw, without the `spawn_state` key, as a record from before the field existed.
    """
    state = state_named(state) if isinstance(state, str) else state
    submitted = now - timedelta(seconds=AGED_SECONDS) if state is RunState.AGED_PREPARING else now
    run_id = store.reserve(submitted)
    run = _record(state, run_id, submitted, overrides)
    if prober is not None:
        _script(prober, state, run)
    if state in (RunState.PRE_PHASE_ALIVE, RunState.PRE_PHASE_GONE):
        data = run.to_dict()
        del data["spawn_state"]
        put_raw(store, run_id, json.dumps(data))
        return run
    created = store.create(run)
    if state is RunState.NOTED_DONE_ELSEWHERE:
        store.write_text(run_id, "mcp_job.json", json.dumps({"status": "completed", "done": True}))
    return created


def _record(state: RunState, run_id: str, submitted: datetime, overrides: dict[str, Any]) -> Run:
    values: dict[str, Any] = {"kind": "agent", "status": "running", "submitted_at": iso(submitted),
                              "spawn_state": STARTED, "started_at": iso(submitted)}
    if state in (RunState.PREPARING, RunState.AGED_PREPARING):
        values.update(spawn_state=PREPARING, started_at=None)
    elif state is RunState.SPAWN_FAILED:
        values.update(spawn_state=FAILED, started_at=None, status="failed", outcome="failed",
                      reason_code="spawn_failed")
    elif state is not RunState.STARTED:
        pid = overrides.get("pid") or PID
        host = "host-b" if state is RunState.ELSEWHERE else HOST
        boot = "boot-0" if state is RunState.BEFORE_REBOOT else BOOT
        values.update(pid=pid, incarnation=None if state in NO_IDENTITY else Incarnation(host, boot, pid, CREATED, pid))
        if state in ENDED:
            values.update(status=state.value, finished_at=iso(submitted))
        if state is RunState.NOTED_DONE_ELSEWHERE:  # what another surface believes, beside the record
            values.update(extra={"submitted_via": "mcp", "mcp_job": {"status": "completed"}})
        if state is RunState.KILL_REQUESTED_GONE:
            values.update(kill_requested_at=iso(submitted))
        if state in (RunState.QUEUED, RunState.QUEUED_GONE):  # its runner waits for a slot of queue "q"
            values.update(status="queued", queue="q", started_at=None)
        if state in (RunState.WAITING, RunState.WAITING_GONE, RunState.DEPENDENCY_FAILED):
            values.update(status="waiting", started_at=None, after=[Dependency(DEPENDENCY, "ok")])
        if state is RunState.DEPENDENCY_FAILED:
            values.update(status="cancelled", outcome="cancelled", reason_code="dependency_failed",
                          finished_at=iso(submitted), extra={"failed_dependency": {"run_id": DEPENDENCY}})
        if state in (RunState.WAITING_APPROVAL, RunState.WAITING_APPROVAL_GONE):  # one open request
            values.update(status="waiting_approval", approvals=[{
                "id": "a1", "tool": "Bash", "input": {"command": "touch x"}, "tool_use_id": "t1",
                "requested_at": iso(submitted), "behavior": None, "message": None, "answered_at": None,
                "answered_by": None}])
    values.update(overrides)
    return Run(run_id=run_id, **values)


def _script(prober: Any, state: RunState, run: Run) -> None:
    pid = run.pid
    if pid is None:
        return
    if state in ALIVE:
        prober.start(pid, CREATED)
    if state is RunState.ZOMBIE:
        prober.zombify(pid)
    elif state is RunState.NOT_INSPECTABLE:
        prober.deny(pid)
    elif state is RunState.PID_REUSED:
        prober.start(pid, REUSED_CREATED)
    elif state is RunState.WORK_OUTLIVES_RUNNER:
        for leg in (pid + 1, pid + 2):  # a leg in a process group of its own, and the leg's child
            prober.start(leg, CREATED + 0.5, session=pid)


def scripted_incarnation(prober: Any, pid: int, create_time: float = CREATED) -> Incarnation:
    """The incarnation a scripted prober would have recorded at spawn (its host, its boot)."""
    return Incarnation(prober.facts.host_id, prober.facts.boot_id, pid, create_time, pid)


# --- what a runner or a producer leaves behind -------------------------------------------------------


def end(store: Any, run_id: str, status: str = "completed", outcome: str | None = "succeeded",
        reason: str | None = None, now: Any = None) -> Run:
    """Record an end the way the runner does: under the lock, with finished_at."""
    moment = iso(now or datetime.now(UTC))
    done = store.update(run_id, lambda r: r.evolve(status=status, outcome=outcome, reason_code=reason,
                                                   finished_at=moment))
    assert done is not None
    return done


def put_raw(store: Any, run_id: str, raw: str) -> None:
    """Bytes in place of a record, on either store (a memory store keeps them as they are)."""
    if hasattr(store, "put_raw"):
        store.put_raw(run_id, raw)
        return
    os.makedirs(store.run_dir(run_id), exist_ok=True)
    with open(os.path.join(store.run_dir(run_id), "record.json"), "w", encoding="utf-8") as handle:
        handle.write(raw)


def corrupt(world: Any, run_id: str, raw: str = "{not json") -> None:
    """Replace a record with bytes that are not a record."""
    put_raw(world.store, run_id, raw)


def raw_record(world: Any, run_id: str) -> str:
    if world.kind == "memory":
        return str(world.store._records[run_id])
    with open(os.path.join(world.store.run_dir(run_id), "record.json"), encoding="utf-8") as handle:
        return handle.read()


def write_file(store: Any, run_id: str, name: str, text: str) -> None:
    """A run file (console, manifest) as the runner would leave it, on either store."""
    if hasattr(store, "append_console") and name == "console.log":
        store.append_console(run_id, text)
    else:
        store.write_text(run_id, name, text)


def manifest_with(store: Any, run_id: str, manifest: dict[str, Any]) -> None:
    write_file(store, run_id, "manifest.json", json.dumps(manifest))


def delivered(ok: bool | None, failure_class: str | None = None) -> DeliveryValue:
    return DeliveryValue(attempted=True, ok=ok, exit_code=None if ok is None else (0 if ok else 3),
                    failure_class=failure_class)


def later(now: Any, seconds: float) -> Any:
    return now + timedelta(seconds=seconds)


def lay_down(world: Any, store: Any, n: int) -> list[str]:
    """Many ended records written directly, oldest first (a benchmark-sized store in about a second)."""
    template = a_run(world.store, world.clock.now() - timedelta(days=600), RunState.STARTED,
                     status="completed", outcome="succeeded",
                     finished_at="2025-01-01T00:00:00.000000+00:00").to_dict()
    ids = []
    for i in range(n):
        run_id = f"20250101T{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:06x}"
        record = json.dumps(dict(template, run_id=run_id))
        if world.kind == "memory":
            store.put_raw(run_id, record)
        else:
            os.mkdir(os.path.join(store.runs, run_id))
            with open(os.path.join(store.runs, run_id, "record.json"), "w", encoding="utf-8") as handle:
                handle.write(record)
        ids.append(run_id)
    if world.kind == "memory":
        store.reads.clear()
    return ids


# --- a clock on which things happen while a wait sleeps ---------------------------------------


class EventClock(FakeClock):
    """A FakeClock that runs scheduled actions when a sleep carries it past their moment."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[float, Callable[[], None]]] = []

    def after(self, seconds: float, action: Callable[[], None]) -> None:
        self.events.append((self.monotonic() + seconds, action))

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        due = [event for event in self.events if event[0] <= self.monotonic() + 1e-9]
        self.events = [event for event in self.events if event not in due]
        for _moment, action in due:
            action()



# --- stores that misbehave once, for the reaper's fences -----------------------------------------------


def with_event_clock(world: Any, prober: Any) -> Any:
    """The world with `prober` and a fresh EventClock wired in (and kept as world.prober, world.clock)."""
    from dependency_injector import providers

    clock = EventClock()
    world.container.core.prober.override(providers.Object(prober))
    world.container.core.clock.override(providers.Object(clock))
    world.prober, world.clock = prober, clock
    return world


class Interleaved:
    """A store whose next `update` first lets someone else write: a reaper stalled between judge and lock."""

    def __init__(self, inner: Any, meanwhile: Callable[[], None]) -> None:
        self.inner = inner
        self.meanwhile: Callable[[], None] | None = meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        if self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        return self.inner.update(run_id, change, lock_timeout)


class Refusing:
    """A store that refuses the next `failures` writes (lock busy or disk refusing), then recovers."""

    def __init__(self, inner: Any, failures: int, error: type[Exception] | None = None) -> None:
        from lionrun.application.ports import StoreBusy

        self.inner, self.failures, self.error = inner, failures, error or StoreBusy

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        if self.failures > 0:
            self.failures -= 1
            raise self.error("refused for the test")
        return self.inner.update(run_id, change, lock_timeout)


def delivery_writes(run: Run) -> int:
    """Writes the notice bookkeeping made after an end: mark (and settle) or `attempted: false`."""
    if run.delivery is None:
        return 0
    return 2 if run.delivery.attempted and run.delivery.ok is not None else 1


def assert_one_reap(before: Run, after: Run) -> None:
    """One published reap: judged at the original generation, published at the next, one end."""
    assert after.terminal_source == "reaper" and after.finished_at is not None
    assert after.terminal_evidence is not None
    assert after.terminal_evidence["judged_generation"] == before.generation
    assert after.generation == before.generation + 1 + delivery_writes(after)


# --- a wait batch: ids that are runs in named states, and ids that are not ---------------------------

UNKNOWN_ID = "20991231T235959-abcdef"
MALFORMED_ID = "../not-a-run"
# Names a wait batch may use beside the run states: an id with no run, an id that is not one, and a
# run whose record is not a record.
NOT_RUNS = ("unknown", "malformed", "corrupt")


def build(world: Any, clock: Any, state: str, pid: int) -> str:
    """One id for a wait batch: a run in the named state on the world's store, or an id that is not one."""
    if state == "unknown":
        return UNKNOWN_ID
    if state == "malformed":
        return MALFORMED_ID
    if state == "corrupt":
        run_id = world.store.reserve(clock.now())
        put_raw(world.store, run_id, "{not json")
        return run_id
    named = state_named(state)
    return a_run(world.store, clock.now(), named, prober=world.prober, pid=pid,
                 label=f"wait-{named.value}").run_id


def snapshot(store: Any, run_ids: list[str]) -> dict[str, Any]:
    """Every readable record as its full dict, for "exactly as it was" comparisons."""
    out: dict[str, Any] = {}
    for run_id in run_ids:
        try:
            out[run_id] = store.read(run_id).to_dict()
        except Exception:  # noqa: BLE001 - unknown, malformed and corrupt ids have no record to compare
            out[run_id] = None
    return out




# --- real processes ----------------------------------------------------------------------------------


class Sleeper:
    """A real detached process (own session and group), reaped by a thread so it never lingers as a zombie."""

    def __init__(self, argv: list[str] | None = None, seconds: int = 120, run_id: str | None = None) -> None:
        """`run_id` tags the process as that run's (LI_RUN_ID), as li's runner and legs are."""
        env = dict(os.environ, LI_RUN_ID=run_id) if run_id else None
        self.proc = subprocess.Popen(argv or ["sleep", str(seconds)], start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
        self.pid = self.proc.pid
        self._reaper = threading.Thread(target=self.proc.wait, daemon=True)
        self._reaper.start()

    def incarnation(self, create_time_shift: float = 0.0) -> Incarnation:
        import psutil

        from lionrun.adapters.processes import host_facts

        here = host_facts()
        created = psutil.Process(self.pid).create_time() + create_time_shift
        return Incarnation(here.host_id, here.boot_id, self.pid, created, os.getpgid(self.pid))

    def kill_group(self, signum: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signum)

    def gone(self, timeout: float = 10.0) -> int:
        """Wait for the reaper; the process's return code (negative for a signal)."""
        self._reaper.join(timeout)
        code = self.proc.returncode
        assert code is not None, "the process is still running"
        return code

    def stop(self) -> None:
        self.kill_group()
        self._reaper.join(10)


def session_work(leader: int) -> list[int]:
    """The live processes of `leader`'s session other than the leader itself: a run's work."""
    from lionrun.adapters.processes import scan_session

    return [m.pid for m in scan_session(leader) or ()
            if m.session == leader and m.pid != leader and not m.zombie]


def kill_session(run_id: str, incarnation: Incarnation | dict[str, Any], within: float = 30.0) -> None:
    """SIGKILL a whole run: its runner and every member of its session (legs run in process groups
    of their own), verified members only; returns once nothing of it is left."""
    import time

    from lionrun.adapters.processes import GroupSignaller

    if isinstance(incarnation, dict):
        incarnation = Incarnation(**incarnation)
    GroupSignaller().signal_session(run_id, incarnation, "kill")
    deadline = time.monotonic() + within
    while session_work(incarnation.pid) or not is_gone(incarnation.pid):
        assert time.monotonic() < deadline, "the run's session survived SIGKILL"
        time.sleep(0.02)


def is_gone(pid: int) -> bool:
    """Absent, or a zombie nobody has collected yet."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@dataclass
class RealBatch:
    """Runs written through FsRunStore whose processes are real, detached and cleaned up afterwards."""

    home: str
    store: FsRunStore
    ids: dict[str, str] = field(default_factory=dict)
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def add(self, name: str, state: RunState | str, **options: Any) -> str:
        self.ids[name] = real_run(self, state, **options)
        return self.ids[name]

    def cleanup(self) -> None:
        for child in self.children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=10)


def spawn_detached(batch: RealBatch, argv: list[str]) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    batch.children.append(child)
    return child


def real_incarnation(pid: int) -> Incarnation:
    import psutil

    from lionrun.adapters.processes import host_facts

    facts = host_facts()
    return Incarnation(facts.host_id, facts.boot_id, pid, psutil.Process(pid).create_time(), os.getpgid(pid))


END_LATER = """
import sys, time
from datetime import UTC, datetime
time.sleep(float(sys.argv[3]))
from lionrun.adapters.fs_store import FsRunStore
now = datetime.now(UTC).isoformat(timespec="microseconds")
FsRunStore(sys.argv[1]).update(sys.argv[2], lambda r: r.evolve(status="completed", finished_at=now))
"""


def real_run(batch: RealBatch, state: RunState | str, ends_after: float | None = None) -> str:
    """A run in `state` on the real store, with a real process where the state has one; a running
    run given `ends_after` records its own end that many seconds later, as a runner would."""
    if state in ("unknown", "malformed"):
        return UNKNOWN_ID if state == "unknown" else MALFORMED_ID
    state = state_named(state) if isinstance(state, str) else state
    now = datetime.now(UTC)
    born = now - timedelta(seconds=AGED_SECONDS) if state is RunState.AGED_PREPARING else now
    run_id = batch.store.reserve(born)
    base = Run(run_id, "agent", "running", iso(born), label=f"e2e-{state.value}", spawn_state=PREPARING)
    if state in (RunState.AGED_PREPARING, RunState.PREPARING):
        batch.store.create(base)
        return run_id
    if state in (RunState.COMPLETED, RunState.FAILED):
        batch.store.create(base.evolve(status=state.value, spawn_state=STARTED, finished_at=iso(now)))
        return run_id
    batch.store.create(base)
    if state is RunState.RUNNING and ends_after is not None:
        child = spawn_detached(batch, [sys.executable, "-c", END_LATER, batch.home, run_id, str(ends_after)])
    elif state is RunState.RUNNING:
        child = spawn_detached(batch, ["sleep", "120"])
    elif state is RunState.GONE_NO_IDENTITY:  # a pre-field record whose pid is gone: an inconclusive finding
        child = spawn_detached(batch, ["true"])
        child.wait(timeout=10)
    elif state is RunState.GONE:  # identity recorded while alive, then the process died
        child = spawn_detached(batch, ["sleep", "120"])
        attach(batch, run_id, child, identity=True)
        child.kill()
        child.wait(timeout=10)
        return run_id
    else:
        raise AssertionError(f"no real run in state {state.value!r}")
    attach(batch, run_id, child, identity=state is not RunState.GONE_NO_IDENTITY)
    return run_id


def attach(batch: RealBatch, run_id: str, child: subprocess.Popen[bytes], identity: bool) -> None:
    """Record the started phase as submit would; without identity, a pre-field record (no phase, no identity)."""
    if not identity:
        batch.store.update(run_id, lambda r: r.evolve(spawn_state=None, pid=child.pid))
        return
    found = real_incarnation(child.pid) if child.poll() is None else None
    batch.store.update(run_id, lambda r: r.evolve(spawn_state=STARTED, started_at=iso(datetime.now(UTC)),
                                                  pid=child.pid, incarnation=found))


def signal_when_waiting(proc: subprocess.Popen[str], signum: int, timeout: float = 20.0) -> None:
    """Send `signum` once li has installed its wait handlers (SIGTERM shows up as caught in /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _catches_sigterm(proc.pid):
            proc.send_signal(signum)
            return
        time.sleep(0.02)
    raise AssertionError("li never started waiting")


def _catches_sigterm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            caught = next(line for line in handle if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def start_li(*argv: str, home: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LI_HOME": home}
    env.pop("LI_NOTIFY_COMMAND", None)
    return subprocess.Popen([li_bin(), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)


def alive(child: subprocess.Popen[bytes]) -> bool:
    return child.poll() is None
