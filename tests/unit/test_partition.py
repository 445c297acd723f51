"""D10's four-way partition, as a pure function: disjoint, exhaustive, and keyed on what is known."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.lifecycle import Derivation
from lionrun.domain.partition import (
    BUCKETS,
    PENDING,
    STOPPED_WITHOUT_END,
    TERMINAL,
    UNRESOLVED_SPAWN,
    Partition,
    bucket_of,
    partition,
)


def derivation(terminal: bool = False, stopped: bool = False, aged_preparing: bool = False) -> Derivation:
    return Derivation(
        status="completed" if terminal else "running", terminal=terminal,
        outcome="succeeded" if terminal else None, reason_code=None, alive=None,
        possibly_orphaned=stopped or aged_preparing, stopped=stopped, aged_preparing=aged_preparing,
        age_seconds=0.0,
    )


derivations = st.builds(derivation, st.booleans(), st.booleans(), st.booleans())
ids = st.sampled_from([f"20260725T1750{n:02d}-00000{n % 10}" for n in range(12)] + ["bogus", ""])
observations = st.lists(st.tuples(ids, st.one_of(st.none(), derivations)), max_size=30)


def buckets_and_errors(part: Partition) -> list[tuple[str, ...]]:
    return [getattr(part, name) for name in BUCKETS] + [part.errored]


@given(observations)
def test_every_observed_id_is_in_exactly_one_bucket_or_the_error_channel(observed: list) -> None:
    part = partition(observed)
    placed = [run_id for group in buckets_and_errors(part) for run_id in group]
    assert sorted(placed) == sorted({run_id for run_id, _ in observed})


@given(observations)
def test_an_id_that_could_not_be_observed_is_in_no_bucket(observed: list) -> None:
    part = partition(observed)
    first = dict(reversed(observed))  # the first observation of each id wins
    for run_id, seen in first.items():
        assert (part.bucket(run_id) is None) == (seen is None)


@given(observations)
def test_all_terminal_holds_exactly_when_everything_observed_ended(observed: list) -> None:
    part = partition(observed)
    first = dict(reversed(observed))
    expected = bool(first) and all(d is not None and d.terminal for d in first.values())
    assert part.all_terminal is expected


@given(observations)
def test_buckets_keep_first_seen_order(observed: list) -> None:
    part = partition(observed)
    order = list(dict.fromkeys(run_id for run_id, _ in observed))
    for group in buckets_and_errors(part):
        assert list(group) == [run_id for run_id in order if run_id in group]


@given(derivations)
def test_a_recorded_end_is_terminal_whatever_else_is_flagged(d: Derivation) -> None:
    if d.terminal:
        assert bucket_of(d) == TERMINAL


def test_a_fresh_preparing_record_stays_pending() -> None:
    assert bucket_of(derivation()) == PENDING


def test_an_aged_preparing_record_is_an_unresolved_spawn_not_a_stopped_run() -> None:
    assert bucket_of(derivation(aged_preparing=True)) == UNRESOLVED_SPAWN


def test_a_stopped_run_without_an_end_is_stopped_without_end() -> None:
    assert bucket_of(derivation(stopped=True)) == STOPPED_WITHOUT_END


def test_a_duplicated_id_is_placed_once() -> None:
    part = partition([("a", derivation(terminal=True)), ("a", derivation(terminal=True))])
    assert part.terminal == ("a",)


def test_nothing_observed_is_not_all_terminal() -> None:
    assert partition([]).all_terminal is False


def test_a_per_id_error_forces_all_terminal_false() -> None:
    part = partition([("a", derivation(terminal=True)), ("b", None)])
    assert part.all_terminal is False and part.errored == ("b",)


def test_only_pending_ids_hold_the_window_open() -> None:
    assert partition([("a", derivation())]).settled is False
    settled = partition([("a", derivation(stopped=True)), ("b", derivation(aged_preparing=True)), ("c", None)])
    assert settled.settled is True


def test_either_special_list_asks_for_the_floor_and_nothing_else_does() -> None:
    assert partition([("a", derivation(stopped=True))]).needs_floor is True
    assert partition([("a", derivation(aged_preparing=True))]).needs_floor is True
    assert partition([("a", derivation(terminal=True)), ("b", None), ("c", derivation())]).needs_floor is False
