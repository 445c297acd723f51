"""A run's own git worktree: made before the work, its leftovers committed after it,
reviewed (`li job diff`), taken (`li job apply`) and cleaned up (prune, rm)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from lionrun.application.ports import Committed, GitRefused, GitWorktrees, RunFiles, RunRecords
from lionrun.domain.availability import Availability
from lionrun.domain.request import RunRequest
from lionrun.domain.run import Run
from lionrun.domain.worktree import (
    NO_CHANGES,
    NOT_A_WORKTREE_RUN,
    PATCH_ARTIFACT,
    PATCH_UNREADABLE,
    SETUP_FAILED,
    WORKTREE_FAILED,
    Changes,
    LegWorktree,
    Worktree,
    WorktreePlan,
    commit_message,
    parse_numstat,
    patch_artifact_for,
    patch_files,
    removable,
    several_legs_refusal,
    with_leg_changes,
)

Say = Callable[[str], None]
SETUP_KILLED = "killed"  # why a setup was stopped (`Stop`): the run was killed
SETUP_OUT_OF_TIME = "timeout"  # ... the run's --timeout ran out
Stop = Callable[[], str | None]  # asked while the setup runs: why it must stop now, or None


class WorktreeFailed(Exception):
    """The run's worktree could not be made or set up: the work never starts (a failed start)."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


class Prepared(Struct, frozen=True):
    """The request the legs run with (its cwd the worktree) and the worktree recorded; for a run
    of several legs, each leg's own worktree (`legs`, by leg id: the leg works there) instead."""

    request: RunRequest
    worktree: Worktree | None
    legs: dict[str, Worktree] = {}

    def cwd_of(self, leg: str) -> str:
        """Where `leg` works: its own worktree in a run of several legs, else the request's cwd."""
        if not self.legs:
            return self.request.cwd
        if leg not in self.legs:
            raise WorktreeFailed(WORKTREE_FAILED, f"leg {leg} has no worktree of its own")
        return self.legs[leg].path


class SetupOutOfTime(WorktreeFailed):
    """The run's --timeout ran out while the setup ran: the setup was stopped, the worktree is made
    (`prepared`), and the run ends `timed_out` with no leg started."""

    def __init__(self, prepared: Prepared, detail: str) -> None:
        super().__init__(SETUP_FAILED, detail)
        self.prepared = prepared


class _OutOfTime(Exception):
    """A setup stopped because the run's --timeout ran out (made into SetupOutOfTime by prepare)."""

    def __init__(self, detail: str, target: Worktree) -> None:
        super().__init__(detail)
        self.target = target


def worktree_legs(request: RunRequest) -> list[str]:
    """The legs that each get a worktree of their own: every leg (a fanout's synthesis and a flow's
    every step included) of a run of several legs that asked for a worktree; none otherwise."""
    from lionrun.application.orchestrate import plan

    if request.worktree is None or request.worktree.reuse is not None:
        return []
    legs = [leg.id for leg in plan(request)]
    return legs if len(legs) > 1 else []


