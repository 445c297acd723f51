"""Steps for features/reaper.feature, and helpers the reaper's unit and integration tests share."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from application.observe import Observed, Observer
from application.ports import StoreBusy, StoreRefused
from domain.run import PREPARING, STARTED, Incarnation, Run, iso

HOST, BOOT, PID, CREATED = "host-a", "boot-1", 4242, 1000.0


def put_run(store: Any, now: datetime, *, spawn_state: str | None = STARTED, host_id: str | None = HOST,
            boot_id: str | None = BOOT, pid: int | None = PID, create_time: float | None = CREATED,
            identity: bool = True, **fields: Any) -> Run:
    """Write a run record the way submit would have left it (generation 1)."""
    run_id = store.reserve(now)
    incarnation = Incarnation(host_id, boot_id, pid, create_time, pid) if identity and pid else None
    run = Run(run_id, "agent", "running", iso(now), label="reaper", spawn_state=spawn_state,
              started_at=iso(now) if spawn_state == STARTED else None, pid=pid,
              incarnation=incarnation, **fields)
    return store.create(run)


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

    def __init__(self, inner: Any, failures: int, error: type[Exception] = StoreBusy) -> None:
        self.inner, self.failures, self.error = inner, failures, error

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update(self, run_id: str, change: Callable[[Run], Run | None], lock_timeout: float = 10.0) -> Run | None:
        if self.failures > 0:
            self.failures -= 1
            raise self.error("refused for the test")
        return self.inner.update(run_id, change, lock_timeout)


def observer_of(world: Any, store: Any = None) -> Observer:
    """The container's observer (its reap hook sends notices), optionally over a wrapped store."""
    if store is None:
        return world.container.observer()
    return Observer(store, world.prober, world.clock, on_reaped=world.container.notices().send)


def record_end(store: Any, run_id: str, status: str = "completed", outcome: str = "succeeded") -> None:
    """What the runner does when the work ends: record the end under the lock."""
    store.update(run_id, lambda r: r.evolve(status=status, outcome=outcome, reason_code=None,
                                             finished_at="2026-07-25T17:51:00.000000+00:00"))


def pytest_configure(config: pytest.Config) -> None:
    """Register the tags of features/reaper.feature (the suite runs with --strict-markers)."""
    config.addinivalue_line("markers", "reaper: the fenced orphan reaper (ADR-0107)")
    for n in range(1, 7):
        config.addinivalue_line("markers", f"R{n}: reaper constraint {n} (issue 6 order)")


# ---- steps -------------------------------------------------------------------------------

@pytest.fixture
def reaper_ctx() -> dict[str, Any]:
    return {}


def _ctx_run(world: Any, ctx: dict[str, Any], **kw: Any) -> None:
    ctx["run"] = put_run(world.store, world.clock.now(), **kw)
    ctx["store"] = world.store


@given("the reaper's host has a started run whose recorded process is running")
def _started_alive(world: Any, reaper_ctx: dict[str, Any]) -> None:
    world.prober.start(PID, CREATED)
    _ctx_run(world, reaper_ctx)


@given("the reaper's host has a started run whose recorded process is gone")
def _started_gone(world: Any, reaper_ctx: dict[str, Any]) -> None:
    _ctx_run(world, reaper_ctx)


@given("the reaper's host has a started run whose kill was requested and whose process is gone")
def _started_killed(world: Any, reaper_ctx: dict[str, Any]) -> None:
    _ctx_run(world, reaper_ctx, kill_requested_at=iso(world.clock.now()))


@given(parsers.parse("the reaper's host has a started run whose pid now names a process created at {created:g}"))
def _started_recycled(world: Any, reaper_ctx: dict[str, Any], created: float) -> None:
    world.prober.start(PID, created)
    _ctx_run(world, reaper_ctx)


@given("the reaper's host has a started run whose runner is gone while its work still runs")
def _started_work_lives(world: Any, reaper_ctx: dict[str, Any]) -> None:
    world.prober.start(PID + 1, CREATED + 1, session=PID)  # a leg in its own group, in the runner's session
    _ctx_run(world, reaper_ctx)


@given("the reaper's host has a started run whose recorded process is a zombie")
def _started_zombie(world: Any, reaper_ctx: dict[str, Any]) -> None:
    world.prober.start(PID, CREATED)
    world.prober.zombify(PID)
    _ctx_run(world, reaper_ctx)


