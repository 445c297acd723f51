"""Before a run's legs: how the work is confined, its worktree made, the shared git paths fingerprinted."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import suppress

from lionrun.application.work.parts import (
    KILL_SEEN,
    ConfinementRefused,
    Workspace,
    failure_text,
)
from lionrun.application.work.state import WorkState
from lionrun.application.worktrees import (
    SETUP_KILLED,
    SETUP_OUT_OF_TIME,
    RunWorktrees,
    SetupOutOfTime,
    WorktreeFailed,
)
from lionrun.domain.request import RunRequest
from lionrun.domain.vocabulary import PID_NAMESPACE, SHARED_PIDS, STORE_HIDDEN, UNCONFINED
from lionrun.domain.worktree import (
    SHARED_FINGERPRINT,
    shared_git_paths,
)


class Preparing(WorkState):
    """Decides how the work starts and makes where it runs."""

    def _confinement(self, run_id: str, request: RunRequest, workspace: Workspace) -> Mapping[str, str] | None:
        """Decide once how the work is started, record it, and engage it: what a lean
        supervisor needs to confine its leg, or None when the work runs unconfined. Raises
        ConfinementRefused under `--confine required` when the kernel would not hide the store."""
        if self._refused is not None:
            raise ConfinementRefused(self._refused)
        if self._confined is not None:
            return self._confined[0]
        if self.confiner is None:
            self._confined = (None,)
            self._fingerprint_shared(run_id, request, workspace)
            return None
        why, target = self._engage(run_id, request, workspace)
        if why is not None and request.confine == "required":
            self._say(workspace, f"li runner: not running the work: --confine required, and the store cannot "
                                 f"be hidden from it: {why}\n")
            self._refused = why
            raise ConfinementRefused(why)
        if why is not None:
            self._say(workspace, f"li runner: the work runs unconfined (it can reach the store): {why}\n")
            self._fingerprint_shared(run_id, request, workspace)
        self._confined = (target,)
        return target

    def _engage(self, run_id: str, request: RunRequest, workspace: Workspace) -> tuple[str | None,
                                                                                      Mapping[str, str] | None]:
        """Hide the store from the work when the kernel (and the request's --confine) allow it, and
        record the decision: (why not, None) or (None, what a lean supervisor needs)."""
        assert self.confiner is not None
        why = "--confine off" if request.confine == "off" else self.confiner.refusal()
        state, target = UNCONFINED, None
        pids_why = why and "the work is not confined"
        if why is None:
            pids_why = self.confiner.pids_refusal()
            protect = () if request.worktree is None else shared_git_paths(request.worktree.common_dir)
            state, target = STORE_HIDDEN, self.confiner.engage(workspace.env.get("LI_ARTIFACTS_DIR"), run_id,
                                                               protect)
        with suppress(Exception):  # the record says it where it can; the console always does
            self.store.update(run_id, lambda current: None if current.end_recorded else current.evolve(
                confinement=state, confinement_detail=why,
                processes=SHARED_PIDS if pids_why else PID_NAMESPACE, processes_detail=pids_why))
        return why, target

    def _fingerprint_shared(self, run_id: str, request: RunRequest, workspace: Workspace) -> None:
        """Item 4's fallback: a worktree run whose work could not be kept from the
        repository's shared config, hooks and info has them fingerprinted before the work starts
        (kept in the run's folder, for whichever process records the end)."""
        if request.worktree is None or self.git is None:
            return
        try:
            prints = self.git().shared_fingerprint(request.worktree.common_dir)
            self.files.write_text(run_id, SHARED_FINGERPRINT, json.dumps(
                {"common_dir": request.worktree.common_dir, "fingerprint": prints}))
        except Exception as exc:  # noqa: BLE001 - advisory: the work still runs, and the console says it
            self._say(workspace, f"li runner: the repository's config and hooks could not be fingerprinted: "
                                 f"{failure_text(exc)}\n")

    def _in_worktree(self, run_id: str, request: RunRequest, workspace: Workspace, began: float) -> RunRequest:
        """The request its legs run with: in the run's own worktree when it asked for one, made
        (once, whichever path asks first) before any leg starts. A setup whose run is killed, or
        whose run's --timeout runs out, is stopped; the latter leaves the legs no time (timed_out)."""
        if request.worktree is None:
            return request
        if self._prepared is None:
            if self.git is None:
                self._prepared = WorktreeFailed("worktree_failed", "git is not configured for this runner")
            else:
                deadline = None if request.timeout is None else began + request.timeout
                try:
                    self._prepared = RunWorktrees(self.git(), self.store, self.files).prepare(
                        run_id, request, workspace.env, workspace.console, lambda text: self._say(workspace, text),
                        self._setup_stop(run_id, workspace, deadline))
                except SetupOutOfTime as exc:
                    self._say(workspace, f"li runner: {exc.detail}\n")
                    self._prepared = exc.prepared  # no time is left: every leg ends timed_out unstarted
                except WorktreeFailed as exc:
                    self._prepared = exc
                except Exception as exc:  # noqa: BLE001 - a worktree li could not make is a failed start
                    self._prepared = WorktreeFailed("worktree_failed", f"the worktree could not be made: "
                                                                       f"{failure_text(exc)}")
        if isinstance(self._prepared, Exception):
            raise self._prepared
        return self._prepared.request

    def _setup_stop(self, run_id: str, workspace: Workspace, deadline: float | None) -> Callable[[], str | None]:
        """What the setup is stopped on: a kill (this process's SIGTERM, or a request recorded in the
        store, looked at every `kill_watch` seconds as for the legs) or the run's deadline."""
        looked = [self.clock.monotonic()]

        def stop() -> str | None:
            if self.cancelled or self.stop_asked():
                return SETUP_KILLED
            now = self.clock.monotonic()
            if deadline is not None and now >= deadline:
                return SETUP_OUT_OF_TIME
            if self.kill_watch is not None and self.kill_watch > 0 and now - looked[0] >= self.kill_watch:
                looked[0] = now
                if self._kill_requested(run_id):
                    self._say(workspace, KILL_SEEN)
                    self.mark_cancelled()
                    return SETUP_KILLED
            return None

        return stop
