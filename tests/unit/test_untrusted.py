"""lionrun.domain.untrusted and parse_record: hostile bytes are refused per item, with a reason, never raised raw."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lionrun.domain.run import RecordUnusable, Run, parse_record
from lionrun.domain.untrusted import (
    MAX_JSON_DEPTH,
    RECORD_MAX_BYTES,
    Untrusted,
    depth_exceeds,
    parse_json,
)

RUN_ID = "20260725T175010-abcdef"


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


def valid_record(run_id: str = RUN_ID, **changes: object) -> bytes:
    data = Run(run_id, "agent", "running", "2026-07-25T17:50:10.000000+00:00", spawn_state="started").to_dict()
    data.update(changes)
    return json.dumps(data).encode()


def test_a_record_of_a_hundred_thousand_brackets_is_too_deep_not_a_recursion_error() -> None:
    with pytest.raises(RecordUnusable) as refused:
        parse_record(b"[" * 100_000 + b"]" * 100_000, RUN_ID)
    assert refused.value.reason_code == "too_deep"


def test_nesting_just_past_the_bound_is_too_deep_and_at_the_bound_is_not() -> None:
    assert parse_json(json.dumps(nested(MAX_JSON_DEPTH)).encode(), "x") == nested(MAX_JSON_DEPTH)
    with pytest.raises(Untrusted) as refused:
        parse_json(json.dumps(nested(MAX_JSON_DEPTH + 1)).encode(), "x")
    assert refused.value.reason_code == "too_deep"


def test_invalid_utf8_is_malformed() -> None:
    with pytest.raises(RecordUnusable) as refused:
        parse_record(b'{"run_id": "\xff\xfe"}', RUN_ID)
    assert refused.value.reason_code == "malformed"


def test_a_record_over_the_size_bound_is_too_large_before_it_is_parsed() -> None:
    with pytest.raises(RecordUnusable) as refused:
        parse_record(b" " * (RECORD_MAX_BYTES + 1), RUN_ID)
    assert refused.value.reason_code == "too_large"


def test_a_record_naming_another_run_is_never_answered_under_either_id() -> None:
    with pytest.raises(RecordUnusable) as refused:
        parse_record(valid_record(run_id="20260725T175010-000000"), RUN_ID)
    assert refused.value.reason_code == "run_id_mismatch"


def test_a_record_without_spawn_state_is_not_inferred_preparing() -> None:
    data = json.loads(valid_record())
    del data["spawn_state"]
    assert parse_record(json.dumps(data).encode(), RUN_ID).spawn_state is None


def test_a_record_with_its_spawn_state_keeps_it() -> None:
    assert parse_record(valid_record(), RUN_ID).spawn_state == "started"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=40,
)


def true_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((true_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((true_depth(v) for v in value), default=0)
    return 0


@settings(max_examples=200)
@given(json_values, st.integers(min_value=0, max_value=8))
def test_depth_exceeds_agrees_with_the_recursive_definition(value: object, bound: int) -> None:
    assert depth_exceeds(value, bound) == (true_depth(value) > bound)


@settings(max_examples=300)
@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_are_a_record_or_a_reasoned_refusal(raw: bytes) -> None:
    try:
        run = parse_record(raw, RUN_ID)
    except RecordUnusable as refused:
        assert refused.reason_code and refused.detail
    else:
        assert run.run_id == RUN_ID
