"""The waiter over a RunChanges port (fake): a change wakes it before the poll is due, it watches
only what is still open, a snapshot never sets a watch up, and no change made between an
observation and the watch is missed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from lionrun.adapters.fakes import ScriptedProber
from lionrun.application.wait import Waiter
from tests.builders import EventClock, build, end, with_event_clock
from tests.worlds import World, make_world


class FakeWatch:
    """Wakes after `after` seconds of the fake clock when a change is scheduled, else sleeps it all."""

    def __init__(self, changes: FakeChanges, run_ids: Sequence[str]) -> None:
        self.changes, self.run_ids, self.closed = changes, list(run_ids), False

    def wait(self, timeout: float) -> bool:
        self.changes.waits.append(timeout)
        pending = self.changes.scheduled
        if pending is not None and pending[0] <= timeout:
            after, action = pending
            self.changes.scheduled = None
            self.changes.clock.sleep(after)
            action()
            return True
        self.changes.clock.sleep(timeout)
        return False

    def close(self) -> None:
        self.closed = True


class FakeChanges:
    def __init__(self, clock: EventClock) -> None:
        self.clock = clock
        self.watches: list[FakeWatch] = []
        self.waits: list[float] = []
        self.scheduled: tuple[float, Callable[[], None]] | None = None

    def change_after(self, seconds: float, action: Callable[[], None]) -> None:
        self.scheduled = (seconds, action)

    def watch(self, run_ids: Sequence[str]) -> FakeWatch:
        watch = FakeWatch(self, run_ids)
        self.watches.append(watch)
        return watch


@pytest.fixture
def world(tmp_path: Any) -> World:
    world: World = with_event_clock(make_world("memory", str(tmp_path)), ScriptedProber())
    return world


def waiter(world: World, changes: FakeChanges) -> Waiter:
    return Waiter(world.container.reads.observer(), world.clock, changes)


def ends(world: World, run_id: str) -> Callable[[], None]:
    def act() -> None:
        end(world.store, run_id, "completed", now=world.clock.now())
        world.prober.kill(world.store.read(run_id).pid)

    return act


def test_an_end_recorded_during_a_five_second_poll_wakes_the_wait_at_once(world: World) -> None:
    busy = build(world, world.clock, "running", 61001)
    changes = FakeChanges(world.clock)
    changes.change_after(0.05, ends(world, busy))
    start = world.clock.monotonic()
    result = waiter(world, changes).wait([busy], 60, 5)
    assert result.partition.all_terminal and not result.interrupted
    assert world.clock.monotonic() - start == pytest.approx(0.05)  # not the 5 s poll
    assert changes.waits == [5] and changes.watches[0].closed


def test_without_a_change_the_poll_still_paces_the_observations(world: World) -> None:
    busy = build(world, world.clock, "running", 61002)
    changes = FakeChanges(world.clock)
    result = waiter(world, changes).wait([busy], 3, 1)
    assert list(result.partition.pending) == [busy]
    assert changes.waits == [1, 1, 1]  # the floor: one observation per poll interval, as before
    assert len(changes.watches) == 1 and changes.watches[0].closed


def test_only_the_runs_still_open_are_watched(world: World) -> None:
    done = build(world, world.clock, "completed", 61003)
    busy = build(world, world.clock, "running", 61004)
    changes = FakeChanges(world.clock)
    waiter(world, changes).wait([done, busy, "../not-a-run"], 1, 1)
    assert [w.run_ids for w in changes.watches] == [[busy]]


@pytest.mark.parametrize("max_wait", ["0", 60])
def test_a_snapshot_or_a_wait_on_ended_runs_never_sets_a_watch_up(world: World, max_wait: Any) -> None:
    done = build(world, world.clock, "completed", 61005)
    changes = FakeChanges(world.clock)
    result = waiter(world, changes).wait([done], max_wait, 5)
    assert result.partition.all_terminal and changes.watches == [] and changes.waits == []


def test_an_end_recorded_between_the_first_pass_and_the_watch_is_not_missed(world: World) -> None:
    busy = build(world, world.clock, "running", 61006)
    changes = FakeChanges(world.clock)
    observer = world.container.reads.observer()
    real_watch = changes.watch

    def watch_after_end(run_ids: Sequence[str]) -> FakeWatch:
        ends(world, busy)()  # the end lands after the pass saw the run open, before the watch began
        return real_watch(run_ids)

    changes.watch = watch_after_end  # type: ignore[method-assign]
    start = world.clock.monotonic()
    result = Waiter(observer, world.clock, changes).wait([busy], 60, 5)
    assert result.partition.all_terminal
    assert world.clock.monotonic() == start and changes.waits == []  # seen by the watched re-pass


def test_with_no_run_changes_the_wait_sleeps_on_its_clock(world: World) -> None:
    busy = build(world, world.clock, "running", 61007)
    result = Waiter(world.container.reads.observer(), world.clock).wait([busy], 2, 1)
    assert world.clock.naps == [1, 1] and result.passes == 3
