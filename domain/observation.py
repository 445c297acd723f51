"""D10's bounds and pacing: clamping the window and deciding when to look again."""

from __future__ import annotations

import math
from dataclasses import dataclass

from domain.partition import Partition

MAX_WAIT_BOUNDS = (0.0, 600.0)
MAX_WAIT_DEFAULT = 60.0
POLL_BOUNDS = (0.05, 60.0)
POLL_DEFAULT = 1.0


@dataclass(frozen=True)
class Clamped:
    requested: object
    effective: float


def clamp(requested: object, bounds: tuple[float, float], default: float) -> Clamped:
    """Clamp a requested number into bounds; NaN, negative or non-numbers clamp low."""
    low, high = bounds
    if requested is None:
        return Clamped(None, default)
    try:
        value = float(requested)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return Clamped(requested, low)
    if math.isnan(value) or value < low:
        return Clamped(requested, low)
    return Clamped(requested, min(value, high))


def next_sleep(observed: Partition, waited: bool, remaining: float, poll: float) -> float | None:
    """How long to sleep before observing again, or None to answer now.

    Pending ids hold the window open. With nothing pending, a call that has not
    waited yet while a stopped or unresolved id is present pays one poll
    interval (the producer's floor); `max_wait 0` has no window and is never taxed.
    """
    if remaining <= 0:
        return None
    if not observed.settled:
        return min(poll, remaining)
    if observed.needs_floor and not waited:
        return min(poll, remaining)
    return None
