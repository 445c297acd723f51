"""The run record: a lossless round trip, and one reading place that refuses what it does not know."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.run import (
    RECORD_SCHEMA_VERSION,
    DeliveryValue,
    Incarnation,
    RecordUnusable,
    Run,
    is_run_id,
    make_run_id,
)

STAMP = "2026-07-25T17:50:10.412331+00:00"


def full_run() -> Run:
    return Run(
        run_id="20260725T175010-97f334", kind="agent", status="completed_empty", submitted_at=STAMP,
        label="ünïcødé", spawn_state="started", started_at=STAMP, finished_at=STAMP,
        finished_at_precision="exact", pid=41234,
        incarnation=Incarnation("host", "boot", 41234, 1753465810.25, 41234),
        outcome="failed", reason_code="no_artifacts", exit_code=0, generation=3,
        kill_requested_at=None, notify=["notify-send", "{run_id}"], notify_source="flag",
        delivery=DeliveryValue(True, False, 2, "exit 2", "nonzero_exit"),
        terminal_source="runner", terminal_evidence={"finding": None}, model="sh", cwd="/tmp",
        timeout=30.5, extra={"legs": 2},
    )


def test_a_record_survives_a_json_round_trip_exactly() -> None:
    record = full_run()
    assert Run.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_a_written_record_carries_its_schema_version() -> None:
    assert full_run().to_dict()["schema_version"] == RECORD_SCHEMA_VERSION == 1


@given(st.text(max_size=20), st.text(max_size=20), st.none() | st.integers(min_value=1, max_value=2**31),
       st.integers(min_value=0, max_value=10**6))
def test_any_textual_status_and_label_round_trip(status: str, label: str, pid: int | None, generation: int) -> None:
    record = Run(run_id="20260725T175010-97f334", kind="flow", status=status, submitted_at=STAMP,
                 label=label, pid=pid, generation=generation, spawn_state="preparing")
    assert Run.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_unknown_fields_from_a_newer_writer_are_ignored() -> None:
    data = {**full_run().to_dict(), "a_field_from_the_future": {"x": 1}}
    assert Run.from_dict(data) == full_run()


@pytest.mark.parametrize("version", [2, 0, "1", 1.0, True, None, [1]])
def test_a_schema_version_it_does_not_know_is_refused(version: Any) -> None:
    data = {**full_run().to_dict(), "schema_version": version}
    with pytest.raises(RecordUnusable) as refused:
        Run.from_dict(data)
    assert refused.value.reason_code == "unknown_schema"


def broken(**changes: Any) -> dict[str, Any]:
    data = full_run().to_dict()
    for key, value in changes.items():
        if value is KeyError:
            del data[key]
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("data", [
    [], "record", None, 3,
    broken(run_id=KeyError), broken(status=KeyError), broken(submitted_at=KeyError),
    broken(status=7), broken(kind=None), broken(generation="3"), broken(generation=True),
    broken(pid="41234"), broken(pid=False), broken(submitted_at="yesterday"),
    broken(finished_at="2026-07-25T17:50:10"), broken(finished_at=12), broken(started_at="soon"),
    broken(kill_requested_at="later"), broken(incarnation="host"), broken(incarnation={"pid": 1}),
    broken(delivery=[True]), broken(outcome=1), broken(label=["x"]),
])
def test_a_malformed_record_is_refused_as_malformed(data: Any) -> None:
    with pytest.raises(RecordUnusable) as refused:
        Run.from_dict(data)
    assert refused.value.reason_code == "malformed"


def test_run_ids_are_the_only_names_that_can_name_a_run() -> None:
    assert is_run_id("20260725T175010-97f334")
    for bad in ["../../etc/passwd", "20260725T175010-97F334", "20260725T175010-97f334/..", "", "x" * 400,
                "20260725T175010-97f33", "20260725T175010-97f334\n", "/20260725T175010-97f334"]:
        assert not is_run_id(bad), bad


def test_a_made_run_id_sorts_by_time_and_is_valid() -> None:
    early = make_run_id(datetime(2026, 1, 1, tzinfo=UTC), "00000f")
    late = make_run_id(datetime(2026, 1, 2, tzinfo=UTC), "000000")
    assert is_run_id(early) and is_run_id(late) and early < late
    with pytest.raises(ValueError):
        make_run_id(datetime(2026, 1, 1, tzinfo=UTC), "XYZ")


def test_an_end_is_recorded_by_a_finish_time_or_a_spawn_failure_only() -> None:
    base = Run(run_id="20260725T175010-97f334", kind="agent", status="completed", submitted_at=STAMP, spawn_state="preparing")
    assert not base.end_recorded
    assert base.evolve(finished_at=STAMP).end_recorded
    assert base.evolve(spawn_state="failed").end_recorded


def test_a_spawn_state_outside_its_closed_vocabulary_is_read_as_none_recorded_never_echoed() -> None:
    import json

    from lionrun.domain.run import parse_record

    data = {"run_id": "20261203T080000-abcdef", "kind": "agent", "status": "running", "generation": 2,
            "submitted_at": "2026-12-03T08:00:00+00:00", "spawn_state": "bogus"}
    assert parse_record(json.dumps(data).encode(), "20261203T080000-abcdef").spawn_state is None


def _by_strptime(run_id: str) -> datetime | None:
    try:
        return datetime.strptime(run_id[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


_ID_CHARS = st.sampled_from("0123456789T-abf ")


@given(st.one_of(
    st.builds(lambda d, t, rest: f"{d}T{t}{rest}", st.text("0123456789", min_size=8, max_size=8),
              st.text("0123456789", min_size=6, max_size=6), st.text(max_size=8)),
    st.text(_ID_CHARS, max_size=24),
    st.text(max_size=24),
))
def test_submitted_second_reads_a_run_id_as_strptime_does(run_id: str) -> None:
    from lionrun.domain.run import submitted_second

    assert submitted_second(run_id) == _by_strptime(run_id)


@pytest.mark.parametrize("run_id", ["20260101T000019-000013", "20240229T235959-abcdef", "20230229T000000-0",
                                    "20261301T000000", "20260100T000000", "20260101T240000", "20260101T000060",
                                    "20260101T000061", "2026 101T000000", "20260101t000000", "2026010"])
def test_submitted_second_on_edges(run_id: str) -> None:
    from lionrun.domain.run import submitted_second

    assert submitted_second(run_id) == _by_strptime(run_id)
