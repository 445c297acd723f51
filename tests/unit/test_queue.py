"""Queues: settings, first come first served, pauses that end by themselves, `queued`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError
from lionrun.domain.lifecycle import derive
from lionrun.domain.queue import (
    BACKOFF_MAX_SECONDS,
    QUEUED,
    RATE_LIMITED,
    QueueRefused,
    QueueSettings,
    ahead_of,
    check_parallel,
    check_queue_name,
    entry_name,
    is_paused,
    parse_entry,
    pause,
    pause_reason,
    places_of,
    position,
    rate_limited,
    resume,
    set_parallel,
)
from lionrun.domain.run import STARTED, Run, iso
from lionrun.domain.vocabulary import STATUSES_AT_V1

NOW = datetime(2026, 12, 4, 2, 0, tzinfo=UTC)
RUN_IDS = st.builds(lambda s, h: f"20261204T{s:06d}-{h:06x}", st.integers(0, 235959), st.integers(0, 0xFFFFFF))


def test_a_queue_name_is_lowercase_and_bounded() -> None:
    assert check_queue_name("claude") == "claude"
    assert check_queue_name("gpu-1.fast_lane") == "gpu-1.fast_lane"
    for bad in ("", "Claude", "-x", "a/b", "..", "x" * 64, 3, None):
        with pytest.raises(ContractError) as caught:
            check_queue_name(bad)
        assert caught.value.detail["argument"] == "--queue"


def test_a_parallel_limit_is_a_positive_integer() -> None:
    assert check_parallel(4) == 4
    for bad in (0, -1, True, 4.0, "4", 10_001):
        with pytest.raises(ContractError):
            check_parallel(bad)


@given(st.sampled_from([None, 1, 4, 10_000]), st.booleans(), st.one_of(st.none(), st.just(iso(NOW))),
       st.one_of(st.none(), st.text(max_size=20)))
def test_settings_read_back_are_the_settings_written(parallel: int | None, paused: bool, until: str | None,
                                                       reason: str | None) -> None:
    settings = QueueSettings(name="q", parallel=parallel, paused=paused, paused_until=until, paused_reason=reason)
    assert QueueSettings.from_dict(settings.to_dict()) == settings


@pytest.mark.parametrize("data", [
    None, [], {"name": "Q"}, {"name": "q", "parallel": 0}, {"name": "q", "parallel": "4"},
    {"name": "q", "paused": "yes"}, {"name": "q", "paused_until": "tomorrow"},
    {"name": "q", "paused_until": "2026-12-04T02:00:00"}, {"name": "q", "schema_version": 2},
])
def test_malformed_settings_are_refused_never_half_believed(data: object) -> None:
    with pytest.raises(QueueRefused):
        QueueSettings.from_dict(data)


def test_a_person_pause_lasts_until_resumed() -> None:
    paused = pause(QueueSettings(name="q", parallel=2))
    assert is_paused(paused, NOW + timedelta(days=365))
    assert pause_reason(paused, NOW) == "paused"
    assert not is_paused(resume(paused), NOW)
    assert pause_reason(resume(paused), NOW) is None


def test_a_rate_limit_pauses_until_the_vendor_reset_then_opens_by_itself() -> None:
    reset = NOW + timedelta(minutes=5)
    paused = rate_limited(QueueSettings(name="q", parallel=2), "20261204T020000-abcdef", iso(reset), NOW)
    assert paused.paused_until == iso(reset) and paused.paused_by == "20261204T020000-abcdef"
    assert pause_reason(paused, NOW) == RATE_LIMITED
    assert is_paused(paused, reset - timedelta(seconds=1))
    assert not is_paused(paused, reset + timedelta(microseconds=1))
    assert not paused.paused  # nothing for a person to undo


@pytest.mark.parametrize("retry_at", [None, "soon", iso(NOW - timedelta(seconds=1)),
                                      iso(NOW + timedelta(seconds=BACKOFF_MAX_SECONDS + 1))])
def test_a_rate_limit_without_a_believable_reset_backs_off_a_bounded_while(retry_at: str | None) -> None:
    paused = rate_limited(QueueSettings(name="q"), "20261204T020000-abcdef", retry_at, NOW, backoff=30)
    assert paused.paused_until == iso(NOW + timedelta(seconds=30))


def test_a_later_pause_already_set_is_kept_and_a_person_pause_stays_theirs() -> None:
    later = rate_limited(QueueSettings(name="q"), "20261204T020000-aaaaaa", iso(NOW + timedelta(hours=1)), NOW)
    assert rate_limited(later, "20261204T020001-bbbbbb", iso(NOW + timedelta(minutes=1)), NOW) == later
    person = rate_limited(pause(QueueSettings(name="q")), "20261204T020000-aaaaaa", None, NOW)
    assert person.paused and pause_reason(person, NOW) == "paused"
    assert not is_paused(resume(person), NOW)


def test_set_parallel_refuses_what_check_parallel_refuses() -> None:
    assert set_parallel(QueueSettings(name="q"), 3).parallel == 3
    assert set_parallel(QueueSettings(name="q", parallel=3), None).parallel is None
    with pytest.raises(ContractError):
        set_parallel(QueueSettings(name="q"), 0)


@given(st.integers(0, 10**12 - 1), RUN_IDS)
def test_an_entry_name_gives_back_its_ticket_and_run(ticket: int, run_id: str) -> None:
    assert parse_entry(entry_name(ticket, run_id)) == (ticket, run_id)


@pytest.mark.parametrize("name", ["", "x", "12-20261204T020000-abcdef", ".tmp-000000000001-20261204T020000-abcdef",
                                  "000000000001-20261204T020000-ABCDEF"])
def test_a_stray_name_is_no_waiter(name: str) -> None:
    assert parse_entry(name) is None
    assert places_of([name]) == []


@given(st.lists(st.tuples(st.integers(0, 10_000), RUN_IDS), unique_by=lambda e: e[1], min_size=1, max_size=30))
def test_the_line_is_first_come_first_served_by_ticket(entries: list[tuple[int, str]]) -> None:
    line = [(t, r) for t, r, _ in places_of([entry_name(t, r) for t, r in entries])]
    assert line == sorted(entries)
    for index, (_ticket, run_id) in enumerate(line):
        assert position(line, run_id) == index + 1
        assert ahead_of(line, run_id) == list(reversed(line[:index]))  # nearest first
    first = line[0][1]
    assert ahead_of(line, first) == [] and position(line, "20991231T235959-ffffff") is None


def test_entry_tickets_must_fit_their_digits() -> None:
    with pytest.raises(ValueError):
        entry_name(10**12, "20261204T020000-abcdef")


# --- `queued` in the vocabulary: D4, D6, D10 ---------------------------------------------------


def queued_run(**changes: object) -> Run:
    run = Run(run_id="20261204T020000-abcdef", kind="agent", status=QUEUED, submitted_at=iso(NOW),
              spawn_state=STARTED, queue="q")
    return run.evolve(**changes)


def test_queued_is_a_status_of_this_version() -> None:
    assert QUEUED in STATUSES_AT_V1


def test_a_queued_run_is_never_terminal_and_never_carries_an_outcome() -> None:
    d = derive(queued_run(), None, NOW)
    assert (d.status, d.terminal, d.outcome, d.stopped) == ("queued", False, None, False)


def test_a_queued_run_whose_record_names_an_outcome_still_has_none_until_an_end() -> None:
    d = derive(queued_run(outcome="succeeded"), None, NOW)
    assert d.terminal is False and d.outcome is None
