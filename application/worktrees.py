"""A run's own git worktree (issue 28): made before the work, its leftovers committed after it,
reviewed (`li job diff`), taken (`li job apply`) and cleaned up (prune, rm)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from application.ports import Committed, GitRefused, GitWorktrees, RunFiles, RunRecords
from domain.availability import Availability
from domain.request import RunRequest
from domain.run import Run
from domain.worktree import (
    NO_CHANGES,
    NOT_A_WORKTREE_RUN,
    PATCH_ARTIFACT,
    PATCH_UNREADABLE,
    SETUP_FAILED,
    WORKTREE_FAILED,
    Changes,
    Worktree,
    commit_message,
    parse_numstat,
    patch_files,
    removable,
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
    """The request the legs run with (its cwd the worktree) and the worktree recorded."""

    request: RunRequest
    worktree: Worktree


class SetupOutOfTime(WorktreeFailed):
    """The run's --timeout ran out while the setup ran: the setup was stopped, the worktree is made
    (`prepared`), and the run ends `timed_out` with no leg started."""

    def __init__(self, prepared: Prepared, detail: str) -> None:
        super().__init__(SETUP_FAILED, detail)
        self.prepared = prepared


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
        the run's time ran out: the setup is stopped whenever `stop` gives a reason)."""
        plan = request.worktree
        assert plan is not None
        target = plan.target(run_id)
        try:
            if plan.reuse is None:
                self.git.add(plan.repository, target.path, target.branch, plan.base_commit)
            else:
                target = replace(target, base_commit=self.git.head(target.path))
        except (GitRefused, OSError) as exc:
            raise WorktreeFailed(WORKTREE_FAILED, f"the worktree could not be made: {_why(exc)}") from exc
        self.store.update(run_id, lambda current: current.evolve(worktree=target))
        say(f"li runner: worktree {target.path} on branch {target.branch}\n")
        if plan.reuse is None:
            try:
                copied = self.git.copy_included(plan.repository, target.path)
            except (GitRefused, OSError) as exc:
                raise WorktreeFailed(WORKTREE_FAILED, f".worktreeinclude could not be copied: {_why(exc)}") from exc
            if copied:
                say(f"li runner: copied from .worktreeinclude: {', '.join(copied[:20])}"
                    f"{' …' if len(copied) > 20 else ''}\n")
        prepared = Prepared(replace(request, cwd=target.path), target)
        if plan.setup and plan.reuse is None:
            say(f"li runner: setup: {plan.setup}\n")
            why: list[str] = []

            def stopped() -> bool:
                reason = stop() if stop is not None else None
                if reason is not None:
                    why.append(reason)
                return reason is not None

            try:
                code = self.git.run_setup(target.path, plan.setup, env, console, stopped=stopped)
            except OSError as exc:
                raise WorktreeFailed(SETUP_FAILED, f"the setup command could not be run: {exc}") from exc
            if why and why[0] == SETUP_OUT_OF_TIME:
                raise SetupOutOfTime(prepared, f"the setup command was stopped: the run's --timeout "
                                               f"({request.timeout:g}s) ran out")
            if why:
                raise WorktreeFailed(SETUP_FAILED, "the setup command was stopped: the run was killed")
            if code != 0:
                raise WorktreeFailed(SETUP_FAILED, f"the setup command exited {code}")
        return prepared

    def conclude(self, run: Run, status: str | None) -> Changes:
        """Commit what the work left to the run's branch, keep the patch as `changes.patch`."""
        worktree = run.worktree
        assert worktree is not None
        committed = self.git.commit_all(worktree.path, worktree.base_commit,
                                        commit_message(run.run_id, run.label, status))
        return self.keep(run.run_id, committed)

    def keep(self, run_id: str, committed: Committed) -> Changes:
        if committed.commit is None:
            return NO_CHANGES
        files, insertions, deletions = parse_numstat(committed.numstat)
        self.files.write_text(run_id, f"artifacts/{PATCH_ARTIFACT}", committed.patch)
        return Changes(commit=committed.commit, files=files, insertions=insertions, deletions=deletions,
                       patch_artifact=PATCH_ARTIFACT)

    def remove(self, run: Run, branches: bool) -> str | None:
        """Remove the run's worktree (and its branch with `branches`); why not, when it is kept."""
        worktree = run.worktree
        if worktree is None:
            return None
        try:
            if self._exists(worktree) and not removable(self.git.status(worktree.path)):
                return f"its worktree {worktree.path} has changes li did not commit"
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