class RunWorktrees:
    """What the runner does with a run's worktree, around the work."""

    def __init__(self, git: GitWorktrees, store: RunRecords, files: RunFiles) -> None:
        self.git = git
        self.store = store
        self.files = files

    def prepare(self, run_id: str, request: RunRequest, env: Mapping[str, str], console: Any, say: Say,
                stop: Stop | None = None) -> Prepared:
        """Make (or, for a reply, reuse) the worktree, record it, copy `.worktreeinclude`'s files,
        run the setup command; WorktreeFailed when any of it fails (SetupOutOfTime when `stop` said
        the run's time ran out: the setup is stopped whenever `stop` gives a reason). A run of
        several legs gets one worktree per leg, each made, recorded and set up in turn, all from
        the same base commit, before any leg starts."""
        plan = request.worktree
        assert plan is not None
        legs = worktree_legs(request)
        if not legs:
            try:
                target = self._make(run_id, plan, None, request, env, console, say, stop)
            except _OutOfTime as exc:
                raise SetupOutOfTime(Prepared(replace(request, cwd=exc.target.path), exc.target), str(exc)) from None
            return Prepared(replace(request, cwd=target.path), target)
        made_legs: dict[str, Worktree] = {}
        for leg in legs:
            try:
                made_legs[leg] = self._make(run_id, replace(plan, leg=leg), leg, request, env, console, say, stop)
            except _OutOfTime as exc:
                made_legs[leg] = exc.target
                raise SetupOutOfTime(Prepared(request, None, made_legs), str(exc)) from None
        return Prepared(request, None, made_legs)

    def _make(self, run_id: str, plan: WorktreePlan, leg: str | None, request: RunRequest, env: Mapping[str, str],
              console: Any, say: Say, stop: Stop | None) -> Worktree:
        """One worktree made (or reused), recorded, filled from .worktreeinclude and set up."""
        target = plan.target(run_id)
        of_leg = "" if leg is None else f" of {leg}"
        try:
            if plan.reuse is None:
                self.git.add(plan.repository, target.path, target.branch, plan.base_commit)
            else:
                target = replace(target, base_commit=self.git.head(target.path))
        except (GitRefused, OSError) as exc:
            raise WorktreeFailed(WORKTREE_FAILED, f"the worktree{of_leg} could not be made: {_why(exc)}") from exc
        made = target
        if leg is None:
            self.store.update(run_id, lambda current: current.evolve(worktree=made))
        else:
            self.store.update(run_id, lambda current: current.evolve(
                leg_worktrees=[*(current.leg_worktrees or []), LegWorktree(leg, made)]))
        say(f"li runner: worktree{of_leg} {target.path} on branch {target.branch}\n")
        if plan.reuse is None:
            try:
                copied = self.git.copy_included(plan.repository, target.path)
            except (GitRefused, OSError) as exc:
                raise WorktreeFailed(WORKTREE_FAILED, f".worktreeinclude could not be copied{of_leg}: "
                                                      f"{_why(exc)}") from exc
            if copied:
                say(f"li runner: copied from .worktreeinclude{of_leg}: {', '.join(copied[:20])}"
                    f"{' …' if len(copied) > 20 else ''}\n")
        if plan.setup and plan.reuse is None:
            say(f"li runner: setup{of_leg}: {plan.setup}\n")
            why: list[str] = []

            def stopped() -> bool:
                reason = stop() if stop is not None else None
                if reason is not None:
                    why.append(reason)
                return reason is not None

            try:
                code = self.git.run_setup(target.path, plan.setup, env, console, stopped=stopped,
                                          confined=request.confine != "off")
            except OSError as exc:
                raise WorktreeFailed(SETUP_FAILED, f"the setup command{of_leg} could not be run: {exc}") from exc
            if why and why[0] == SETUP_OUT_OF_TIME:
                raise _OutOfTime(f"the setup command{of_leg} was stopped: the run's --timeout "
                                 f"({request.timeout:g}s) ran out", target)
            if why:
                raise WorktreeFailed(SETUP_FAILED, f"the setup command{of_leg} was stopped: the run was killed")
            if code != 0:
                raise WorktreeFailed(SETUP_FAILED, f"the setup command{of_leg} exited {code}")
        return target

    def conclude(self, run: Run, status: str | None) -> Changes:
        """Commit what the work left to the run's branch, keep the patch as `changes.patch`."""
        worktree = run.worktree
        assert worktree is not None
        self.git.ensure_own(worktree.path, worktree.repository, worktree.branch)
        committed = self.git.commit_all(worktree.path, worktree.base_commit,
                                        commit_message(run.run_id, run.label, status))
        return self.keep(run.run_id, committed)

    def conclude_leg(self, run: Run, entry: LegWorktree, status: str | None) -> Changes:
        """Commit what one leg's work left to that leg's branch, keep the patch as
        `changes-<leg>.patch`, and record it on the leg's entry (a leg already recorded keeps its
        first commit); the changes recorded."""
        worktree = entry.worktree
        self.git.ensure_own(worktree.path, worktree.repository, worktree.branch)
        committed = self.git.commit_all(worktree.path, worktree.base_commit,
                                        commit_message(run.run_id, run.label, status, entry.leg))
        changes = self.keep(run.run_id, committed, patch_artifact_for(entry.leg))
        kept: list[Changes] = []

        def record(current: Run) -> Run | None:
            entries = with_leg_changes(current.leg_worktrees or [], entry.leg, changes)
            if entries is None:
                kept.extend(e.changes for e in current.leg_worktrees or []
                            if e.leg == entry.leg and e.changes is not None)
                return None
            return current.evolve(leg_worktrees=entries)

        self.store.update(run.run_id, record)
        return kept[0] if kept else changes

    def keep(self, run_id: str, committed: Committed, artifact: str = PATCH_ARTIFACT) -> Changes:
        if committed.commit is None:
            return NO_CHANGES
        files, insertions, deletions = parse_numstat(committed.numstat)
        self.files.write_text(run_id, f"artifacts/{artifact}", committed.patch)
        return Changes(commit=committed.commit, files=files, insertions=insertions, deletions=deletions,
                       patch_artifact=artifact)

    def remove(self, run: Run, branches: bool) -> str | None:
        """Remove the run's worktree, or every leg's (and the branches with `branches`); why not,
        when it is kept. A run of several legs keeps all of them when any holds changes li did not
        commit."""
        worktrees = [run.worktree] if run.worktree is not None else [e.worktree for e in run.leg_worktrees or []]
        if not worktrees:
            return None
        try:
            for worktree in worktrees:
                if self._exists(worktree) and not removable(self.git.status(worktree.path)):
                    return f"its worktree {worktree.path} has changes li did not commit"
            for worktree in worktrees:
                self.git.remove(worktree.repository, worktree.path, worktree.branch if branches else None)
        except (GitRefused, OSError) as exc:
            return f"its worktree could not be removed: {_why(exc)}"
        return None

    def _exists(self, worktree: Worktree) -> bool:
        return worktree.path in self.git.listed(worktree.repository)


