"""The envelope (D3) and the version constants (D2), as pure values."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import (
    CONTRACT_VERSION,
    ERROR_KINDS,
    MIN_SUPPORTED_VERSION,
    ContractError,
    ErrorKind,
    failure,
    is_well_formed,
    success,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def test_the_contract_version_is_the_integer_one_and_honours_itself() -> None:
    assert type(CONTRACT_VERSION) is int and CONTRACT_VERSION == 1
    assert type(MIN_SUPPORTED_VERSION) is int and 1 <= MIN_SUPPORTED_VERSION <= CONTRACT_VERSION


def test_the_error_kinds_are_exactly_the_closed_set_of_the_adr() -> None:
    assert {"not_found", "invalid_input", "conflict", "unavailable", "internal"} == ERROR_KINDS
    assert {k.value for k in ErrorKind} == ERROR_KINDS


def test_the_error_kind_enum_and_the_vocabulary_literal_never_drift() -> None:
    # domain.contract no longer checks this at import (it would import typing into every handshake).
    from typing import get_args

    from lionrun.domain.vocabulary import ErrorKindName

    assert [k.value for k in ErrorKind] == list(get_args(ErrorKindName))


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_a_success_carries_data_no_error_and_the_version(data: dict[str, object]) -> None:
    envelope = success(data)
    assert envelope == {"ok": True, "contract_version": 1, "data": data, "error": None}
    assert is_well_formed(json.loads(json.dumps(envelope)))


@given(st.sampled_from(list(ErrorKind)), st.text(min_size=1), st.none() | st.dictionaries(st.text(), st.integers()))
def test_a_failure_carries_an_error_no_data_and_the_version(
    kind: ErrorKind, message: str, detail: dict[str, int] | None
) -> None:
    envelope = failure(kind, message, detail)
    assert envelope["ok"] is False and envelope["data"] is None and envelope["contract_version"] == 1
    assert envelope["error"] == {"kind": kind.value, "message": message, "detail": detail}
    assert is_well_formed(json.loads(json.dumps(envelope)))


def test_a_kind_outside_the_closed_set_cannot_be_built() -> None:
    with pytest.raises(ValueError):
        failure("teapot", "no")  # type: ignore[arg-type]


def test_a_refusal_names_its_kind_message_and_detail() -> None:
    error = ContractError(ErrorKind.NOT_FOUND, "no run", {"run_id": "x"})
    assert (error.kind, error.message, error.detail) == (ErrorKind.NOT_FOUND, "no run", {"run_id": "x"})


@pytest.mark.parametrize("envelope", [
    {"ok": True, "contract_version": 1, "data": None, "error": None},
    {"ok": True, "contract_version": 1, "data": {}, "error": {"kind": "internal", "message": "x"}},
    {"ok": False, "contract_version": 1, "data": {}, "error": None},
    {"ok": True, "contract_version": 1, "data": None, "error": {"kind": "internal", "message": "x"}},
    {"ok": False, "contract_version": 1, "data": None, "error": {"kind": "teapot", "message": "x"}},
    {"ok": "yes", "contract_version": 1, "data": {}, "error": None},
    {"ok": True, "contract_version": "1", "data": {}, "error": None},
    {"ok": True, "contract_version": True, "data": {}, "error": None},
    {"ok": True, "data": {}, "error": None},
    [],
    "ok",
], ids=["both-null", "both-set", "ok-false-with-data", "ok-true-with-error", "unknown-kind",
        "ok-not-bool", "version-not-int", "version-bool", "no-version", "a-list", "a-string"])
def test_malformed_envelopes_are_recognised_as_malformed(envelope: object) -> None:
    assert not is_well_formed(envelope)
