"""Steps for the D4/D6/D7 reads features (runs are laid down by tests/builders.py)."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

# --- the D4/D6/D7 feature steps ----------------------------------------------------------------------
import pytest  # noqa: E402
from pytest_bdd import given, parsers, then, when  # noqa: E402

from lionrun.domain.run import Run, iso
from tests.builders import (
    STATE_PATTERN,
    RunState,
    Sleeper,
    a_run,
    corrupt,
    end,
    is_gone,
    manifest_with,
    raw_record,
    session_work,
    state_named,
    write_file,
)


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
        self.next_pid = 6000
        self.home: str = ""
        self.sleeper: Sleeper | None = None
        self.cli: Any = None

    @property
    def world(self) -> Any:
        return self.request.getfixturevalue("world")

    def reads(self) -> Any:
        return self.world.container.reads.reads()

    def pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def put(self, name: str, state: RunState, **fields: Any) -> Run:
        """A run in a named state (its process scripted on the world's prober), a fresh pid each."""
        if state not in (RunState.STARTED, RunState.PREPARING, RunState.AGED_PREPARING, RunState.SPAWN_FAILED):
            fields.setdefault("pid", self.pid())
        run = a_run(self.world.store, self.world.clock.now(), state, prober=self.world.prober, **fields)
        self.ids[name] = run.run_id
        self.world.clock.advance(1)
        return run

    def live(self, name: str, **fields: Any) -> Run:
        return self.put(name, RunState.RUNNING, **fields)

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


@given(parsers.re(rf'a run "(?P<name>[^"]+)" that is (?P<state>{STATE_PATTERN}), submitted (?P<seconds>\d+) seconds ago'),
       converters={"seconds": int})
def _in_state_since(reads_ctx: ReadsContext, name: str, state: str, seconds: int) -> None:
    reads_ctx.put(name, state_named(state))
    reads_ctx.world.clock.advance(seconds - 1)  # put() already moved the clock one second
    reads_ctx.remember(name)


@given(parsers.re(rf'a run "(?P<name>[^"]+)" that is (?P<state>{STATE_PATTERN}), with a notice configured'))
def _in_state_noticed(reads_ctx: ReadsContext, name: str, state: str) -> None:
    reads_ctx.put(name, state_named(state), notify=["notify-me", "{run_id}"])
    reads_ctx.remember(name)


@given(parsers.re(rf'a run "(?P<name>[^"]+)" that is (?P<state>{STATE_PATTERN})'))
def _in_state(reads_ctx: ReadsContext, name: str, state: str) -> None:
    reads_ctx.put(name, state_named(state))
    reads_ctx.remember(name)


@given(parsers.parse('a kill request is recorded for "{name}"'))
def _kill_recorded(reads_ctx: ReadsContext, name: str) -> None:
    moment = iso(reads_ctx.world.clock.now())
    reads_ctx.world.store.update(reads_ctx.ids[name], lambda run: run.evolve(kill_requested_at=moment))
    reads_ctx.remember(name)


@given(parsers.parse('a run "{name}" that ended with status "{status}" and no recorded outcome'))
def _ended_plain(reads_ctx: ReadsContext, name: str, status: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, status, None, now=reads_ctx.world.clock.now())
    reads_ctx.remember(name)


@given(parsers.parse('a run "{name}" that ended with status "{status}", outcome "{outcome}" '
                     'and reason "{reason}"'))
def _ended_full(reads_ctx: ReadsContext, name: str, status: str, outcome: str, reason: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, status, outcome, reason, now=reads_ctx.world.clock.now())


@given(parsers.parse('a run "{name}" that ended with status "{status}" while its recorded process '
                     'still lives'))
def _ended_alive(reads_ctx: ReadsContext, name: str, status: str) -> None:
    run = reads_ctx.live(name)
    end(reads_ctx.world.store, run.run_id, status, None, now=reads_ctx.world.clock.now())


@given(parsers.parse('a run "{name}" whose status says "completed" but records no end, its process alive'))
def _completed_without_end(reads_ctx: ReadsContext, name: str) -> None:
    reads_ctx.live(name, status="completed")


@given(parsers.parse('a run "{name}" that completed while its pid now names another live process'))
def _completed_pid_reused(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.put(name, RunState.PID_REUSED)
    end(reads_ctx.world.store, run.run_id, "completed", "succeeded", now=reads_ctx.world.clock.now())


@given(parsers.parse('a run "{name}" whose record is corrupt'))
def _corrupt_record(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.live(name)
    corrupt(reads_ctx.world, run.run_id)


@given(parsers.parse("{count:d} runs submitted a second apart"))
def _many(reads_ctx: ReadsContext, count: int) -> None:
    for i in range(count):
        reads_ctx.live(f"run-{i}")


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
        from lionrun.domain.availability import UNREADABLE, Availability

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
    reads_ctx.kill = reads_ctx.world.container.reads.killer().kill(reads_ctx.ids[name])


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
    from lionrun.adapters.fakes import ScriptedProber
    from lionrun.application.observe import Observer
    from lionrun.application.reads import RunReads

    world = reads_ctx.world
    prober = ScriptedProber(world.prober.facts.host_id, world.prober.facts.boot_id)  # a restarted consumer
    fresh = RunReads(world.store, Observer(world.store, prober, world.clock), world.store)
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
    assert (run.incarnation.pgid, "terminate") == reads_ctx.world.signaller.signals[0]


@then(parsers.parse('the stored record of "{name}" carries the kill request'))
def _kill_recorded(reads_ctx: ReadsContext, name: str) -> None:
    run = reads_ctx.world.store.read(reads_ctx.ids[name])
    assert run.kill_requested_at is not None and run.finished_at is None


@then("every process of the run's work received SIGTERM")
def _work_got_sigterm(reads_ctx: ReadsContext) -> None:
    world = reads_ctx.world
    runner = world.store.read(reads_ctx.kill["run_id"]).pid
    work = {pid for pid, session in world.prober.sessions.items() if session == runner and pid != runner}
    assert work and {(pid, "terminate") for pid in work} <= set(world.signaller.signals)


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

    from lionrun.adapters.fs_store import FsRunStore

    reads_ctx.sleeper = Sleeper()
    run = a_run(FsRunStore(_cli_home(reads_ctx)), datetime.now(UTC), RunState.STARTED,
                pid=reads_ctx.sleeper.pid)  # a pid, no identity
    reads_ctx.ids["real"] = run.run_id


@given("a real detached process group recorded as a started run with its identity")
def _real_group(reads_ctx: ReadsContext) -> None:
    from datetime import UTC, datetime

    import psutil

    from lionrun.adapters.fs_store import FsRunStore

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
    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.adapters.processes import GroupSignaller

    incarnation = FsRunStore(_cli_home(reads_ctx)).read(reads_ctx.ids["real"]).incarnation
    if incarnation is not None:
        GroupSignaller().signal_session(reads_ctx.ids["real"], incarnation, "kill")


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

    from lionrun.adapters.fs_store import FsRunStore

    store = FsRunStore(_cli_home(reads_ctx))
    run = a_run(store, datetime.now(UTC), RunState.STARTED)
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
