"""`proctree.left_running`: a process of the run caught mid-exit after the leg ended is no stray."""

from __future__ import annotations

from lionrun.adapters.proctree import left_running


def scans(*tables: dict[int, int]):
    """A scan that answers each table in turn, then the last one for ever."""
    seen = list(tables)

    def find() -> dict[int, int]:
        return seen.pop(0) if len(seen) > 1 else seen[0]

    return find


def test_a_process_gone_by_the_second_look_is_not_left_running() -> None:
    assert left_running(scans({41: 7}, {})) == {}


def test_a_process_that_stays_is_left_running() -> None:
    assert left_running(scans({41: 7, 42: 9}, {41: 7}), settle=0.1) == {41: 7}


def test_a_stray_that_forked_on_its_way_out_is_found_in_its_child() -> None:
    # 41 double-forked and ended: 43 is its child, still the run's, and still left running
    assert left_running(scans({41: 7}, {43: 10}), settle=0.1) == {43: 10}


def test_nothing_found_answers_at_once() -> None:
    assert left_running(scans({}), settle=60.0) == {}
