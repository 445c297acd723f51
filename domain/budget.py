"""Token and cost budgets of a run: what a submit may ask for, and the spend read from
each agent CLI's stream as it arrives.

A budget is counted from the usage the CLI itself reports, event by event (`Meter.feed`), never
estimated: a provider that reports no usage cannot carry one, and one that reports no price cannot
carry a dollar cap (`refusal`). How close to a limit li can stop each CLI follows from when its
stream says what it spent: each CLI's module (`domain/agents/`) says whether it reports tokens and
a price (`AgentCli.reports_tokens`, `reports_cost`), the flag of its own dollar cap (`cost_flag`),
and reads one of its events into the spend it reports (`AgentCli.spend`, a `Report`).

What counts as a token: every class the vendor bills, each once (`domain.agents.spend`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from msgspec import Struct, field

from lionrun.domain.agents.spend import Report, price, usage_tokens
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.ending import BUDGET_EXCEEDED as ENDING_BUDGET_EXCEEDED

BUDGET_EXCEEDED: Final = ENDING_BUDGET_EXCEEDED  # reason_code of a run stopped by its budget (status failed)
MAX_TOKENS_LIMIT: Final = 10**12
MAX_COST_LIMIT: Final = 1_000_000.0


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
        if self.max_cost_usd is None:
            return []
        from lionrun.domain.agents import agent, is_agent

        flag = agent(provider).cost_flag if is_agent(provider) else None
        if flag is None:
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
        silent = sorted(p for p in providers if not _reports(p, "tokens"))
        if silent:
            return _invalid(f"--max-tokens needs a provider that reports its usage; {', '.join(silent)} reports none",
                            argument="--max-tokens", providers=silent)
    if budget.max_cost_usd is not None:
        unpriced = sorted(p for p in providers if not _reports(p, "cost"))
        if unpriced:
            return _invalid(f"--max-cost needs a provider that reports a price; {', '.join(unpriced)} reports none "
                            "(use --max-tokens)", argument="--max-cost", providers=unpriced)
    return None


def _reports(provider: str, what: str) -> bool:
    """Whether this provider's stream reports its `tokens` or its `cost` (a non-agent provider: neither)."""
    from lionrun.domain.agents import agent, is_agent

    if not is_agent(provider):
        return False
    cli = agent(provider)
    return cli.reports_tokens if what == "tokens" else cli.reports_cost


class Spend(Struct):
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


def reads_nothing(event: dict[str, Any]) -> Report | None:
    return None


class Meter(Struct):
    """One leg's spend, fed its CLI's events as they arrive; `spend` is the best count so far:
    what its events reported (each message once, at its largest, plus what was added) until a
    closing event's totals replace it. `read` is the CLI's `spend` (`Meter.of` its provider)."""

    read: Callable[[dict[str, Any]], Report | None] = reads_nothing
    messages: dict[str, int] = field(default_factory=dict)
    added: int = 0  # tokens reported by events counted once each (Codex turns, OpenCode steps)
    cost: float | None = None  # dollars they reported
    final: Spend | None = None  # a closing event's exact totals

    @classmethod
    def of(cls, provider: str) -> Meter:
        """The meter of a leg run by this provider (one that is no agent CLI reports nothing)."""
        from lionrun.domain.agents import agent, is_agent

        return cls(agent(provider).spend) if is_agent(provider) else cls()

    @property
    def spend(self) -> Spend:
        if self.final is not None:
            return self.final
        return Spend(tokens=sum(self.messages.values()) + self.added, cost_usd=self.cost)

    def feed(self, event: dict[str, Any]) -> bool:
        """Count one event; True when it changed the spend (it reported usage)."""
        report = self.read(event)
        if report is None:
            return False
        if report.final:
            self.final = Spend(tokens=max(report.tokens, self.spend.tokens), cost_usd=report.cost_usd)
        elif report.message is not None:
            if report.tokens <= self.messages.get(report.message, -1):
                return False
            self.messages[report.message] = report.tokens
        else:
            self.added += report.tokens
            if report.cost_usd is not None:
                self.cost = (self.cost or 0.0) + report.cost_usd
        return True


def spend_of(usage: dict[str, Any]) -> Spend:
    """A leg's spend from the usage its provider concluded (`usage_tokens`), its cost when reported."""
    return Spend(tokens=usage_tokens(usage), cost_usd=price(usage.get("cost_usd")))


def total(spends: list[Spend]) -> Spend:
    """A run's spend: its legs' summed (a cost only when some leg reported one)."""
    costs = [s.cost_usd for s in spends if s.cost_usd is not None]
    return Spend(tokens=sum(s.tokens for s in spends), cost_usd=sum(costs) if costs else None)


def budget_value(budget: Budget, spent: Spend, exceeded: str | None) -> dict[str, Any]:
    """The run record's `budget`: the limits, what was spent, and which limit stopped it (None: none)."""
    return {"max_tokens": budget.max_tokens, "max_cost_usd": budget.max_cost_usd, "spent_tokens": spent.tokens,
            "spent_cost_usd": None if spent.cost_usd is None else round(spent.cost_usd, 6), "exceeded": exceeded}
