"""What a run does inside its detached child: legs, artifacts and manifest first, then the end."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeGuard

from lionrun.application.orchestrate import (
    LegConsole,
    LegOutcome,
    artifact_name,
    plan,
    prompt_for,
    run_dag,
)
from lionrun.application.outage import OUTAGE_SECONDS_DEFAULT, Outage
from lionrun.application.ports import (
    Clock,
    Confiner,
    GitWorktrees,
    LaunchableProvider,
    LegLaunch,
    Provider,
    RunFiles,
    RunNotFound,
    RunRecords,
    StoreBusy,
    StoreRefused,
)
from lionrun.application.worktrees import (
    SETUP_KILLED,
    SETUP_OUT_OF_TIME,
    Prepared,
    RunWorktrees,
    SetupOutOfTime,
    WorktreeFailed,
)
from lionrun.domain.availability import UNREADABLE, Availability
from lionrun.domain.budget import (
    BUDGET_EXCEEDED,
    Budget,
    Meter,
    Spend,
    budget_value,
    spend_of,
    total,
)
from lionrun.domain.contract import ContractError
from lionrun.domain.ending import EXIT_DECIDES, End, decide, leg_status
from lionrun.domain.lifecycle import classify, exit_code_of
from lionrun.domain.request import AGENT_PROVIDERS, Leg, RunRequest, invalid
from lionrun.domain.run import END_NOT_WRITTEN_BY_RUNNER, RecordUnusable, Run, iso
from lionrun.domain.transcript import PROVIDER_RATE_LIMITED, event_of
from lionrun.domain.vocabulary import PID_NAMESPACE, SHARED_PIDS, STORE_HIDDEN, UNCONFINED
from lionrun.domain.worktree import Changes, shared_git_paths

if TYPE_CHECKING:
    from lionrun.domain.slurm import AnnouncedStop

AfterEnd = Callable[[Run], None]

# How often a runner looks at its record for a kill request while the work runs (seconds); the
# request reaches the work within this plus the legs' stop.
KILL_WATCH_SECONDS = 0.5
KILL_SEEN = "li runner: a kill request is recorded; stopping the work\n"  # said by the lean supervisor too
ArtifactNames = Availability[list[str]]

# Why the artifacts of a run could not be collected, beside the D7 reason codes of a listing.
UNWRITABLE = "unwritable"  # an answer a leg gave could not be written under artifacts/


def _no_hook(run: Run) -> None:
    """The default after-end hook: nothing to deliver."""


@dataclass(frozen=True)
class Supervision:
    """A one-leg run handed to a lean supervisor: the leg's process to start (in `cwd`, with
    `env`), how long it may take, and how often to look for a recorded kill request."""

    run_id: str
    launch: LegLaunch
    cwd: str
    env: Mapping[str, str]
    timeout: float | None
    began: float  # the clock's monotonic reading when the runner began (the manifest's wall)
    kill_watch: float | None
    idle_timeout: float | None = None  # an agent leg's idle watchdog (issue 24); None for shell work
    confine: Mapping[str, str] | None = None  # how the supervisor confines the leg (issue 25)


class ConfinementRefused(Exception):
    """`--confine required` and the kernel would not hide the store: the work is not started."""


CONFINEMENT_REFUSED = "confinement_refused"  # the end's reason then


@dataclass(frozen=True)
class SupervisedEnd:
    """What the lean supervisor saw of the leg: its stdout lines, its exit (None when it was
    stopped before it started), whether its timeout or a cancel stopped it, and when it began."""

    lines: Sequence[str]
    exit_code: int | None
    timed_out: bool
    cancelled: bool
    began: float
    leg_began: float
    idle: bool = False  # the idle watchdog stopped it (then `timed_out` too)


def _launchable(provider: object) -> TypeGuard[LaunchableProvider]:
    return callable(getattr(provider, "launch", None)) and callable(getattr(provider, "conclude", None))


@dataclass(frozen=True)
class Workspace:
    """Where the work happens: the console stream (the work's bytes only), the li log stream (li's
    own lines, kept apart so the console is exactly what the work wrote) and the legs' environment."""

    console: Any
    env: Mapping[str, str]
    li_log: Any


