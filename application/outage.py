"""Riding out a store that does not answer: bounded, backing-off retries for a writer that can wait.

The runner is the one writer that can wait: its work has ended and its end, artifacts and manifest
must reach the store, or the run can only be reaped as indeterminate later. A store that is
*unavailable* (`StoreUnavailable`: the server is down or restarting, the connection dropped, a
statement timed out) is retried with a pause of 0.2 s doubling up to 5 s, for as long as one
unbroken outage lasts up to `bound` seconds; a store that *refuses* (`StoreRefused`: permissions,
a read-only or full disk, a record that cannot be used) is not retried at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from lionrun.application.ports import Clock, StoreUnavailable

T = TypeVar("T")

OUTAGE_SECONDS_DEFAULT = 300.0  # how long one outage of the store is ridden out (LI_STORE_OUTAGE)
FIRST_PAUSE = 0.2
LONGEST_PAUSE = 5.0


def _silent(text: str) -> None:
    """The default: nobody to tell."""


class Outage:
    """Retries of calls to one store, with one budget per unbroken outage.

    The budget starts with the first call that finds the store unavailable and ends when any call
    succeeds; calls made while it lasts share it, so a run's seal, manifest and end together wait
    at most `bound` seconds for a store that stays away (once spent, a call gives up at its first
    failure). `say` is told, in one line each, when an outage begins, when it ends and when a call
    gives up.
    """

    def __init__(self, clock: Clock, bound: float = OUTAGE_SECONDS_DEFAULT, say: Callable[[str], None] = _silent,
                 first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE) -> None:
        self.clock = clock
        self.bound = max(bound, 0.0)
        self.say = say
        self.first = first
        self.longest = longest
        self._since: float | None = None  # monotonic time the current outage was first seen
        self._pause = first

    def call(self, what: str, action: Callable[[], T]) -> T:
        """`action()`, retried while it raises StoreUnavailable and the outage budget lasts.

        Any other exception (a StoreRefused that is not StoreUnavailable among them) passes at
        once. When the budget is spent, raises StoreUnavailable saying how long it waited.
        """
        told = False
        while True:
            try:
                result = action()
            except StoreUnavailable as exc:
                now = self.clock.monotonic()
                if self._since is None:
                    self._since = now
                waited = now - self._since
                left = self.bound - waited
                if left <= 0:
                    self.say(f"the store stayed unavailable for {waited:.1f} s; giving up on {what}: {exc}")
                    raise StoreUnavailable(f"the store stayed unavailable for {waited:.1f} s: {exc}") from exc
                if not told:
                    self.say(f"the store is unavailable, retrying {what} for up to {left:.0f} s: {exc}")
                    told = True
                self.clock.sleep(min(self._pause, left))
                self._pause = min(self._pause * 2, self.longest)
                continue
            if told:
                self.say(f"the store answered again; {what} went through")
            self._since = None
            self._pause = self.first
            return result
