"""A run's budget as its legs spend it: each leg's console counted as it is written."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from lionrun.domain.budget import (
    Budget,
    Meter,
    Spend,
    total,
)
from lionrun.domain.transcript import event_of


class BudgetWatch:
    """A run's budget as its legs spend it: each leg's console fed to its own Meter; the first
    event that reaches a limit says so in the li log and calls `stop` (once)."""

    def __init__(self, budget: Budget, say: Callable[[str], None], stop: Callable[[], None]) -> None:
        self.budget = budget
        self.say = say
        self.stop = stop
        self.exceeded: str | None = None
        self._meters: dict[str, Meter] = {}
        self._lock = threading.Lock()

    def spent(self) -> Spend:
        with self._lock:
            return total([m.spend for m in self._meters.values()])

    def console(self, leg: str, provider: str, inner: Any) -> Any:
        """The leg's console, its lines also counted as `provider`'s events."""
        meter = self._meters.setdefault(leg, Meter.of(provider))
        watch = self

        class Metered:
            """The leg's console, every line also counted."""

            def write(self, text: str) -> int:
                written: int = inner.write(text)
                watch.feed(meter, text)
                return written

            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

        return Metered()

    def feed(self, meter: Meter, text: str) -> None:
        for line in text.splitlines():
            event = event_of(line)
            if event is None:
                continue
            with self._lock:
                if not meter.feed(event) or self.exceeded is not None:
                    continue
                spent = total([m.spend for m in self._meters.values()])
                self.exceeded = spent.crossed(self.budget)
                if self.exceeded is None:
                    continue
            limit = (f"{self.budget.max_tokens} tokens" if self.exceeded == "tokens"
                     else f"${self.budget.max_cost_usd:g}")
            used = f"{spent.tokens} tokens" if self.exceeded == "tokens" else f"${spent.cost_usd:g}"
            self.say(f"li runner: the budget is spent ({used} of {limit}); stopping the work\n")
            self.stop()
