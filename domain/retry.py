"""Retries by policy: which ends of a run are tried again, and after how long.

`li agent --retry N [--retry-on REASONS] [--retry-backoff SECONDS]` tries a run's work again, up to
N more times, when it ends with one of the named reason codes — by default the vendor's passing
troubles (rate limited, overloaded, unreachable); never a failure of the work itself (a non-zero
exit of shell work, a timeout, a kill) nor a spent budget. The wait before attempt n+1 is
exponential in n, capped and jittered; a vendor's own reset time (`retry_at`, or the delay its
message named) wins over it. The run keeps its one id: its attempts are recorded on it.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Final

from msgspec import Struct

from lionrun.domain.agents.reasons import (
    EMPTY_ANSWER,
    IDLE_TIMEOUT,
    PROVIDER_ERROR,
    PROVIDER_OVERLOADED,
    PROVIDER_RATE_LIMITED,
    PROVIDER_UNREACHABLE,
)
from lionrun.domain.contract import ContractError, ErrorKind

DEFAULT_ON: Final = (PROVIDER_RATE_LIMITED, PROVIDER_OVERLOADED, PROVIDER_UNREACHABLE)
# What may be named in --retry-on: a vendor's trouble or a CLI's own failure, never the work's own
# failure (exit_nonzero), its --timeout, a kill, a refused key or folder, or a budget.
RETRYABLE: Final = (*DEFAULT_ON, PROVIDER_ERROR, EMPTY_ANSWER, IDLE_TIMEOUT)
MAX_RETRIES: Final = 20
DEFAULT_BACKOFF: Final = 5.0  # seconds before the second attempt, doubled for each later one
BACKOFF_CAP: Final = 300.0  # no wait li chooses is longer
VENDOR_WAIT_MAX: Final = 6 * 3600.0  # a vendor's reset further out than this ends the retrying


class RetryPolicy(Struct, frozen=True, kw_only=True):
    """Up to `retries` more attempts when an attempt ends with a reason in `on`."""

    retries: int
    on: tuple[str, ...] = DEFAULT_ON
    backoff: float = DEFAULT_BACKOFF
    cap: float = BACKOFF_CAP

    def to_dict(self) -> dict[str, Any]:
        return {"retries": self.retries, "on": list(self.on), "backoff": self.backoff, "cap": self.cap}

    @classmethod
    def from_dict(cls, data: object) -> RetryPolicy | None:
        """request.json's retry policy (None: none); raises ValueError on anything malformed."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ValueError("retry must be an object")
        on = data.get("on", list(DEFAULT_ON))
        if not isinstance(on, list) or not all(isinstance(r, str) for r in on):
            raise ValueError("retry.on must be a list of reason codes")
        cap = data.get("cap", BACKOFF_CAP)
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap <= BACKOFF_CAP:
            raise ValueError("retry.cap is not a number of seconds")
        return cls(retries=parse_retries(data.get("retries"), "request.json retry"), on=parse_retry_on(on),
                   backoff=parse_backoff(data.get("backoff", DEFAULT_BACKOFF), "request.json retry backoff"),
                   cap=float(cap))

    def retries_after(self, attempt: int, reason: str | None) -> bool:
        """Whether attempt number `attempt` (1: the first), ended with `reason`, is tried again."""
        return attempt <= self.retries and reason is not None and reason in self.on


def _invalid(message: str, argument: str) -> ContractError:
    return ContractError(ErrorKind.INVALID_INPUT, message, {"argument": argument})


def parse_retries(value: object, where: str = "--retry") -> int:
    """How many more attempts: a whole number from 0 to MAX_RETRIES."""
    try:
        number = int(value) if isinstance(value, int | str) and not isinstance(value, bool) else -1
    except ValueError:
        number = -1
    if not 0 <= number <= MAX_RETRIES:
        raise _invalid(f"{where} must be a whole number of retries from 0 to {MAX_RETRIES}, not {str(value)[:40]!r}",
                       where)
    return number


def parse_retry_on(value: object, where: str = "--retry-on") -> tuple[str, ...]:
    """The reason codes that are retried: a comma-separated list (or a list) of RETRYABLE ones."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        raise _invalid(f"{where} must name reason codes: {', '.join(RETRYABLE)}", where)
    found = tuple(dict.fromkeys(str(n).strip() for n in names))
    wrong = [n for n in found if n not in RETRYABLE]
    if wrong or not all(found):
        raise _invalid(f"{where} may name only {', '.join(RETRYABLE)} (never a failure of the work itself, a "
                       f"timeout, a kill or a budget), not {', '.join(wrong)[:120] or 'an empty name'}", where)
    return found


def parse_backoff(value: object, where: str = "--retry-backoff") -> float:
    """Seconds before the second attempt: above 0, at most BACKOFF_CAP."""
    try:
        seconds = float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else math.nan
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or not 0 < seconds <= BACKOFF_CAP:
        raise _invalid(f"{where} must be a number of seconds above 0 and at most {BACKOFF_CAP:g}", where)
    return seconds


def delay(policy: RetryPolicy, attempt: int, now: datetime, retry_at: datetime | None,
          retry_after: float | None, jitter: float) -> float | None:
    """Seconds to wait before the attempt after `attempt` (1-based); None: do not retry (a vendor
    reset too far away). The vendor's word wins: its reset moment, else its delay; else
    `backoff * 2**(attempt-1)`, capped, scaled by a jitter in [0.5, 1] (`jitter` in [0, 1])."""
    if retry_at is not None:
        wait = max(0.0, (retry_at - now).total_seconds())
        return None if wait > VENDOR_WAIT_MAX else wait
    if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
        return None if retry_after > VENDOR_WAIT_MAX else retry_after
    base: float = min(policy.cap, policy.backoff * 2.0 ** min(attempt - 1, 30))
    return base * (0.5 + 0.5 * min(1.0, max(0.0, jitter)))
