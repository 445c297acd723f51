"""How a run's work ended, decided from its legs before anything is recorded (the runner's verdict)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

# An agent's stream that ended with no answer, a leg stopped by the idle watchdog: agent reasons.
from lionrun.domain.agents.reasons import EMPTY_ANSWER as EMPTY_ANSWER
from lionrun.domain.agents.reasons import IDLE_TIMEOUT as IDLE_TIMEOUT
from lionrun.domain.lifecycle import exit_code_of

# Providers whose work's success is its exit status: shell work that exits 0 is `completed`
# whatever it printed; `completed_empty` is for an agent whose answer is empty.
EXIT_DECIDES: Final = frozenset({"sh"})

# The reason on a `completed` run whose artifacts could not be collected (never `completed_empty`).
ARTIFACTS_UNAVAILABLE: Final = "artifacts_unavailable"
BUDGET_EXCEEDED: Final = "budget_exceeded"  # the run's budget stopped it (domain.budget's too)


class ProcessEnd(Protocol):
    """What a provider reports about one leg's process (application.ports.ProviderResult is one)."""

    @property
    def exit_code(self) -> int: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def timed_out(self) -> bool: ...

    @property
    def reason_code(self) -> str | None: ...


class LegEnd(Protocol):
    """One leg's verdict (application.orchestrate.LegOutcome is one); `exit_code` None if it never ran."""

    @property
    def status(self) -> str: ...

    @property
    def reason_code(self) -> str | None: ...

    @property
    def exit_code(self) -> int | None: ...


@dataclass(frozen=True, kw_only=True)
class End:
    """How the run ended: the status, reason and exit code the runner records."""

    status: str
    reason_code: str | None
    exit_code: int


def leg_status(result: ProcessEnd, cancelled: bool) -> tuple[str, str | None]:
    """One leg's status and reason from its provider's result."""
    if cancelled:
        return "cancelled", "cancelled"
    if result.timed_out:
        return "timed_out", IDLE_TIMEOUT if result.reason_code == IDLE_TIMEOUT else "timeout"
    if result.is_error:
        return "failed", result.reason_code or "provider_error"
    if result.exit_code != 0:
        return "failed", "exit_nonzero"
    return "completed", None


def decide(legs: Sequence[LegEnd], cancelled: bool, produced: bool | None, error: str | None,
           over_budget: bool = False) -> End:
    """The run's end from its legs: cancel beats error beats budget beats timeout beats failure beats
    emptiness. A run its budget stopped is `failed`, `budget_exceeded`, as a timeout stops one.

    `produced` is None when the artifacts could not be collected. The work's own exit still
    decides: work that did not fail is `completed` with reason `artifacts_unavailable`, never
    `completed_empty` — a folder that could not be read is no evidence of no output (D7).
    """
    if cancelled:
        return End(status="cancelled", reason_code="cancelled", exit_code=exit_code_of("cancelled"))
    if error is not None:
        return End(status="failed", reason_code=error, exit_code=1)
    if over_budget:
        return End(status="failed", reason_code=BUDGET_EXCEEDED, exit_code=1)
    late = next((leg for leg in legs if leg.status == "timed_out"), None)
    if late is not None:
        return End(status="timed_out", reason_code=IDLE_TIMEOUT if late.reason_code == IDLE_TIMEOUT else "timeout",
                   exit_code=exit_code_of("timed_out"))
    failed = next((leg for leg in legs if leg.status != "completed"), None)
    if failed is not None and failed.reason_code == EMPTY_ANSWER and failed.exit_code == 0 and produced is False:
        # an agent that exited 0 with no answer and left nothing: D4.4's completed_empty, its reason the agent's
        return End(status="completed_empty", reason_code=EMPTY_ANSWER, exit_code=0)
    if failed is not None:
        code = failed.exit_code if failed.exit_code is not None else 1
        return End(status="failed", reason_code=failed.reason_code or "leg_failed", exit_code=code if code > 0 else 1)
    if produced is None:
        return End(status="completed", reason_code=ARTIFACTS_UNAVAILABLE, exit_code=0)
    if not produced:
        return End(status="completed_empty", reason_code="no_artifacts", exit_code=0)
    return End(status="completed", reason_code=None, exit_code=0)
