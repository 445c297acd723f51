"""The work service a runner drives: `perform`, `supervise` (for a lean supervisor) and `finish_supervised`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from lionrun.application.orchestrate import (
    LegOutcome,
    plan,
    prompt_for,
)
from lionrun.application.work.conclude import Concluding
from lionrun.application.work.execute import Executing
from lionrun.application.work.parts import (
    CONFINEMENT_REFUSED,
    ConfinementRefused,
    LeanHandover,
    SupervisedEnd,
    Workspace,
    idle_timeout_of,
    launchable,
    lean_allows,
    leg_environment,
)
from lionrun.application.work.prepare import Preparing
from lionrun.application.worktrees import WorktreeFailed
from lionrun.domain.contract import ContractError
from lionrun.domain.ending import leg_status
from lionrun.domain.request import RunRequest, invalid
from lionrun.domain.run import Run


class WorkService(Preparing, Executing, Concluding):
    """Runs a submitted run's legs, writes artifacts and `manifest.json`, then records the end."""

    def perform(self, run_id: str, workspace: Workspace) -> Run | None:
        """Do the work and record its end; returns the ended record (None if it could not be written)."""
        began = self._start()
        outcomes: list[LegOutcome] = []
        request: RunRequest | None = None
        self._workspace = workspace
        with self._failures(workspace) as errors:
            # how the work is confined is decided before its worktree's setup runs (the setup runs
            # under the same decision; a refused confinement makes no worktree)
            loaded = self._load(run_id)
            self._confinement(run_id, loaded, workspace)
            request = self._in_worktree(run_id, loaded, workspace, began)
            if self._kill_requested(run_id):
                self._cancelled.set()  # a kill recorded before there was a process to signal
            with self._watching_kill(run_id, workspace):
                outcomes = self._execute(run_id, request, workspace, began)
                outcomes = self._retrying(run_id, request, workspace, began, outcomes)
        return self._conclude(run_id, request, outcomes, next(iter(errors), None), began, workspace)

    @contextmanager
    def _failures(self, workspace: Workspace) -> Iterator[list[str]]:
        """The runner's own failure while it works, said in the li log and kept (in the list it
        yields) as the end's error: an unreadable request, or anything else raised."""
        errors: list[str] = []
        try:
            yield errors
        except ConfinementRefused:
            errors.append(CONFINEMENT_REFUSED)
        except ContractError as exc:
            errors.append("request_unreadable")
            self._say(workspace, f"li runner: {exc.message}\n")
        except WorktreeFailed as exc:
            errors.append(exc.reason_code)
            self._say(workspace, f"li runner: {exc.detail}\n")
        except Exception as exc:  # noqa: BLE001 - every exception still leaves a recorded end
            errors.append("runner_error")
            self._say(workspace, f"li runner: internal error: {type(exc).__name__}: {exc}\n")

    def supervise(self, run_id: str, workspace: Workspace) -> LeanHandover | None:
        """The one leg of a run that a lean supervisor can watch in this process's place, or None
        when the run needs this process (several legs, a provider that runs only in-process, a
        kill already requested, a request that cannot be read, a timeout already spent): then
        `perform` does the whole run, and says what went wrong."""
        began = self._start()
        self._workspace = workspace
        try:
            loaded = self._load(run_id)
            self._confinement(run_id, loaded, workspace)
            request = self._in_worktree(run_id, loaded, workspace, began)
        except (ContractError, WorktreeFailed, ConfinementRefused):
            return None  # `perform` records the end, and says why
        legs = plan(request)
        if len(legs) != 1 or self._kill_requested(run_id) or not lean_allows(request):
            return None
        leg = legs[0]
        provider = self.providers.get(leg.model.provider)
        if not launchable(provider):
            return None
        remaining = None if request.timeout is None else began + request.timeout - self.clock.monotonic()
        if remaining is not None and remaining <= 0:
            return None
        env = leg_environment(workspace.env, leg, request.cwd)
        confine = self._confinement(run_id, request, workspace)  # decided above: the same answer
        try:
            launch = provider.launch(prompt_for(request, leg, {}), leg.model.model, env,
                                     extra=self._arguments(request, leg.model.provider))
        except OSError:
            return None  # `perform` meets the same refusal and says it on the console
        return LeanHandover(run_id=run_id, launch=launch, cwd=request.cwd, env=env, timeout=remaining,
                           began=began, kill_watch=self.kill_watch, idle_timeout=idle_timeout_of(request, leg),
                           confine=confine)

    def finish_supervised(self, run_id: str, workspace: Workspace, ended: SupervisedEnd) -> Run | None:
        """Record the end of a run whose one leg a lean supervisor watched: its answer and
        artifacts, the manifest and the end, exactly as `perform` would after the leg."""
        self._workspace = workspace
        if ended.cancelled:
            self._cancelled.set()
        outcomes: list[LegOutcome] = []
        request: RunRequest | None = None
        with self._failures(workspace) as errors:
            request = self._load(run_id)
            legs = plan(request)
            provider = self.providers.get(legs[0].model.provider) if len(legs) == 1 else None
            if not launchable(provider):
                raise invalid("the run's request changed while its work ran")
            leg = legs[0]
            if ended.exit_code is None:  # stopped before its process was started
                outcomes = [LegOutcome(leg, "cancelled", "cancelled")]
            else:
                result = provider.conclude(ended.lines, ended.exit_code, ended.timed_out, ended.idle)
                status, reason = leg_status(result, self.cancelled)
                artifact, lost = self._keep_answer(run_id, request, leg, result.answer)
                outcomes = [LegOutcome(leg, status, reason, result, artifact,
                                       self.clock.monotonic() - ended.leg_began, lost)]
        return self._conclude(run_id, request, outcomes, next(iter(errors), None), ended.began, workspace)