class WorkService:
    """Runs a submitted run's legs, writes artifacts and `manifest.json`, then records the end."""

    def __init__(self, store: RunRecords, files: RunFiles, clock: Clock, providers: Mapping[str, Provider],
                 after_end: AfterEnd | None = None, stop_children: Callable[[], None] | None = None,
                 stop_strays: Callable[[Callable[[str], None]], None] | None = None, lock_attempts: int = 6, kill_watch: float | None = KILL_WATCH_SECONDS,
                 outage: float = OUTAGE_SECONDS_DEFAULT, confiner: Confiner | None = None,
                 git: Callable[[], GitWorktrees] | None = None,
                 leg_arguments: Callable[[RunRequest, str], Sequence[str]] | None = None) -> None:
        self.store = store
        # What the runner adds to a provider's argv beyond the request's own (issue 42: the
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
        # Slurm job's runner: its time limit, an outside scancel, a preemption; issue 40).
        self.stop_cause: Callable[[], AnnouncedStop | None] | None = None
        self._began: float | None = None  # the run's clock (its --timeout), from the first look
        self._changes: Changes | None = None
        self.files = files
        self.clock = clock
        self.providers = providers
        self.after_end = after_end or _no_hook
        self.stop_children = stop_children
        # Before an end is recorded, every process of the run that outlived its legs is stopped
        # (the run is every process its work started: none may live on once it reads terminal).
        self.stop_strays = stop_strays
        self.lock_attempts = lock_attempts
        self.kill_watch = kill_watch
        self._cancelled = threading.Event()
        self._budget: BudgetWatch | None = None  # the run's budget as its legs spend it (issue 42)
        self._attempt_number = 0  # issue 42: attempts of the work made so far, and the last one's start
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

    def supervise(self, run_id: str, workspace: Workspace) -> Supervision | None:
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
        if not _launchable(provider):
            return None
        remaining = None if request.timeout is None else began + request.timeout - self.clock.monotonic()
        if remaining is not None and remaining <= 0:
            return None
        env = {**workspace.env, "LI_LEG_ID": leg.id}
        confine = self._confinement(run_id, request, workspace)  # decided above: the same answer
        try:
            launch = provider.launch(prompt_for(request, leg, {}), leg.model.model, env,
                                     extra=self._arguments(request, leg.model.provider))
        except OSError:
            return None  # `perform` meets the same refusal and says it on the console
        return Supervision(run_id=run_id, launch=launch, cwd=request.cwd, env=env, timeout=remaining,
                           began=began, kill_watch=self.kill_watch, idle_timeout=idle_timeout_of(request, leg),
                           confine=confine)

    def _confinement(self, run_id: str, request: RunRequest, workspace: Workspace) -> Mapping[str, str] | None:
        """Decide once how the work is started (issue 25), record it, and engage it: what a lean
        supervisor needs to confine its leg, or None when the work runs unconfined. Raises
        ConfinementRefused under `--confine required` when the kernel would not hide the store."""
        if self._refused is not None:
            raise ConfinementRefused(self._refused)
        if self._confined is not None:
            return self._confined[0]
        if self.confiner is None:
            self._confined = (None,)
            return None
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
        if why is not None and request.confine == "required":
            self._say(workspace, f"li runner: not running the work: --confine required, and the store cannot "
                                 f"be hidden from it: {why}\n")
            self._refused = why
            raise ConfinementRefused(why)
        if why is not None:
            self._say(workspace, f"li runner: the work runs unconfined (it can reach the store): {why}\n")
        self._confined = (target,)
        return target

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
            if not _launchable(provider):
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

    def _conclude(self, run_id: str, request: RunRequest | None, outcomes: list[LegOutcome], error: str | None,
                  began: float, workspace: Workspace) -> Run | None:
        """After the legs: what of the work still lives stopped, the worktree's changes committed, the artifacts collected, the
        manifest written, the end recorded."""
        # The work has ended (its legs are gone): its time is taken now, before anything that may
        # wait out an outage of the store (issue 40: the end's time never includes the outage).
        wall = self.clock.monotonic() - began
        ended_at = iso(self.clock.now())
        self._commit_worktree(run_id, workspace)
        if self.stop_strays is not None:
            try:
                self.stop_strays(lambda text: self._say(workspace, text))
            except Exception as exc:  # noqa: BLE001 - the end is still recorded
                self._say(workspace, f"li runner: the work's leftover processes were not looked for: {_why(exc)}\n")
        announced = self._announced() if self.cancelled else None
        artifacts = self._collect(run_id, outcomes, workspace)
        end = decide(outcomes, self.cancelled, produced(artifacts, outcomes), error, over_budget=self._spent())
        if announced is not None and end.status == "cancelled":
            end = End(status=announced.status, reason_code="timeout" if announced.status == "timed_out"
                      else end.reason_code, exit_code=exit_code_of(announced.status))
        self._write_manifest(run_id, request, outcomes, artifacts, wall, workspace)
        cost = meter(outcomes, wall)["cost_usd"]
        budget = self._budget_record(request, outcomes, end)
        return self._finish(run_id, end, workspace, cost["value"] if cost.get("available") else None,
                            self._vendor_facts(end, outcomes), budget=budget, tokens=self._tokens(outcomes, budget),
                            ended_at=ended_at,
                            evidence=None if announced is None else announced.evidence)

    def _announced(self) -> AnnouncedStop | None:
        """What the batch system said of the stop (never raises: the runner's verdict then stands)."""
        if self.stop_cause is None:
            return None
        try:
            return self.stop_cause()
        except Exception:  # noqa: BLE001 - an unreadable answer leaves the end `cancelled`
            return None

    def _tokens(self, outcomes: list[LegOutcome], budget: dict[str, Any] | None) -> int | None:
        """The tokens the run's agents reported (issue 42: a queue's budget counts them), else None."""
        if budget is not None:
            return int(budget["spent_tokens"])
        ran = [o.result.usage for o in outcomes if o.result is not None and o.leg.model.provider in AGENT_PROVIDERS]
        return total([spend_of(usage) for usage in ran]).tokens if ran else None

    def _budget_record(self, request: RunRequest | None, outcomes: list[LegOutcome], end: End) -> dict[str, Any] | None:
        """The record's `budget` at the end: the limits, the spend (the legs' streams as counted while
        they ran, else their final usage) and which limit stopped the run."""
        if request is None or request.budget is None:
            return None
        watch = self._budget
        spent = watch.spent() if watch is not None else total([spend_of(o.result.usage) for o in outcomes
                                                              if o.result is not None])
        exceeded = watch.exceeded if watch is not None else None
        if exceeded is None and end.reason_code == BUDGET_EXCEEDED:
            exceeded = spent.crossed(request.budget) or "cost"  # the CLI stopped itself at its own cap
        return budget_value(request.budget, spent, exceeded)

    def _vendor_facts(self, end: End, outcomes: list[LegOutcome]) -> dict[str, str | None]:
        """What the agent CLI's stream told of the run: its session id (a run of one leg; a
        multi-leg run's manifest entries carry theirs) and, for a rate-limited end, when the
        vendor said the limit resets (its own moment, else its delay counted from now)."""
        results = [o.result for o in outcomes if o.result is not None]
        session = results[0].session_id if len(outcomes) == 1 and results else None
        retry_at = None
        if end.reason_code == PROVIDER_RATE_LIMITED:
            limited = next((o.result for o in outcomes if o.reason_code == PROVIDER_RATE_LIMITED
                            and o.result is not None), None)
            if limited is not None and limited.retry_at is not None:
                retry_at = limited.retry_at
            elif limited is not None and limited.retry_after is not None:
                retry_at = iso(self.clock.now() + timedelta(seconds=limited.retry_after))
        return {"session_id": session, "retry_at": retry_at}

    def _start(self) -> float:
        """When the run started here: its --timeout counts from the first look (`supervise` or
        `perform`), the worktree's setup included."""
        if self._began is None:
            self._began = self.clock.monotonic()
        return self._began

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
                                                                       f"{_why(exc)}")
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

    def _leg_cwd(self, request: RunRequest, leg: Leg) -> str:
        """Where a leg works: its own worktree in a run of several legs with --worktree (made
        before any leg started), else the request's cwd (the run's one worktree, or its --cwd)."""
        prepared = self._prepared
        return prepared.cwd_of(leg.id) if isinstance(prepared, Prepared) else request.cwd

    def _commit_worktree(self, run_id: str, workspace: Workspace) -> None:
        """Commit what the work left in the run's worktree (any outcome); a commit that fails is said
        on the console and leaves the worktree as it is, for `li job diff` to recover. A run of
        several legs has each leg's worktree committed to that leg's branch."""
        try:
            run = self.store.read(run_id)
        except Exception:  # noqa: BLE001 - the end is still recorded
            return
        if run.leg_worktrees and self.git is not None:
            self._commit_legs(run, workspace)
            return
        if run.worktree is None or run.changes is not None or self.git is None:
            return
        try:
            status = "cancelled" if self.cancelled else None
            self._changes = RunWorktrees(self.git(), self.store, self.files).conclude(run, status)
            changes = self._changes
            self._say(workspace, f"li runner: committed {changes.commit[:12]} on {run.worktree.branch}: "
                                 f"{changes.files} files, +{changes.insertions} -{changes.deletions}\n"
                      if changes.commit else "li runner: the work left no changes in its worktree\n")
        except Exception as exc:  # noqa: BLE001 - never costs the end; the worktree keeps the work
            self._say(workspace, f"li runner: the worktree's changes could not be committed: {_why(exc)}; "
                                 f"they stay in {run.worktree.path}\n")

    def _commit_legs(self, run: Run, workspace: Workspace) -> None:
        """Each leg's worktree committed to its branch and recorded on its entry (`leg_worktrees`);
        one leg's commit failing is said and never stops another's."""
        assert self.git is not None
        status = "cancelled" if self.cancelled else None
        for entry in run.leg_worktrees or []:
            if entry.changes is not None:
                continue
            try:
                changes = RunWorktrees(self.git(), self.store, self.files).conclude_leg(run, entry, status)
                self._say(workspace, f"li runner: committed {changes.commit[:12]} on {entry.worktree.branch}: "
                                     f"{changes.files} files, +{changes.insertions} -{changes.deletions}\n"
                          if changes.commit else f"li runner: {entry.leg} left no changes in its worktree\n")
            except Exception as exc:  # noqa: BLE001 - never costs the end; the worktree keeps the work
                self._say(workspace, f"li runner: the changes of {entry.leg} could not be committed: {_why(exc)}; "
                                     f"they stay in {entry.worktree.path}\n")

    def _kill_requested(self, run_id: str) -> bool:
        try:
            return self.store.read(run_id).kill_requested_at is not None
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return False  # not seen this time; the next look may see it

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

    def _load(self, run_id: str) -> RunRequest:
        try:
            instruction = self.outage.call("the request", lambda: self.files.read_text(run_id, "instruction.txt"))
            raw = json.loads(self.outage.call("the request", lambda: self.files.read_text(run_id, "request.json")))
        except (OSError, ValueError, StoreRefused) as exc:
            raise invalid(f"the run's request cannot be read: {exc}") from exc
        if not isinstance(raw, dict):
            raise invalid("request.json is not a JSON object")
        return RunRequest.from_dict(raw, instruction)

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
                console = self._budget.console(f"{attempt}:{leg.id}", console)
            return self._run_leg(run_id, request, leg, prompt, console, workspace.env, deadline)

        return run_dag(legs, run_leg, lambda leg, answers: prompt_for(request, leg, answers),
                       lambda: self.cancelled or self._spent())

    def _retrying(self, run_id: str, request: RunRequest, workspace: Workspace, began: float,
                  outcomes: list[LegOutcome]) -> list[LegOutcome]:
        """Issue 42: the work tried again while its attempt ends with a reason the run's policy
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
            told = self._vendor_facts(end, outcomes).get("retry_at")
            wait = delay(policy, attempt, now, parse_iso(told) if told else None, None, random.random())
            if wait is None or (deadline is not None and self.clock.monotonic() + wait >= deadline):
                self._say(workspace, f"li runner: attempt {attempt} ended {end.reason_code}; not retried: "
                                     f"{'the vendor resets too late' if wait is None else 'the run would be out of time'}\n")
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

    def _record_attempts(self, run_id: str) -> None:
        """The attempts so far on the record (best effort: the end records them all again)."""
        attempts = [dict(a) for a in self._attempts]
        with suppress(Exception):
            self.store.update(run_id, lambda current: None if current.end_recorded else current.evolve(
                attempts=attempts))

    def _arguments(self, request: RunRequest, provider: str) -> list[str]:
        """A leg's extra argv: the request's (permission flag, provider args, …), then the runner's own."""
        own = self.leg_arguments(request, provider) if self.leg_arguments is not None else ()
        return [*request.arguments_for(provider), *own]

    def _spent(self) -> bool:
        return self._budget is not None and self._budget.exceeded is not None

    def _over_budget(self) -> None:
        """The budget is spent: every leg is stopped (as a cancel stops them), the run ends failed."""
        if self.stop_children is not None:
            self.stop_children()

    def _run_leg(self, run_id: str, request: RunRequest, leg: Leg, prompt: str, console: LegConsole,
                 env: Mapping[str, str], deadline: float | None) -> LegOutcome:
        start = self.clock.monotonic()
        remaining = None if deadline is None else deadline - start
        if remaining is not None and remaining <= 0:
            return LegOutcome(leg, "timed_out", "timeout")
        provider = self.providers[leg.model.provider]
        result = provider.run(prompt, leg.model.model, self._leg_cwd(request, leg), {**env, "LI_LEG_ID": leg.id},
                              console, remaining, extra=self._arguments(request, leg.model.provider),
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
        try:  # a full disk is waited out like an outage (issue 25), the answer kept in memory meanwhile
            self.outage.call("the answer", lambda: self.files.write_text(run_id, f"artifacts/{name}", answer))
        except Exception as exc:  # noqa: BLE001 - a lost answer never costs the leg its own status
            return None, f"artifacts/{name} could not be written: {_why(exc)}"
        return name, None

    def _collect(self, run_id: str, outcomes: list[LegOutcome], workspace: Workspace) -> ArtifactNames:
        """The regular files the run left under artifacts/, or why that cannot be established (D7).

        Nothing here may stop the end from being recorded: a lost answer, a store that raises, a
        listing that is not one all become `available: false`, said on the console too.
        """
        found = self._artifact_names(run_id, outcomes)
        if not found.available:
            self._say(workspace, f"li runner: the artifacts are unavailable ({found.reason_code}): {found.detail}\n")
        return found

    def _artifact_names(self, run_id: str, outcomes: list[LegOutcome]) -> ArtifactNames:
        lost = [o.artifact_error for o in outcomes if o.artifact_error]
        if lost:
            return Availability.unavailable(UNWRITABLE, "; ".join(lost))
        try:
            # A shared store takes the work's files in now (waiting out an outage of its server).
            self.outage.call("the artifacts", lambda: self.files.seal_artifacts(run_id))
            listing = self.files.artifacts(run_id)
            if not listing.available:
                return Availability.unavailable(listing.reason_code or UNREADABLE, listing.detail)
            # A link, a FIFO or a folder is not output the work produced.
            return Availability.of(sorted(str(e["name"]) for e in listing.value or []
                                          if e.get("type", "file") == "file"))
        except Exception as exc:  # noqa: BLE001 - whatever the store does, the end is still recorded
            return Availability.unavailable(UNREADABLE, f"artifacts/ could not be listed: {_why(exc)}")

    def _write_manifest(self, run_id: str, request: RunRequest | None, outcomes: list[LegOutcome],
                        artifacts: ArtifactNames, wall: float, workspace: Workspace) -> None:
        try:
            manifest = build_manifest(run_id, request, outcomes, wall, artifacts)
            text = json.dumps(manifest, indent=1, sort_keys=True, default=repr)
            self.outage.call("the manifest", lambda: self.files.write_text(run_id, "manifest.json", text))
        except Exception as exc:  # noqa: BLE001 - a manifest that cannot be written never costs the end
            self._say(workspace, f"li runner: manifest.json not written: {_why(exc)}\n")

    def end_unstarted(self, run_id: str, workspace: Workspace, reason_code: str,
                      noted: Mapping[str, Any] | None = None) -> Run | None:
        """End a run whose work never started (issue 43: killed while it waited for other runs, or
        one of them ended otherwise than asked): `cancelled` with `reason_code`, and `noted` kept
        in the record's extra (the dependency that ended it)."""
        self._workspace = workspace
        end = End(status="cancelled", reason_code=reason_code, exit_code=exit_code_of("cancelled"))
        return self._finish(run_id, end, workspace, noted=noted)

    def _finish(self, run_id: str, end: End, workspace: Workspace, cost_usd: float | None = None,
                facts: Mapping[str, str | None] | None = None, noted: Mapping[str, Any] | None = None,
                ended_at: str | None = None, evidence: Mapping[str, Any] | None = None,
                budget: dict[str, Any] | None = None, tokens: int | None = None) -> Run | None:
        """Record the end (with the cost the providers reported, for a listing's COST column), at
        `ended_at` (when the work ended; now when not given), with the batch system's word on a
        stop it announced as `terminal_evidence`, and `noted` kept in the record's extra."""
        now = ended_at or iso(self.clock.now())
        told: dict[str, Any] = {k: v for k, v in (facts or {}).items() if v is not None}
        mine: list[Run] = []
        found: list[Run] = []

        def change(current: Run) -> Run | None:
            reason = "kill_requested" if end.status == "cancelled" and current.kill_requested_at else end.reason_code
            if evidence is not None and not current.end_recorded:
                told["terminal_evidence"] = dict(evidence)
            if current.end_recorded:
                if current.terminal_source == "runner" and current.finished_at == now:
                    mine.append(current)  # this end, written by an attempt whose answer was lost
                    return None
                if current.runner_end is not None:
                    return None  # already said, by an attempt whose answer was lost
                # An end this runner did not write, while it was alive to write its own: never
                # relabelled, never kept silently either (issue 25). What the runner saw is
                # recorded beside it, for every reader to show.
                found.append(current)
                return current.evolve(runner_end={
                    "status": end.status, "outcome": classify(end.status), "exit_code": end.exit_code,
                    "reason_code": END_NOT_WRITTEN_BY_RUNNER, "work_reason_code": reason, "finished_at": now,
                    "found": {"status": current.status, "outcome": current.outcome,
                              "exit_code": current.exit_code, "terminal_source": current.terminal_source}})
            extra = current.extra if cost_usd is None else {**current.extra, "cost_usd": cost_usd}
            if noted:
                extra = {**extra, **noted}
            extra = extra if not tokens else {**extra, "tokens": tokens}
            spent: dict[str, Any] = {} if budget is None else {"budget": budget}
            if self._attempts:  # issue 42: the last attempt ends with the run
                last = {**self._attempts[-1], "ended_at": now, "status": end.status, "reason_code": reason,
                        "next_at": None}
                spent["attempts"] = [*self._attempts[:-1], last]
            return current.evolve(**spent,status=end.status, outcome=classify(end.status), reason_code=reason,
                                  exit_code=end.exit_code, finished_at=now, terminal_source="runner", extra=extra,
                                  changes=self._changes if self._changes is not None else current.changes, **told)

        ended = self._update(run_id, change, workspace)
        if found:
            self._say(workspace, f"li runner: the work ended {end.status} (exit {end.exit_code}), but the record "
                                 f"already held an end this runner did not write ({found[-1].status}); "
                                 f"recorded as runner_end ({END_NOT_WRITTEN_BY_RUNNER})\n")
            return None  # not this runner's end: no notice of it, and the runner does not exit by it
        if ended is None and mine:
            ended = mine[-1]
        if ended is not None:
            self._say(workspace, f"li runner: {ended.status}"
                                 f"{f' ({ended.reason_code})' if ended.reason_code else ''}\n")
            try:
                self.after_end(ended)
            except Exception as exc:  # noqa: BLE001 - a notice failing never unrecords the end
                self._say(workspace, f"li runner: after-end hook failed: {type(exc).__name__}: {exc}\n")
        return ended

    def _update(self, run_id: str, change: Callable[[Run], Run | None], workspace: Workspace) -> Run | None:
        """The fenced write of the end: a busy lock is tried `lock_attempts` times, a store that is
        unavailable is waited for (`outage`), a store that refuses stops it at once."""
        for _ in range(self.lock_attempts):
            try:
                return self.outage.call("the end", lambda: self.store.update(run_id, change))
            except StoreBusy:
                continue
            except (StoreRefused, RunNotFound, RecordUnusable, OSError) as exc:
                self._say(workspace, f"li runner: the end could not be recorded: {exc}\n")
                return None
        self._say(workspace, "li runner: the end could not be recorded: the record stayed locked\n")
        return None

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


def lean_allows(request: RunRequest) -> bool:
    """Whether a lean supervisor (which reads nothing of the leg's stream while it runs) can watch
    this run: not one with a budget (issue 42), which is counted from the stream as it arrives."""
    return request.budget is None and request.retry is None


class BudgetWatch:
    """A run's budget as its legs spend it: each leg's console fed to its own Meter; the first
    event that reaches a limit says so in the li log and calls `stop` (once)."""

    def __init__(self, budget: Budget, say: Callable[[str], None], stop: Callable[[], None]) -> None:
        self.budget = budget
        self.say = say
        self.stop = stop
        self.exceeded: str | None = None
        self._meters: dict[str, Meter] = {}
        self._lock = threading.Lock()

    def spent(self) -> Spend:
        with self._lock:
            return total([m.spend for m in self._meters.values()])

    def console(self, leg: str, inner: Any) -> Any:
        meter = self._meters.setdefault(leg, Meter())
        watch = self

        class Metered:
            """The leg's console, every line also counted."""

            def write(self, text: str) -> int:
                written: int = inner.write(text)
                watch.feed(meter, text)
                return written

            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

        return Metered()

    def feed(self, meter: Meter, text: str) -> None:
        for line in text.splitlines():
            event = event_of(line)
            if event is None:
                continue
            with self._lock:
                if not meter.feed(event) or self.exceeded is not None:
                    continue
                spent = total([m.spend for m in self._meters.values()])
                self.exceeded = spent.crossed(self.budget)
                if self.exceeded is None:
                    continue
            limit = (f"{self.budget.max_tokens} tokens" if self.exceeded == "tokens"
                     else f"${self.budget.max_cost_usd:g}")
            used = f"{spent.tokens} tokens" if self.exceeded == "tokens" else f"${spent.cost_usd:g}"
            self.say(f"li runner: the budget is spent ({used} of {limit}); stopping the work\n")
            self.stop()


def idle_timeout_of(request: RunRequest, leg: Leg) -> float | None:
    """The idle watchdog of one leg: the request's, for an agent CLI's leg only."""
    return request.idle_timeout if leg.model.provider in AGENT_PROVIDERS else None


def produced(artifacts: ArtifactNames, outcomes: list[LegOutcome]) -> bool | None:
    """Whether the work left output: None when its artifacts could not be collected. A shell leg
    that completed (exit 0) is output enough: for shell work the exit status is the answer."""
    if not artifacts.available:
        return None
    return (bool(artifacts.value) or any(o.artifact for o in outcomes)
            or any(o.status == "completed" and o.leg.model.provider in EXIT_DECIDES for o in outcomes))


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def build_manifest(run_id: str, request: RunRequest | None, outcomes: list[LegOutcome],
                   wall: float, artifacts: ArtifactNames | None = None) -> dict[str, Any]:
    """`manifest.json`: each leg, the artifacts collected and the run's metering (D7 shapes).

    `artifacts` is the regular files found under artifacts/ at the end, or `available: false`
    with why they could not be collected; absent when the caller collected none.
    """
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "run_id": run_id,
        "kind": request.kind if request is not None else None,
        "legs": [_leg_entry(o) for o in outcomes],
        "metering": meter(outcomes, wall),
    }
    if artifacts is not None:
        manifest["artifacts"] = artifacts.to_wire()
    return manifest


