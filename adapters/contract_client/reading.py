"""Reading status-bearing data (C3, C4, C5): status verbatim, outcome branched, unknown never none."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Branch(StrEnum):
    """What the client does with a run, from `terminal` and `outcome` only (never from status)."""

    NOT_ENDED = "not_ended"  # terminal is not true (outcome null): keep observing
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INDETERMINATE = "indeterminate"  # ended, result unknowable: never success, never failure
    UNOBSERVED = "unobserved"  # the row carries a per-id error: nothing is known about the run


_OUTCOMES = {
    "succeeded": Branch.SUCCEEDED,
    "failed": Branch.FAILED,
    "cancelled": Branch.CANCELLED,
    "indeterminate": Branch.INDETERMINATE,
}

ADVICE = {
    Branch.NOT_ENDED: "not ended: call wait (again); it has no outcome yet",
    Branch.SUCCEEDED: "ended and succeeded: read its output",
    Branch.FAILED: "ended and failed: read its output (console) to see why",
    Branch.CANCELLED: "ended because it was cancelled or killed: its work did not complete",
    Branch.INDETERMINATE: "ended, but its result cannot be established: do not retry automatically; tell a human",
    Branch.UNOBSERVED: "could not be observed (see error): nothing is known about this run",
}


def branch_outcome(terminal: object, outcome: object) -> tuple[Branch, bool]:
    """Total over every value: returns the branch and whether `outcome` was in the vocabulary."""
    if terminal is not True:
        return Branch.NOT_ENDED, outcome is None
    if isinstance(outcome, str) and outcome in _OUTCOMES:
        return _OUTCOMES[outcome], True
    return Branch.INDETERMINATE, False  # null or out-of-vocabulary on an ended run


@dataclass(frozen=True)
class RunView:
    """A run as the client understands it; `status` is carried verbatim and never interpreted."""

    run_id: object
    status: object
    terminal: object
    outcome: object
    branch: Branch
    outcome_recognised: bool

    def to_wire(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "terminal": self.terminal,
            "outcome": self.outcome,
            "branch": self.branch.value,
            "outcome_recognised": self.outcome_recognised,
            "advice": ADVICE[self.branch],
        }


def run_view(row: Mapping[str, Any]) -> RunView:
    """Read the three D4 fields of any status-bearing row; every other field is ignored."""
    branch, recognised = branch_outcome(row.get("terminal"), row.get("outcome"))
    if row.get("error") is not None:  # a list row or wait entry that could not be read
        branch, recognised = Branch.UNOBSERVED, row.get("outcome") is None
    return RunView(
        row.get("run_id"),
        row.get("status"),
        row.get("terminal"),
        row.get("outcome"),
        branch,
        recognised,
    )


class Evidence(StrEnum):
    """What an availability wrapper establishes (D7)."""

    PRESENT = "present"  # available, with a non-empty value
    NONE = "none"  # available, and definitively empty
    UNKNOWN = "unknown"  # not available (or not a wrapper at all): never "none"


@dataclass(frozen=True)
class Reading:
    """One read-derived field: its evidence, value and, when unknown, why."""

    evidence: Evidence
    value: Any = None
    reason_code: object = None
    detail: object = None

    def describe(self) -> str:
        """Human words that never present an unknown as an absence."""
        if self.evidence is Evidence.UNKNOWN:
            return f"unknown: could not be established ({self.reason_code}: {self.detail})"
        return "none" if self.evidence is Evidence.NONE else "present"

    def to_wire(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence.value,
            "reason_code": self.reason_code,
            "detail": self.detail,
            "says": self.describe(),
        }


def read_availability(wrapper: object) -> Reading:
    """Read `{available, value, reason_code, detail}` without collapsing unknown into none."""
    if not isinstance(wrapper, Mapping) or wrapper.get("available") is not True:
        reason = wrapper.get("reason_code") if isinstance(wrapper, Mapping) else "not_a_wrapper"
        detail = wrapper.get("detail") if isinstance(wrapper, Mapping) else None
        return Reading(Evidence.UNKNOWN, None, reason, detail)
    value = wrapper.get("value")
    empty = value is None or (isinstance(value, (list, dict, str)) and not value)
    return Reading(Evidence.NONE if empty else Evidence.PRESENT, value)


def read_fields(data: Mapping[str, Any], names: Sequence[str]) -> dict[str, Reading]:
    """Read several wrappers of one data object; a missing one is unknown, never none."""
    return {name: read_availability(data.get(name)) for name in names}
