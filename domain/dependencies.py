"""Runs that wait for runs: `--after RUN[:ok|:fail|:any]` and `--priority N`, decided here.

A run submitted with `--after` is recorded `waiting` (non-terminal, outcome null) with the runs it
waits for (`Run.after`). Its runner looks at them until every one has ended in the way asked
(`ok`: succeeded; `fail`: ended any other way; `any`: ended at all): then the work starts. When one
ends in a way that does not match, the run ends without its work ever starting: `cancelled`,
reason `dependency_failed`, naming that run. Everything here is pure: the store keeps the
record, the runner and the observers (application/dependencies.py) ask these functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NoReturn

from lionrun.domain.partition import STOPPED_WITHOUT_END, UNRESOLVED_SPAWN
from lionrun.domain.run import Dependency, Run
from lionrun.domain.vocabulary import CONDITIONS as CONDITIONS
from lionrun.domain.vocabulary import WAITING as WAITING

if TYPE_CHECKING:
    from lionrun.domain.evidence import Finding

OK: Final = "ok"
FAIL: Final = "fail"
ANY: Final = "any"
DEPENDENCY_FAILED: Final = "dependency_failed"  # the reason of a run whose dependency ended otherwise
AFTER_MAX: Final = 64  # dependencies one run may name
GRAPH_MAX: Final = 10_000  # records a cycle check reads at most
PRIORITY_MIN: Final = -1_000_000
PRIORITY_MAX: Final = 1_000_000



def _refuse(argument: str, value: object, message: str) -> NoReturn:
    from lionrun.domain.contract import ContractError, ErrorKind

    raise ContractError(ErrorKind.INVALID_INPUT, message, {"argument": argument, "value": str(value)[:200]})


def split_after(text: object) -> tuple[str, str]:
    """`RUN[:ok|:fail|:any]` as (what names the run, the condition; `ok` when none is given)."""
    if not isinstance(text, str) or not text.strip():
        _refuse("--after", text, "--after takes RUN[:ok|:fail|:any]")
    ref, sep, condition = text.strip().rpartition(":")
    if not sep:
        return text.strip(), OK
    if condition not in CONDITIONS:
        _refuse("--after", text, f"--after {text[:80]!r}: the condition must be ok, fail or any, not {condition[:20]!r}")
    if not ref:
        _refuse("--after", text, f"--after {text[:80]!r} names no run")
    return ref, condition


def check_priority(value: object) -> int:
    """`--priority N`: an integer from PRIORITY_MIN to PRIORITY_MAX (higher starts first)."""
    try:
        number = int(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None or not PRIORITY_MIN <= number <= PRIORITY_MAX:
        _refuse("--priority", value, f"--priority must be an integer from {PRIORITY_MIN} to {PRIORITY_MAX}, "
                                     f"not {str(value)[:80]!r}")
    return number


def dependencies(pairs: Iterable[tuple[str, str]]) -> list[Dependency]:
    """The dependencies of a run, each run once (the same run named twice with two conditions is
    refused: no end could match both `ok` and `fail`), at most AFTER_MAX."""
    found: dict[str, str] = {}
    for run_id, condition in pairs:
        known = found.get(run_id)
        if known is not None and known != condition:
            _refuse("--after", run_id, f"--after names {run_id} twice, as {known} and as {condition}")
        found[run_id] = condition
    if len(found) > AFTER_MAX:
        _refuse("--after", len(found), f"--after names {len(found)} runs; at most {AFTER_MAX}")
    return [Dependency(run_id=run_id, condition=condition) for run_id, condition in found.items()]


@dataclass(frozen=True)
class Order:
    """Where a submitted run stands among others: the runs it waits for, and its
    priority within its queue (higher starts first; 0 by default)."""

    after: tuple[Dependency, ...] = ()
    priority: int = 0


def matches(condition: str, outcome: str | None) -> bool:
    """Whether an ended run's outcome is the end `condition` waits for."""
    if condition == ANY:
        return True
    if condition == FAIL:
        return outcome != "succeeded"
    return outcome == "succeeded"