@given("the reaper's host has a started run recorded before the host rebooted")
def _started_before_reboot(world: Any, reaper_ctx: dict[str, Any]) -> None:
    world.prober.start(PID, CREATED)  # a new process took the pid after the reboot; no matter
    _ctx_run(world, reaper_ctx, boot_id="boot-0")


@given("the reaper's host has a started run whose process may not be inspected")
def _started_denied(world: Any, reaper_ctx: dict[str, Any]) -> None:
    world.prober.deny(PID)
    _ctx_run(world, reaper_ctx)


@given("the reaper's host has a started run recorded before process identity existed, its pid gone")
def _started_legacy(world: Any, reaper_ctx: dict[str, Any]) -> None:
    _ctx_run(world, reaper_ctx, identity=False)


@given("a started run copied in from another host, its pid absent here")
def _started_foreign(world: Any, reaper_ctx: dict[str, Any]) -> None:
    _ctx_run(world, reaper_ctx, host_id="host-b")


@given(parsers.parse("the reaper's host has a preparing run submitted {age:d} seconds ago"))
def _preparing(world: Any, reaper_ctx: dict[str, Any], age: int) -> None:
    _ctx_run(world, reaper_ctx, spawn_state=PREPARING, pid=None)
    world.clock.advance(age)


@given("the reaper's host has a preparing run with a pid that is gone")
def _preparing_with_pid(world: Any, reaper_ctx: dict[str, Any]) -> None:
    _ctx_run(world, reaper_ctx, spawn_state=PREPARING)


@given("a terminal notice is configured for the run")
def _notice_configured(world: Any, reaper_ctx: dict[str, Any]) -> None:
    run = reaper_ctx["run"]
    world.store.update(run.run_id, lambda r: r.evolve(notify=["notify-me", "{run_id}", "{outcome}"]))
    reaper_ctx["run"] = world.store.read(run.run_id)


@given("the run's lock is held by someone else for the next observation")
def _lock_busy(world: Any, reaper_ctx: dict[str, Any]) -> None:
    reaper_ctx["store"] = Refusing(world.store, 1, StoreBusy)


@given("the store refuses the next write")
def _write_refused(world: Any, reaper_ctx: dict[str, Any]) -> None:
    reaper_ctx["store"] = Refusing(world.store, 1, StoreRefused)


@given("the reaper stalls after judging while the runner records a real end")
def _stalled(world: Any, reaper_ctx: dict[str, Any]) -> None:
    run_id = reaper_ctx["run"].run_id
    reaper_ctx["store"] = Interleaved(world.store, lambda: record_end(world.store, run_id))


@when("a reader observes the run")
def _observe(world: Any, reaper_ctx: dict[str, Any]) -> None:
    store = reaper_ctx["store"]
    observer = observer_of(world, None if store is world.store else store)
    reaper_ctx["observed"] = observer.observe(reaper_ctx["run"].run_id)


@when(parsers.parse("{count:d} readers observe the run one after another"))
def _observe_many(world: Any, reaper_ctx: dict[str, Any], count: int) -> None:
    reaper_ctx["all"] = [observer_of(world).observe(reaper_ctx["run"].run_id) for _ in range(count)]
    reaper_ctx["observed"] = reaper_ctx["all"][-1]


@when("a reader observes the run again")
def _observe_again(world: Any, reaper_ctx: dict[str, Any]) -> None:
    reaper_ctx["observed"] = observer_of(world).observe(reaper_ctx["run"].run_id)


def _observed(ctx: dict[str, Any]) -> Observed:
    return ctx["observed"]  # type: ignore[no-any-return]


@then(parsers.parse('the run is terminal with outcome "{outcome}" and reason "{reason}"'))
def _terminal(reaper_ctx: dict[str, Any], outcome: str, reason: str) -> None:
    d = _observed(reaper_ctx).derivation
    assert (d.terminal, d.outcome, d.reason_code) == (True, outcome, reason)


@then(parsers.parse('the published end names the finding "{finding}" and is an upper bound'))
def _end_attributable(world: Any, reaper_ctx: dict[str, Any], finding: str) -> None:
    run = world.store.read(reaper_ctx["run"].run_id)
    assert run.finished_at_precision == "upper_bound" and run.terminal_source == "reaper"
    assert run.terminal_evidence is not None and run.terminal_evidence["finding"] == finding
    assert run.terminal_evidence["recorded"]["pid"] == PID


@then("the record is exactly as it was")
def _untouched(world: Any, reaper_ctx: dict[str, Any]) -> None:
    assert world.store.read(reaper_ctx["run"].run_id) == reaper_ctx["run"]


