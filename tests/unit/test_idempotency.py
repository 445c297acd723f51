"""The idempotency key's checks, the name a store files it under, and "the same request"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.idempotency import KEY_MAX_CHARS, check_key, fingerprint, key_name
from lionrun.domain.request import Leg, ModelSpec, RunRequest


def request(prompt: str = "echo hi", **fields: object) -> RunRequest:
    return RunRequest(kind="agent", instruction=prompt, legs=(Leg("main", ModelSpec("sh")),), cwd="/tmp", **fields)


@given(st.text(alphabet=st.characters(min_codepoint=32, exclude_characters="\x7f"), min_size=1, max_size=KEY_MAX_CHARS))
def test_any_printable_key_up_to_the_bound_is_kept_and_named_safely(key: str) -> None:
    assert check_key(key) == key
    name = key_name(key)
    assert len(name) == 64 and set(name) <= set("0123456789abcdef")


@pytest.mark.parametrize("key", ["", "x" * (KEY_MAX_CHARS + 1), "a\nb", "tab\there", "del\x7f", None, 3])
def test_a_bad_key_is_invalid_input(key: object) -> None:
    with pytest.raises(ContractError) as refused:
        check_key(key)
    assert refused.value.kind is ErrorKind.INVALID_INPUT


def test_the_fingerprint_is_the_whole_request_and_its_instruction() -> None:
    assert fingerprint(request()) == fingerprint(request())
    assert fingerprint(request()) != fingerprint(request("echo other"))
    assert fingerprint(request()) != fingerprint(request(label="x"))
    assert fingerprint(request()) != fingerprint(request(timeout=5.0))
