"""The wire model: one msgspec Struct per answer, serialised by msgspec."""

from __future__ import annotations

import json

from msgspec.structs import fields

from lionrun.domain.availability import ConsoleAvailability, ManifestAvailability
from lionrun.domain.run import DeliveryValue
from lionrun.domain.wire import DeliveryAvailability, Lifecycle, Row, RowError, StatusData, to_wire


def test_a_row_carries_exactly_the_lifecycle_fields_and_its_error() -> None:
    """A field added to Lifecycle and forgotten in Row fails here (and in every list or wait)."""
    assert [f.name for f in fields(Row)] == [f.name for f in fields(Lifecycle)] + ["error"]
    assert all(f.name in {g.name for g in fields(StatusData)} for f in fields(Lifecycle))


def test_a_failed_row_is_all_nulls_beside_its_error() -> None:
    row = Row.failed("20260101T000000-abcdef", RowError.of("record_unusable", "bad", "malformed")).to_wire()
    assert row.pop("error") == {"kind": "record_unusable", "message": "bad", "reason_code": "malformed"}
    assert row.pop("run_id") == "20260101T000000-abcdef"
    assert set(row.values()) == {None}


def test_to_wire_turns_nested_structs_tuples_and_dicts_into_plain_json() -> None:
    delivery = DeliveryAvailability.of(DeliveryValue(attempted=True, ok=None))
    wired = to_wire({"d": delivery, "t": (1, 2)})
    assert wired == {
        "d": {"available": True, "value": {"attempted": True, "ok": None, "exit_code": None, "error": None,
                                           "failure_class": None},
              "reason_code": None, "detail": None},
        "t": (1, 2),  # msgspec keeps a tuple a tuple: the JSON is the same array
    }
    assert json.dumps(wired["t"]) == json.dumps([1, 2])


def test_an_unavailable_reading_keeps_its_wire_class() -> None:
    console = ConsoleAvailability.unavailable("missing", "console.log does not exist")
    assert console.to_wire() == {"available": False, "value": None, "reason_code": "missing",
                                 "detail": "console.log does not exist", "truncated": None}
    manifest = ManifestAvailability.recast(ManifestAvailability.of({"legs": []}))
    assert type(manifest) is ManifestAvailability and manifest.value == {"legs": []}


def test_the_start_up_answers_built_without_msgspec_are_the_wire_classes_field_for_field() -> None:
    """success/failure, handshake, --version and --help stay off msgspec for start-up time;
    what they build must be exactly what the wire classes (and so contract/v1) say."""
    from argparse import Namespace

    from lionrun.domain.contract import (
        CONTRACT_VERSION,
        IMPLEMENTATION,
        ErrorKind,
        failure,
        success,
    )
    from lionrun.domain.wire import Envelope, ErrorBody, HandshakeData, HelpData, VersionData
    from lionrun.entrypoints.dispatch import answer
    from lionrun.entrypoints.verbs import handshake

    assert success({"x": 1}) == Envelope(ok=True, contract_version=CONTRACT_VERSION, data={"x": 1},
                                          error=None).to_wire()
    body = ErrorBody(kind="not_found", message="gone", detail={"run_id": "r"})
    assert failure(ErrorKind.NOT_FOUND, "gone", {"run_id": "r"}) == Envelope(
        ok=False, contract_version=CONTRACT_VERSION, data=None, error=body).to_wire()
    shake = handshake.run(Namespace())
    assert shake == HandshakeData(**shake).to_wire()
    version = answer(["--version"])["data"]
    assert version == VersionData(version=version["version"], implementation=IMPLEMENTATION).to_wire()
    helped = answer(["--help"])["data"]
    assert helped == HelpData(help=helped["help"]).to_wire()
    assert list(shake) == [f.name for f in fields(HandshakeData)]


def test_a_records_free_form_parts_are_read_field_by_field_never_trusted() -> None:
    """runner_end, budget, attempts and approvals are dicts a runner wrote: a field of the wrong
    type is null (a bool is no number), a text is bounded, an attempt's own number is kept (0 too)."""
    from lionrun.domain.run import Run
    from lionrun.domain.wire import ApprovalValue, AttemptValue, BudgetValue, RunnerEnd

    run = Run(run_id="20261205T000000-abcdef", kind="agent", status="completed", submitted_at="2026-12-05T00:00:00Z",
              spawn_state="started",
              runner_end={"status": "x" * 300, "outcome": 3, "exit_code": True, "found": {"status": "completed"}},
              budget={"max_tokens": 9, "max_cost_usd": 1, "spent_tokens": 2.5, "spent_cost_usd": False,
                      "exceeded": "time"},
              attempts=[{"attempt": 0, "status": "failed"}, "junk", {"attempt": True, "next_at": 7}])
    end = RunnerEnd.of(run)
    assert end is not None and end.status == "x" * 200 and end.outcome is None and end.exit_code is None
    assert end.found_status == "completed" and end.found_terminal_source is None
    assert BudgetValue.of(run) == BudgetValue(max_tokens=9, max_cost_usd=1.0, spent_tokens=None,
                                              spent_cost_usd=None, exceeded=None)
    attempts = AttemptValue.of(run)
    assert attempts is not None and [(a.attempt, a.status, a.next_at) for a in attempts] == [(0, "failed", None),
                                                                                          (3, None, None)]
    approval = ApprovalValue.of({"run_id": "r", "id": "a1", "tool": "T" * 300, "input": {"k": 1},
                                 "message": "m" * 3000, "behavior": 1})
    assert approval.tool == "T" * 200 and approval.message == "m" * 2000 and approval.behavior is None
    assert approval.requested_at is None and approval.input == {"k": 1}