def _why(exc: BaseException) -> str:
    return exc.reason if isinstance(exc, GitRefused) else f"{type(exc).__name__}: {exc}"


NOT_ENDED = "not_ended"  # D7 reason: the run still works; its changes are committed when it ends
NOT_COMMITTED = "not_committed"  # D7 reason: the run ended without a commit, and none could be made here


SEVERAL_LEGS = "several_legs"  # D7 reason: a run of several legs has no one patch; each leg's is under `legs`


class WorktreeReviews:
    """`li job diff` and `li job apply`: a run's changes, read from its `changes.patch` artifact
    (any host of a shared store can), recovered from its worktree when the runner never committed.
    A run of several legs has each leg's change (`changes-<leg>.patch`), reviewed one by one."""

    def __init__(self, store: RunRecords, files: RunFiles, git: Callable[[], GitWorktrees],
                 observe: Callable[[str], tuple[Run, bool]] | None = None) -> None:
        self.store = store
        self.files = files
        self.git = git
        self.observe = observe or (lambda run_id: (self.store.read(run_id), True))

    def diff(self, run_id: str, leg: str | None = None) -> dict[str, Any]:
        """The run's changes (DiffData); for a run of several legs each leg's under `legs`, or the
        one `leg` names in the run's own shape."""
        from lionrun.domain.wire import (
            ChangesValue,
            DiffData,
            FilesAvailability,
            LegDiff,
            PatchAvailability,
            WorktreeValue,
        )

        run, terminal = self.observe(run_id)
        entries = self._entries(run, run_id, leg, "diff")
        if entries is None:
            run, recovered, patch = self._patch(run, terminal)
            worktree = WorktreeValue.of(run)
            assert worktree is not None
            return DiffData(run_id=run_id, worktree=worktree, changes=ChangesValue.of(run), files=_files(patch),
                            patch=PatchAvailability.recast(patch), recovered=recovered).to_wire()
        reviewed = [LegDiff.of(entry, _files(patch), PatchAvailability.recast(patch), recovered)
                    for entry, recovered, patch in (self._leg_patch(run, e, terminal) for e in entries)]
        if leg is not None:
            one = reviewed[0]
            return DiffData(run_id=run_id, worktree=one.worktree, changes=one.changes, files=one.files,
                            patch=one.patch, recovered=one.recovered, leg=one.leg).to_wire()
        why = (f"{run_id} has {len(reviewed)} legs, each with its own worktree and change: each is under legs "
               f"(li job diff {run_id} --leg LEG for one)")
        return DiffData(run_id=run_id, worktree=None, changes=None,
                        files=FilesAvailability.unavailable(SEVERAL_LEGS, why),
                        patch=PatchAvailability.unavailable(SEVERAL_LEGS, why),
                        recovered=any(one.recovered for one in reviewed), legs=reviewed).to_wire()

    def apply(self, run_id: str, target: str, leg: str | None = None) -> dict[str, Any]:
        from lionrun.domain.contract import ContractError, ErrorKind
        from lionrun.domain.wire import ApplyData, ChangedFile

        git = self.git()
        here = git.locate(target)
        if here is None:
            raise ContractError(ErrorKind.INVALID_INPUT, f"li job apply needs a git worktree, and {target} is not "
                                "inside one", {"cwd": target})
        run, terminal = self.observe(run_id)
        entries = self._entries(run, run_id, leg, "apply")
        if entries is None:
            run, _, patch = self._patch(run, terminal)
            source = (run.worktree, run.changes)
        elif leg is None:
            legs = [e.leg for e in entries]
            raise ContractError(ErrorKind.INVALID_INPUT, several_legs_refusal("apply", run_id, legs),
                                {"run_id": run_id, "reason_code": SEVERAL_LEGS, "legs": legs})
        else:
            entry, _, patch = self._leg_patch(run, entries[0], terminal)
            source = (entry.worktree, entry.changes)
        whose = run_id if leg is None else f"{run_id} leg {leg}"
        if not patch.available or patch.value is None:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the changes of {whose} cannot be read: {patch.detail}",
                                {"run_id": run_id, "reason_code": patch.reason_code})
        differs = _differs_from_branch(git, *source, patch.value)
        if differs is not None:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the changes of {whose} are not applied: {differs}",
                                {"run_id": run_id, "reason_code": PATCH_DIFFERS})
        files = [ChangedFile(**row) for row in patch_files(patch.value)]
        if patch.value:
            try:
                git.apply(here.toplevel, patch.value)
            except GitRefused as exc:
                kind = ErrorKind.CONFLICT if exc.conflict else ErrorKind.UNAVAILABLE
                raise ContractError(kind, f"the changes of {whose} do not apply here: {exc.reason}",
                                    {"run_id": run_id, "target": here.toplevel}) from None
        return ApplyData(run_id=run_id, target=here.toplevel, applied=bool(patch.value), files=files,
                         leg=leg).to_wire()

    def _entries(self, run: Run, run_id: str, leg: str | None, verb: str) -> list[LegWorktree] | None:
        """The legs' worktrees a review is about (every one, or the one `leg` names), None for a
        run of one worktree; a run without any, or a `leg` it does not have, is one refusal."""
        from lionrun.domain.contract import ContractError, ErrorKind

        if run.leg_worktrees:
            if leg is None:
                return list(run.leg_worktrees)
            chosen = [e for e in run.leg_worktrees if e.leg == leg]
            if not chosen:
                legs = [e.leg for e in run.leg_worktrees]
                raise ContractError(ErrorKind.INVALID_INPUT, f"{run_id} has no leg {leg!r} with a worktree; its "
                                    f"legs: {', '.join(legs[:20])}", {"run_id": run_id, "leg": leg, "legs": legs})
            return chosen
        if run.worktree is None:
            raise ContractError(ErrorKind.INVALID_INPUT, f"run {run_id} worked in no worktree of its own "
                                "(submit with --worktree)", {"run_id": run_id, "reason_code": NOT_A_WORKTREE_RUN})
        if leg is not None:
            raise ContractError(ErrorKind.INVALID_INPUT, f"--leg names one leg of a run of several legs, and {run_id} "
                                f"worked in one worktree: li job {verb} {run_id}", {"run_id": run_id, "leg": leg})
        return None

    def _patch(self, run: Run, terminal: bool) -> tuple[Run, bool, Availability[str]]:
        """The run, whether its changes were committed only now, and its patch (D7)."""
        recovered = False
        if run.changes is None:
            if not terminal:
                return run, False, _not_ended()
            try:
                run, recovered = self.recover(run), True
            except (GitRefused, OSError) as exc:
                return run, False, _not_committed(exc)
        changes = run.changes
        assert changes is not None
        return run, recovered, self._read(run.run_id, changes)

    def _leg_patch(self, run: Run, entry: LegWorktree, terminal: bool) -> tuple[LegWorktree, bool, Availability[str]]:
        """One leg's entry, whether its changes were committed only now, and its patch (D7)."""
        recovered = False
        if entry.changes is None:
            if not terminal:
                return entry, False, _not_ended()
            try:
                changes = RunWorktrees(self.git(), self.store, self.files).conclude_leg(run, entry, run.status)
            except (GitRefused, OSError) as exc:
                return entry, False, _not_committed(exc)
            entry, recovered = LegWorktree(entry.leg, entry.worktree, changes), True
        assert entry.changes is not None
        return entry, recovered, self._read(run.run_id, entry.changes)

    def _read(self, run_id: str, changes: Changes) -> Availability[str]:
        if changes.commit is None:
            return Availability.of("")  # it left nothing: an empty patch, and available
        try:
            return Availability.of(self.files.read_text(run_id, f"artifacts/{changes.patch_artifact}"))
        except (OSError, ValueError) as exc:
            return Availability.unavailable(PATCH_UNREADABLE, f"{changes.patch_artifact} cannot be read: {_why(exc)}")

    def recover(self, run: Run) -> Run:
        """Commit what a run that ended without committing (SIGKILLed, then reaped) left in its
        worktree, and record it on the run: the stated recovery of a commit li could not make."""
        changes = RunWorktrees(self.git(), self.store, self.files).conclude(run, run.status)
        recorded: list[Run] = []

        def change(current: Run) -> Run | None:
            if current.changes is not None:
                recorded.append(current)
                return None
            return current.evolve(changes=changes)

        updated = self.store.update(run.run_id, change)
        return updated if updated is not None else (recorded[0] if recorded else run.evolve(changes=changes))

    def recover_legs(self, run: Run) -> None:
        """The same for a run of several legs: each leg whose end was not committed is committed
        to its branch and recorded on its entry (one leg's failure stops no other's)."""
        ours = RunWorktrees(self.git(), self.store, self.files)
        failed: list[BaseException] = []
        for entry in run.leg_worktrees or []:
            if entry.changes is None:
                try:
                    ours.conclude_leg(run, entry, run.status)
                except Exception as exc:  # noqa: BLE001 - the next leg is still committed; diff recovers this one
                    failed.append(exc)
        if failed:
            raise failed[0]