class WorktreeReviews:
    """`li job diff` and `li job apply`: a run's changes, read from its `changes.patch` artifact
    (any host of a shared store can), recovered from its worktree when the runner never committed."""

    def __init__(self, store: RunRecords, files: RunFiles, git: Callable[[], GitWorktrees],
                 observe: Callable[[str], tuple[Run, bool]] | None = None) -> None:
        self.store = store
        self.files = files
        self.git = git
        self.observe = observe or (lambda run_id: (self.store.read(run_id), True))

    def diff(self, run_id: str) -> dict[str, Any]:
        from domain.wire import (
            ChangedFile,
            ChangesValue,
            DiffData,
            FilesAvailability,
            PatchAvailability,
            WorktreeValue,
        )

        run, recovered, patch = self._patch(run_id)
        files = (FilesAvailability.of([ChangedFile(**row) for row in patch_files(patch.value)])
                 if patch.available and patch.value is not None
                 else FilesAvailability.unavailable(patch.reason_code or PATCH_UNREADABLE, patch.detail))
        worktree = WorktreeValue.of(run)
        assert worktree is not None
        return DiffData(run_id=run_id, worktree=worktree, changes=ChangesValue.of(run), files=files,
                        patch=PatchAvailability.recast(patch), recovered=recovered).to_wire()

    def apply(self, run_id: str, target: str) -> dict[str, Any]:
        from domain.contract import ContractError, ErrorKind
        from domain.wire import ApplyData, ChangedFile

        git = self.git()
        here = git.locate(target)
        if here is None:
            raise ContractError(ErrorKind.INVALID_INPUT, f"li job apply needs a git worktree, and {target} is not "
                                "inside one", {"cwd": target})
        run, _, patch = self._patch(run_id)
        if not patch.available or patch.value is None:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the changes of {run_id} cannot be read: {patch.detail}",
                                {"run_id": run_id, "reason_code": patch.reason_code})
        files = [ChangedFile(**row) for row in patch_files(patch.value)]
        if patch.value:
            try:
                git.apply(here.toplevel, patch.value)
            except GitRefused as exc:
                kind = ErrorKind.CONFLICT if exc.conflict else ErrorKind.UNAVAILABLE
                raise ContractError(kind, f"the changes of {run_id} do not apply here: {exc.reason}",
                                    {"run_id": run_id, "target": here.toplevel}) from None
        return ApplyData(run_id=run_id, target=here.toplevel, applied=bool(patch.value), files=files).to_wire()

    def _patch(self, run_id: str) -> tuple[Run, bool, Availability[str]]:
        """The run, whether its changes were committed only now, and its patch (D7)."""
        from domain.contract import ContractError, ErrorKind

        run, terminal = self.observe(run_id)
        if run.worktree is None:
            raise ContractError(ErrorKind.INVALID_INPUT, f"run {run_id} worked in no worktree of its own "
                                "(submit with --worktree)", {"run_id": run_id, "reason_code": NOT_A_WORKTREE_RUN})
        recovered = False
        if run.changes is None:
            if not terminal:
                return run, False, Availability.unavailable(NOT_ENDED, "the run is still working; its changes are "
                                                            "committed when it ends")
            try:
                run, recovered = self.recover(run), True
            except (GitRefused, OSError) as exc:
                return run, False, Availability.unavailable(NOT_COMMITTED, f"the run ended without committing its "
                                                            f"changes, and they could not be committed now: {_why(exc)}")
        changes = run.changes
        assert changes is not None
        if changes.commit is None:
            return run, recovered, Availability.of("")  # it left nothing: an empty patch, and available
        try:
            return run, recovered, Availability.of(self.files.read_text(run_id, f"artifacts/{changes.patch_artifact}"))
        except (OSError, ValueError) as exc:
            return run, recovered, Availability.unavailable(PATCH_UNREADABLE, f"{changes.patch_artifact} cannot "
                                                            f"be read: {_why(exc)}")

    def recover(self, run: Run) -> Run:
        """Commit what a run that ended without committing (SIGKILLed, then reaped) left in its
        worktree, and record it on the run: the stated recovery of issue 28 item 2."""
        changes = RunWorktrees(self.git(), self.store, self.files).conclude(run, run.status)
        recorded: list[Run] = []

        def change(current: Run) -> Run | None:
            if current.changes is not None:
                recorded.append(current)
                return None
            return current.evolve(changes=changes)

        updated = self.store.update(run.run_id, change)
        return updated if updated is not None else (recorded[0] if recorded else run.evolve(changes=changes))


def stale_worktrees(git: GitWorktrees, store: RunRecords, here: str) -> list[str]:
    """The worktrees li made (under `<common dir>/li-worktrees/`) whose run is gone from the store,
    in the repository `here` is in and in every repository a run names (`li doctor`, issue 28)."""
    from domain.worktree import WORKTREES_FOLDER, run_of_worktree

    known = set(store.run_ids())
    repositories: set[str] = set()
    found = git.locate(here)
    if found is not None:
        repositories.add(found.toplevel)
    for run_id in known:
        try:
            worktree = store.read(run_id).worktree
        except Exception:  # noqa: BLE001 - a run that cannot be read names no repository
            continue
        if worktree is not None:
            repositories.add(worktree.repository)
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