def _leg_entry(outcome: LegOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "id": outcome.leg.id, "model": outcome.leg.model.text, "provider": outcome.leg.model.provider,
        "depends_on": list(outcome.leg.depends_on), "status": outcome.status,
        "reason_code": outcome.reason_code, "artifact": outcome.artifact and f"artifacts/{outcome.artifact}",
        "artifact_error": outcome.artifact_error,
        "exit_code": result.exit_code if result else None, "is_error": result.is_error if result else None,
        "timed_out": result.timed_out if result else None, "wall_seconds": round(outcome.wall_seconds, 3),
        "usage": dict(result.usage) if result else {},
        "session_id": result.session_id if result else None,
    }


def meter(outcomes: list[LegOutcome], wall: float) -> dict[str, Any]:
    """Wall seconds always; tokens and cost only when every leg that ran reported them.

    Tokens are input and output, plus every other token class (cached input, cache writes,
    reasoning, thoughts, total, …) that each leg's CLI reported, so none is dropped.
    """
    ran = [o for o in outcomes if o.result is not None]
    tokens = _total(ran, ("input_tokens", "output_tokens", *_token_classes(ran)))
    cost = _total(ran, ("cost_usd",))
    return {
        "wall_seconds": round(wall, 3),
        "tokens": tokens.to_wire(),
        "cost_usd": Availability(available=cost.available,
                                 value=None if cost.value is None else cost.value["cost_usd"],
                                 reason_code=cost.reason_code, detail=cost.detail).to_wire(),
    }


def _token_classes(ran: list[LegOutcome]) -> tuple[str, ...]:
    """The token classes beyond input and output that every leg that ran reported as a number."""
    reported = [{k for k, v in o.result.usage.items() if k.endswith("_tokens") and isinstance(v, int | float)
                 and not isinstance(v, bool)} for o in ran if o.result is not None]
    common = set.intersection(*reported) if reported else set()
    return tuple(sorted(common - {"input_tokens", "output_tokens"}))


def _total(ran: list[LegOutcome], keys: tuple[str, ...]) -> Availability[dict[str, Any]]:
    if not ran:
        return Availability.unavailable("not_reported", "no leg ran")
    silent = [o.leg.id for o in ran if o.result is None or any(
        not isinstance(o.result.usage.get(k), int | float) for k in keys)]
    if silent:
        return Availability.unavailable("not_reported", f"not reported by: {', '.join(silent)}")
    totals = {k: sum(o.result.usage[k] for o in ran if o.result is not None) for k in keys}
    return Availability.of(totals)