PATCH_DIFFERS = "patch_differs"  # D7 reason: the kept patch is not what the run's branch holds


def _differs_from_branch(git: GitWorktrees, worktree: Worktree | None, changes: Changes | None,
                         patch: str) -> str | None:
    """Why the patch `li job diff` shows (and `li job apply` would apply) is not the run's branch
    as git diffs it in the repository, with nothing of the work's config run; None when it is the
    same bytes, or when the commit is gone from the repository (the kept patch is all there is)."""
    if worktree is None or changes is None or changes.commit is None:
        return None
    try:
        truth = git.diff(worktree.repository, worktree.base_commit, changes.commit).patch
    except (GitRefused, OSError):
        return None
    if truth == patch:
        return None
    return (f"{changes.patch_artifact} is not what the branch's commit {changes.commit[:12]} holds "
            f"(li job diff showed what was kept; the branch now says otherwise): review the branch yourself")


def _files(patch: Availability[str]) -> Any:
    from lionrun.domain.wire import ChangedFile, FilesAvailability

    return (FilesAvailability.of([ChangedFile(**row) for row in patch_files(patch.value)])
            if patch.available and patch.value is not None
            else FilesAvailability.unavailable(patch.reason_code or PATCH_UNREADABLE, patch.detail))


def _not_ended() -> Availability[str]:
    return Availability.unavailable(NOT_ENDED, "the run is still working; its changes are committed when it ends")


