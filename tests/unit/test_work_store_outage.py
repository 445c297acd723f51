"""The runner rides out a store that does not answer, and stops at once at one that refuses.

`Outage` is the policy (bounded, backing off, one budget per unbroken outage); the work service
uses it for the request it reads at the start and the artifacts, manifest and end it writes at the
end. Fakes only: a memory store whose writes fail as scripted and a fake clock that records the
pauses (the real server's outages are in tests/integration/test_pg_store_faults.py).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from dependency_injector import providers

from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.outage import Outage
from lionrun.application.ports import ProviderResult, StoreBusy, StoreRefused, StoreUnavailable
from lionrun.application.work import Workspace
from lionrun.domain.request import Leg, ModelSpec, RunRequest
from lionrun.domain.run import Run
from tests.unit.test_submit_work import FakeProvider
from tests.worlds import make_world

DOWN = StoreUnavailable("the PostgreSQL store cannot be reached: Connection refused")


class Failing:
    """Raises the scripted exceptions in turn, then answers `value`; counts the calls."""

    def __init__(self, *failures: BaseException, value: Any = "done") -> None:
        self.failures = list(failures)
        self.value = value
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.value


def outage(bound: float = 60.0) -> tuple[Outage, FakeClock, list[str]]:
    clock, said = FakeClock(), []
    return Outage(clock, bound, said.append), clock, said


def test_an_unavailable_store_is_retried_with_a_doubling_pause_and_the_outage_is_said() -> None:
    policy, clock, said = outage()
    action = Failing(*[DOWN] * 7)
    assert policy.call("the end", action) == "done" and action.calls == 8
    assert clock.naps == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert said[0].startswith("the store is unavailable, retrying the end for up to 60 s: ")
    assert "Connection refused" in said[0]
    assert said[1:] == ["the store answered again; the end went through"]


def test_a_store_that_refuses_is_not_retried() -> None:
    policy, clock, said = outage()
    action = Failing(StoreRefused("permission denied for table runs"))
    with pytest.raises(StoreRefused, match="permission denied") as raised:
        policy.call("the end", action)
    assert not isinstance(raised.value, StoreUnavailable)
    assert action.calls == 1 and clock.naps == [] and said == []


def test_other_exceptions_pass_at_once() -> None:
    policy, clock, _ = outage()
    for failure in (StoreBusy("locked"), OSError("disk"), KeyError("x")):
        action = Failing(failure)
        with pytest.raises(type(failure)):
            policy.call("the end", action)
        assert action.calls == 1
    assert clock.naps == []


def test_an_outage_longer_than_the_bound_gives_up_and_says_so() -> None:
    policy, clock, said = outage(bound=10.0)
    action = Failing(*[DOWN] * 100)
    with pytest.raises(StoreUnavailable, match=r"stayed unavailable for 10\.0 s"):
        policy.call("the end", action)
    assert sum(clock.naps) == pytest.approx(10.0) and action.calls == len(clock.naps) + 1
    assert said[-1].startswith("the store stayed unavailable for 10.0 s; giving up on the end: ")


def test_calls_during_one_outage_share_its_budget_and_a_success_renews_it() -> None:
    policy, clock, said = outage(bound=10.0)
    with pytest.raises(StoreUnavailable):
        policy.call("the artifacts", Failing(*[DOWN] * 100))
    spent = len(clock.naps)
    late = Failing(*[DOWN] * 100)
    with pytest.raises(StoreUnavailable):
        policy.call("the end", late)
    assert late.calls == 1 and len(clock.naps) == spent  # the budget was spent: no second wait
    assert policy.call("the end", Failing()) == "done"  # the store is back
    again = Failing(DOWN, DOWN)
    assert policy.call("the end", again) == "done" and clock.naps[-2:] == [0.2, 0.4]


def test_a_bound_of_zero_never_waits() -> None:
    policy, clock, _ = outage(bound=0.0)
    with pytest.raises(StoreUnavailable):
        policy.call("the end", Failing(DOWN))
    assert clock.naps == []


class FlakyStore:
    """The memory store, whose named calls raise the scripted exceptions first (then work);
    `write_text:manifest.json` names the calls of one method on one file."""

    def __init__(self, inner: MemoryRunStore) -> None:
        self._inner = inner
        self.script: dict[str, list[BaseException]] = {}
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            named = f"{name}:{args[1]}" if len(args) > 1 and isinstance(args[1], str) else name
            failures = self.script.get(named) or self.script.get(name)
            if failures:
                raise failures.pop(0)
            return target(*args, **kwargs)

        return call


def perform(store: FlakyStore, arrange: Callable[[str], None], outage_bound: float = 300.0,
            ) -> tuple[Run | None, str, str, FakeClock]:
    """Submit one `sh` run over the flaky store, script its failures, perform it; (ended, li log, id, clock)."""
    world = make_world("memory", "/nonexistent")
    world.container.core.store.override(providers.Object(store))
    registry = {"sh": FakeProvider("sh", lambda prompt, model: ProviderResult(0, answer="the answer"))}
    world.container.submit.provider_registry.override(providers.Object(registry))
    world.container.config.store_outage.from_value(outage_bound)
    request = RunRequest(kind="agent", instruction="do it", legs=(Leg("main", ModelSpec("sh")),), cwd="/tmp")
    run_id = world.container.submit.submitter().submit(request).run_id
    store.calls.clear()  # the submit's own calls are not counted
    arrange(run_id)
    console, li_log = io.StringIO(), io.StringIO()
    ended = world.container.submit.work().perform(run_id, Workspace(console, {"LI_RUN_ID": run_id}, li_log))
    assert console.getvalue() == "running do it\n"  # the work's bytes alone: li's outage lines are apart
    return ended, li_log.getvalue(), run_id, world.clock


@pytest.fixture
def store() -> FlakyStore:
    return FlakyStore(MemoryRunStore())


def test_the_end_is_recorded_once_the_store_answers_again(store: FlakyStore) -> None:
    def arrange(run_id: str) -> None:
        store.script = {"seal_artifacts": [DOWN] * 3, "write_text:manifest.json": [DOWN] * 2, "update": [DOWN] * 4}

    ended, said, run_id, clock = perform(store, arrange)
    assert ended is not None and (ended.status, ended.outcome, ended.terminal_source) == (
        "completed", "succeeded", "runner")
    assert store.read(run_id).finished_at == ended.finished_at
    assert store.manifest(run_id).available
    assert store.calls["update"] == 5 and store.calls["seal_artifacts"] == 4
    for what in ("the artifacts", "the manifest", "the end"):
        assert f"li runner: the store is unavailable, retrying {what} for up to " in said
        assert f"li runner: the store answered again; {what} went through" in said
    assert said.rstrip().endswith("li runner: completed")


def test_a_store_that_refuses_the_end_stops_the_runner_at_once(store: FlakyStore) -> None:
    def arrange(run_id: str) -> None:
        store.script = {"update": [StoreRefused("cannot write the record: read-only file system")]}

    ended, said, run_id, clock = perform(store, arrange)
    assert ended is None and store.calls["update"] == 1 and clock.naps == []
    assert not store.read(run_id).end_recorded
    assert "li runner: the end could not be recorded: cannot write the record: read-only" in said
    assert "retrying" not in said


def test_an_outage_past_the_bound_gives_up_on_the_end_and_says_so(store: FlakyStore) -> None:
    def arrange(run_id: str) -> None:
        store.script = {"update": [DOWN] * 1000}

    ended, said, run_id, clock = perform(store, arrange, outage_bound=30.0)
    assert ended is None and not store.read(run_id).end_recorded
    assert sum(clock.naps) == pytest.approx(30.0)
    assert "li runner: the store stayed unavailable for 30.0 s; giving up on the end: " in said
    assert "li runner: the end could not be recorded: the store stayed unavailable" in said


def test_an_end_whose_answer_was_lost_is_known_as_this_runners_own(store: FlakyStore) -> None:
    """The connection dropped after the server committed the end: the retry finds it there."""
    real_update = store._inner.update

    def arrange(run_id: str) -> None:
        def update_then_drop(run_id: str, change: Any, lock_timeout: float = 10.0) -> Any:
            written = real_update(run_id, change, lock_timeout)
            if store.calls["update"] == 1:  # the first update after the work: the end
                raise StoreUnavailable("server closed the connection unexpectedly")
            return written

        store._inner.update = update_then_drop  # type: ignore[method-assign]

    ended, said, run_id, _ = perform(store, arrange)
    assert store.calls["update"] == 2
    assert ended is not None and ended.terminal_source == "runner" and ended.status == "completed"
    assert store.read(run_id).generation == ended.generation
    assert said.rstrip().endswith("li runner: completed")


def test_a_request_unreadable_for_a_moment_is_waited_for(store: FlakyStore) -> None:
    def arrange(run_id: str) -> None:
        store.script = {"read_text:request.json": [DOWN] * 2, "read": [DOWN]}

    ended, said, _, _ = perform(store, arrange)
    assert ended is not None and (ended.status, ended.reason_code) == ("completed", None)
    assert "retrying the request" in said
