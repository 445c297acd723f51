"""Steps for features/d10_wait.feature (runs are laid down by tests/builders.py)."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from dependency_injector import providers
from pytest_bdd import given, parsers, then, when

from lionrun.adapters.fs_store import FsRunStore
from lionrun.application.wait import StopFlag, WaitResult
from tests.builders import (
    EventClock,
    RealBatch,
    alive,
    build,
    end,
    signal_when_waiting,
    snapshot,
    start_li,
)

WIRE_KEYS = {
    "runs", "all_terminal", "timed_out", "pending", "stopped_without_end", "unresolved_spawn",
    "unresolved_spawn_after", "max_wait", "poll_interval", "requested_max_wait", "requested_poll_interval",
}
ENTRY_KEYS = {
    "run_id", "kind", "label", "status", "terminal", "outcome", "reason_code", "possibly_orphaned",
    "spawn_state", "submitted_at", "host", "queue", "reap_withheld", "retry_at", "session_id", "runner_end", "error",
}
COMPARED = ("run_id", "kind", "label", "status", "terminal", "outcome", "reason_code",
            "possibly_orphaned", "spawn_state", "submitted_at")


# --- the scenario context -----------------------------------------------------------------------------


@dataclass
class WaitContext:
    world: Any
    clock: EventClock
    ids: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    before: dict[str, Any] = field(default_factory=dict)
    result: WaitResult | None = None
    data: dict[str, Any] | None = None
    next_pid: int = 51000
    began: float = 0.0

    def id_of(self, name: str) -> str:
        return self.ids.get(name, name)

    def names(self, text: str) -> list[str]:
        return [part.strip() for part in text.split(",") if part.strip()]

    def name_of(self, run_id: str) -> str:
        return next((n for n, i in self.ids.items() if i == run_id), run_id)


@pytest.fixture
def wait_ctx(world: Any) -> WaitContext:
    clock = EventClock()
    world.container.core.clock.override(providers.Object(clock))
    return WaitContext(world, clock)


@given(parsers.parse("a wait batch on this host:"), target_fixture="wait_ctx")
def _batch(wait_ctx: WaitContext, datatable: list[list[str]]) -> WaitContext:
    header, *rows = datatable
    assert header == ["name", "state"], header
    for name, state in rows:
        wait_ctx.next_pid += 1
        wait_ctx.ids[name] = build(wait_ctx.world, wait_ctx.clock, state, wait_ctx.next_pid)
        wait_ctx.states[name] = state
    wait_ctx.before = snapshot(wait_ctx.world.store, list(wait_ctx.ids.values()))
    return wait_ctx


@given(parsers.parse('"{name}" records its end {seconds:g} seconds into the wait'))
def _ends_later(wait_ctx: WaitContext, name: str, seconds: float) -> None:
    run_id = wait_ctx.id_of(name)
    world = wait_ctx.world

    def act() -> None:
        now = wait_ctx.clock.now()
        end(world.store, run_id, "completed", None, now=now)
        world.prober.kill(world.store.read(run_id).pid)

    wait_ctx.clock.after(seconds, act)


@when(parsers.parse('the caller waits on "{names}" with max wait {max_wait} and poll interval {poll}'))
def _wait(wait_ctx: WaitContext, names: str, max_wait: str, poll: str) -> None:
    ids = [wait_ctx.id_of(n) for n in wait_ctx.names(names)]
    waiter = wait_ctx.world.container.waits.waiter()
    wait_ctx.result = waiter.wait(ids, _arg(max_wait), _arg(poll))
    wait_ctx.data = json.loads(json.dumps(wait_ctx.result.to_data(), allow_nan=False))


@when(parsers.parse('the caller waits on "{names}" and is interrupted during sleep {count:d}'))
def _interrupted(wait_ctx: WaitContext, names: str, count: int) -> None:
    ids = [wait_ctx.id_of(n) for n in wait_ctx.names(names)]
    flag = StopFlag()
    wait_ctx.clock.after(count - 0.5, flag.request)  # lands inside the count-th one-second sleep
    wait_ctx.result = wait_ctx.world.container.waits.waiter().wait(ids, 60, 1, stop=flag)
    wait_ctx.data = wait_ctx.result.to_data()


def _cell(value: Any) -> str:
    """How a table cell spells a wire value: null is -, booleans are true/false."""
    return "-" if value is None else json.dumps(value) if isinstance(value, bool) else str(value)


def _arg(text: str) -> Any:
    """Feature values arrive as text, as argv would give them; `none` means not given."""
    return None if text == "none" else text.strip('"')


@then("the wait entries in order are:")
def _entries(wait_ctx: WaitContext, datatable: list[list[str]]) -> None:
    header, *rows = datatable
    data = wait_ctx.data
    assert data is not None
    assert [wait_ctx.name_of(e["run_id"]) for e in data["runs"]] == [row[0] for row in rows]
    for entry, row in zip(data["runs"], rows, strict=True):
        expected = dict(zip(header, row, strict=True))
        actual = {
            "name": wait_ctx.name_of(entry["run_id"]),
            **{key: _cell(entry[key]) for key in ("status", "terminal", "outcome", "reason_code", "spawn_state")},
            "error": entry["error"]["kind"] if entry["error"] else "-",
        }
        assert {k: actual[k] for k in header} == expected, entry


@then("the wait partition is:")
def _partition(wait_ctx: WaitContext, datatable: list[list[str]]) -> None:
    header, *rows = datatable
    assert header == ["bucket", "names"]
    data = wait_ctx.data
    assert data is not None
    for bucket, names in rows:
        assert [wait_ctx.name_of(i) for i in data[bucket]] == wait_ctx.names(names), (bucket, data[bucket])


@then("the four buckets are disjoint and cover every id that was observed")
def _disjoint(wait_ctx: WaitContext) -> None:
    data, result = wait_ctx.data, wait_ctx.result
    assert data is not None and result is not None
    part = result.partition
    listed = [*part.terminal, *data["pending"], *data["stopped_without_end"], *data["unresolved_spawn"]]
    observed = {e["run_id"] for e in data["runs"] if e["error"] is None}
    errored = {e["run_id"] for e in data["runs"] if e["error"] is not None}
    assert len(listed) == len(set(listed)) and set(listed) == observed
    assert not errored & set(listed)


@then(parsers.parse("all_terminal is {all_terminal} and timed_out is {timed_out}"))
def _flags(wait_ctx: WaitContext, all_terminal: str, timed_out: str) -> None:
    data = wait_ctx.data
    assert data is not None
    assert (data["all_terminal"], data["timed_out"]) == (all_terminal == "true", timed_out == "true")


@then(parsers.parse("the wait slept {naps} and observed {passes:d} times"))
def _naps(wait_ctx: WaitContext, naps: str, passes: int) -> None:
    expected = [] if naps == "not at all" else [float(n) for n in naps.removeprefix("for ").split(" then ")]
    assert wait_ctx.clock.naps == pytest.approx(expected)
    assert wait_ctx.result is not None and wait_ctx.result.passes == passes


@then("every record of the wait batch is exactly as it was")
def _untouched(wait_ctx: WaitContext) -> None:
    assert snapshot(wait_ctx.world.store, list(wait_ctx.ids.values())) == wait_ctx.before


@then(parsers.parse('only "{name}" was written, by one fenced reap'))
def _only_reaped(wait_ctx: WaitContext, name: str) -> None:
    after = snapshot(wait_ctx.world.store, list(wait_ctx.ids.values()))
    changed = [wait_ctx.name_of(i) for i in after if after[i] != wait_ctx.before[i]]
    assert changed == [name]
    run_id = wait_ctx.id_of(name)
    # The reap published over the generation it judged (the notice's delivery record may follow it).
    assert after[run_id]["terminal_source"] == "reaper"
    assert after[run_id]["terminal_evidence"]["judged_generation"] == wait_ctx.before[run_id]["generation"]


@then("the wait answer has exactly the D10 wire shape")
def _shape(wait_ctx: WaitContext) -> None:
    data = wait_ctx.data
    assert data is not None and set(data) == WIRE_KEYS
    assert all(set(entry) == ENTRY_KEYS for entry in data["runs"])
    assert data["unresolved_spawn_after"] == 600.0


@then(parsers.parse("the wait echoes max wait {max_wait} as {requested_max} and poll interval {poll} as {requested_poll}"))
def _echo(wait_ctx: WaitContext, max_wait: str, requested_max: str, poll: str, requested_poll: str) -> None:
    data = wait_ctx.data
    assert data is not None
    assert (data["max_wait"], data["poll_interval"]) == (float(max_wait), float(poll))
    assert (data["requested_max_wait"], data["requested_poll_interval"]) == (
        json.loads(requested_max), json.loads(requested_poll))


@then("wait, status and list say the same of every run in the batch")
def _agree(wait_ctx: WaitContext) -> None:
    from lionrun.domain.contract import ContractError

    data = wait_ctx.data
    assert data is not None
    reads = wait_ctx.world.container.reads.reads()
    rows = {row["run_id"]: row for row in reads.listing(limit=1000)["runs"]}
    for entry in data["runs"]:
        try:
            status = reads.status(entry["run_id"])
        except ContractError as refusal:
            assert entry["error"] is not None, entry
            assert entry["run_id"] not in rows or rows[entry["run_id"]]["error"] is not None
            assert (refusal.kind.value, entry["error"]["kind"]) in AGREEING_REFUSALS
            continue
        assert entry["error"] is None
        assert {k: status[k] for k in COMPARED} == {k: entry[k] for k in COMPARED}
        assert {k: rows[entry["run_id"]][k] for k in COMPARED} == {k: entry[k] for k in COMPARED}


# status refuses an id with the envelope's closed kinds; wait reports the same fact per id.
AGREEING_REFUSALS = {
    ("not_found", "not_found"), ("invalid_input", "invalid_input"), ("unavailable", "record_unusable"),
}


@pytest.fixture
def real_batch(li_home: str) -> Iterator[RealBatch]:
    batch = RealBatch(li_home, FsRunStore(li_home))
    yield batch
    batch.cleanup()



# --- CLI scenario steps (real li, real processes) ------------------------------------------------------


@dataclass
class CliWait:
    batch: RealBatch
    before: dict[str, Any] = field(default_factory=dict)
    proc: subprocess.Popen[str] | None = None
    stdout: str = ""
    stderr: str = ""
    code: int | None = None


@given(parsers.parse('a real run "{name}" whose process keeps running'), target_fixture="cli_wait")
def _real_running(real_batch: RealBatch, name: str) -> CliWait:
    real_batch.add(name, "running")
    return CliWait(real_batch, snapshot(real_batch.store, list(real_batch.ids.values())))


@when(parsers.parse('li waits on "{name}" under --machine and receives {signame} mid-wait'))
def _signalled(cli_wait: CliWait, name: str, signame: str) -> None:
    run_id = cli_wait.batch.ids[name]
    proc = start_li("job", "wait", run_id, "--machine", "--max-wait", "60", "--poll-interval", "0.1",
                    home=cli_wait.batch.home)
    signal_when_waiting(proc, getattr(signal, signame))
    cli_wait.stdout, cli_wait.stderr = proc.communicate(timeout=30)
    cli_wait.code = proc.returncode


@when(parsers.parse('li waits on "{name}" under --machine after its caller has gone away'))
def _disconnected(cli_wait: CliWait, name: str) -> None:
    run_id = cli_wait.batch.ids[name]
    proc = start_li("job", "wait", run_id, "--machine", "--max-wait", "0.5", "--poll-interval", "0.1",
                    home=cli_wait.batch.home)
    assert proc.stdout is not None
    proc.stdout.close()  # the reading end is gone: the caller disconnected
    _out, cli_wait.stderr = proc.communicate(timeout=30)
    cli_wait.code = proc.returncode


@then(parsers.parse('li still prints one envelope that reports "{name}" pending'))
def _printed(cli_wait: CliWait, name: str) -> None:
    assert cli_wait.code == 0, cli_wait.stderr
    envelope = json.loads(cli_wait.stdout)
    assert envelope["ok"] is True and envelope["contract_version"] == 1
    data = envelope["data"]
    run_id = cli_wait.batch.ids[name]
    assert data["pending"] == [run_id] and data["all_terminal"] is False
    assert [e["run_id"] for e in data["runs"]] == [run_id]


@then("li exits 74, a transport fault without an envelope, and without a traceback")
def _clean_exit(cli_wait: CliWait) -> None:
    # The envelope could not be delivered, so the exit status must not claim one was (D8): 74.
    assert cli_wait.code == 74, (cli_wait.code, cli_wait.stderr)
    assert "Traceback" not in cli_wait.stderr and "Exception ignored" not in cli_wait.stderr
    assert len(cli_wait.stderr.splitlines()) == 1, cli_wait.stderr


@then(parsers.parse('the real run "{name}" is still running and its record is exactly as it was'))
def _still_running(cli_wait: CliWait, name: str) -> None:
    assert all(alive(child) for child in cli_wait.batch.children)
    assert snapshot(cli_wait.batch.store, list(cli_wait.batch.ids.values())) == cli_wait.before


# --- a batch system that does not answer -----------------------------------------------


class SilentCluster:
    """A Slurm controller that takes all the time a question is given, and then answers nothing."""

    def __init__(self, clock: EventClock) -> None:
        self.clock = clock
        self.asked: list[float | None] = []

    def jobs(self, job_id: str, timeout: float | None = None) -> None:
        self.asked.append(timeout)
        self.clock.sleep(20.0 if timeout is None else timeout)

    def all_jobs(self, timeout: float | None = None) -> None:
        self.jobs("", timeout)


@given(parsers.parse('Slurm runs "{names}" whose controller takes all the time it is given and answers nothing'))
def _silent_slurm(wait_ctx: WaitContext, names: str) -> None:
    from lionrun.domain.run import Engine

    for name in wait_ctx.names(names):
        wait_ctx.next_pid += 1
        run_id = build(wait_ctx.world, wait_ctx.clock, "running", wait_ctx.next_pid)
        wait_ctx.world.store.update(run_id, lambda r: r.evolve(
            executor="slurm", engine=Engine("slurm", str(wait_ctx.next_pid), submit_time="2026-01-01T00:00:00")))
        wait_ctx.ids[name] = run_id
    wait_ctx.world.container.core.cluster.override(providers.Object(SilentCluster(wait_ctx.clock)))
    wait_ctx.began = wait_ctx.clock.monotonic()


@then(parsers.parse("the wait took at most {seconds:g} seconds"))
def _took(wait_ctx: WaitContext, seconds: float) -> None:
    took = wait_ctx.clock.monotonic() - wait_ctx.began
    assert took <= seconds + 1e-6, took


@then("every Slurm run is pending, judged cluster_unreachable")
def _unreachable(wait_ctx: WaitContext) -> None:
    assert wait_ctx.result is not None
    for seen in wait_ctx.result.entries:
        assert seen.observed is not None and seen.observed.finding is not None
        assert seen.observed.finding.code == "cluster_unreachable", seen
        assert seen.bucket == "pending" and not seen.observed.derivation.terminal, seen
