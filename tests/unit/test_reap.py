"""The fenced reap as the Observer runs it: compare-and-set, one winner, losers report the winner's end."""

from __future__ import annotations

from typing import Any

from lionrun.application.observe import Observer
from lionrun.domain.evidence import Finding
from lionrun.domain.lifecycle import reap
from lionrun.domain.run import iso
from tests.builders import Interleaved, RunState, a_run, assert_one_reap, end


def counting_observer(world: Any, store: Any, reaped: list[str]) -> Observer:
    return Observer(store, world.prober, world.clock, on_reaped=lambda run: reaped.append(run.run_id))


def test_a_gone_process_is_reaped_with_attributable_evidence(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    observed = world.container.reads.observer().observe(run.run_id)
    after = world.store.read(run.run_id)
    assert_one_reap(run, after)
    assert (after.status, after.outcome, after.finished_at_precision) == ("exited", "indeterminate", "upper_bound")
    assert after.terminal_evidence is not None
    assert after.terminal_evidence["observer"] == {"host_id": "host-a", "boot_id": "boot-1"}
    assert observed.derivation.terminal


def test_a_generation_moved_by_a_kill_request_is_re_judged_and_reaped_as_cancelled(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    kill = iso(world.clock.now())
    store = Interleaved(world.store, lambda: world.store.update(
        run.run_id, lambda r: r.evolve(kill_requested_at=kill)))
    reaped: list[str] = []
    observed = counting_observer(world, store, reaped).observe(run.run_id)
    assert (observed.derivation.outcome, observed.run.status) == ("cancelled", "cancelled")
    assert reaped == [run.run_id]


def test_a_reader_that_loses_to_another_reap_reports_the_published_end_and_sends_nothing(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    winner: list[str] = []
    loser: list[str] = []
    store = Interleaved(world.store, lambda: counting_observer(world, world.store, winner).observe(run.run_id))
    observed = counting_observer(world, store, loser).observe(run.run_id)
    assert observed.derivation.terminal and observed.derivation.outcome == "indeterminate"
    assert (winner, loser) == ([run.run_id], [])
    assert_one_reap(run, world.store.read(run.run_id))


def test_a_stalled_reaper_never_relabels_the_runners_end(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    reaped: list[str] = []
    store = Interleaved(world.store, lambda: end(world.store, run.run_id))
    observed = counting_observer(world, store, reaped).observe(run.run_id)
    after = world.store.read(run.run_id)
    assert (after.status, after.outcome, after.terminal_source, after.generation) == (
        "completed", "succeeded", None, run.generation + 1)
    assert observed.derivation.outcome == "succeeded" and reaped == []


def test_reap_refuses_a_foreign_finding_even_with_a_conclusive_code(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    assert reap(run, Finding("pid_absent", False, local=False), world.clock.now(), {}) is None


def test_reap_refuses_a_run_that_already_ended(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    end(world.store, run.run_id)
    ended = world.store.read(run.run_id)
    assert reap(ended, Finding("pid_absent", False), world.clock.now(), {}) is None


def test_an_ended_run_is_never_probed_or_touched(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    end(world.store, run.run_id)
    ended = world.store.read(run.run_id)
    observed = world.container.reads.observer().observe(run.run_id)
    assert observed.finding is None and world.store.read(run.run_id) == ended


def test_a_run_whose_runner_is_gone_but_whose_escaped_tool_lives_is_never_reaped_and_kill_reaches_it(
        world: Any) -> None:
    """An agent's shell tool in a session of its own, carrying the run's tag, is the run's."""
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    assert run.incarnation is not None and run.incarnation.create_time is not None
    world.prober.start(7001, create_time=run.incarnation.create_time + 1, run_id=run.run_id)
    world.prober.start(7002, create_time=run.incarnation.create_time + 1, run_id="20990101T000000-ffffff")
    observed = world.container.reads.observer().observe(run.run_id)
    assert (observed.derivation.terminal, world.store.read(run.run_id).end_recorded) == (False, False)
    killed = world.container.reads.killer().kill(run.run_id)
    assert killed["action"] == "signalled"
    assert {pid for pid, _ in world.signaller.signals} == {7001}  # never another run's tagged process


class NotMine:
    """A store another user owns, as the filesystem store answers a reader that is not its owner."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def read(self, run_id: str) -> Any:
        return self.inner.read(run_id)

    def update(self, run_id: str, change: Any, lock_timeout: float = 10.0) -> Any:
        from lionrun.application.ports import NotStoreOwner

        raise NotStoreOwner("/store", 65534, 0)


def test_a_reader_that_does_not_own_the_store_never_reaps_and_says_why(world: Any) -> None:
    """The orphan stays non-terminal, with the reason, and nothing is sent."""
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    reaped: list[str] = []
    observed = counting_observer(world, NotMine(world.store), reaped).observe(run.run_id)
    d = observed.derivation
    assert (d.terminal, d.outcome, d.possibly_orphaned, d.reap_withheld) == (False, None, True, "not_store_owner")
    assert reaped == [] and world.store.read(run.run_id) == run
