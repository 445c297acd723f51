"""A busy store (a record's lock held past the store's own wait, a write that raced another) is
tried again: one policy, `BUSY_TRIES` tries with a backoff doubling from `BUSY_BACKOFF` seconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from lionrun.application.ports import StoreBusy

T = TypeVar("T")

BUSY_TRIES = 6  # tries of one write before the store counts as staying busy
BUSY_BACKOFF = 0.05  # seconds slept after the first busy try; doubled after each next one


def busy_pauses(tries: int = BUSY_TRIES, backoff: float = BUSY_BACKOFF) -> list[float]:
    """The pauses between the tries: one fewer than the tries, each twice the one before."""
    return [backoff * 2 ** index for index in range(max(tries - 1, 0))]


def retry_busy(write: Callable[[], T], sleep: Callable[[float], None]) -> T:
    """`write()`, tried again after a pause while the store answers StoreBusy, `BUSY_TRIES` times
    at most; the last try's StoreBusy passes to the caller (every other exception at once)."""
    for pause in busy_pauses():
        try:
            return write()
        except StoreBusy:
            sleep(pause)
    return write()
