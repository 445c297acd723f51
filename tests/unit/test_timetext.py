"""One time style for people: domain/timetext.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.timetext import age, clock, duration, moment


def test_durations() -> None:
    assert [duration(s) for s in (0, 5, 59, 60, 192, 3599, 3600, 7500, 86400, 90000)] == [
        "0s", "5s", "59s", "1m00s", "3m12s", "59m59s", "1h00m", "2h05m", "1d00h", "1d01h"]
    assert duration(-3) == "0s"


def test_ages() -> None:
    assert [age(s) for s in (42, 119, 120, 7199, 7200, 172800)] == ["42s", "119s", "2m", "119m", "2h", "2d"]


def test_clock_is_local_time_today_else_with_the_date() -> None:
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    assert len(clock(now, now)) == 8 and clock(now, now).count(":") == 2
    assert len(clock(now - timedelta(days=3), now)) == len("12-01 12:00")
    assert clock(now - timedelta(days=400), now).startswith("2025-")


def test_moment_needs_an_offset() -> None:
    assert moment("2026-12-04T02:43:44.961459+00:00") is not None
    assert moment("2026-12-04T02:43:44") is None and moment(None) is None and moment("x") is None


@given(st.integers(0, 10**8))
def test_a_duration_never_grows_past_six_characters(seconds: int) -> None:
    assert len(duration(seconds)) <= 6 or seconds >= 100 * 86400
