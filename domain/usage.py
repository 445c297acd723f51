"""What runs spent: tokens, cost and wall time totalled by model, label or queue.

A run's meter is its manifest's `metering` (application.work.meter): wall seconds always, tokens
and cost only when every leg that ran reported them. A total is over the runs that reported; the
runs that did not are counted beside it as unreported, never added in as 0, and a total no run
reported is null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

BY: Final = ("model", "label", "queue")
NONE_KEY: Final = "(none)"  # the group of runs with no label (or no model, no queue)


@dataclass(frozen=True, kw_only=True)
class Spent:
    """One ended run's meter as its manifest recorded it (None: not reported, or no manifest)."""

    run_id: str
    model: str | None
    label: str | None
    queue: str | None
    wall_seconds: float | None
    tokens: dict[str, int | float] | None
    cost_usd: float | None


@dataclass(kw_only=True)
class Total:
    """A group's totals: each over the runs that reported it, with how many did not."""

    key: str
    runs: int = 0
    wall_seconds: float | None = None
    wall_unreported: int = 0
    tokens: dict[str, int | float] | None = None
    tokens_unreported: int = 0
    cost_usd: float | None = None
    cost_unreported: int = 0
    run_ids: list[str] = field(default_factory=list)

    def add(self, spent: Spent) -> None:
        self.runs += 1
        self.run_ids.append(spent.run_id)
        if spent.wall_seconds is None:
            self.wall_unreported += 1
        else:
            self.wall_seconds = (self.wall_seconds or 0.0) + spent.wall_seconds
        if spent.tokens is None:
            self.tokens_unreported += 1
        else:
            totals = dict(self.tokens or {})
            for name, value in spent.tokens.items():
                totals[name] = totals.get(name, 0) + value
            self.tokens = totals
        if spent.cost_usd is None:
            self.cost_unreported += 1
        else:
            self.cost_usd = (self.cost_usd or 0.0) + spent.cost_usd

    def to_wire(self) -> dict[str, Any]:
        return {"key": self.key, "runs": self.runs,
                "wall_seconds": None if self.wall_seconds is None else round(self.wall_seconds, 3),
                "wall_unreported": self.wall_unreported, "tokens": self.tokens,
                "tokens_unreported": self.tokens_unreported,
                "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
                "cost_unreported": self.cost_unreported}


def key_of(spent: Spent, by: str) -> str:
    value = {"model": spent.model, "label": spent.label, "queue": spent.queue}.get(by)
    return value if isinstance(value, str) and value else NONE_KEY


def tally(spent: list[Spent], by: str | None) -> tuple[list[Total], Total]:
    """The groups (by key, in key order; none when `by` is None) and the grand total."""
    whole = Total(key="total")
    groups: dict[str, Total] = {}
    for one in spent:
        whole.add(one)
        if by is not None:
            key = key_of(one, by)
            groups.setdefault(key, Total(key=key)).add(one)
    return [groups[k] for k in sorted(groups)], whole


def _number(value: object) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) and value >= 0 else None


def meter_of(metering: object) -> tuple[float | None, dict[str, int | float] | None, float | None]:
    """(wall seconds, tokens, cost) from a manifest's `metering`; each None when not reported
    (an `available: false` wrapper, a missing or malformed value: a manifest is the work's file)."""
    if not isinstance(metering, dict):
        return None, None, None
    wall = _number(metering.get("wall_seconds"))
    tokens: dict[str, int | float] | None = None
    wrapped = metering.get("tokens")
    if isinstance(wrapped, dict) and wrapped.get("available") is True and isinstance(wrapped.get("value"), dict):
        counted = {str(k): _number(v) for k, v in wrapped["value"].items()}
        tokens = {k: v for k, v in counted.items() if v is not None} if all(
            v is not None for v in counted.values()) else None
    cost = None
    wrapped = metering.get("cost_usd")
    if isinstance(wrapped, dict) and wrapped.get("available") is True:
        cost = _number(wrapped.get("value"))
    return (None if wall is None else float(wall)), tokens, (None if cost is None else float(cost))
