"""domain/retry.py: what is retried, and after how long."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError
from lionrun.domain.retry import BACKOFF_CAP, DEFAULT_ON, RetryPolicy, delay, parse_retry_on

NOW = datetime(2026, 12, 5, 12, tzinfo=UTC)


def test_only_the_named_reasons_are_retried_and_only_while_attempts_are_left() -> None:
    policy = RetryPolicy(retries=2)
    assert policy.on == DEFAULT_ON
    assert policy.retries_after(1, "provider_rate_limited") and policy.retries_after(2, "provider_overloaded")
    assert not policy.retries_after(3, "provider_rate_limited")
    for reason in ("exit_nonzero", "budget_exceeded", "timeout", "cancelled", "provider_auth", None):
        assert not policy.retries_after(1, reason)


@pytest.mark.parametrize("bad", ["exit_nonzero", "budget_exceeded", "timeout", "provider_auth", "", ","])
def test_a_failure_of_the_work_or_a_budget_cannot_be_named(bad: str) -> None:
    with pytest.raises(ContractError):
        parse_retry_on(bad)


@given(st.integers(1, 40), st.floats(0, 1), st.floats(0.01, BACKOFF_CAP))
def test_the_backoff_is_exponential_capped_and_jittered(attempt: int, jitter: float, base: float) -> None:
    policy = RetryPolicy(retries=50, backoff=base)
    wait = delay(policy, attempt, NOW, None, None, jitter)
    full = min(BACKOFF_CAP, base * 2 ** (attempt - 1))
    assert wait is not None and full / 2 <= wait <= full


def test_the_vendors_reset_wins_and_one_too_far_ends_the_retrying() -> None:
    policy = RetryPolicy(retries=3, backoff=1)
    assert delay(policy, 1, NOW, NOW + timedelta(seconds=90), None, 0.0) == 90
    assert delay(policy, 1, NOW, NOW - timedelta(seconds=5), None, 0.0) == 0
    assert delay(policy, 1, NOW, None, 12.5, 0.0) == 12.5
    assert delay(policy, 1, NOW, NOW + timedelta(days=1), None, 0.0) is None


def test_the_policy_travels_in_request_json() -> None:
    policy = RetryPolicy(retries=2, on=("provider_error",), backoff=1.5)
    assert RetryPolicy.from_dict(policy.to_dict()) == policy
    with pytest.raises((ValueError, ContractError)):
        RetryPolicy.from_dict({"retries": 2, "on": ["exit_nonzero"]})
