"""Steps for features/reaper.feature (runs are laid down by tests/builders.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from lionrun.application.observe import Observed, Observer
from lionrun.application.ports import StoreBusy, StoreRefused
from lionrun.domain.run import Incarnation
from tests.builders import (
    BOOT,
    CREATED,
    HOST,
    PID,
    STATE_PATTERN,
    Interleaved,
    Refusing,
    RunState,
    a_run,
    assert_one_reap,
    end,
    state_named,
)


def observer_of(world: Any, store: Any = None) -> Observer:
    """The container's observer (its reap hook sends notices), optionally over a wrapped store."""
    if store is None:
        return world.container.reads.observer()
    return Observer(store, world.prober, world.clock, on_reaped=world.container.notices.notices().send)


# ---- steps -------------------------------------------------------------------------------

@pytest.fixture
def reaper_ctx() -> dict[str, Any]:
    return {}


def _ctx_run(world: Any, ctx: dict[str, Any], state: RunState, **kw: Any) -> None:
    """The scenario's one run, pid PID, its process scripted on the world's prober."""
    ctx["run"] = a_run(world.store, world.clock.now(), state, prober=world.prober, label="reaper", **kw)
    ctx["store"] = world.store


@given(parsers.re(rf"a run that is (?P<state>{STATE_PATTERN}), submitted (?P<age>\d+) seconds ago"),
       converters={"age": int})
def _in_state_since(world: Any, reaper_ctx: dict[str, Any], state: str, age: int) -> None:
    _ctx_run(world, reaper_ctx, state_named(state))
    world.clock.advance(age)


@given("a run that is preparing, its recorded pid gone")
def _preparing_with_pid(world: Any, reaper_ctx: dict[str, Any]) -> None:
    _ctx_run(world, reaper_ctx, RunState.PREPARING, pid=PID)


@given(parsers.re(rf"a run that is (?P<state>{STATE_PATTERN})"))
def _in_state(world: Any, reaper_ctx: dict[str, Any], state: str) -> None:
    _ctx_run(world, reaper_ctx, state_named(state))


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
    reaper_ctx["store"] = Interleaved(world.store, lambda: end(world.store, run_id))


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

    from lionrun.adapters.processes import PsutilProber, host_facts
    from tests.builders import kill_session

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
