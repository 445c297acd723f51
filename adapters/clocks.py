"""Clocks: the system clock, and a controllable one for tests of time windows."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock you advance by hand; `sleep` advances it instantly and records the naps."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)
        self._mono = 1000.0
        self._lock = threading.Lock()
        self.naps: list[float] = []

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._mono += seconds

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.advance(max(seconds, 0.0))
