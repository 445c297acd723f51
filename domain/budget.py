"""Token and cost budgets of a run: what a submit may ask for, and the spend read from
each agent CLI's stream as it arrives.

A budget is counted from the usage the CLI itself reports, event by event (`Meter.feed`), never
estimated: a provider that reports no usage cannot carry one, and one that reports no price cannot
carry a dollar cap (`refusal`). How close to a limit li can stop each CLI follows from when its
stream says what it spent:

- Claude Code: every `assistant` event carries the usage of its API message (`message_start`'s:
  input and cache tokens exact, output a placeholder); the closing `result` carries the exact
  totals and the cost. li stops it within one model turn of a token limit; a dollar limit is
  also handed to Claude Code itself (`--max-budget-usd`), which stops at its own next turn.
- Codex (`exec --json`): usage only on `turn.completed`, once per exec: li learns the spend when
  the turn ends, so a token budget is judged at the end (a run over it is still `budget_exceeded`).
- Gemini CLI (stream-json): usage only in the closing `result`'s stats: the same as Codex.

What counts as a token: every class the vendor bills, each once — Claude's input, cache writes,
cache reads and output; Codex's input (cached input is part of it) and output (reasoning is
part of it); Gemini's total (else input plus output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

from msgspec import Struct

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.ending import BUDGET_EXCEEDED as ENDING_BUDGET_EXCEEDED

BUDGET_EXCEEDED: Final = ENDING_BUDGET_EXCEEDED  # reason_code of a run stopped by its budget (status failed)
MAX_TOKENS_LIMIT: Final = 10**12
MAX_COST_LIMIT: Final = 1_000_000.0
# Which providers report usage in their stream, and which report a price.
REPORTS_TOKENS: Final = frozenset({"claude", "codex", "gemini"})
REPORTS_COST: Final = frozenset({"claude"})
# Where a provider has its own cap, the flag li passes it (the value in US dollars).
OWN_COST_FLAG: Final = {"claude": "--max-budget-usd"}


class Budget(Struct, frozen=True, kw_only=True):
    """What a run may spend: tokens (every billed class summed) and US dollars; None: no cap."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None

    @property
    def empty(self) -> bool:
        return self.max_tokens is None and self.max_cost_usd is None

    def to_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "max_cost_usd": self.max_cost_usd}

    @classmethod
    def from_dict(cls, data: object) -> Budget | None:
        """request.json's budget (None: none); raises ValueError on anything malformed."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ValueError("budget must be an object")
        tokens, cost = data.get("max_tokens"), data.get("max_cost_usd")
        return cls(max_tokens=None if tokens is None else parse_max_tokens(tokens, "request.json max_tokens"),
                   max_cost_usd=None if cost is None else parse_max_cost(cost, "request.json max_cost_usd"))

    def provider_arguments(self, provider: str) -> list[str]:
        """What this budget adds to a provider's argv: its own dollar cap, where it has one."""
        flag = OWN_COST_FLAG.get(provider)
        if flag is None or self.max_cost_usd is None:
            return []
        return [flag, format(self.max_cost_usd, "g")]


def _invalid(message: str, **detail: Any) -> ContractError:
    return ContractError(ErrorKind.INVALID_INPUT, message, detail or None)


def parse_max_tokens(value: object, where: str = "--max-tokens") -> int:
    """A whole number of tokens, at least 1."""
    if isinstance(value, bool):
        raise _invalid(f"{where} must be a whole number of tokens", argument=where)
    try:
        number = int(value) if isinstance(value, int | str) else None
    except ValueError:
        number = None
    if number is None or not 1 <= number <= MAX_TOKENS_LIMIT:
        raise _invalid(f"{where} must be a whole number of tokens from 1 to {MAX_TOKENS_LIMIT}, not {str(value)[:40]!r}",
                       argument=where)
    return number


def parse_max_cost(value: object, where: str = "--max-cost") -> float:
    """US dollars, finite and above 0."""
    if isinstance(value, bool):
        raise _invalid(f"{where} must be an amount in US dollars", argument=where)
    try:
        number = float(value) if isinstance(value, int | float | str) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number <= 0 or number > MAX_COST_LIMIT:
        raise _invalid(f"{where} must be an amount in US dollars above 0 and at most {MAX_COST_LIMIT:g}, "
                       f"not {str(value)[:40]!r}", argument=where)
    return number


def refusal(budget: Budget, providers: set[str]) -> ContractError | None:
    """Why a budget cannot be kept for a run of these providers (never silently unlimited), else None."""
    if budget.max_tokens is not None:
        silent = sorted(providers - REPORTS_TOKENS)
        if silent:
            return _invalid(f"--max-tokens needs a provider that reports its usage; {', '.join(silent)} reports none",
                            argument="--max-tokens", providers=silent)
    if budget.max_cost_usd is not None:
        unpriced = sorted(providers - REPORTS_COST)
        if unpriced:
            return _invalid(f"--max-cost needs a provider that reports a price; {', '.join(unpriced)} reports none "
                            "(use --max-tokens)", argument="--max-cost", providers=unpriced)
    return None