@then("the run is not terminal")
def _not_terminal(reaper_ctx: dict[str, Any]) -> None:
    d = _observed(reaper_ctx).derivation
    assert (d.terminal, d.outcome) == (False, None)


@then("the run is called stopped without an end")
def _stopped(reaper_ctx: dict[str, Any]) -> None:
    assert _observed(reaper_ctx).derivation.stopped


@then("the run is not called stopped")
def _not_stopped(reaper_ctx: dict[str, Any]) -> None:
    d = _observed(reaper_ctx).derivation
    assert not d.stopped and not d.possibly_orphaned


@then(parsers.parse('the finding is "{finding}"'))
def _finding(reaper_ctx: dict[str, Any], finding: str) -> None:
    observed = _observed(reaper_ctx)
    assert observed.finding is not None and observed.finding.code == finding


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


@then("exactly one reap was published, in one generation increment")
def _one_reap(world: Any, reaper_ctx: dict[str, Any]) -> None:
    assert_one_reap(reaper_ctx["run"], world.store.read(reaper_ctx["run"].run_id))


@then(parsers.parse("the record's generation moved by exactly {moves:d}"))
def _generation(world: Any, reaper_ctx: dict[str, Any], moves: int) -> None:
    assert world.store.read(reaper_ctx["run"].run_id).generation == reaper_ctx["run"].generation + moves


@then("the run's real end stands")
def _real_end(world: Any, reaper_ctx: dict[str, Any]) -> None:
    run = world.store.read(reaper_ctx["run"].run_id)
    assert (run.status, run.outcome, run.terminal_source) == ("completed", "succeeded", None)
    d = _observed(reaper_ctx).derivation
    assert not d.terminal or d.outcome == "succeeded"


@then("the run is an unresolved spawn")
def _unresolved(reaper_ctx: dict[str, Any]) -> None:
    d = _observed(reaper_ctx).derivation
    assert d.aged_preparing and not d.terminal and not d.stopped


@then("the run is pending")
def _pending(reaper_ctx: dict[str, Any]) -> None:
    d = _observed(reaper_ctx).derivation
    assert not d.aged_preparing and not d.terminal and not d.stopped


@then(parsers.parse("exactly {count:d} terminal notice was sent"))
@then(parsers.parse("exactly {count:d} terminal notices were sent"))
def _notices(world: Any, count: int) -> None:
    assert len(world.notifier.sent) == count


@then("the notice carries the reaped terminal")
def _notice_payload(world: Any, reaper_ctx: dict[str, Any]) -> None:
    argv, payload = world.notifier.sent[-1]
    assert argv == ["notify-me", reaper_ctx["run"].run_id, "indeterminate"]
    assert payload["terminal"] is True and payload["outcome"] == "indeterminate"


@then("the incarnation names the host, the boot, the pid, its create time and its group")
def _incarnation(world: Any, reaper_ctx: dict[str, Any]) -> None:
    inc = world.store.read(reaper_ctx["run"].run_id).incarnation
    assert inc == Incarnation(HOST, BOOT, PID, CREATED, PID)


# ---- R1 through the real li ----------------------------------------------------------------------

@given("li submitted a run that is still working")
def _li_submitted(li_home: str, reaper_ctx: dict[str, Any]) -> None:
    from tests.support import machine

    handle = machine("agent", "--detach", "sh", "sleep 300", home=li_home).data
    reaper_ctx.update(handle=handle, home=li_home)


@then("its record carries the incarnation of its live process on this host and boot")
def _li_incarnation(reaper_ctx: dict[str, Any]) -> None:
    import json
    import os

    from adapters.processes import PsutilProber, host_facts
    from tests.steps.reads_steps import kill_session

    handle, home = reaper_ctx["handle"], reaper_ctx["home"]
    with open(os.path.join(home, "runs", handle["run_id"], "record.json"), encoding="utf-8") as f:
        inc = json.load(f)["incarnation"]
    try:
        seen = PsutilProber().observe(handle["pid"])
        facts = host_facts()
        assert (inc["host_id"], inc["boot_id"], inc["pid"], inc["pgid"]) == (
            facts.host_id, facts.boot_id, handle["pid"], os.getpgid(handle["pid"]))
        assert seen.create_time is not None and abs(inc["create_time"] - seen.create_time) <= 0.1
    finally:
        kill_session(handle["run_id"], inc)  # the runner and its work (the leg leads a process group of its own)