@dataclass(frozen=True)
class DependencyState:
    """One dependency as it was last observed: its status, whether it ended and how, and its D10
    bucket (`terminal`, `pending`, `stopped_without_end`, `unresolved_spawn`; None: not found)."""

    run_id: str
    condition: str
    status: str | None
    terminal: bool
    outcome: str | None
    bucket: str | None

    @property
    def matched(self) -> bool | None:
        """True when it ended as asked, False when it ended otherwise, None while it has no end."""
        return matches(self.condition, self.outcome) if self.terminal else None

    @property
    def stuck(self) -> bool:
        """A dependency with no end that will not get one by itself: said on the waiting run."""
        return not self.terminal and self.bucket in (STOPPED_WITHOUT_END, UNRESOLVED_SPAWN)


START: Final = "start"
WAIT: Final = "wait"
FAILED: Final = "failed"


@dataclass(frozen=True)
class Verdict:
    """What a waiting run does now: `start` its work, `wait`, or end (`failed`) because of `failed_by`."""

    action: str
    failed_by: DependencyState | None = None
    stuck: tuple[DependencyState, ...] = ()


def judge(states: Sequence[DependencyState]) -> Verdict:
    """The first dependency that ended otherwise than asked ends the run; else it starts once
    every one ended as asked; else it waits (saying which have no end and will get none)."""
    failed = next((state for state in states if state.matched is False), None)
    if failed is not None:
        return Verdict(FAILED, failed_by=failed)
    if all(state.matched for state in states):
        return Verdict(START)
    return Verdict(WAIT, stuck=tuple(state for state in states if state.stuck))


def find_cycle(new_id: str | None, after: Sequence[str], after_of: Callable[[str], Sequence[str] | None],
               limit: int = GRAPH_MAX) -> list[str] | None:
    """A cycle the new run's dependencies would wait in: a path back to `new_id`, or a loop among
    the runs they wait for (their records' `after`), as the runs on it; None when there is none.
    `after_of` gives a run's own dependencies (None: it names none, or it cannot be read)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    looked = 0

    def visit(run_id: str) -> list[str] | None:
        nonlocal looked
        if run_id == new_id:
            return [*path, run_id]
        mark = state.get(run_id)
        if mark == 1:
            return [*path[path.index(run_id):], run_id]
        if mark == 2 or looked >= limit:
            return None
        looked += 1
        state[run_id] = 1
        path.append(run_id)
        for next_id in after_of(run_id) or ():
            found = visit(next_id)
            if found is not None:
                return found
        path.pop()
        state[run_id] = 2
        return None

    for run_id in after:
        found = visit(run_id)
        if found is not None:
            return found if new_id is None else [new_id, *found]
    return None


def describe_failure(state: DependencyState) -> str:
    """One line naming the dependency that ended a waiting run."""
    return f"{state.run_id} ended {state.status or 'unknown'} ({state.outcome or 'no outcome'}), not {state.condition}"


def stuck_line(states: Iterable[DependencyState]) -> str:
    return ", ".join(f"{s.run_id} ({s.bucket})" for s in states)


def restartable(run: Run, finding: Finding) -> bool:
    """A waiting run whose runner is proven gone on this host (the reaper's own test: started, no
    end, a conclusive local finding) and no kill asked: a new runner is started for it, never a
    reap. A kill asked of it is reaped as any run (`cancelled`)."""
    from lionrun.domain.lifecycle import reapable

    return (run.status == WAITING and run.kill_requested_at is None and run.executor is None
            and reapable(run.evolve(status="running"), finding))


# --- priorities within a queue's line ----------------------------------------------------------------


def line_order(entries: Iterable[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    """Waiters (ticket, run id, priority) in the order they start: higher priority first, then
    first come first (ticket), then run id."""
    return sorted(entries, key=lambda entry: (-entry[2], entry[0], entry[1]))