@dataclass
class Spend:
    """What a run spent so far: tokens and dollars (None: nothing reported yet)."""

    tokens: int = 0
    cost_usd: float | None = None

    def crossed(self, budget: Budget) -> str | None:
        """Which limit the spend has reached (`tokens` or `cost`), else None."""
        if budget.max_tokens is not None and self.tokens >= budget.max_tokens:
            return "tokens"
        if budget.max_cost_usd is not None and self.cost_usd is not None and self.cost_usd >= budget.max_cost_usd:
            return "cost"
        return None


def _number(value: object) -> int | float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) else 0


_CLAUDE_TOKENS: Final = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


@dataclass
class Meter:
    """One leg's spend, fed its CLI's events as they arrive; `spend` is the best count so far.

    Claude Code: the sum over API messages (each counted once, by message id, at its largest) until
    the closing `result`, whose totals and cost replace it. Codex: the sum of its turns' usage.
    Gemini: its `result`'s stats.
    """

    messages: dict[str, int] = field(default_factory=dict)
    turns: int = 0  # tokens of Codex turns ended
    final: Spend | None = None  # a closing event's exact totals

    @property
    def spend(self) -> Spend:
        if self.final is not None:
            return self.final
        return Spend(tokens=sum(self.messages.values()) + self.turns)

    def feed(self, event: dict[str, Any]) -> bool:
        """Count one event; True when it changed the spend (it reported usage)."""
        kind, usage, stats = event.get("type"), event.get("usage"), event.get("stats")
        if kind == "assistant":
            return self._claude_message(event.get("message"))
        if kind == "result" and isinstance(usage, dict) and "stats" not in event:
            return self._claude_result(usage, event.get("total_cost_usd"))
        if kind in ("turn.completed", "turn.failed") and isinstance(usage, dict):
            return self._codex_turn(usage)
        if kind == "result" and isinstance(stats, dict):
            return self._gemini_result(stats)
        return False

    def _claude_message(self, message: object) -> bool:
        """An API message's usage, counted once by its id at its largest."""
        if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
            return False
        key = str(message.get("id") or f"#{len(self.messages)}")
        tokens = _claude_tokens(message["usage"])
        if tokens <= self.messages.get(key, -1):
            return False
        self.messages[key] = tokens
        return True

    def _claude_result(self, usage: dict[str, Any], cost: object) -> bool:
        """Claude's closing totals and cost (never fewer tokens than its messages counted)."""
        self.final = Spend(tokens=max(_claude_tokens(usage), self.spend.tokens), cost_usd=_price(cost))
        return True

    def _codex_turn(self, usage: dict[str, Any]) -> bool:
        self.turns += int(_number(usage.get("input_tokens")) + _number(usage.get("output_tokens")))
        return True

    def _gemini_result(self, stats: dict[str, Any]) -> bool:
        total = _number(stats.get("total_tokens")) or (_number(stats.get("input_tokens"))
                                                        + _number(stats.get("output_tokens")))
        self.final = Spend(tokens=int(total))
        return True


def _claude_tokens(usage: dict[str, Any]) -> int:
    """Claude's four billed token classes, summed."""
    return int(sum(_number(usage.get(k)) for k in _CLAUDE_TOKENS))


def _price(cost: object) -> float | None:
    """A reported cost in US dollars, None when there is none (or it is no finite number)."""
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost) else None


def spend_of(usage: dict[str, Any]) -> Spend:
    """A leg's spend from the usage its provider concluded (`domain.transcript`'s token classes):
    Claude's four classes, else Gemini's total, else input plus output; its cost when reported."""
    if any(k in usage for k in ("cache_creation_input_tokens", "cache_read_input_tokens")):
        tokens = _claude_tokens(usage)
    else:
        tokens = int(_number(usage.get("total_tokens")) or _number(usage.get("input_tokens")) + _number(
            usage.get("output_tokens")))
    return Spend(tokens=tokens, cost_usd=_price(usage.get("cost_usd")))


def total(spends: list[Spend]) -> Spend:
    """A run's spend: its legs' summed (a cost only when some leg reported one)."""
    costs = [s.cost_usd for s in spends if s.cost_usd is not None]
    return Spend(tokens=sum(s.tokens for s in spends), cost_usd=sum(costs) if costs else None)


def budget_value(budget: Budget, spent: Spend, exceeded: str | None) -> dict[str, Any]:
    """The run record's `budget`: the limits, what was spent, and which limit stopped it (None: none)."""
    return {"max_tokens": budget.max_tokens, "max_cost_usd": budget.max_cost_usd, "spent_tokens": spent.tokens,
            "spent_cost_usd": None if spent.cost_usd is None else round(spent.cost_usd, 6), "exceeded": exceeded}
