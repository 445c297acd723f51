"""The pure decisions of runs that wait for runs, and the restart of a waiting run whose
runner is gone, under the reaper's fence, on the memory and the filesystem stores."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.application.dependencies import Restarter, check_after
from lionrun.domain.contract import ContractError
from lionrun.domain.dependencies import (
    FAILED,
    START,
    WAIT,
    DependencyState,
    check_priority,
    dependencies,
    find_cycle,
    judge,
    matches,
    split_after,
)
from lionrun.domain.queue import entry_name, parse_place, places_of
from lionrun.domain.run import Dependency
from tests.builders import RunState, a_run

OUTCOMES = ("succeeded", "failed", "cancelled", "indeterminate")


def test_after_names_a_run_and_a_condition_ok_by_default() -> None:
    assert split_after("20261205T000000-abcdef") == ("20261205T000000-abcdef", "ok")
    assert split_after("abcdef:any") == ("abcdef", "any")
    assert split_after("@last:fail") == ("@last", "fail")
    for bad in ("", "x:maybe", ":ok", "  "):
        with pytest.raises(ContractError) as caught:
            split_after(bad)
        assert caught.value.kind.value == "invalid_input"


def test_one_run_named_twice_with_two_conditions_is_refused_and_once_kept() -> None:
    assert dependencies([("a", "ok"), ("a", "ok"), ("b", "any")]) == [Dependency("a", "ok"), Dependency("b", "any")]
    with pytest.raises(ContractError):
        dependencies([("a", "ok"), ("a", "fail")])


def test_priority_is_a_bounded_integer() -> None:
    assert check_priority("10") == 10 and check_priority(-3) == -3
    for bad in ("high", "1.5", True, "99999999"):
        with pytest.raises(ContractError):
            check_priority(bad)


@given(st.sampled_from(OUTCOMES))
def test_ok_and_fail_split_every_end_and_any_takes_all(outcome: str) -> None:
    assert matches("ok", outcome) != matches("fail", outcome)
    assert matches("any", outcome)
    assert matches("ok", outcome) == (outcome == "succeeded")


def state(condition: str, outcome: str | None, bucket: str = "terminal", run_id: str = "r") -> DependencyState:
    terminal = outcome is not None
    return DependencyState(run_id, condition, "x", terminal, outcome, "terminal" if terminal else bucket)


def test_the_verdict_waits_starts_or_names_the_dependency_that_ended_otherwise() -> None:
    assert judge([state("ok", "succeeded"), state("any", "failed")]).action == START
    waiting = judge([state("ok", "succeeded"), state("ok", None, "stopped_without_end", "gone")])
    assert waiting.action == WAIT and [s.run_id for s in waiting.stuck] == ["gone"]
    failed = judge([state("ok", None, "pending"), state("ok", "failed", run_id="bad")])
    assert failed.action == FAILED and failed.failed_by is not None and failed.failed_by.run_id == "bad"
    assert judge([]).action == START


@given(st.lists(st.tuples(st.sampled_from(("ok", "fail", "any")), st.sampled_from((*OUTCOMES, None))),
                min_size=1, max_size=6))
def test_a_run_starts_only_when_every_dependency_ended_as_asked(deps: list[tuple[str, str | None]]) -> None:
    verdict = judge([state(c, o, "pending") for c, o in deps])
    if any(o is not None and not matches(c, o) for c, o in deps):
        assert verdict.action == FAILED
    elif all(o is not None for _, o in deps):
        assert verdict.action == START
    else:
        assert verdict.action == WAIT


@given(st.integers(min_value=2, max_value=12), st.data())
def test_a_graph_of_edges_to_older_runs_has_no_cycle_and_one_edge_back_makes_one(size: int, data: Any) -> None:
    names = [f"r{i}" for i in range(size)]
    edges = {name: [names[j] for j in data.draw(st.sets(st.integers(0, i - 1), max_size=3))] if i > 0 else []
             for i, name in enumerate(names)}
    assert find_cycle("new", names, edges.get) is None
    back = {**edges, names[0]: [names[-1]]}  # the oldest now waits for the newest
    looped = find_cycle(None, [names[-1]], back.get)
    assert (looped is not None) == _reaches(edges, names[-1], names[0])
    if looped is not None:
        assert looped[0] == looped[-1] and all(b in back[a] for a, b in zip(looped, looped[1:], strict=False))


def _reaches(edges: dict[str, list[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, []))
    return False


def test_a_dependency_on_the_new_run_itself_is_a_cycle() -> None:
    assert find_cycle("n", ["a"], {"a": ["b"], "b": ["n"]}.get) == ["n", "a", "b", "n"]
    assert find_cycle(None, ["a"], {"a": ["b"], "b": ["a"]}.get) == ["a", "b", "a"]
    assert find_cycle(None, ["a", "c"], {"a": ["b"], "c": ["b"]}.get) is None


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(-20, 20)), unique_by=lambda e: e[0], max_size=20))
def test_a_line_starts_the_highest_priority_first_and_equal_ones_by_ticket(entries: list[tuple[int, int]]) -> None:
    names = [entry_name(ticket, f"20261205T000000-{ticket % 0xffffff:06x}", priority) for ticket, priority in entries]
    assert all(parse_place(name) is not None for name in names)
    places = places_of(names)
    keys = [(-priority, ticket) for ticket, _, priority in places]
    assert keys == sorted(keys)


def test_an_entry_of_priority_zero_keeps_the_name_it_always_had() -> None:
    assert entry_name(7, "20261205T000000-abcdef") == "000000000007-20261205T000000-abcdef"
    assert parse_place(entry_name(7, "20261205T000000-abcdef", -5)) == (7, "20261205T000000-abcdef", -5)


# --- the store side: refusals at submit, the restart of a waiting run whose runner is gone ----------


def waiting_run(world: Any, state: RunState, **fields: Any) -> Any:
    after = a_run(world.store, world.clock.now(), RunState.RUNNING, prober=world.prober)
    return a_run(world.store, world.clock.now(), state, prober=world.prober, status="waiting", pid=5151,
                 started_at=None, after=[Dependency(after.run_id, "ok")], **fields)


def test_an_unknown_dependency_or_a_loop_is_refused_at_submit(world: Any) -> None:
    with pytest.raises(ContractError) as caught:
        check_after(world.store, [Dependency("20261205T000000-abcdef")])
    assert caught.value.kind.value == "invalid_input"
    first = a_run(world.store, world.clock.now(), RunState.RUNNING, prober=world.prober)
    second = a_run(world.store, world.clock.now(), RunState.RUNNING, prober=world.prober,
                   status="waiting", after=[Dependency(first.run_id)])
    world.store.update(first.run_id, lambda r: r.evolve(after=[Dependency(second.run_id)]))
    with pytest.raises(ContractError) as looped:
        check_after(world.store, [Dependency(second.run_id)])
    assert "cycle" in looped.value.message


@pytest.mark.parametrize("state", [RunState.GONE, RunState.BEFORE_REBOOT])
def test_a_waiting_run_whose_runner_is_gone_gets_one_new_runner_not_a_reap(world: Any, state: RunState) -> None:
    run = waiting_run(world, state)
    reads = world.container.reads.reads()
    seen = reads.status(run.run_id)
    assert (seen["status"], seen["terminal"], seen["alive"]) == ("waiting", False, True)
    assert len(world.spawner.spawned) == 1
    restarted = world.store.read(run.run_id)
    assert restarted.extra["runner_restarts"] == 1 and restarted.spawn_state == "started"
    assert restarted.started_at is None and restarted.pid == world.spawner.next_pid
    reads.status(run.run_id)
    world.container.reads.reads().listing()
    assert len(world.spawner.spawned) == 1  # the new runner lives: nothing more is started


def test_a_waiting_run_asked_to_stop_whose_runner_is_gone_is_reaped_cancelled(world: Any) -> None:
    run = waiting_run(world, RunState.GONE, kill_requested_at=world.clock.now().isoformat())
    seen = world.container.reads.reads().status(run.run_id)
    assert (seen["terminal"], seen["outcome"]) == (True, "cancelled")
    assert world.spawner.spawned == []


def test_two_observers_judging_one_generation_start_one_runner(world: Any) -> None:
    run = waiting_run(world, RunState.GONE)
    launched: list[str] = []
    first = Restarter(world.store, lambda r: launched.append(r.run_id), world.clock)
    second = Restarter(world.store, lambda r: launched.append(r.run_id), world.clock)
    assert first.restart(run) is not None
    assert second.restart(run) is None  # the generation moved on: the fence holds
    assert launched == [run.run_id]


def test_a_dependency_that_will_get_no_end_by_itself_is_named_on_the_waiting_run(world: Any) -> None:
    stuck = a_run(world.store, world.clock.now(), RunState.AGED_PREPARING, prober=world.prober)
    run = a_run(world.store, world.clock.now(), RunState.WAITING, prober=world.prober, pid=5151,
                after=[Dependency(stuck.run_id, "any")])
    seen = world.container.reads.reads().status(run.run_id)
    assert seen["status"] == "waiting" and seen["after"] == [
        {"run_id": stuck.run_id, "condition": "any", "status": "running", "terminal": False, "outcome": None,
         "state": "unresolved_spawn", "matched": None}]
    from lionrun.entrypoints.verbs.job_status import after_lines

    assert "no end will come by itself" in after_lines(seen)[0]
