"""D10's bounds and pacing: clamping the window and deciding when to look again."""

from __future__ import annotations

import math

from msgspec import Struct

from lionrun.domain.partition import Partition

MAX_WAIT_BOUNDS = (0.0, 600.0)
MAX_WAIT_DEFAULT = 60.0
POLL_BOUNDS = (0.05, 60.0)
POLL_DEFAULT = 1.0

class Clamped(Struct, frozen=True):
    """What was asked for (echoed back as given) and the value actually used."""

    requested: object
    effective: float


def number_of(requested: object) -> float | None:
    """The number a request names, or None when it names none (booleans are not numbers)."""
    if isinstance(requested, bool) or not isinstance(requested, int | float | str):
        return None
    try:
        return float(requested.strip() if isinstance(requested, str) else requested)
    except OverflowError:  # an int too large for a float is still a large number
        return math.inf if isinstance(requested, int) and requested > 0 else -math.inf
    except ValueError:
        return None


def echo_of(requested: object) -> object:
    """The requested value as the wire echoes it: numbers as numbers, anything else as given.

    A numeric string becomes its number ("5" -> 5, "0.5" -> 0.5); "nan" and "inf"
    stay strings, because JSON has no spelling for them.
    """
    if isinstance(requested, float) and not math.isfinite(requested):
        return str(requested)
    if not isinstance(requested, str):
        return requested
    text = requested.strip()
    for parse in (int, float):
        try:
            value = parse(text)
        except ValueError:
            continue
        return value if isinstance(value, int) or math.isfinite(value) else requested
    return requested


def clamp(requested: object, bounds: tuple[float, float], default: float) -> Clamped:
    """Clamp a requested number into bounds; absent means the default; NaN, negative or non-numbers clamp low."""
    low, high = bounds
    if requested is None:
        return Clamped(None, default)
    value = number_of(requested)
    if value is None or math.isnan(value) or value < low:
        return Clamped(echo_of(requested), low)
    return Clamped(echo_of(requested), min(value, high))


def next_sleep(observed: Partition, waited: bool, remaining: float, poll: float) -> float | None:
    """How long to sleep before observing again, or None to answer now.

    Pending ids hold the window open. With nothing pending, a call that has not
    waited yet while a stopped or unresolved id is present pays one poll
    interval (the producer's floor), capped by what is left of the window; a
    call that already waited pays nothing extra, and `max_wait 0` has no window,
    so it is never taxed.
    """
    if remaining <= 0 or poll <= 0:
        return None
    if not observed.settled:
        return min(poll, remaining)
    if observed.needs_floor and not waited:
        return min(poll, remaining)
    return None


def timed_out(observed: Partition) -> bool:
    """The window closed with ids still pending (a retry is safe; expiry is not an error)."""
    return bool(observed.pending)