def _not_committed(exc: BaseException) -> Availability[str]:
    return Availability.unavailable(NOT_COMMITTED, f"the run ended without committing its changes, and they could "
                                                   f"not be committed now: {_why(exc)}")


def stale_worktrees(git: GitWorktrees, store: RunRecords, here: str) -> list[str]:
    """The worktrees li made (under `<common dir>/li-worktrees/`) whose run is gone from the store,
    in the repository `here` is in and in every repository a run names (`li doctor`)."""
    from lionrun.domain.worktree import WORKTREES_FOLDER, run_of_worktree

    known = set(store.run_ids())
    repositories: set[str] = set()
    found = git.locate(here)
    if found is not None:
        repositories.add(found.toplevel)
    for run_id in known:
        try:
            run = store.read(run_id)
        except Exception:  # noqa: BLE001 - a run that cannot be read names no repository
            continue
        if run.worktree is not None:
            repositories.add(run.worktree.repository)
        repositories.update(e.worktree.repository for e in run.leg_worktrees or [])
    stale = []
    for repository in sorted(repositories):
        try:
            paths = git.listed(repository)
        except (GitRefused, OSError):
            continue
        for path in paths:
            folder, _, name = path.rstrip("/").rpartition("/")
            owner = run_of_worktree(name)
            if folder.endswith(f"/{WORKTREES_FOLDER}") and owner is not None and owner not in known:
                stale.append(path)
    return stale
