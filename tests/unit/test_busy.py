"""One policy for a busy store: tried again `BUSY_TRIES` times, the backoff doubling."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.adapters.clocks import FakeClock
from lionrun.application.busy import BUSY_BACKOFF, BUSY_TRIES, busy_pauses, retry_busy
from lionrun.application.ports import StoreBusy, StoreRefused


class Busy:
    """Busy for the first `failures` calls, then answers `done`; counts the calls."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise StoreBusy("held")
        return "done"


def test_the_pauses_start_at_the_backoff_and_double() -> None:
    assert busy_pauses() == [BUSY_BACKOFF * 2 ** i for i in range(BUSY_TRIES - 1)]
    assert busy_pauses(3, 1.0) == [1.0, 2.0]
    assert busy_pauses(1, 1.0) == [] and busy_pauses(0, 1.0) == []


@given(st.integers(0, BUSY_TRIES - 1))
def test_a_store_busy_fewer_times_than_the_tries_gets_the_write(failures: int) -> None:
    clock, write = FakeClock(), Busy(failures)
    assert retry_busy(write, clock.sleep) == "done"
    assert write.calls == failures + 1 and clock.naps == busy_pauses()[:failures]


@given(st.integers(BUSY_TRIES, BUSY_TRIES + 20))
def test_a_store_that_stays_busy_is_tried_exactly_the_tries_then_passes_the_busy(failures: int) -> None:
    clock, write = FakeClock(), Busy(failures)
    with pytest.raises(StoreBusy):
        retry_busy(write, clock.sleep)
    assert write.calls == BUSY_TRIES and clock.naps == busy_pauses()


def test_a_store_that_refuses_is_not_tried_again() -> None:
    clock, calls = FakeClock(), []

    def refuse() -> None:
        calls.append(1)
        raise StoreRefused("disk")

    with pytest.raises(StoreRefused):
        retry_busy(refuse, clock.sleep)
    assert calls == [1] and clock.naps == []
