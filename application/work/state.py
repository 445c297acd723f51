"""The state a run's work keeps between its parts: ports, decisions, the cancel, the li log."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lionrun.application.outage import OUTAGE_SECONDS_DEFAULT, Outage
from lionrun.application.ports import (
    Clock,
    Confiner,
    GitWorktrees,
    Provider,
    RunFiles,
    RunNotFound,
    RunRecords,
    StoreBusy,
    StoreRefused,
)
from lionrun.application.work.budget import BudgetWatch
from lionrun.application.work.parts import (
    KILL_WATCH_SECONDS,
    AfterEnd,
    Workspace,
    no_hook,
)
from lionrun.application.worktrees import (
    Prepared,
    WorktreeFailed,
)
from lionrun.domain.request import Leg, RunRequest, invalid
from lionrun.domain.run import RecordUnusable
from lionrun.domain.worktree import Changes

if TYPE_CHECKING:
    from lionrun.domain.slurm import AnnouncedStop


class WorkState:
    """What every part of a run's work shares: the ports, what was decided so far, the cancel, the li log."""

    def __init__(self, store: RunRecords, files: RunFiles, clock: Clock, providers: Mapping[str, Provider],
                 after_end: AfterEnd | None = None, stop_children: Callable[[], None] | None = None,
                 stop_strays: Callable[[Callable[[str], None]], None] | None = None, kill_watch: float | None = KILL_WATCH_SECONDS,
                 outage: float = OUTAGE_SECONDS_DEFAULT, confiner: Confiner | None = None,
                 git: Callable[[], GitWorktrees] | None = None,
                 leg_arguments: Callable[[RunRequest, str], Sequence[str]] | None = None) -> None:
        self.store = store
        # What the runner adds to a provider's argv beyond the request's own (the
        # --mcp-config that starts li's permission-prompt tool); None: nothing.
        self.leg_arguments = leg_arguments
        self.confiner = confiner  # None: the work is started as it is (no decision recorded)
        self._confined: tuple[Mapping[str, str] | None] | None = None  # decided once per process
        self._refused: str | None = None
        self.git = git  # built on first use: only a run with a worktree needs git
        self._prepared: Prepared | WorktreeFailed | None = None
        # A stop asked of this process that `cancelled` does not show yet (the runner's SIGTERM,
        # held back while it prepares a lean run): a worktree's setup is stopped on it.
        self.stop_asked: Callable[[], bool] = lambda: False
        # Why the batch system stopped this runner's job, asked when the work ended cancelled (a
        # Slurm job's runner: its time limit, an outside scancel, a preemption).
        self.stop_cause: Callable[[], AnnouncedStop | None] | None = None
        self._began: float | None = None  # the run's clock (its --timeout), from the first look
        self._changes: Changes | None = None
        self.files = files
        self.clock = clock
        self.providers = providers
        self.after_end = after_end or no_hook
        self.stop_children = stop_children
        # Before an end is recorded, every process of the run that outlived its legs is stopped
        # (the run is every process its work started: none may live on once it reads terminal).
        self.stop_strays = stop_strays
        self.kill_watch = kill_watch
        self._cancelled = threading.Event()
        self._budget: BudgetWatch | None = None  # the run's budget as its legs spend it
        self._attempt_number = 0  # attempts of the work made so far, and the last one's start
        self._attempt_began: str | None = None
        self._attempts: list[dict[str, Any]] = []
        self._console_lock = threading.Lock()
        self._workspace: Workspace | None = None
        # A store that does not answer (its server restarting, a dropped connection) is waited for,
        # `outage` seconds at most per outage, at the start (the request) and at the end (the seal,
        # the manifest, the end itself); a store that refuses is not.
        self.outage = Outage(clock, outage, self._say_runner)

    def cancel(self) -> None:
        """Stop every running leg; the end will be recorded as `cancelled`."""
        self.mark_cancelled()
        if self.stop_children is not None:
            self.stop_children()

    def mark_cancelled(self) -> None:
        """Only note the cancel (safe inside a signal handler); `cancel()` then stops the legs."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _start(self) -> float:
        """When the run started here: its --timeout counts from the first look (`supervise` or
        `perform`), the worktree's setup included."""
        if self._began is None:
            self._began = self.clock.monotonic()
        return self._began

    def _load(self, run_id: str) -> RunRequest:
        try:
            instruction = self.outage.call("the request", lambda: self.files.read_text(run_id, "instruction.txt"))
            raw = json.loads(self.outage.call("the request", lambda: self.files.read_text(run_id, "request.json")))
        except (OSError, ValueError, StoreRefused) as exc:
            raise invalid(f"the run's request cannot be read: {exc}") from exc
        if not isinstance(raw, dict):
            raise invalid("request.json is not a JSON object")
        return RunRequest.from_dict(raw, instruction)

    def _kill_requested(self, run_id: str) -> bool:
        try:
            return self.store.read(run_id).kill_requested_at is not None
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return False  # not seen this time; the next look may see it

    def _spent(self) -> bool:
        return self._budget is not None and self._budget.exceeded is not None

    def _over_budget(self) -> None:
        """The budget is spent: every leg is stopped (as a cancel stops them), the run ends failed."""
        if self.stop_children is not None:
            self.stop_children()

    def _arguments(self, request: RunRequest, provider: str) -> list[str]:
        """A leg's extra argv: the request's (permission flag, provider args, …), then the runner's own."""
        own = self.leg_arguments(request, provider) if self.leg_arguments is not None else ()
        return [*request.arguments_for(provider), *own]

    def _leg_cwd(self, request: RunRequest, leg: Leg) -> str:
        """Where a leg works: its own worktree in a run of several legs with --worktree (made
        before any leg started), else the request's cwd (the run's one worktree, or its --cwd)."""
        prepared = self._prepared
        return prepared.cwd_of(leg.id) if isinstance(prepared, Prepared) else request.cwd

    def _say_runner(self, text: str) -> None:
        """One line of the runner's own in the li log of the run being performed (if any)."""
        if self._workspace is not None:
            self._say(self._workspace, f"li runner: {text}\n")

    def _say(self, workspace: Workspace, text: str) -> None:
        """One of li's own lines, to the run's li log (never its console: that is the work's bytes).
        Best effort: a li log that cannot be written (a full disk) never stops the end."""
        with self._console_lock:
            try:
                workspace.li_log.write(text)
                workspace.li_log.flush()
            except Exception:  # noqa: BLE001 - nowhere left to say it; the record still gets the end
                pass
