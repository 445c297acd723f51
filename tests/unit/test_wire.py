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
