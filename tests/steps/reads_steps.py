"""Steps for the D4/D6/D7 reads features, and helpers that lay runs down without the submit verb."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from datetime import timedelta
from typing import Any

from domain.run import DeliveryValue, Incarnation, Run, iso

# --- helpers shared with the unit, integration and e2e tests of issue 4 ----------------------------


def put_run(store: Any, now: Any, **fields: Any) -> Run:
    """Reserve and create one run record (a started, running agent unless told otherwise)."""
    run_id = store.reserve(now)
    values: dict[str, Any] = {"kind": "agent", "status": "running", "submitted_at": iso(now),
                              "spawn_state": "started"}
    values.update(fields)
    return store.create(Run(run_id=run_id, **values))


def end(store: Any, run_id: str, status: str, outcome: str | None, reason: str | None = None,
        now: Any = None) -> Run:
    """Record an end the way the runner does: under the lock, with finished_at."""
    from datetime import UTC, datetime

    moment = iso(now or datetime.now(UTC))
    done = store.update(run_id, lambda r: r.evolve(status=status, outcome=outcome, reason_code=reason,
                                                   finished_at=moment))
    assert done is not None
    return done


def scripted_incarnation(prober: Any, pid: int, create_time: float = 1000.0) -> Incarnation:
    """The incarnation a scripted prober would have recorded at spawn (its host, its boot)."""
    return Incarnation(prober.facts.host_id, prober.facts.boot_id, pid, create_time, pid)


def corrupt(world: Any, run_id: str, raw: str = "{not json") -> None:
    """Replace a record with bytes that are not a record."""
    if world.kind == "memory":
        world.store.put_raw(run_id, raw)
    else:
        with open(os.path.join(world.store.run_dir(run_id), "record.json"), "w", encoding="utf-8") as handle:
            handle.write(raw)


def raw_record(world: Any, run_id: str) -> str:
    if world.kind == "memory":
        return str(world.store._records[run_id])
    with open(os.path.join(world.store.run_dir(run_id), "record.json"), encoding="utf-8") as handle:
        return handle.read()


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

        from adapters.processes import host_facts

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
    from adapters.processes import scan_session

    return [m.pid for m in scan_session(leader) or ()
            if m.session == leader and m.pid != leader and not m.zombie]


def kill_session(run_id: str, incarnation: Incarnation | dict[str, Any], within: float = 30.0) -> None:
    """SIGKILL a whole run: its runner and every member of its session (legs run in process groups
    of their own), verified members only; returns once nothing of it is left."""
    import time

    from adapters.processes import GroupSignaller

    if isinstance(incarnation, dict):
        incarnation = Incarnation(**incarnation)
    GroupSignaller().signal_session(run_id, incarnation, signal.SIGKILL)
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
    template = put_run(world.store, world.clock.now() - timedelta(days=600), status="completed",
                       outcome="succeeded", finished_at="2025-01-01T00:00:00.000000+00:00").to_dict()
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


# --- the D4/D6/D7 feature steps ----------------------------------------------------------------------

import pytest  # noqa: E402
from pytest_bdd import given, parsers, then, when  # noqa: E402

READS_TAGS = {"D4": 8, "D6": 9, "D7": 6}


def pytest_configure(config: pytest.Config) -> None:
    """Register the tags of the D4, D6 and D7 features (the suite runs with --strict-markers)."""
    config.addinivalue_line("markers", "cli: scenarios that drive the real li executable")
    for decision, bullets in READS_TAGS.items():
        config.addinivalue_line("markers", f"{decision}: ADR-0106 {decision} scenarios")
        for n in range(1, bullets + 1):
            config.addinivalue_line("markers", f"{decision}.{n}: ADR-0106 {decision} bullet {n}")


class ReadsContext:
    """The runs a reads scenario laid down (by name), and the answers it got."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.ids: dict[str, str] = {}
        self.raw: dict[str, str] = {}
        self.status: dict[str, dict[str, Any]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.output: dict[str, dict[str, Any]] = {}
        self.listing: dict[str, Any] = {}
        self.kill: dict[str, Any] = {}
        self.store: Any = None  # a counting store, when a scenario counts reads
        self.count: list[str] = []
        self.next_pid = 6000
        self.home: str = ""
        self.sleeper: Sleeper | None = None
        self.cli: Any = None

    @property
    def world(self) -> Any:
        return self.request.getfixturevalue("world")

    def reads(self) -> Any:
        if self.store is None:
            return self.world.container.reads()
        from application.observe import Observer
        from application.reads import RunReads

        return RunReads(self.store, Observer(self.store, self.world.prober, self.world.clock))

    def pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def put(self, name: str, **fields: Any) -> Run:
        run = put_run(self.world.store, self.world.clock.now(), **fields)
        self.ids[name] = run.run_id
        self.world.clock.advance(1)
        return run

    def live(self, name: str, **fields: Any) -> Run:
        pid = self.pid()
        self.world.prober.start(pid, create_time=1000.0)
        return self.put(name, pid=pid, incarnation=scripted_incarnation(self.world.prober, pid), **fields)

    def remember(self, name: str) -> None:
        self.raw[name] = raw_record(self.world, self.ids[name])


@pytest.fixture
def reads_ctx(request: pytest.FixtureRequest) -> ReadsContext:
    context = ReadsContext(request)
    request.addfinalizer(lambda: context.sleeper.stop() if context.sleeper else None)
    return context


def _null_or(text: str) -> Any:
    return None if text == "null" else text.strip('"')


def _bool(text: str) -> bool | None:
    return {"true": True, "false": False, "null": None}[text]


# --- Given ---------------------------------------------------------------------------------------------


@given(parsers.parse('a stored run "{name}" that ended with status "{status}" and no recorded outcome'))
def _ended_plain(reads_ctx: ReadsContext, name: str, status: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, status, None, now=reads_ctx.world.clock.now())
    reads_ctx.remember(name)


@given(parsers.parse('a stored run "{name}" that ended with status "{status}", outcome "{outcome}" '
                     'and reason "{reason}"'))
def _ended_full(reads_ctx: ReadsContext, name: str, status: str, outcome: str, reason: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, status, outcome, reason, now=reads_ctx.world.clock.now())


@given(parsers.parse('a stored run "{name}" that ended with status "{status}" while its recorded process '
                     'still lives'))
def _ended_alive(reads_ctx: ReadsContext, name: str, status: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, status, None, now=reads_ctx.world.clock.now())


@given(parsers.parse('a stored run "{name}" whose status says "completed" but records no end, its process alive'))
def _completed_without_end(reads_ctx: ReadsContext, name: str) -> None:
    reads_ctx.live(name, status="completed")


@given(parsers.parse('a stored run "{name}" whose spawn failed, as the producer recorded it'))
def _spawn_failed(reads_ctx: ReadsContext, name: str) -> None:
    reads_ctx.put(name, spawn_state="failed", status="failed", outcome="failed", reason_code="spawn_failed")


@given(parsers.parse('a stored run "{name}" that is {state}'))
def _in_state(reads_ctx: ReadsContext, name: str, state: str) -> None:
    if state == "running with its process alive":
        reads_ctx.live(name)
    elif state == "running with its process alive and a notice configured":
        reads_ctx.live(name, notify=["notify-me", "{run_id}"])
    elif state == "started with its process gone and no identity kept":
        reads_ctx.put(name, pid=reads_ctx.pid())
    elif state == "started with its recorded process conclusively gone":
        run = reads_ctx.live(name)
        assert run.pid is not None
        reads_ctx.world.prober.kill(run.pid)
    elif state.startswith("preparing for "):
        reads_ctx.put(name, spawn_state="preparing")
        reads_ctx.world.clock.advance(float(state.split()[2]) - 1)
    else:
        raise AssertionError(f"no such run state: {state}")
    reads_ctx.remember(name)


@given(parsers.parse('a stored run "{name}" that completed while its pid now names another live process'))
def _completed_pid_reused(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, "completed", "succeeded", now=reads_ctx.world.clock.now())
    assert run.pid is not None
    reads_ctx.world.prober.start(run.pid, create_time=7777.0)


@given(parsers.parse('a stored run "{name}" whose recorded process may not be inspected'))
def _denied(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.live(name)
    assert run.pid is not None
    reads_ctx.world.prober.deny(run.pid)


@given(parsers.parse('a stored run "{name}" whose recorded pid now names another process'))
def _pid_reused(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.live(name)
    assert run.pid is not None
    reads_ctx.world.prober.start(run.pid, create_time=7777.0)


@given(parsers.parse('a stored run "{name}" whose runner is gone while its work still runs'))
def _runner_gone_work_lives(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.live(name)
    assert run.pid is not None
    for _ in range(2):  # a leg in a process group of its own, and the leg's child, in the runner's session
        reads_ctx.world.prober.start(reads_ctx.pid(), create_time=1000.5, session=run.pid)
    reads_ctx.world.prober.kill(run.pid)
    reads_ctx.remember(name)


@given(parsers.parse('a stored run "{name}" whose record is corrupt'))
def _corrupt_record(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.live(name)
    corrupt(reads_ctx.world, run.run_id)


@given(parsers.parse("{count:d} stored runs submitted a second apart"))
def _many(reads_ctx: ReadsContext, count: int) -> None:
    for i in range(count):
        reads_ctx.live(f"run-{i}")


@given(parsers.parse("{count:d} stored runs laid down without reading them"))
def _laid_down(reads_ctx: ReadsContext, count: int) -> None:
    world = reads_ctx.world
    if world.kind == "memory":
        reads_ctx.store = world.store
    else:
        from adapters.fs_store import FsRunStore

        reads_ctx.store = FsRunStore(world.store.home, reads=reads_ctx.count.append)
    ids = lay_down(world, reads_ctx.store, count)
    for i, run_id in enumerate(ids):
        reads_ctx.ids[f"run-{i}"] = run_id


@given(parsers.parse('the run "{name}" has an empty console log and an empty artifacts folder'))
def _empty_files(reads_ctx: ReadsContext, name: str) -> None:
    world, run_id = reads_ctx.world, reads_ctx.ids[name]
    write_file(world.store, run_id, "console.log", "")
    if world.kind == "fs":
        os.mkdir(os.path.join(world.store.run_dir(run_id), "artifacts"))


@given(parsers.parse('the run "{name}" has a console log of "{text}"'))
def _console_of(reads_ctx: ReadsContext, name: str, text: str) -> None:
    write_file(reads_ctx.world.store, reads_ctx.ids[name], "console.log", text.replace("\\n", "\n"))


@given(parsers.parse('the run "{name}" has a manifest that is {state}'))
def _manifest_state(reads_ctx: ReadsContext, name: str, state: str) -> None:
    world, run_id = reads_ctx.world, reads_ctx.ids[name]
    if state == "malformed":
        write_file(world.store, run_id, "manifest.json", "{cut short")
    elif state == "unreadable":  # a folder there would be not_regular_file; root reads any mode
        from domain.availability import UNREADABLE, Availability

        original = world.store.manifest
        world.store.manifest = lambda rid: (Availability.unavailable(UNREADABLE, "permission denied")
                                            if rid == run_id else original(rid))
    else:
        assert state == "missing"


@given(parsers.parse('the run "{name}" has a manifest without usage'))
def _manifest_without_usage(reads_ctx: ReadsContext, name: str) -> None:
    manifest_with(reads_ctx.world.store, reads_ctx.ids[name], {"legs": [], "answer": "response.md"})


# --- When ----------------------------------------------------------------------------------------------


@when(parsers.parse('the status answer for "{name}" is read'))
def _read_status(reads_ctx: ReadsContext, name: str) -> None:
    reads_ctx.status[name] = reads_ctx.reads().status(reads_ctx.ids[name])


@when(parsers.parse('the status answer for "{name}" is read {times:d} times'))
def _read_status_often(reads_ctx: ReadsContext, name: str, times: int) -> None:
    for _ in range(times):
        reads_ctx.statuses.append(reads_ctx.reads().status(reads_ctx.ids[name]))
        reads_ctx.world.clock.advance(60)


@when(parsers.parse('the status answers for "{a}" and "{b}" are read'))
def _read_two_statuses(reads_ctx: ReadsContext, a: str, b: str) -> None:
    for name in (a, b):
        _read_status(reads_ctx, name)


@when(parsers.parse('the output answer for "{name}" is read'))
def _read_output(reads_ctx: ReadsContext, name: str) -> None:
    reads_ctx.output[name] = reads_ctx.reads().output(reads_ctx.ids[name])


@when(parsers.parse('the output answer for "{name}" is read with tail {tail:d}'))
def _read_output_tail(reads_ctx: ReadsContext, name: str, tail: int) -> None:
    reads_ctx.output[name] = reads_ctx.reads().output(reads_ctx.ids[name], tail)


@when(parsers.parse('the output answers for "{a}" and "{b}" are read'))
def _read_two_outputs(reads_ctx: ReadsContext, a: str, b: str) -> None:
    for name in (a, b):
        _read_output(reads_ctx, name)


@when("the list answer is read")
def _read_list(reads_ctx: ReadsContext) -> None:
    reads_ctx.listing = reads_ctx.reads().listing()


@when(parsers.parse("the list answer is read with limit {limit:d}"))
def _read_list_limited(reads_ctx: ReadsContext, limit: int) -> None:
    reads_ctx.listing = reads_ctx.reads().listing(limit=limit)


@when(parsers.parse('the kill answer for "{name}" is asked'))
def _ask_kill(reads_ctx: ReadsContext, name: str) -> None:
    reads_ctx.kill = reads_ctx.world.container.killer().kill(reads_ctx.ids[name])


# --- Then ----------------------------------------------------------------------------------------------


def _only_status(reads_ctx: ReadsContext) -> dict[str, Any]:
    assert len(reads_ctx.status) == 1, reads_ctx.status
    return next(iter(reads_ctx.status.values()))


@then(parsers.parse('the status answer says status "{status}", terminal {terminal}, outcome {outcome}'))
def _says_triple(reads_ctx: ReadsContext, status: str, terminal: str, outcome: str) -> None:
    data = _only_status(reads_ctx)
    assert (data["status"], data["terminal"], data["outcome"]) == (status, _bool(terminal), _null_or(outcome))


@then(parsers.parse("the status answer says terminal {terminal} and outcome {outcome}"))
def _says_pair(reads_ctx: ReadsContext, terminal: str, outcome: str) -> None:
    data = _only_status(reads_ctx)
    assert (data["terminal"], data["outcome"]) == (_bool(terminal), _null_or(outcome))


@then(parsers.parse('the status answer\'s reason_code is "{code}"'))
def _says_reason(reads_ctx: ReadsContext, code: str) -> None:
    assert _only_status(reads_ctx)["reason_code"] == code


@then(parsers.parse('both status answers say outcome "{outcome}"'))
def _both_outcomes(reads_ctx: ReadsContext, outcome: str) -> None:
    assert [d["outcome"] for d in reads_ctx.status.values()] == [outcome, outcome]


@then(parsers.parse('the status answer of "{name}" has reason_code null'))
def _no_reason(reads_ctx: ReadsContext, name: str) -> None:
    assert reads_ctx.status[name]["reason_code"] is None


@then(parsers.parse("the status answer says alive {alive}"))
def _says_alive(reads_ctx: ReadsContext, alive: str) -> None:
    assert _only_status(reads_ctx)["alive"] is _bool(alive)


@then(parsers.parse("the status answer says alive {alive} and possibly orphaned {orphaned}"))
def _says_alive_orphaned(reads_ctx: ReadsContext, alive: str, orphaned: str) -> None:
    data = _only_status(reads_ctx)
    assert (data["alive"], data["possibly_orphaned"]) == (_bool(alive), _bool(orphaned))


@then(parsers.parse("the status answer says possibly orphaned true with age {age:d} seconds"))
def _says_aged(reads_ctx: ReadsContext, age: int) -> None:
    data = _only_status(reads_ctx)
    assert (data["possibly_orphaned"], data["age_seconds"]) == (True, float(age))


@then("the status answer, every list row and the kill answer carry status, terminal and outcome")
def _all_carry(reads_ctx: ReadsContext) -> None:
    answers = [_only_status(reads_ctx), *reads_ctx.listing["runs"], reads_ctx.kill]
    assert len(answers) >= 3
    for answer in answers:
        assert {"status", "terminal", "outcome"} <= set(answer), answer
        assert (answer["status"], answer["terminal"], answer["outcome"]) == ("timed_out", True, "failed")


@then(parsers.parse('a fresh reader over the same store gives the same status answer for "{name}"'))
def _fresh_reader(reads_ctx: ReadsContext, name: str) -> None:
    from adapters.fakes import ScriptedProber
    from application.observe import Observer
    from application.reads import RunReads

    world = reads_ctx.world
    prober = ScriptedProber(world.prober.facts.host_id, world.prober.facts.boot_id)  # a restarted consumer
    fresh = RunReads(world.store, Observer(world.store, prober, world.clock))
    again = fresh.status(reads_ctx.ids[name])
    first = reads_ctx.status[name]
    keys = ("status", "terminal", "outcome", "reason_code", "finished_at", "submitted_at")
    assert {k: again[k] for k in keys} == {k: first[k] for k in keys}


@then("every one of those status answers says terminal false")
def _never_terminal(reads_ctx: ReadsContext) -> None:
    assert reads_ctx.statuses and all(d["terminal"] is False and d["outcome"] is None for d in reads_ctx.statuses)


@then(parsers.parse('the stored record of "{name}" is exactly as it was written'))
def _record_unchanged(reads_ctx: ReadsContext, name: str) -> None:
    assert raw_record(reads_ctx.world, reads_ctx.ids[name]) == reads_ctx.raw[name]


@then(parsers.parse('the kill answer\'s action is "{action}"'))
def _kill_action(reads_ctx: ReadsContext, action: str) -> None:
    assert reads_ctx.kill["action"] == action


@then("the run's process group received SIGTERM")
def _got_sigterm(reads_ctx: ReadsContext) -> None:
    run = reads_ctx.world.store.read(reads_ctx.kill["run_id"])
    assert (run.incarnation.pgid, signal.SIGTERM) == reads_ctx.world.signaller.signals[0]


@then(parsers.parse('the stored record of "{name}" carries the kill request'))
def _kill_recorded(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.world.store.read(reads_ctx.ids[name])
    assert run.kill_requested_at is not None and run.finished_at is None


@then("every process of the run's work received SIGTERM")
def _work_got_sigterm(reads_ctx: ReadsContext) -> None:
    world = reads_ctx.world
    runner = world.store.read(reads_ctx.kill["run_id"]).pid
    work = {pid for pid, session in world.prober.sessions.items() if session == runner and pid != runner}
    assert work and {(pid, signal.SIGTERM) for pid in work} <= set(world.signaller.signals)


@then(parsers.parse('the kill answer says status "{status}", terminal {terminal}, outcome {outcome}'))
def _kill_says(reads_ctx: ReadsContext, status: str, terminal: str, outcome: str) -> None:
    answer = reads_ctx.kill
    assert (answer["status"], answer["terminal"], answer["outcome"]) == (status, _bool(terminal), _null_or(outcome))


@then("no signal was sent")
def _no_signal(reads_ctx: ReadsContext) -> None:
    assert reads_ctx.world.signaller.signals == []


@then(parsers.parse("the list answer holds the {count:d} newest runs, newest first, and is truncated"))
def _list_newest(reads_ctx: ReadsContext, count: int) -> None:
    ordered = sorted(reads_ctx.ids.values(), reverse=True)[:count]
    assert [r["run_id"] for r in reads_ctx.listing["runs"]] == ordered
    assert reads_ctx.listing["truncated"] is True


@then(parsers.parse("the list answer holds {count:d} rows"))
def _list_rows(reads_ctx: ReadsContext, count: int) -> None:
    assert len(reads_ctx.listing["runs"]) == count


@then(parsers.parse('the list row of "{name}" says unavailable with reason "{reason}" and null lifecycle fields'))
def _error_row(reads_ctx: ReadsContext, name: str, reason: str) -> None:
    row = next(r for r in reads_ctx.listing["runs"] if r["run_id"] == reads_ctx.ids[name])
    assert (row["error"]["kind"], row["error"]["reason_code"]) == ("record_unusable", reason)
    assert (row["status"], row["terminal"], row["outcome"]) == (None, None, None)


@then(parsers.parse("at most {count:d} records were read"))
def _few_reads(reads_ctx: ReadsContext, count: int) -> None:
    made = reads_ctx.store.reads if reads_ctx.world.kind == "memory" else reads_ctx.count
    assert 0 < len(made) <= count, len(made)


@then(parsers.re(r"the output answer's (?P<field>\w+) (?:is|are) available with value (?P<value>.+)"))
def _output_available(reads_ctx: ReadsContext, field: str, value: str) -> None:
    answer = next(iter(reads_ctx.output.values()))[field]
    assert (answer["available"], answer["value"]) == (True, json.loads(value))


@then(parsers.re(r"the status answer's (?P<field>\w+) is available with value (?P<value>.+)"))
def _status_available(reads_ctx: ReadsContext, field: str, value: str) -> None:
    answer = _only_status(reads_ctx)[field]
    assert (answer["available"], answer["value"]) == (True, json.loads(value))


@then(parsers.re(r'the (?P<which>output|status) answer\'s (?P<field>\w+) is unavailable with reason '
                 r'"(?P<reason>\w+)" and a detail'))
def _unavailable(reads_ctx: ReadsContext, which: str, field: str, reason: str) -> None:
    answer = (next(iter(reads_ctx.output.values())) if which == "output" else _only_status(reads_ctx))[field]
    assert (answer["available"], answer["value"], answer["reason_code"]) == (False, None, reason)
    assert isinstance(answer["detail"], str) and answer["detail"]


@then(parsers.parse('the console of "{a}" is unavailable and the console of "{b}" is available and empty'))
def _consoles_differ(reads_ctx: ReadsContext, a: str, b: str) -> None:
    missing, empty = reads_ctx.output[a]["console"], reads_ctx.output[b]["console"]
    assert (missing["available"], missing["reason_code"]) == (False, "missing")
    assert (empty["available"], empty["value"], empty["truncated"]) == (True, "", False)
    assert missing != empty


@then("every read-derived field of both answers carries available, value, reason_code and detail")
def _all_wrapped(reads_ctx: ReadsContext) -> None:
    output, status = next(iter(reads_ctx.output.values())), _only_status(reads_ctx)
    fields = [output["console"], output["artifacts"], output["manifest"],
              status["delivery"], status["manifest"], status["usage"]]
    for field in fields:
        assert {"available", "value", "reason_code", "detail"} <= set(field), field
        assert field["available"] or field["reason_code"]
    assert "truncated" in output["console"]


@then("the status answer's label is a bare null")
def _bare_label(reads_ctx: ReadsContext) -> None:
    assert _only_status(reads_ctx)["label"] is None


@then(parsers.parse("the output answer's console is truncated {truncated}"))
def _truncated(reads_ctx: ReadsContext, truncated: str) -> None:
    assert next(iter(reads_ctx.output.values()))["console"]["truncated"] is _bool(truncated)


# --- @cli: the real li against real processes ---------------------------------------------------------------


def _cli_home(reads_ctx: ReadsContext) -> str:
    if not reads_ctx.home:
        reads_ctx.home = str(reads_ctx.request.getfixturevalue("li_home"))
    return reads_ctx.home


@given("a real detached process recorded as a started run without its identity")
def _real_without_identity(reads_ctx: ReadsContext) -> None:
    from datetime import UTC, datetime

    from adapters.fs_store import FsRunStore

    reads_ctx.sleeper = Sleeper()
    run = put_run(FsRunStore(_cli_home(reads_ctx)), datetime.now(UTC), pid=reads_ctx.sleeper.pid)
    reads_ctx.ids["real"] = run.run_id


@given("a real detached process group recorded as a started run with its identity")
def _real_group(reads_ctx: ReadsContext) -> None:
    from datetime import UTC, datetime

    import psutil

    from adapters.fs_store import FsRunStore

    store = FsRunStore(_cli_home(reads_ctx))
    run_id = store.reserve(datetime.now(UTC))  # the id first: the group carries it, as li's runner does
    reads_ctx.sleeper = Sleeper(["sh", "-c", "sleep 120 & wait"], run_id=run_id)
    leader = psutil.Process(reads_ctx.sleeper.pid)
    import time

    while not leader.children():
        time.sleep(0.02)
    reads_ctx.cli = leader.children()
    now = iso(datetime.now(UTC))
    store.create(Run(run_id, "agent", "running", now, spawn_state="started", started_at=now,
                     pid=reads_ctx.sleeper.pid, incarnation=reads_ctx.sleeper.incarnation()))
    reads_ctx.ids["real"] = run_id


@given("li submitted a run whose work is still running")
def _li_submitted_work(reads_ctx: ReadsContext) -> None:
    import time

    from tests.support import machine

    workdir = reads_ctx.request.getfixturevalue("tmp_path") / "work"
    workdir.mkdir()
    handle = machine("agent", "--detach", "--cwd", str(workdir), "sh", "sleep 30; touch M",
                     home=_cli_home(reads_ctx)).data
    reads_ctx.ids["real"] = handle["run_id"]
    reads_ctx.request.addfinalizer(lambda: _stop_session(reads_ctx))
    deadline = time.monotonic() + 20
    while len(work := session_work(handle["pid"])) < 2:  # the shell and its sleep
        assert time.monotonic() < deadline, "the run's work never started"
        time.sleep(0.02)
    reads_ctx.cli = {"runner": handle["pid"], "work": work, "workdir": workdir}


def _stop_session(reads_ctx: ReadsContext) -> None:
    """Teardown: whatever of the run still lives is SIGKILLed, member by member (never a stranger)."""
    from adapters.fs_store import FsRunStore
    from adapters.processes import GroupSignaller

    incarnation = FsRunStore(_cli_home(reads_ctx)).read(reads_ctx.ids["real"]).incarnation
    if incarnation is not None:
        GroupSignaller().signal_session(reads_ctx.ids["real"], incarnation, signal.SIGKILL)


@when("only the run's runner is killed with SIGKILL")
def _sigkill_runner_only(reads_ctx: ReadsContext) -> None:
    import time

    runner = reads_ctx.cli["runner"]
    os.kill(runner, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not is_gone(runner):
        assert time.monotonic() < deadline, "the runner survived SIGKILL"
        time.sleep(0.02)


@then("li job status reports it non-terminal and alive")
def _li_reports_alive(reads_ctx: ReadsContext) -> None:
    from tests.support import machine

    data = machine("job", "status", reads_ctx.ids["real"], home=_cli_home(reads_ctx)).data
    assert (data["terminal"], data["outcome"], data["alive"], data["possibly_orphaned"]) == (False, None, True, False)


@then("li answers that it signalled the run, and nothing of its work is left")
def _li_killed_work(reads_ctx: ReadsContext) -> None:
    import time

    assert reads_ctx.kill["action"] == "signalled"
    deadline = time.monotonic() + 10
    while not all(is_gone(pid) for pid in reads_ctx.cli["work"]):
        assert time.monotonic() < deadline, "the run's work survived the kill"
        time.sleep(0.02)
    assert session_work(reads_ctx.cli["runner"]) == []


@then("the work never finished, and li job status reports the run cancelled")
def _li_reports_cancelled(reads_ctx: ReadsContext) -> None:
    from tests.support import machine

    assert not (reads_ctx.cli["workdir"] / "M").exists()
    data = machine("job", "status", reads_ctx.ids["real"], home=_cli_home(reads_ctx)).data
    assert (data["status"], data["terminal"], data["outcome"], data["alive"]) == ("cancelled", True, "cancelled", False)


@given("a real stored run with no manifest")
def _real_no_manifest(reads_ctx: ReadsContext) -> None:
    from datetime import UTC, datetime

    from adapters.fs_store import FsRunStore

    store = FsRunStore(_cli_home(reads_ctx))
    run = put_run(store, datetime.now(UTC))
    end(store, run.run_id, "completed", "succeeded")
    reads_ctx.ids["real"] = run.run_id


@when("its process group is killed with SIGKILL")
def _sigkill_real(reads_ctx: ReadsContext) -> None:
    assert reads_ctx.sleeper is not None
    reads_ctx.sleeper.kill_group(signal.SIGKILL)
    assert reads_ctx.sleeper.gone() == -signal.SIGKILL


@when("li job kill is asked for it")
def _li_kill(reads_ctx: ReadsContext) -> None:
    from tests.support import machine

    reads_ctx.kill = machine("job", "kill", reads_ctx.ids["real"], home=_cli_home(reads_ctx),
                             env={"LI_KILL_GRACE": "0.5"}).data


@when("a person reads its status")
def _person_status(reads_ctx: ReadsContext) -> None:
    from tests.support import run_li

    reads_ctx.cli = run_li("job", "status", reads_ctx.ids["real"], home=_cli_home(reads_ctx))


@then("li job status reports it exited, non-terminal, not alive and possibly orphaned")
def _li_reports_orphan(reads_ctx: ReadsContext) -> None:
    from tests.support import machine

    for _ in range(2):
        data = machine("job", "status", reads_ctx.ids["real"], home=_cli_home(reads_ctx)).data
        assert (data["status"], data["terminal"], data["outcome"], data["alive"], data["possibly_orphaned"]) == (
            "exited", False, None, False, True)


@then("li answers that it signalled the group, and every process of the group is gone")
def _li_killed_group(reads_ctx: ReadsContext) -> None:
    import psutil

    assert reads_ctx.kill["action"] == "signalled"
    assert reads_ctx.sleeper is not None and reads_ctx.sleeper.gone() == -signal.SIGTERM
    for child in reads_ctx.cli:
        try:
            child.wait(10)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            assert child.status() == psutil.STATUS_ZOMBIE


@then("the summary says the usage is unavailable")
def _summary_unavailable(reads_ctx: ReadsContext) -> None:
    result = reads_ctx.cli
    assert result.returncode == 0
    usage = next(line for line in result.stdout.splitlines() if line.strip().startswith("usage"))
    assert "unavailable" in usage and "none" not in usage.lower().replace("unavailable", "")
