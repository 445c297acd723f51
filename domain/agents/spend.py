"""What a stream event says was spent (`Report`), and the counting every CLI's reader shares.

Each CLI's module reads its own events into a `Report` (`AgentCli.spend`); `domain.budget`'s
Meter sums them. Kept apart from `stream` (and from `domain.budget`, which asks the registry):
a status read imports `domain.budget`, and this costs it nothing.
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple


class Report(NamedTuple):
    """The spend one stream event reports."""

    tokens: int
    cost_usd: float | None = None
    final: bool = False  # the closing totals: they replace what was counted (never with fewer tokens)
    message: str | None = None  # an API message's id: counted once, at its largest; None: added to the count


def number(value: object) -> int | float:
    """A reported count: a finite number, else 0."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) else 0


def price(cost: object) -> float | None:
    """A reported cost in US dollars, None when there is none (or it is no finite number)."""
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost) else None


# The token classes a vendor bills, in `domain.transcript`'s names (input and output hold the rest).
BILLED: Final = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def billed_tokens(usage: dict[str, Any]) -> int:
    """Every billed token class (input, cache writes, cache reads, output), summed."""
    return int(sum(number(usage.get(k)) for k in BILLED))


def usage_tokens(usage: dict[str, Any]) -> int:
    """The tokens of a concluded usage (`domain.transcript`'s classes): the billed classes where a
    cache class is reported, else the total, else input plus output."""
    if any(k in usage for k in ("cache_creation_input_tokens", "cache_read_input_tokens")):
        return billed_tokens(usage)
    return int(number(usage.get("total_tokens")) or number(usage.get("input_tokens")) + number(usage.get("output_tokens")))
