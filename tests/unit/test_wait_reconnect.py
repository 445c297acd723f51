"""A wait whose store stops answering (a dropped connection, a server away) tries
again within its window and keeps what it learned; only a store still away when the window closes
makes the call unavailable. A store away from the first look is said at once, as by every read."""

from __future__ import annotations

from typing import Any

import pytest

from lionrun.adapters.fakes import ScriptedProber
from lionrun.application.observe import Observer
from lionrun.application.ports import StoreUnavailable
from lionrun.application.wait import Waiter
from tests.builders import build, end, with_event_clock
from tests.worlds import World, make_world


class Flaky:
    """The world's store, whose reads fail as unavailable while `away` says so."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.away = lambda: False
        self.failed = 0

    def read(self, run_id: str) -> Any:
        if self.away():
            self.failed += 1
            raise StoreUnavailable("the PostgreSQL store did not answer: terminating connection")
        return self.store.read(run_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.fixture
def world(tmp_path: Any) -> World:
    world: World = with_event_clock(make_world("memory", str(tmp_path)), ScriptedProber())
    return world


def waiter(world: World, flaky: Flaky) -> Waiter:
    return Waiter(Observer(flaky, world.prober, world.clock), world.clock)


def test_a_wait_that_loses_its_store_mid_window_reconnects_and_still_answers(world: World) -> None:
    done = build(world, world.clock, "completed", 62001)
    busy = build(world, world.clock, "running", 62002)
    flaky = Flaky(world.store)
    start = world.clock.monotonic()

    def away() -> bool:  # the connection is lost for 3 s of the window, and the run ends meanwhile
        elapsed = world.clock.monotonic() - start
        if 1 <= elapsed < 4:
            if world.store.read(busy).end_recorded is False:
                end(world.store, busy, "completed", now=world.clock.now())
                world.prober.kill(world.store.read(busy).pid)
            return True
        return False

    flaky.away = away
    result = waiter(world, flaky).wait([done, busy], 30, 1)
    assert flaky.failed >= 1 and result.partition.all_terminal and not result.interrupted
    assert [seen.observed.run.status for seen in result.entries] == ["completed", "completed"]
    assert world.clock.monotonic() - start < 6  # tried again within the window, not after it


def test_a_store_still_away_when_the_window_closes_makes_the_wait_unavailable(world: World) -> None:
    busy = build(world, world.clock, "running", 62003)
    flaky = Flaky(world.store)
    start = world.clock.monotonic()
    flaky.away = lambda: world.clock.monotonic() - start >= 1
    with pytest.raises(StoreUnavailable):
        waiter(world, flaky).wait([busy], 5, 1)
    assert 5 <= world.clock.monotonic() - start <= 5.5  # the window, never past it
    flaky.away = lambda: True
    start = world.clock.monotonic()
    with pytest.raises(StoreUnavailable):  # away from the first look: said at once, as every read does
        waiter(world, flaky).wait([busy], 5, 1)
    assert world.clock.monotonic() == start
