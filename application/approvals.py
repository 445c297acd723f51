"""Approvals: a run's permission requests recorded, listed, answered, and waited for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lionrun.application.busy import retry_busy
from lionrun.application.ports import Clock, RunNotFound, RunRecords, StoreBusy, StoreRefused
from lionrun.domain.approval import (
    DENY,
    TIMED_OUT,
    answer_text,
    answered,
    open_requests,
    requested,
    status_after,
)
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.run import RecordUnusable, Run, iso

POLL = 0.25  # how often a waiting request looks for its answer (seconds)


class ApprovalService:
    """Record a request and wait for its answer (the run's permission-prompt tool), list the open
    ones across runs, answer them (a person)."""

    def __init__(self, store: RunRecords, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def _update(self, run_id: str, change: Callable[[Run], Run | None]) -> Run | None:
        """A fenced write, tried again while the store is busy (application/busy.py)."""
        try:
            return retry_busy(lambda: self.store.update(run_id, change), self.clock.sleep)
        except RunNotFound:
            raise ContractError(ErrorKind.NOT_FOUND, f"no run {run_id}", {"run_id": run_id}) from None
        except StoreBusy:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the record of {run_id} stayed locked",
                                {"run_id": run_id}) from None

    def ask(self, run_id: str, tool: str, tool_input: object, tool_use_id: str | None, timeout: float,
            say: Callable[[str], None] | None = None) -> str:
        """Record the request, wait for a person's answer (at most `timeout` seconds, then deny it),
        and give the permission-prompt tool's answer text. A run that ends meanwhile is denied."""
        made: list[str] = []

        def add(current: Run) -> Run | None:
            if current.end_recorded:
                return None
            approvals, ident = requested(current.approvals, tool, tool_input, tool_use_id, iso(self.clock.now()))
            made[:] = [ident]
            return current.evolve(approvals=approvals, status=status_after(current.status, approvals))

        self._update(run_id, add)
        if not made:
            return answer_text({"behavior": DENY, "message": "the run has ended"}, tool_input)
        ident = made[0]
        if say is not None:
            say(f"approval request {ident} of {run_id}: {tool}")
        deadline = self.clock.monotonic() + timeout
        while True:
            entry = self._entry(run_id, ident)
            if entry is None:
                return answer_text({"behavior": DENY, "message": "the request is gone from the run's record"},
                                   tool_input)
            if entry.get("behavior") is not None:
                return answer_text(entry, tool_input)
            if self.clock.monotonic() >= deadline:
                why = f"no one answered within {timeout:g} s; li denied it (--approval-timeout)"
                self.answer(run_id, ident, DENY, why, TIMED_OUT, missing_ok=True)
                continue  # the answer recorded (ours, or a person's that came first)
            self.clock.sleep(POLL)

    def _entry(self, run_id: str, ident: str) -> dict[str, Any] | None:
        try:
            run = self.store.read(run_id)
        except (StoreBusy, StoreRefused, OSError):
            return {"behavior": None}  # not seen this time
        except (RunNotFound, RecordUnusable):
            return None
        if run.end_recorded and not any(a.get("id") == ident and a.get("behavior") for a in run.approvals or []):
            return {"behavior": DENY, "message": "the run has ended"}
        return next((a for a in run.approvals or [] if isinstance(a, dict) and a.get("id") == ident), None)

    def answer(self, run_id: str, request: str | None, behavior: str, message: str | None, by: str,
               missing_ok: bool = False) -> list[dict[str, Any]]:
        """Answer one open request of the run (None: every open one); the requests answered.
        Nothing open to answer is `conflict` (answered already) or `not_found` (never asked)."""
        done: list[str] = []
        seen: list[Run] = []

        def change(current: Run) -> Run | None:
            seen[:] = [current]
            approvals, ids = answered(current.approvals, request, behavior, message, by, iso(self.clock.now()))
            done[:] = ids
            if not ids:
                return None
            return current.evolve(approvals=approvals, status=status_after(current.status, approvals))

        ended = self._update(run_id, change)
        if not done:
            if missing_ok:
                return []
            known = any(a.get("id") == request for a in (seen[0].approvals if seen else None) or [])
            if request is not None and known:
                raise ContractError(ErrorKind.CONFLICT, f"request {request} of {run_id} is answered already",
                                    {"run_id": run_id, "request": request})
            what = f"request {request}" if request is not None else "an open approval request"
            raise ContractError(ErrorKind.NOT_FOUND, f"{run_id} has no {what}",
                                {"run_id": run_id, "request": request})
        return [{**a, "run_id": run_id} for a in (ended.approvals if ended else None) or [] if a.get("id") in done]

    def open(self) -> list[dict[str, Any]]:
        """Every open request of every run not ended, oldest run first."""
        found: list[dict[str, Any]] = []
        for run_id in sorted(self.store.run_ids()):
            try:
                run = self.store.read(run_id)
            except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
                continue
            if run.end_recorded:
                continue
            found.extend({**a, "run_id": run_id} for a in open_requests(run.approvals))
        return found
