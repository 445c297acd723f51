"""A run's legs: run as their DAG says, watched for a kill and a budget, tried again as the retry policy says."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import timedelta
from typing import Any

from lionrun.application.orchestrate import (
    LegConsole,
    LegOutcome,
    artifact_name,
    plan,
    prompt_for,
    run_dag,
)
from lionrun.application.work.budget import BudgetWatch
from lionrun.application.work.manifest import vendor_facts
from lionrun.application.work.parts import (
    KILL_SEEN,
    Workspace,
    failure_text,
    idle_timeout_of,
    leg_environment,
)
from lionrun.application.work.state import WorkState
from lionrun.domain.budget import BUDGET_EXCEEDED
from lionrun.domain.ending import decide, leg_status
from lionrun.domain.request import Leg, RunRequest
from lionrun.domain.run import iso


class Executing(WorkState):
    """Runs the legs and keeps their answers."""

    @contextmanager
    def _watching_kill(self, run_id: str, workspace: Workspace) -> Iterator[None]:
        """While the legs run, look at the record every `kill_watch` seconds: a kill request
        recorded there (by `li job kill` on another host of a shared store, which never signals
        this host's processes) cancels the work as a SIGTERM would."""
        if self.kill_watch is None or self.kill_watch <= 0:
            yield
            return
        done = threading.Event()
        interval = self.kill_watch

        def watch() -> None:
            while not done.wait(interval):
                if self.cancelled:
                    return
                if self._kill_requested(run_id):
                    self._say(workspace, KILL_SEEN)
                    self.cancel()
                    return

        watcher = threading.Thread(target=watch, name="li-kill-watch", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()

    def _execute(self, run_id: str, request: RunRequest, workspace: Workspace, began: float) -> list[LegOutcome]:
        legs = plan(request)
        deadline = None if request.timeout is None else began + request.timeout
        shared = len(legs) > 1
        self._attempt_began = iso(self.clock.now())
        self._attempt_number += 1
        attempt = self._attempt_number
        if request.budget is not None and not request.budget.empty and self._budget is None:
            self._budget = BudgetWatch(request.budget, lambda text: self._say(workspace, text), self._over_budget)

        def run_leg(leg: Leg, prompt: str) -> LegOutcome:
            console: Any = LegConsole(workspace.console, f"[{leg.id}] " if shared else "", self._console_lock,
                                      workspace.li_log)
            if self._budget is not None:
                console = self._budget.console(f"{attempt}:{leg.id}", leg.model.provider, console)
            return self._run_leg(run_id, request, leg, prompt, console, workspace.env, deadline)

        return run_dag(legs, run_leg, lambda leg, answers: prompt_for(request, leg, answers),
                       lambda: self.cancelled or self._spent())

    def _retrying(self, run_id: str, request: RunRequest, workspace: Workspace, began: float,
                  outcomes: list[LegOutcome]) -> list[LegOutcome]:
        """The work tried again while its attempt ends with a reason the run's policy
        retries, after the policy's backoff (a vendor's reset time wins), each attempt recorded on
        the run as it ends; a kill during the wait ends the retrying (and the run, cancelled)."""
        policy = request.retry
        if policy is None:
            return outcomes
        import random

        from lionrun.domain.retry import delay
        from lionrun.domain.run import parse_iso

        attempt, started = 1, self._attempt_began
        deadline = None if request.timeout is None else began + request.timeout
        while True:
            end = decide(outcomes, self.cancelled, True, None, over_budget=self._spent())
            if self.cancelled or not policy.retries_after(attempt, end.reason_code):
                self._attempts.append({"attempt": attempt, "started_at": started})
                return outcomes
            now = self.clock.now()
            told = vendor_facts(end, outcomes, self.clock.now).get("retry_at")
            wait = delay(policy, attempt, now, parse_iso(told) if told else None, None, random.random())
            late = self._too_late(wait, deadline)
            if late is not None or wait is None:
                self._say(workspace, f"li runner: attempt {attempt} ended {end.reason_code}; not retried: {late}\n")
                self._attempts.append({"attempt": attempt, "started_at": started})
                return outcomes
            next_at = iso(now + timedelta(seconds=wait))
            self._attempts.append({"attempt": attempt, "started_at": started, "ended_at": iso(now),
                                   "status": end.status, "reason_code": end.reason_code, "next_at": next_at})
            self._record_attempts(run_id)
            self._say(workspace, f"li runner: attempt {attempt} ended {end.reason_code}; attempt {attempt + 1} of "
                                 f"{policy.retries + 1} at {next_at} (in {wait:.1f} s)\n")
            if self._cancelled.wait(wait):
                return outcomes
            attempt += 1
            outcomes = self._execute(run_id, request, workspace, began)
            started = self._attempt_began

    def _too_late(self, wait: float | None, deadline: float | None) -> str | None:
        """Why an attempt that would come after `wait` seconds is not made (None: it is)."""
        if wait is None:
            return "the vendor resets too late"
        if deadline is not None and self.clock.monotonic() + wait >= deadline:
            return "the run would be out of time"
        return None

    def _record_attempts(self, run_id: str) -> None:
        """The attempts so far on the record (best effort: the end records them all again)."""
        attempts = [dict(a) for a in self._attempts]
        with suppress(Exception):
            self.store.update(run_id, lambda current: None if current.end_recorded else current.evolve(
                attempts=attempts))

    def _run_leg(self, run_id: str, request: RunRequest, leg: Leg, prompt: str, console: LegConsole,
                 env: Mapping[str, str], deadline: float | None) -> LegOutcome:
        start = self.clock.monotonic()
        remaining = None if deadline is None else deadline - start
        if remaining is not None and remaining <= 0:
            return LegOutcome(leg, "timed_out", "timeout")
        provider = self.providers[leg.model.provider]
        cwd = self._leg_cwd(request, leg)
        result = provider.run(prompt, leg.model.model, cwd, leg_environment(env, leg, cwd), console, remaining,
                              extra=self._arguments(request, leg.model.provider),
                              idle_timeout=idle_timeout_of(request, leg))
        status, reason = leg_status(result, self.cancelled)
        if self._spent() and not self.cancelled:
            status, reason = "failed", BUDGET_EXCEEDED
        artifact, lost = self._keep_answer(run_id, request, leg, result.answer)
        return LegOutcome(leg, status, reason, result, artifact, self.clock.monotonic() - start, lost)

    def _keep_answer(self, run_id: str, request: RunRequest, leg: Leg,
                     answer: str | None) -> tuple[str | None, str | None]:
        """Write a leg's answer as its artifact: (its name, None), or (None, why it could not be)."""
        if not answer:
            return None, None
        name = artifact_name(request.kind, leg.id)
        try:  # a full disk is waited out like an outage, the answer kept in memory meanwhile
            self.outage.call("the answer", lambda: self.files.write_text(run_id, f"artifacts/{name}", answer))
        except Exception as exc:  # noqa: BLE001 - a lost answer never costs the leg its own status
            return None, f"artifacts/{name} could not be written: {failure_text(exc)}"
        return name, None
