"""`@last` names the newest run, even among runs made in one second (ids count seconds): pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.run import last_of, resolve_short_id

SECOND = "20261205T061500"


def ids_of(suffixes: list[str], second: str = SECOND) -> list[str]:
    return [f"{second}-{suffix}" for suffix in suffixes]


def test_of_runs_made_in_one_second_the_last_submitted_is_last_whatever_its_digits() -> None:
    older, newer = f"{SECOND}-ffffff", f"{SECOND}-000001"
    times = {older: "2026-12-05T06:15:00.100000+00:00", newer: "2026-12-05T06:15:00.900000+00:00"}
    newest_first = sorted(times, reverse=True)
    assert newest_first[0] == older  # the ids alone would name the older
    assert last_of(newest_first, times.get) == newer
    assert resolve_short_id("@last", newest_first, times.get) == newer


def test_a_run_in_a_later_second_is_last_and_no_record_is_asked() -> None:
    asked: list[str] = []

    def submitted(run_id: str) -> str | None:
        asked.append(run_id)
        return None

    ids = ["20261205T061501-000000", f"{SECOND}-ffffff"]
    assert last_of(ids, submitted) == ids[0] and asked == []
    assert last_of([], submitted) is None
    assert last_of(ids) == ids[0]  # without records: the ids' own order


def test_a_record_that_cannot_be_read_counts_as_the_oldest() -> None:
    ids = [f"{SECOND}-ffffff", f"{SECOND}-000001"]
    assert last_of(ids, {ids[1]: "2026-12-05T06:15:00.000001+00:00"}.get) == ids[1]


@given(st.dictionaries(st.text("0123456789abcdef", min_size=6, max_size=6),
                       st.integers(0, 999_999), min_size=1, max_size=20, ))
def test_last_is_the_run_submitted_last_in_the_newest_second(stamps: dict[str, int]) -> None:
    times = {f"{SECOND}-{suffix}": f"2026-12-05T06:15:00.{micro:06d}+00:00" for suffix, micro in stamps.items()}
    older = {f"20261205T061459-{suffix}": "2026-12-05T06:14:59.999999+00:00" for suffix in stamps}
    newest_first = sorted([*times, *older], reverse=True)
    found = last_of(newest_first, {**times, **older}.get)
    assert found in times and times[found] == max(times.values())
