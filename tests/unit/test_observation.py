"""D10's bounds and the producer's floor, as pure functions."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.lifecycle import Derivation
from lionrun.domain.observation import (
    MAX_WAIT_BOUNDS,
    MAX_WAIT_DEFAULT,
    POLL_BOUNDS,
    POLL_DEFAULT,
    clamp,
    echo_of,
    next_sleep,
    timed_out,
)
from lionrun.domain.partition import Partition, partition

requests = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.floats(allow_nan=False).map(str), st.integers().map(str),
)
bounds = st.sampled_from([(MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT), (POLL_BOUNDS, POLL_DEFAULT)])
partitions = st.builds(
    Partition,
    terminal=st.lists(st.just("t"), max_size=1).map(tuple),
    pending=st.lists(st.just("p"), max_size=1).map(tuple),
    stopped_without_end=st.lists(st.just("s"), max_size=1).map(tuple),
    unresolved_spawn=st.lists(st.just("u"), max_size=1).map(tuple),
    errored=st.lists(st.just("e"), max_size=1).map(tuple),
)
remainders = st.floats(min_value=-10, max_value=700, allow_nan=False)
polls = st.floats(min_value=POLL_BOUNDS[0], max_value=POLL_BOUNDS[1])


@given(requests, bounds)
def test_the_effective_value_always_lies_within_the_bounds(requested: object, spec: tuple) -> None:
    (low, high), default = spec
    assert low <= clamp(requested, (low, high), default).effective <= high


@given(requests, bounds)
def test_the_echo_is_always_expressible_in_json(requested: object, spec: tuple) -> None:
    bounds_, default = spec
    json.dumps(clamp(requested, bounds_, default).requested, allow_nan=False)


@given(st.one_of(st.floats(max_value=-1e-9), st.integers(max_value=-1), st.just(math.nan),
                 st.text(alphabet="abcxyz", min_size=1), st.booleans(), st.just(""), st.just("nan")))
def test_nan_negative_and_non_numbers_clamp_low(requested: object) -> None:
    assert clamp(requested, MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT).effective == 0.0
    assert clamp(requested, POLL_BOUNDS, POLL_DEFAULT).effective == 0.05


def test_an_absent_value_means_the_default_and_echoes_null() -> None:
    window, poll = clamp(None, MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT), clamp(None, POLL_BOUNDS, POLL_DEFAULT)
    assert (window.requested, window.effective, poll.requested, poll.effective) == (None, 60.0, None, 1.0)


def test_values_above_the_bounds_clamp_high() -> None:
    assert clamp("601", MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT).effective == 600.0
    assert clamp(10**400, MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT).effective == 600.0
    assert clamp("inf", POLL_BOUNDS, POLL_DEFAULT).effective == 60.0


def test_numeric_text_is_echoed_as_its_number_and_other_text_as_given() -> None:
    assert [echo_of(v) for v in ("5", " 0.5 ", "abc", "nan", "-inf", "")] == [5, 0.5, "abc", "nan", "-inf", ""]
    assert echo_of(math.nan) == "nan" and echo_of(3) == 3 and echo_of(True) is True


@given(partitions, st.booleans(), polls)
def test_max_wait_zero_is_never_taxed(part: Partition, waited: bool, poll: float) -> None:
    assert next_sleep(part, waited, 0.0, poll) is None


@given(partitions, remainders, polls)
def test_a_call_that_already_waited_pays_nothing_extra(part: Partition, remaining: float, poll: float) -> None:
    if part.settled:
        assert next_sleep(part, True, remaining, poll) is None


@given(partitions, st.booleans(), remainders, polls)
def test_a_sleep_is_never_longer_than_one_interval_or_what_is_left(
    part: Partition, waited: bool, remaining: float, poll: float,
) -> None:
    pause = next_sleep(part, waited, remaining, poll)
    assert pause is None or 0 < pause <= min(poll, remaining)


@given(partitions, st.booleans(), st.floats(min_value=0.001, max_value=700), polls)
def test_pending_ids_hold_the_window_open(part: Partition, waited: bool, remaining: float, poll: float) -> None:
    if part.pending:
        assert next_sleep(part, waited, remaining, poll) == min(poll, remaining)


@given(partitions, st.floats(min_value=0.001, max_value=700), polls)
def test_a_call_about_to_answer_at_once_beside_a_special_id_sleeps_one_interval(
    part: Partition, remaining: float, poll: float,
) -> None:
    pause = next_sleep(part, False, remaining, poll)
    if part.settled and part.needs_floor:
        assert pause == min(poll, remaining)
    if part.settled and not part.needs_floor:
        assert pause is None


def simulate(max_wait: float, poll: float, passes: list[Partition]) -> tuple[float, int]:
    """Drive next_sleep the way the wait loop does; returns (time slept, observations made)."""
    slept, waited, observations = 0.0, False, 0
    for part in passes:
        observations += 1
        pause = next_sleep(part, waited, max_wait - slept, poll)
        if pause is None:
            break
        slept, waited = slept + pause, True
    return slept, observations


@given(st.floats(min_value=0, max_value=600), polls, st.lists(partitions, min_size=1, max_size=40))
def test_a_call_never_outlives_its_window(max_wait: float, poll: float, passes: list[Partition]) -> None:
    slept, _ = simulate(max_wait, poll, passes)
    assert slept <= max_wait + 1e-9


@given(st.floats(min_value=0.001, max_value=600), polls, st.lists(partitions, min_size=2, max_size=40))
def test_the_floor_is_paid_at_most_once_and_buys_one_more_observation(
    max_wait: float, poll: float, passes: list[Partition],
) -> None:
    settled = [p for p in passes if p.settled]
    if len(settled) != len(passes):
        return  # only calls where nothing was ever pending
    slept, observations = simulate(max_wait, poll, passes)
    if passes[0].needs_floor:
        assert (slept, observations) == (min(poll, max_wait), 2)
    else:
        assert (slept, observations) == (0.0, 1)


def test_timed_out_means_ids_were_still_pending() -> None:
    d = Derivation(status="running", terminal=False, outcome=None, reason_code=None, alive=True,
                   possibly_orphaned=False, stopped=False, aged_preparing=False, age_seconds=0.0)
    assert timed_out(partition([("a", d)])) is True
    assert timed_out(partition([])) is False
